// attn check: a document's printed numbers (the spec's expect) against the computed trace.
// Tolerance per printed number: half a unit in its last printed decimal, unless expect.tolerance.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "attn/spec.hpp"
#include "attn/trace.hpp"

namespace attn {

class Backend;

struct CheckEntry {
  std::string step;
  std::string position;  // "[1, 0] (query \"t1\", key \"t0\")"
  double printed = 0;
  int decimals = 0;      // as printed; -1 for "-inf" / "inf" / "nan"
  double computed = 0;
  double difference = 0;  // computed - printed
  double tolerance = 0;
  std::string literal;   // the printed number as the document's text wrote it ("0.28733302"); "" when unknown
};

struct CheckStep {
  std::string id;
  int checked = 0;
  int differ = 0;
  double max_abs_difference = 0;
};

struct CheckReport {
  std::string title;
  std::optional<double> tolerance;  // expect.tolerance, when given
  int checked = 0, matches = 0, differences = 0;
  std::vector<CheckStep> steps;         // in trace order
  std::vector<CheckEntry> differing;    // every printed entry outside its tolerance
};

// Throws InputError when the spec has no expect, names an unknown step, or has the wrong shape.
CheckReport check_trace(const Spec& spec, const Trace& trace);
// The trace attn check judges: the forward pass, or with printed gradients (grad.* ids, loss) in
// expect the backward pass too.
Trace trace_to_check(const Spec& spec, Backend& backend);

// width: the display columns; a table wider than that gives each differing entry two lines.
void render_check_text(const CheckReport& report, std::ostream& out, int width = 80);
void render_check_json(const CheckReport& report, std::ostream& out);

}  // namespace attn
