// Attention rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers"): which input
// tokens each position draws on through the whole stack. Each layer's heads are combined into one
// T × T map, the residual added as the identity, rows renormalised, and the layers multiplied from the
// first. Arithmetic only, accumulated layer by layer (no layer's heads are kept); render/rollout_*.cpp
// draws it, tools/explain_rollout.cpp says it in words. Legend: T tokens, H heads, L layers.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace attn::model {

// How a layer's heads become one map: their mean (the paper's), or the largest or smallest weight of
// any head at each (query, key).
enum class RolloutHeads { Mean, Max, Min };
const char* rollout_heads_name(RolloutHeads c);  // "mean", "max", "min"

struct Rollout {
  RolloutHeads combine = RolloutHeads::Mean;
  std::int64_t layers = 0, T = 0;
  bool causal = true;                 // a decoder (rows see only earlier tokens); false: an encoder (for the drawing; set by the caller)
  std::string model;                  // the model's description, for the drawing's caption (set by the caller)
  std::vector<float> maps;            // [L, T, T] the rollout after layer l: row i, query i's shares of the input tokens (each row sums to 1)
  std::vector<double> kept;           // [L] mean over queries of the rolled-out weight on the query's own input token
  std::vector<double> residual;       // [L] mean over queries of Ã_l's diagonal: the share the layer leaves in place (0.5 + half the heads' weight on the token itself, for the mean)
  std::int64_t query = 0;             // the query whose input tokens the views list (--rollout-query; default the last)
  float at(std::int64_t l, std::int64_t i, std::int64_t j) const { return maps[static_cast<std::size_t>((l * T + i) * T + j)]; }
};

// The running product, fed one layer's weights at a time.
class RolloutAccumulator {
 public:
  RolloutAccumulator(RolloutHeads combine, std::int64_t T);
  // One layer's attention weights (H, T, T), row-major, layer after layer from the first.
  void add_layer(const float* weights, std::int64_t H);
  // The same a block of query rows at a time (attn heads' streamed layers): rows [i0, i1) of every
  // head over their first `cols` keys, (H, i1 − i0, cols), the later keys' weights zero (a causal
  // block's; −1: all T); a layer's blocks in order, the layer done with its last row.
  void add_rows(const float* weights, std::int64_t H, std::int64_t i0, std::int64_t i1, std::int64_t cols = -1);
  // The rollout so far (every layer added), query set to `query`.
  Rollout finish(std::int64_t query) &&;

 private:
  Rollout r_;
  void finish_layer();
  std::vector<double> product_;  // (T, T) the rollout after the last layer added
  std::vector<double> pending_;  // (T, T) the layer being added: Ã's rows so far
};

// The k input tokens query q draws on most after layer l, largest share first (ties: the earlier
// position): (position, share).
std::vector<std::pair<std::int64_t, double>> rollout_top(const Rollout& r, std::int64_t l, std::int64_t q, std::int64_t k);

// --rollout-query's value: a position "N" (0 .. T − 1), or a token's text as the tokens line shows it
// ("milk", "␣milk", or "milk₂" for its second occurrence). InputError (naming `option`) for a position
// out of range, a token not in the input, or one that occurs more than once without its subscript.
std::int64_t rollout_query(const std::string& value, const std::vector<std::string>& labels, const std::string& option);

}  // namespace attn::model
