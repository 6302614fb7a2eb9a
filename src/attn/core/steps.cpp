// The step registry's one table.
#include "attn/core/steps.hpp"

#include <algorithm>

namespace attn {

const std::vector<StepInfo>& all_steps() {
  static const std::vector<StepInfo> kSteps = {
      {StepId::X, "x", "Input embeddings"},
      {StepId::Source, "source", "Source embeddings"},
      {StepId::Positions, "positions", "Positional encodings"},
      {StepId::XPos, "x.pos", "Embeddings plus positions"},
      {StepId::Qkv, "qkv", "Fused projection"},
      {StepId::Q, "q", "Queries"},
      {StepId::K, "k", "Keys"},
      {StepId::V, "v", "Values"},
      {StepId::QView, "q.view", "Queries split into heads", true},
      {StepId::QHeads, "q.heads", "Queries, heads first", true},
      {StepId::KView, "k.view", "Keys split into heads", true},
      {StepId::KHeads, "k.heads", "Keys, heads first", true},
      {StepId::VView, "v.view", "Values split into heads", true},
      {StepId::VHeads, "v.heads", "Values, heads first", true},
      {StepId::QNorm, "q.norm", "Queries normalised per head"},
      {StepId::KNorm, "k.norm", "Keys normalised per head"},
      {StepId::RopeCos, "rope.cos", "Rotary cosines"},
      {StepId::RopeSin, "rope.sin", "Rotary sines"},
      {StepId::QRope, "q.rope", "Queries rotated"},
      {StepId::KRope, "k.rope", "Keys rotated"},
      {StepId::KPast, "k.past", "Key cache before the append", true},
      {StepId::KCache, "k.cache", "Key cache after the append"},
      {StepId::VPast, "v.past", "Value cache before the append", true},
      {StepId::VCache, "v.cache", "Value cache after the append"},
      {StepId::KRepeat, "k.repeat", "Key heads repeated", true},
      {StepId::VRepeat, "v.repeat", "Value heads repeated", true},
      {StepId::KT, "k.T", "Keys transposed", true},
      {StepId::Scores, "scores", "Attention scores"},
      {StepId::Scaled, "scaled", "Scaled scores"},
      {StepId::Alibi, "alibi", "ALiBi bias"},
      {StepId::RelBucket, "rel.bucket", "Relative position buckets"},
      {StepId::RelBias, "rel.bias", "Relative position bias"},
      {StepId::Biased, "biased", "Scores with the ALiBi bias"},
      {StepId::Capped, "capped", "Soft-capped scores"},
      {StepId::Mask, "mask", "Mask"},
      {StepId::MaskAdd, "mask.add", "Additive mask"},
      {StepId::Masked, "masked", "Masked scores"},
      {StepId::Weights, "weights", "Attention weights"},
      {StepId::Context, "context", "Context vectors"},
      {StepId::Merged, "merged", "Heads merged", true},
      {StepId::Output, "output", "Output projection"},
      {StepId::Loss, "loss", "Loss"},
      {StepId::GradOutput, "grad.output", "Gradient of the output"},
      {StepId::GradWo, "grad.W_o", "Gradient of W_o"},
      {StepId::GradBo, "grad.b_o", "Gradient of b_o"},
      {StepId::GradMerged, "grad.merged", "Gradient of the merged heads"},
      {StepId::GradContext, "grad.context", "Gradient of the context vectors"},
      {StepId::GradWeights, "grad.weights", "Gradient of the attention weights"},
      {StepId::GradVRepeat, "grad.v.repeat", "Gradient of the repeated value heads"},
      {StepId::GradVHeads, "grad.v.heads", "Gradient of the values, heads first"},
      {StepId::GradMasked, "grad.masked", "Gradient through the softmax"},
      {StepId::GradCapped, "grad.capped", "Gradient of the soft-capped scores"},
      {StepId::GradBiased, "grad.biased", "Gradient of the biased scores"},
      {StepId::GradScaled, "grad.scaled", "Gradient of the scaled scores"},
      {StepId::GradScores, "grad.scores", "Gradient of the scores"},
      {StepId::GradQRope, "grad.q.rope", "Gradient of the rotated queries"},
      {StepId::GradKRepeat, "grad.k.repeat", "Gradient of the repeated key heads"},
      {StepId::GradKRope, "grad.k.rope", "Gradient of the rotated keys"},
      {StepId::GradQHeads, "grad.q.heads", "Gradient of the queries, heads first"},
      {StepId::GradKHeads, "grad.k.heads", "Gradient of the keys, heads first"},
      {StepId::GradQ, "grad.q", "Gradient of the queries"},
      {StepId::GradK, "grad.k", "Gradient of the keys"},
      {StepId::GradV, "grad.v", "Gradient of the values"},
      {StepId::GradQkv, "grad.qkv", "Gradient of the fused projection"},
      {StepId::GradWqkv, "grad.W_qkv", "Gradient of W_qkv"},
      {StepId::GradBqkv, "grad.b_qkv", "Gradient of b_qkv"},
      {StepId::GradWq, "grad.W_q", "Gradient of W_q"},
      {StepId::GradBq, "grad.b_q", "Gradient of b_q"},
      {StepId::GradWk, "grad.W_k", "Gradient of W_k"},
      {StepId::GradBk, "grad.b_k", "Gradient of b_k"},
      {StepId::GradWv, "grad.W_v", "Gradient of W_v"},
      {StepId::GradBv, "grad.b_v", "Gradient of b_v"},
      {StepId::GradX, "grad.x", "Gradient of the embeddings"},
      {StepId::GradSource, "grad.source", "Gradient of the source"},
  };
  return kSteps;
}

const StepInfo& step_info(StepId step) { return all_steps()[static_cast<std::size_t>(step)]; }

std::optional<StepId> step_from_id(std::string_view id) {
  for (const auto& s : all_steps())
    if (s.id == id) return s.step;
  return std::nullopt;
}

std::size_t step_order(std::string_view id) {
  const auto& all = all_steps();
  return static_cast<std::size_t>(std::find_if(all.begin(), all.end(), [&](const StepInfo& s) { return s.id == id; }) - all.begin());
}

}  // namespace attn
