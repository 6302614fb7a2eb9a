// FlashAttention-2's tiled backward pass over the trace's rows. Built with -ffp-contract=off, like
// flash.cpp: exp is attn's own (fixed_math.hpp), so the tiles hold the same bits everywhere.
#include "attn/pipeline/flash_backward.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "attn/core/error.hpp"
#include "attn/numerics/fixed_math.hpp"
#include "attn/pipeline/flash.hpp"

namespace attn {
namespace {

constexpr Scalar kNegInf = -std::numeric_limits<Scalar>::infinity();

const Step& need(const Trace& t, std::initializer_list<const char*> ids, const char* what) {
  for (const char* id : ids)
    if (const Step* s = t.find(id)) return *s;
  throw InputError(fmt::format("--flash: the trace has no {} (attn backward's steps) to compare the tiled backward with", what));
}

// Row (b, h, i) of the flat [B, H, T] rows.
std::size_t row_of(const FlashBackward& f, std::int64_t b, std::int64_t h, std::int64_t i) {
  return static_cast<std::size_t>((b * f.H + h) * f.T + i);
}

// What every tile reads: the logits as the forward tiles made them, the trace's q, k, v rows and dO.
struct TileInputs {
  const TileLogits& logit;
  const Step &q, &k, &v, &d_o;
};

// One block of keys in the making: where it is, its K and V rows, and its dK and dV sums (in double).
struct KeyBlock {
  FlashBackwardBlock blk;
  const Scalar* k = nullptr;  // [kn, hs]
  const Scalar* v = nullptr;  // [kn, hv]
  std::vector<double> dk, dv;
};

// L from the forward tiles (each row's last tile done: m + log l); D = rowsum(dO ⊙ O), in double.
void row_statistics(FlashBackward& f, const Flash& fwd, const Step& o, const Step& d_o) {
  const auto hv = f.hv;
  f.L.assign(static_cast<std::size_t>(f.B * f.H * f.T), -std::numeric_limits<double>::infinity());
  f.D.assign(static_cast<std::size_t>(f.B * f.H * f.T), 0);
  for (const auto& blk : fwd.blocks) {
    for (auto it = blk.tiles.rbegin(); it != blk.tiles.rend(); ++it) {
      if (it->skipped) continue;
      for (std::int64_t i = 0; i < blk.qn; ++i) {
        const auto r = static_cast<std::size_t>(i);
        f.L[row_of(f, blk.b, blk.h, blk.q0 + i)] = static_cast<double>(it->m[r]) + std::log(static_cast<double>(it->l[r]));
      }
      break;
    }
  }
  for (std::size_t r = 0; r < f.D.size(); ++r) {
    double d = 0;
    for (std::int64_t c = 0; c < hv; ++c) d += static_cast<double>(d_o.value.data()[r * hv + c]) * o.value.data()[r * hv + c];
    f.D[r] = d;
  }
}

// P = exp(S − L) for each entry of the tile, the weight recomputed from its row's log-sum-exp, and the
// slope dS takes through the soft-cap and the scale; false where every entry is masked.
bool tile_weights(const FlashBackward& f, const TileLogits& logit, const KeyBlock& kb, FlashBackwardTile& tile, std::vector<Scalar>& slope) {
  const auto b = kb.blk.b, h = kb.blk.h, k0 = kb.blk.k0, kn = kb.blk.kn, q0 = tile.q0, qn = tile.qn;
  bool any = false;
  for (std::int64_t i = 0; i < qn; ++i)
    for (std::int64_t j = 0; j < kn; ++j) {
      const auto e = static_cast<std::size_t>(i * kn + j);
      const Scalar x = logit(b, h, q0 + i, k0 + j, &slope[e]);
      if (x == kNegInf) continue;
      any = true;
      // P = exp(S − L): the weight, recomputed from the row's log-sum-exp
      const double d = static_cast<double>(x) - f.L[row_of(f, b, h, q0 + i)];
      tile.p[e] = d < -700 ? Scalar{0} : static_cast<Scalar>(fixed::exp(d));
    }
  return any;
}

// dP, dS for each entry of the tile, and their sums into dV, dK (the key block's) and dQ (the rows').
void tile_gradients(FlashBackward& f, const TileInputs& in, KeyBlock& kb, FlashBackwardTile& tile, const std::vector<Scalar>& slope) {
  const auto b = kb.blk.b, h = kb.blk.h, kn = kb.blk.kn, q0 = tile.q0, qn = tile.qn, hs = f.hs, hv = f.hv;
  for (std::int64_t i = 0; i < qn; ++i) {
    const Scalar* doi = in.d_o.value.data() + row_of(f, b, h, q0 + i) * hv;
    const Scalar* qi = in.q.value.data() + row_of(f, b, h, q0 + i) * hs;
    for (std::int64_t j = 0; j < kn; ++j) {
      const auto e = static_cast<std::size_t>(i * kn + j);
      // dP = dO Vᵀ; dS = P ⊙ (dP − D), then through the soft-cap and the scale (slope)
      double dp = 0;
      for (std::int64_t c = 0; c < hv; ++c) dp += static_cast<double>(doi[c]) * kb.v[j * hv + c];
      tile.dp[e] = static_cast<Scalar>(dp);
      tile.ds[e] = static_cast<Scalar>(static_cast<double>(tile.p[e]) * (dp - f.D[row_of(f, b, h, q0 + i)]) * slope[e]);
      // dV += Pᵀ dO; dK += dSᵀ Q; dQ += dS K
      for (std::int64_t c = 0; c < hv; ++c) kb.dv[static_cast<std::size_t>(j * hv + c)] += static_cast<double>(tile.p[e]) * doi[c];
      for (std::int64_t c = 0; c < hs; ++c) {
        kb.dk[static_cast<std::size_t>(j * hs + c)] += static_cast<double>(tile.ds[e]) * qi[c];
        f.dq[row_of(f, b, h, q0 + i) * hs + static_cast<std::size_t>(c)] += tile.ds[e] * kb.k[j * hs + c];
      }
    }
  }
}

// One tile: the key block's keys against queries q0 .. q0 + BQ − 1, skipped where every entry is masked.
FlashBackwardTile query_tile(FlashBackward& f, const TileInputs& in, KeyBlock& kb, std::int64_t q0) {
  FlashBackwardTile tile;
  tile.q0 = q0, tile.qn = std::min(f.BQ, f.T - q0);
  const auto n = static_cast<std::size_t>(tile.qn * kb.blk.kn);
  tile.p.assign(n, 0), tile.dp.assign(n, 0), tile.ds.assign(n, 0);
  std::vector<Scalar> slope(n, 0);
  if (!tile_weights(f, in.logit, kb, tile, slope)) {
    tile.skipped = true;
    ++f.tiles_skipped;
    return tile;
  }
  ++f.tiles_done;
  tile_gradients(f, in, kb, tile, slope);
  return tile;
}

// The comparison with the materialised backward: relative to max(1, |value|). A key block's dK and dV:
void compare_key_block(FlashBackward& f, const FlashBackwardBlock& blk, const Step& dk_ref, const Step& dv_ref) {
  const auto H = f.H, S = f.S, hs = f.hs, hv = f.hv, b = blk.b, h = blk.h, k0 = blk.k0;
  for (std::int64_t j = 0; j < blk.kn; ++j) {
    for (std::int64_t c = 0; c < hs; ++c) {
      const Scalar ref = dk_ref.value.data()[((b * H + h) * S + k0 + j) * hs + c];
      f.max_diff = std::max(f.max_diff, std::fabs(static_cast<double>(ref) - blk.dk[static_cast<std::size_t>(j * hs + c)]) /
                                            std::max(1.0, std::fabs(static_cast<double>(ref))));
    }
    for (std::int64_t c = 0; c < hv; ++c) {
      const Scalar ref = dv_ref.value.data()[((b * H + h) * S + k0 + j) * hv + c];
      f.max_diff = std::max(f.max_diff, std::fabs(static_cast<double>(ref) - blk.dv[static_cast<std::size_t>(j * hv + c)]) /
                                            std::max(1.0, std::fabs(static_cast<double>(ref))));
    }
  }
}
// and dQ, once every key block has added to it.
void compare_dq(FlashBackward& f, const Step& dq_ref) {
  for (std::size_t e = 0; e < f.dq.size(); ++e) {
    const double ref = dq_ref.value.data()[e];
    f.max_diff = std::max(f.max_diff, std::fabs(ref - f.dq[e]) / std::max(1.0, std::fabs(ref)));
  }
}

// Keys k0 .. k0 + BK − 1 of batch row b, head h, against every block of queries: their tiles, dK and dV.
FlashBackwardBlock key_block(FlashBackward& f, const TileInputs& in, std::int64_t b, std::int64_t h, std::int64_t k0) {
  KeyBlock kb;
  kb.blk.b = b, kb.blk.h = h, kb.blk.k0 = k0, kb.blk.kn = std::min(f.BK, f.S - k0);
  const auto kn = kb.blk.kn;
  kb.dk.assign(static_cast<std::size_t>(kn * f.hs), 0.0), kb.dv.assign(static_cast<std::size_t>(kn * f.hv), 0.0);
  kb.k = in.k.value.data() + ((b * f.H + h) * f.S + k0) * f.hs;
  kb.v = in.v.value.data() + ((b * f.H + h) * f.S + k0) * f.hv;
  for (std::int64_t q0 = 0; q0 < f.T; q0 += f.BQ) kb.blk.tiles.push_back(query_tile(f, in, kb, q0));
  kb.blk.dk.assign(kb.dk.begin(), kb.dk.end());
  kb.blk.dv.assign(kb.dv.begin(), kb.dv.end());
  return std::move(kb.blk);
}

}  // namespace

FlashBackward run_flash_backward(const Spec& s, const Trace& t, std::int64_t BQ, std::int64_t BK) {
  // the forward pass's tiles give each row's log-sum-exp L = m + log l
  const Flash fwd = run_flash(s, t, BQ, BK);
  const TileLogits logit(s, t);
  const Step& q = logit.q();
  const Step& k = logit.k();
  const Step& v = rows_of(t, {"v.repeat", "v.heads", "v"}, "values");
  const Step& o = need(t, {"context"}, "context");
  const Step& d_o = need(t, {"grad.context", "grad.output"}, "gradient of the context");
  const Step& dq_ref = need(t, {"grad.q.rope", "grad.q.heads", "grad.q"}, "gradient of the queries");
  const Step& dk_ref = need(t, {"grad.k.repeat", "grad.k.rope", "grad.k.heads", "grad.k"}, "gradient of the keys");
  const Step& dv_ref = need(t, {"grad.v.repeat", "grad.v.heads", "grad.v"}, "gradient of the values");
  const TileInputs in{logit, q, k, v, d_o};
  FlashBackward f;
  f.BQ = BQ, f.BK = BK, f.B = s.B, f.H = s.H, f.T = s.T, f.S = s.S, f.hs = s.hs(), f.hv = s.hv();
  f.dq_id = dq_ref.id, f.dk_id = dk_ref.id, f.dv_id = dv_ref.id;

  // 1. L and D per row
  row_statistics(f, fwd, o, d_o);
  // 2. for each key block, every query block's tile, then the block's dK and dV compared
  f.dq.assign(static_cast<std::size_t>(f.B * f.H * f.T * f.hs), 0);
  for (std::int64_t b = 0; b < f.B; ++b)
    for (std::int64_t h = 0; h < f.H; ++h)
      for (std::int64_t k0 = 0; k0 < f.S; k0 += BK) {
        f.blocks.push_back(key_block(f, in, b, h, k0));
        compare_key_block(f, f.blocks.back(), dk_ref, dv_ref);
      }
  // 3. dQ compared, once every key block has added to it
  compare_dq(f, dq_ref);
  return f;
}

}  // namespace attn
