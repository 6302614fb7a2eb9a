// attn backward --flash BQxBK: FlashAttention-2's backward pass (Dao, 2023), every tile kept for
// render/flash_backward_text.cpp to show. It reads the trace's q, k and v rows (rotated, repeated),
// the context O and its gradient dO, and the row log-sum-exp L = m + log l that the tiled forward pass
// (flash.hpp) ends with; it never holds the [T, S] weights. Per head: D = rowsum(dO ⊙ O); then for
// each block of BK keys (dK and dV kept for it), for each block of BQ queries: S recomputed as the
// forward pass did, P = exp(S − L), dV += Pᵀ dO, dP = dO Vᵀ, dS = P ⊙ (dP − D), back through the
// soft-cap and the scale, dQ += dS K, dK += dSᵀ Q. It ends by comparing dQ, dK and dV with the
// materialised backward's steps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attn/core/spec.hpp"
#include "attn/core/trace.hpp"

namespace attn {

struct FlashBackwardTile {
  std::int64_t q0 = 0, qn = 0;     // queries q0 .. q0 + qn − 1
  bool skipped = false;            // every entry masked: no work
  std::vector<Scalar> p, dp, ds;   // [qn, kn]: P = exp(S − L), dP = dO Vᵀ, dS (with respect to the scores)
};

struct FlashBackwardBlock {
  std::int64_t b = 0, h = 0, k0 = 0, kn = 0;  // keys k0 .. k0 + kn − 1 of batch row b, head h
  std::vector<FlashBackwardTile> tiles;        // one per query block
  std::vector<Scalar> dk, dv;                  // [kn, hs], [kn, hv] once every query block is done
};

struct FlashBackward {
  std::int64_t BQ = 0, BK = 0, B = 1, H = 1, T = 0, S = 0, hs = 0, hv = 0;
  std::vector<double> L, D;                    // [B, H, T]: the forward pass's row log-sum-exp, rowsum(dO ⊙ O) (kept in double:
                                               // a float L of a row with large scores would round P = exp(S − L) by its ulp)
  std::vector<FlashBackwardBlock> blocks;      // every (b, h, key block), in that order
  std::vector<Scalar> dq;                      // [B, H, T, hs], accumulated over the key blocks
  std::string dq_id, dk_id, dv_id;             // the materialised steps compared: grad.q.heads, grad.k.repeat, ...
  double max_diff = 0;                         // largest |tiled − materialised| over dQ, dK, dV, relative to max(1, |value|)
  std::int64_t tiles_done = 0, tiles_skipped = 0;
  static constexpr double kTolerance = 1e-5;   // on max_diff: the tiled backward gives the materialised gradients
  bool agrees() const { return max_diff <= kTolerance; }
};

// InputError where the trace has no backward steps to compare with, or no q, k and v to tile.
FlashBackward run_flash_backward(const Spec& spec, const Trace& trace, std::int64_t BQ, std::int64_t BK);

}  // namespace attn
