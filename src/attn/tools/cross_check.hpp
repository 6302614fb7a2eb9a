// --check-against: the same spec on a second backend, step by step, and how far apart the two are.
// Runs the pipeline; compares with compare.hpp's one comparison; reports as text.
#pragma once

#include <ostream>
#include <string>

#include "attn/tools/diff.hpp"
#include "attn/pipeline/pipeline.hpp"

namespace attn {

struct CrossCheck {
  std::string backend, reference;  // "cuda" checked against "cpu"
  DiffReport diff;                 // A = reference, B = backend
  bool same() const { return diff.same(); }
};

inline constexpr Tolerance kCrossCheckTolerance{1e-5, 1e-4};

// trace was computed by `backend`; runs the spec again on `reference` and compares every step
// (backward: attn backward's trace, the forward steps and every gradient).
CrossCheck check_against(const Spec& spec, const Trace& trace, const std::string& backend, const std::string& reference,
                         const PipelineOptions& options, bool backward = false);
void render_check_against_text(const CrossCheck& report, std::ostream& out);

}  // namespace attn
