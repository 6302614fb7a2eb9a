// The cross-check of one backend against another, and its report.
#include "attn/tools/cross_check.hpp"

#include <fmt/format.h>

#include "attn/numerics/backend.hpp"

namespace attn {

CrossCheck check_against(const Spec& spec, const Trace& trace, const std::string& backend, const std::string& reference,
                         const PipelineOptions& options, bool backward) {
  auto other = make_backend(reference);
  const auto ref = backward ? run_backward(spec, *other, options) : run_pipeline(spec, *other, options);
  return {backend, reference, diff_traces(loaded_from(ref, reference), loaded_from(trace, backend), kCrossCheckTolerance)};
}

void render_check_against_text(const CrossCheck& r, std::ostream& out) {
  out << fmt::format("\n{} against {}: largest |difference| per step (tolerance {} + {}·|{}|)\n", r.backend, r.reference,
                     kCrossCheckTolerance.atol, kCrossCheckTolerance.rtol, r.reference);
  for (const auto& d : r.diff.steps) {
    out << fmt::format("  {:<10} {:.3e}{}\n", d.id, d.max_abs, d.status == StepStatus::Same ? "" : "  DIFFERS");
  }
}

}  // namespace attn
