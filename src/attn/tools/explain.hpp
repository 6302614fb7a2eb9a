// --explain: a short explanation of each step for students, in plain words, quoting this run's
// numbers (sizes, the scale factor, a row's weights). Reads the trace; computes nothing new.
#pragma once

#include <string>
#include <vector>

#include "attn/core/trace.hpp"

namespace attn {

// The block a sentence about one row speaks of: --batch and --head (0 when not chosen).
struct ExplainBlock {
  std::int64_t batch = 0, head = 0;
};

std::string explain_step(const Trace& trace, const Step& step, ExplainBlock block = {});

// An explanation's parts: its lines are paragraphs (to be wrapped), except those that start with
// two spaces, which are preformatted (a matrix written out) and shown as written, in monospace.
struct ExplainPart {
  bool preformatted = false;
  std::vector<std::string> lines;  // a paragraph: one line; preformatted: the block's lines, the two spaces removed
};
std::vector<ExplainPart> explain_parts(const std::string& text);

// How one entry (flat index into step.value) was computed, with this run's numbers: the terms of a
// dot product, exp(·)/Σexp(·) of a softmax, the entry another step moved here. For the HTML
// walkthrough's hover. Plain text, one line per part.
std::string explain_cell(const Trace& trace, const Step& step, std::int64_t flat);

}  // namespace attn
