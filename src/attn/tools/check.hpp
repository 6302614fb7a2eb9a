// attn check: a document's printed numbers (the spec's expect) against the computed trace.
// Tolerance per printed number: half a unit in its last printed decimal, unless expect.tolerance.
// Judged against what the document's own arithmetic could have produced: a step printed beyond
// float32's precision (8-decimal NumPy printouts) against the float64 trace alone, the others
// against the float32 trace (never under 4 float32 ulps) or the float64 one, whichever agrees.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/spec.hpp"
#include "attn/core/trace.hpp"
#include "attn/pipeline/pipeline.hpp"

namespace attn {

class Backend;

// Which arithmetic judged a step's printed numbers.
enum class Judge {
  Either,   // printed within float32's precision: a match in float32 or in float64 counts
  Float64,  // printed beyond float32's precision: float64 alone
  Float32,  // printed beyond it, but no digit says float64 (a float32 document printed to 8 decimals,
            // or digits that cannot tell): float32, allowing for its rounding of the terms, or float64
};
std::string_view judge_name(Judge j);  // "float32 or float64", "float64", "float32"

struct CheckEntry {
  std::string step;
  Judge judge = Judge::Either;
  std::string position;  // "[1, 0] (query \"t1\", key \"t0\")"
  double printed = 0;
  int decimals = 0;      // as printed; -1 for "-inf" / "inf" / "nan"
  double computed = 0;    // the judging value: the float64 trace's under Judge::Float64, else the float32 trace's
  double computed32 = 0, computed64 = 0;  // both traces' values
  double difference = 0;  // computed - printed
  double tolerance = 0;
  std::string literal;   // the printed number as the document's text wrote it ("0.28733302"); "" when unknown
  std::int64_t index = 0;  // flat, in the step's shown shape
};

struct CheckStep {
  std::string id;
  Judge judge = Judge::Either;
  int checked = 0;
  int differ = 0;
  double max_abs_difference = 0;
};

// Why a document differs (check_why.cpp): a variant of the computation, run on the document's own
// inputs, that reproduces its differing values: a mistake of attn diagnose's catalogue, the printed
// steps rounded to their printed decimals before the next steps use them, or both.
struct WhyStep {
  std::string id;
  int differing = 0;  // the step's values that differ as attn computes them
  int explained = 0;  // of those, the ones the variant reproduces
  int broken = 0;     // the step's values that match as computed and differ under the variant
};
struct WhyVariant {
  Mistake mistake = Mistake::None;  // None: the rounding alone
  bool rounded = false;             // the printed steps rounded before the next steps use them
  std::string name;                 // "scale-missing", "rounded", "scale-missing + rounded"
  std::string condition;            // what completes "the document's weights match when …"
  int explained = 0, broken = 0;    // over every step
  std::vector<WhyStep> steps;       // the steps with differing values as computed or under the variant, in trace order
};
struct CheckWhy {
  int differing = 0;              // the report's differing values
  int tried = 0;                  // the variants that could run on this input
  std::vector<WhyVariant> best;   // those leaving the fewest values differing, equally good; empty: none reproduces any
  std::vector<WhyVariant> parts;  // where the best is a mistake with the rounding: each of the two alone, where it reproduces some
};

struct CheckReport {
  std::string title;
  std::optional<double> tolerance;  // expect.tolerance, when given
  int checked = 0, matches = 0, differences = 0;
  // Of the numbers printed beyond float32's precision whose last decimal is finer than float32's
  // spacing: some are not float32 numbers (a float64 document), or all are (a float32 one).
  bool float64_digits = false, float32_digits = false;
  std::vector<CheckStep> steps;         // in trace order
  std::vector<CheckEntry> differing;    // every printed entry outside its tolerance
  std::optional<CheckWhy> why;          // check_spec's, when some differ
};

// Throws InputError when the spec has no expect, names an unknown step, or has the wrong shape.
// `trace` is the float32 trace shown; `wide` the same run on the float64 backend (its steps'
// Tensor::wide values), or null to judge in float32 alone.
// `labels` false: the differing entries without their position's words (the why compares indices).
CheckReport check_trace(const Spec& spec, const Trace& trace, const Trace* wide = nullptr, bool labels = true);
// The traces attn check judges: the forward pass, or with printed gradients (grad.* ids, loss) in
// expect the backward pass too; on `backend` (what is shown) and on the float64 backend.
struct CheckTraces {
  Trace shown, wide;
};
// Whether expect holds gradients (grad.* ids, loss): the backward pass is then checked too.
bool prints_gradients(const Spec& spec);
// `options`: a variant's (check_why.cpp), a mistake of the pass that is run and the rounding.
CheckTraces traces_to_check(const Spec& spec, Backend& backend, const PipelineOptions& options = {});
// Both, and where some differ, why: the report attn check prints.
CheckReport check_spec(const Spec& spec, Backend& backend);
// The variants (check_why.cpp): each mistake of the pass the document printed (the backward pass's
// where it printed gradients) with and without the rounding, and the rounding alone, each run on
// `backend` and the float64 one and judged as `report` was.
CheckWhy why_differs(const Spec& spec, Backend& backend, const CheckReport& report);

// width: the display columns; a table wider than that gives each differing entry two lines.
void render_check_text(const CheckReport& report, std::ostream& out, int width = 80);
void render_check_json(const CheckReport& report, std::ostream& out);
// The report's why: text lines ("why: the document's weights match when …"), and its JSON object.
void render_why_text(const CheckWhy& why, std::ostream& out);
void render_why_json(const CheckWhy& why, std::ostream& out);

}  // namespace attn
