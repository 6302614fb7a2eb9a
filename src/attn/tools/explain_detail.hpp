// What the step explanations (explain.cpp, explain_backward.cpp) and the entry explanations (explain_cell.cpp) share.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <map>
#include <string_view>

#include "attn/tools/explain.hpp"
#include "attn/core/trace.hpp"

namespace attn::explain_detail {

// s in double quotes: a token as the sentences quote it.
std::string q(const std::string& s);
// A number as the sentences write it: fixed decimals, one minus sign (U+2212) for negatives ("−0.1198"),
// ±∞. signed_operand puts a negative in parentheses, as an operand after a sign: "0.6405 · (−0.1198)".
std::string signed_num(double v, int decimals = 4);
std::string signed_operand(double v, int decimals = 4);
// The step holding the heads-first rows of q or k ("q.heads"), or the flat one when H = 1.
const Step* rows_step(const Trace& t, const char* heads, const char* flat);
// One head row x (h features) turned by table row p of rope.cos and rope.sin, in double: what
// q.rope and k.rope do, for showing the same vectors at other positions.
std::vector<double> rotated(const Scalar* x, std::int64_t h, const Step& cos, const Step& sin, std::int64_t p, bool interleaved);

// One query row of a [.., T, S] step, in the chosen batch row and head.
struct Row {
  std::int64_t batch = 0, head = 0, query = 0;
  const Scalar* values = nullptr;  // S entries
};
// Where block (batch, head) of a [.., T, S] step starts, in its values: other leading axes at 0.
std::int64_t block_offset(const Step& s, const ExplainBlock& b);
// The row of a [.., T, S] step to talk about: the first query of the chosen block whose largest
// entry is below 1 (a row that actually spreads its attention), else the first with any weight, else query 0.
Row pick_row(const Step& s, const ExplainBlock& block);
// "In batch row 0, head 2, " or "": which block a sentence about one block speaks of.
std::string block_prefix(const Step& s, const ExplainBlock& block);
// Query i's token, quoted, with a subscript when it occurs more than once ("the₂").
std::string tok(const Trace& t, const ExplainBlock& b, std::int64_t i);

// What this run's mask did, read from the trace (not assumed): the masked step, the logits it read,
// and the value its blocked cells hold: −inf, or a finite mask_fill such as −1e6.
struct MaskFacts {
  const Step* masked = nullptr;  // nullptr: no mask ran
  const Step* before = nullptr;  // capped, biased, scaled or scores: what the mask read (nullptr when shapes differ)
  bool additive = false;         // an additive attn_mask (mask.add): only −inf cells count as blocked
  double fill = -std::numeric_limits<double>::infinity();  // the blocked cells' value
  std::int64_t blocked = 0;      // blocked cells
  std::int64_t empty_row = -1;   // the first query row (flat row index) with every key blocked; −1: none
};
MaskFacts mask_facts(const Trace& t);
// Whether flat cell `at` of a step shaped as the masked step is blocked.
bool blocked_cell(const MaskFacts& m, std::int64_t at);

// A step's explanation, from the trace it belongs to (empty: none).
using Explainer = std::string (*)(const Trace&, const Step&, const ExplainBlock&);
// The backward pass's explanations by step id (explain_backward.cpp).
const std::map<std::string_view, Explainer>& backward_explainers();
// The steps before the scores (explain_inputs.cpp): embeddings, positions, projections, heads.
const std::map<std::string_view, Explainer>& input_explainers();

}  // namespace attn::explain_detail
