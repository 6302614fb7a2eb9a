// The words of a trace: each step's title, formula, symbolic dims and note, in one table keyed by
// step id, and the run's configuration header. Prose only: the numbers come from the forward pass.
#pragma once

#include <string>

#include "attn/core/config.hpp"
#include "attn/pipeline/mistakes.hpp"
#include "attn/core/spec.hpp"
#include "attn/core/steps.hpp"
#include "attn/core/trace.hpp"

namespace attn {

// What the words need that the spec alone does not say.
struct TextFacts {
  Scalar fill = 0;                  // the value blocked scores got
  bool mask_after_softmax = false;  // the mask-after-softmax mistake: no masked step
  std::int64_t empty_rows = 0;      // query rows with every key masked
  bool fused = false;               // --fused: the context from q, k and v in one pass, no [T, S] step
  Mistake mistake = Mistake::None;  // --mistake: the step the mistake changes says (and codes) what the student computed
};

struct StepText {
  std::string title, formula, note;
  Dims dims;  // full dims, before B / H are dropped for display
  ValueKind kind = ValueKind::Real;
};

StepText step_text(StepId step, const Spec& spec, const TraceConfig& config, const TextFacts& facts);
// The backward steps' words (backward_text.cpp); step_text hands them there. The title is the registry's unless set.
// Under a backward mistake, the step it changes says what was computed instead.
StepText backward_text(StepId step, const Spec& spec, const TraceConfig& config, Mistake mistake = Mistake::None);

// The header: sizes, scale (its factor and how it is written), entry point, labels, notes.
TraceConfig make_config(const Spec& spec);

}  // namespace attn
