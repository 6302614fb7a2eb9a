// --flash BQxBK: FlashAttention's tiled forward pass (Dao et al., 2022), every tile kept for
// render/flash_text.cpp to show. Each block of BQ queries walks the keys BK at a time, keeping only a
// running row max m, a running row sum l and an output accumulator; the [T, S] scores and weights are
// never held. It reads the trace's q, k and v rows (rotated, repeated), recomputes each score tile
// with the trace's scale, ALiBi, capping and mask, and ends by comparing its output with the trace's
// materialised context.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "attn/pipeline/pipeline.hpp"
#include "attn/core/spec.hpp"
#include "attn/core/trace.hpp"

namespace attn {

struct FlashTile {
  std::int64_t k0 = 0, kn = 0;       // keys k0 .. k0 + kn − 1
  bool skipped = false;              // every entry masked: no work (FlashAttention skips such tiles)
  std::vector<Scalar> scores;        // [qn, kn]: scaled (biased, capped) and masked
  std::vector<Scalar> m_old, m, rescale, l;  // [qn]
  std::vector<Scalar> acc;           // [qn, hv]
};

struct FlashBlock {
  std::int64_t b = 0, h = 0, q0 = 0, qn = 0;  // queries q0 .. q0 + qn − 1 of batch row b, head h
  std::vector<FlashTile> tiles;
  std::vector<Scalar> out;           // [qn, hv]: acc / l
};

struct Flash {
  std::int64_t BQ = 0, BK = 0, B = 1, H = 1, T = 0, S = 0, hs = 0, hv = 0;
  std::vector<FlashBlock> blocks;    // every (b, h, query block), in that order
  double max_diff = 0;               // largest |flash − context|
  std::int64_t tiles_done = 0, tiles_skipped = 0;
  static constexpr double kTolerance = 1e-5;  // on max_diff: the tiled pass gives the materialised context
  bool agrees() const { return max_diff <= kTolerance; }
};

// The logit of query i and key j in batch row b, head h, one entry at a time, with the trace's
// arithmetic: q·k (in double, rounded once), then the scale, ALiBi's or T5's bias, the soft-cap, an
// additive mask and the mask's fill. The rows are the trace's q and k (rotated, repeated).
class TileLogits {
 public:
  TileLogits(const Spec& s, const Trace& t, Door door = Door::Cli);
  // slope (when given): d logit / d (q·k), the scale times the soft-cap's 1 − tanh² (0 where masked)
  Scalar operator()(std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t j, Scalar* slope = nullptr) const;
  const Step& q() const { return *q_; }
  const Step& k() const { return *k_; }

 private:
  const Spec& s_;
  const Step *q_, *k_, *mask_;
  bool mask_per_batch_;
  Scalar scale_, fill_;
};

// The first of the ids the trace has: the rows the scores or the context read (--flash's message names what).
const Step& rows_of(const Trace& t, std::initializer_list<const char*> ids, const char* what, Door door = Door::Cli);

// "2x3" -> {2, 3}; InputError naming the option (as door spells it) otherwise.
std::pair<std::int64_t, std::int64_t> parse_tile_sizes(const std::string& text, Door door = Door::Cli);
// The tiled pass tiles a plain forward trace: InputError for a fused one (no scores kept) or one
// under a mistake, naming the options as o.door spells them.
void require_tileable(const PipelineOptions& o);
// InputError when the trace has no q, k and v to tile (given scores, no values) or BQ, BK < 1.
Flash run_flash(const Spec& spec, const Trace& trace, std::int64_t BQ, std::int64_t BK, Door door = Door::Cli);

}  // namespace attn
