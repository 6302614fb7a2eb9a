// The typed step registry: every step a trace can hold, with its stable id and title, in the
// canonical pipeline order. Whatever needs the step order (the pipeline, diff, diagnose, sorting
// a directory of .npy files) reads it here. Formulas and notes live in pipeline/step_text.cpp.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace attn {

enum class StepId {
  X, Source, Positions, XPos, Qkv, Q, K, V, QView, QHeads, KView, KHeads, VView, VHeads, QNorm, KNorm, RopeCos, RopeSin, QRope, KRope, KPast, KCache, VPast, VCache, KRepeat, VRepeat, KT,
  Scores, Scaled, Alibi, RelBucket, RelBias, Biased, Capped, Mask, MaskAdd, Masked, Weights, Context, Merged, Output,
  // the backward pass (attn backward), in the order it computes them: from the loss back to the inputs
  Loss, GradOutput, GradWo, GradBo, GradMerged, GradContext, GradWeights, GradVRepeat, GradVHeads, GradMasked, GradCapped, GradBiased,
  GradScaled, GradScores, GradQRope, GradKRepeat, GradKRope, GradQHeads, GradKHeads, GradQ, GradK, GradV, GradQkv, GradWqkv, GradBqkv,
  GradWq, GradBq, GradWk, GradBk, GradWv, GradBv, GradX, GradSource,
};

struct StepInfo {
  StepId step;
  std::string_view id;     // stable: "q.heads", "weights"; keys text, JSON, goldens, check and diff
  std::string_view title;  // "Queries, heads first"
  bool relayout = false;   // the values of earlier steps moved, none computed (a view, a transpose)
};

const std::vector<StepInfo>& all_steps();  // in canonical pipeline order
const StepInfo& step_info(StepId step);
std::optional<StepId> step_from_id(std::string_view id);
// Position in the canonical order; ids that are no step come after every step.
std::size_t step_order(std::string_view id);

}  // namespace attn
