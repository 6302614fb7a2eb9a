// attn heads over a long input: each layer's attention weights made a block of query rows at a time,
// handed to whoever reads them (the summaries, the pooled grids, a kept head) and dropped, so nothing
// T × S per head outlives its block. The layers themselves are residual.hpp's; this file only reads
// their weights. Legend: B batch, T query length, S key length, H heads.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attn/core/spec.hpp"
#include "attn/core/tensor.hpp"
#include "attn/model/architectures/checkpoint.hpp"
#include "attn/model/tools/heads.hpp"

namespace attn::model {

// One block of a layer's weights as it is made: query rows [i0, i1) of every head over the layer's S
// keys (B = 1), row (h, i) at row(h, i), its first `cols` keys stored: a causal block's are the keys
// up to its last row (cols = i1), those after them zero and not stored; otherwise cols = S.
struct WeightRows {
  std::int64_t layer = 0, i0 = 0, i1 = 0, H = 0, S = 0, cols = 0;
  const float* w = nullptr;  // (H, i1 − i0, cols)
  const float* row(std::int64_t h, std::int64_t i) const { return w + (h * (i1 - i0) + (i - i0)) * cols; }
};
// Called with each block of each layer, layers in order, a layer's blocks in query order.
using WeightRowsHook = std::function<void(const WeightRows&)>;

// [#43 rollout, ablation] What attn heads' --rollout and --ablate add to its pass over the layers,
// each optional: each block of a layer's weights as it is made (rollout.hpp, beside the summaries);
// each layer's attention output (1, T, C) edited before the residual addition, given its Spec and its
// heads' context vectors (1, H, T, hv) (ablation.hpp); the stream after the last layer, its MLP run
// too, for the next-token loss.
struct LayerHooks {
  WeightRowsHook rows;
  std::function<void(std::int64_t layer, const Spec& s, const Tensor& context, Tensor& output)> output;
  std::function<void(const Checkpoint& ckpt, const std::vector<std::int64_t>& ids, const Tensor& h)> stream;
  std::string option;  // the option that asked ("--rollout"), for refusals
  bool any() const { return rows || output || stream; }
};

// attn heads' per-layer loop: the residual stream run layer by layer (as attn run runs it, the same
// bits), each layer's attention weights made in blocks of query rows and handed to `each` (and to
// hooks.rows), then dropped; hooks.output edits a layer's attention output, hooks.stream reads the
// last. block_rows: query rows a block (0: as many as keep a block near 64 MB).
void stream_layer_weights(const Checkpoint& ckpt, const std::vector<std::int64_t>& ids, const std::vector<std::int64_t>& types,
                          const std::vector<std::string>& tokens, const WeightRowsHook& each, std::int64_t block_rows = 0,
                          const LayerHooks& hooks = {});

// What attn heads keeps of the weights: all of them (up to T = kKeepWeightsUpTo, or when asked), else
// each head's map pooled to at most kGridSide cells a side.
inline constexpr std::int64_t kKeepWeightsUpTo = 256;
inline constexpr std::int64_t kGridSide = 128;
inline constexpr double kBlockBytes = 64.0 * 1024 * 1024;  // a block of weights, all heads: about this
struct HeadsKeep {
  bool weights = false;  // --weights: every weight, whatever T
  std::int64_t block_rows = 0;  // query rows a block (0: the default); for tests
  std::int64_t keep_up_to = kKeepWeightsUpTo, grid_side = kGridSide;  // for tests: pooling at small T
  std::int64_t head_layer = -1, head = -1;  // --head LlHh: this one head's whole map, every weight, at any T
  std::string head_name;                    // --head as given ("L3H7"), before it is checked against the model
};

// --head "L3H7" (or "L3h7"): the layer and head, checked against the model's (exit 2 naming the range).
std::pair<std::int64_t, std::int64_t> parse_head_name(const std::string& text, std::int64_t layers, std::int64_t heads);

// --head: one head of a streamed view as a view of its own (1 layer × 1 head, every weight kept, its
// summary), for the renderers; its title names the head.
HeadsView one_head_view(const HeadsView& all, const HeadsKeep& keep);

// Every layer's heads of a decoder or an encoder, streamed: the summaries from every weight, the
// weights kept or pooled as `keep` says (HeadsView::pool), with --rollout's or --ablate's hooks.
HeadsView checkpoint_heads(const Checkpoint& ckpt, const std::vector<std::int64_t>& ids, const std::vector<std::int64_t>& types,
                           const std::vector<std::string>& tokens, const HeadsKeep& keep, const LayerHooks& hooks = {});

}  // namespace attn::model
