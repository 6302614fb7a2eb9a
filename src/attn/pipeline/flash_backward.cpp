// FlashAttention-2's tiled backward pass over the trace's rows. Built with -ffp-contract=off, like
// flash.cpp: exp is attn's own (fixed_math.hpp), so the tiles hold the same bits everywhere.
#include "attn/pipeline/flash_backward.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "attn/core/bytes.hpp"
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
  FlashBackward f;
  f.BQ = BQ, f.BK = BK, f.B = s.B, f.H = s.H, f.T = s.T, f.S = s.S, f.hs = s.hs(), f.hv = s.hv();
  f.dq_id = dq_ref.id, f.dk_id = dk_ref.id, f.dv_id = dv_ref.id;
  const auto B = f.B, H = f.H, T = f.T, S = f.S, hs = f.hs, hv = f.hv;
  const auto row = [&](std::int64_t b, std::int64_t h, std::int64_t i) { return static_cast<std::size_t>((b * H + h) * T + i); };

  // L from the forward tiles; D = rowsum(dO ⊙ O), in double
  f.L.assign(static_cast<std::size_t>(B * H * T), -std::numeric_limits<double>::infinity());
  f.D.assign(static_cast<std::size_t>(B * H * T), 0);
  for (const auto& blk : fwd.blocks) {
    for (auto it = blk.tiles.rbegin(); it != blk.tiles.rend(); ++it) {
      if (it->skipped) continue;
      for (std::int64_t i = 0; i < blk.qn; ++i) {
        const auto r = static_cast<std::size_t>(i);
        f.L[row(blk.b, blk.h, blk.q0 + i)] = static_cast<double>(it->m[r]) + std::log(static_cast<double>(it->l[r]));
      }
      break;
    }
  }
  for (std::size_t r = 0; r < f.D.size(); ++r) {
    double d = 0;
    for (std::int64_t c = 0; c < hv; ++c) d += static_cast<double>(d_o.value.data()[r * hv + c]) * o.value.data()[r * hv + c];
    f.D[r] = d;
  }

  f.dq.assign(static_cast<std::size_t>(B * H * T * hs), 0);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t k0 = 0; k0 < S; k0 += BK) {
        FlashBackwardBlock blk;
        blk.b = b, blk.h = h, blk.k0 = k0, blk.kn = std::min(BK, S - k0);
        const auto kn = blk.kn;
        std::vector<double> dk(static_cast<std::size_t>(kn * hs), 0.0), dv(static_cast<std::size_t>(kn * hv), 0.0);
        const Scalar* kv_k = k.value.data() + ((b * H + h) * S + k0) * hs;
        const Scalar* kv_v = v.value.data() + ((b * H + h) * S + k0) * hv;
        for (std::int64_t q0 = 0; q0 < T; q0 += BQ) {
          FlashBackwardTile tile;
          tile.q0 = q0, tile.qn = std::min(BQ, T - q0);
          const auto qn = tile.qn;
          const auto n = static_cast<std::size_t>(qn * kn);
          tile.p.assign(n, 0), tile.dp.assign(n, 0), tile.ds.assign(n, 0);
          bool any = false;
          std::vector<Scalar> slope(n, 0);
          for (std::int64_t i = 0; i < qn; ++i)
            for (std::int64_t j = 0; j < kn; ++j) {
              const auto e = static_cast<std::size_t>(i * kn + j);
              const Scalar x = logit(b, h, q0 + i, k0 + j, &slope[e]);
              if (x == kNegInf) continue;
              any = true;
              // P = exp(S − L): the weight, recomputed from the row's log-sum-exp
              const double d = static_cast<double>(x) - f.L[row(b, h, q0 + i)];
              tile.p[e] = d < -700 ? Scalar{0} : static_cast<Scalar>(fixed::exp(d));
            }
          if (!any) {
            tile.skipped = true;
            ++f.tiles_skipped;
            blk.tiles.push_back(std::move(tile));
            continue;
          }
          ++f.tiles_done;
          for (std::int64_t i = 0; i < qn; ++i) {
            const Scalar* doi = d_o.value.data() + row(b, h, q0 + i) * hv;
            const Scalar* qi = q.value.data() + row(b, h, q0 + i) * hs;
            for (std::int64_t j = 0; j < kn; ++j) {
              const auto e = static_cast<std::size_t>(i * kn + j);
              // dP = dO Vᵀ; dS = P ⊙ (dP − D), then through the soft-cap and the scale (slope)
              double dp = 0;
              for (std::int64_t c = 0; c < hv; ++c) dp += static_cast<double>(doi[c]) * kv_v[j * hv + c];
              tile.dp[e] = static_cast<Scalar>(dp);
              tile.ds[e] = static_cast<Scalar>(static_cast<double>(tile.p[e]) * (dp - f.D[row(b, h, q0 + i)]) * slope[e]);
              // dV += Pᵀ dO; dK += dSᵀ Q; dQ += dS K
              for (std::int64_t c = 0; c < hv; ++c) dv[static_cast<std::size_t>(j * hv + c)] += static_cast<double>(tile.p[e]) * doi[c];
              for (std::int64_t c = 0; c < hs; ++c) {
                dk[static_cast<std::size_t>(j * hs + c)] += static_cast<double>(tile.ds[e]) * qi[c];
                f.dq[row(b, h, q0 + i) * hs + static_cast<std::size_t>(c)] += tile.ds[e] * kv_k[j * hs + c];
              }
            }
          }
          blk.tiles.push_back(std::move(tile));
        }
        blk.dk.assign(dk.begin(), dk.end());
        blk.dv.assign(dv.begin(), dv.end());
        // the comparison with the materialised backward: relative to max(1, |value|)
        for (std::int64_t j = 0; j < kn; ++j) {
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
        f.blocks.push_back(std::move(blk));
      }
  for (std::size_t e = 0; e < f.dq.size(); ++e) {
    const double ref = dq_ref.value.data()[e];
    f.max_diff = std::max(f.max_diff, std::fabs(ref - f.dq[e]) / std::max(1.0, std::fabs(ref)));
  }
  return f;
}

void render_flash_backward_text(const FlashBackward& f, const Trace& t, std::ostream& out, const TextOptions& o) {
  const TileView view(t, o);
  const auto& c = t.config;
  const std::int64_t b = view.b, h = view.h;
  const auto qtok = [&](std::int64_t i) { return view.query(i); };
  const auto ktok = [&](std::int64_t j) { return view.key(j); };
  const auto width = view.width;
  std::size_t label_w = view.label_w;  // the keys label rows here too (dK, dV)
  for (std::int64_t j = 0; j < f.S; ++j) label_w = std::max(label_w, cells(ktok(j)));
  // rows of n numbers (v[i·n + k]) labelled by label(i), columns headed when heads are given
  const auto table = [&](std::int64_t rows, const std::vector<Scalar>& v, std::size_t n, auto label, const std::vector<std::string>& heads) {
    return tile_table(rows, v, 0, n, label, heads, label_w, width, o);
  };
  out << fmt::format("\n══ FlashAttention-2's tiled backward pass: tiles of BQ = {} quer{} × BK = {} key{} ══\n", f.BQ, f.BQ == 1 ? "y" : "ies", f.BK,
                     f.BK == 1 ? "" : "s");
  out << "saved by the forward pass: O (the context) and, per query row, L = m + log l\n"
         "  (the tiled forward pass's last m and l)\n"
         "once per query row: D = rowsum(dO ⊙ O), dO the context's gradient\n"
         "then for each block of keys (its dK and dV start at 0), for each block of queries:\n"
         "  S = the tile's scores, recomputed as the forward pass did\n"
         "  P = exp(S − L): the weights, recomputed, never stored\n"
         "  dV += Pᵀ dO;  dP = dO Vᵀ\n"
         "  dS = P ⊙ (dP − D), times the soft-cap's slope and the scale: the scores' gradient\n"
         "  dQ += dS K (summed across the key blocks);  dK += dSᵀ Q\n";
  out << fmt::format("shown: {}head {} (--batch, --head choose another)\n", c.batched ? fmt::format("batch row {}, ", b) : "", h);
  std::vector<Scalar> lr;  // L and D side by side
  for (std::int64_t i = 0; i < f.T; ++i) {
    lr.push_back(static_cast<Scalar>(f.L[static_cast<std::size_t>((b * f.H + h) * f.T + i)]));
    lr.push_back(static_cast<Scalar>(f.D[static_cast<std::size_t>((b * f.H + h) * f.T + i)]));
  }
  out << "  L and D per query row\n" << table(f.T, lr, 2, qtok, {"L", "D"});
  for (const auto& blk : f.blocks) {
    if (blk.b != b || blk.h != h) continue;
    out << (blk.kn == 1 ? fmt::format("\n── key {} (\"{}\") ──\n", blk.k0, ktok(blk.k0))
                        : fmt::format("\n── keys {} .. {} (\"{}\" .. \"{}\") ──\n", blk.k0, blk.k0 + blk.kn - 1, ktok(blk.k0), ktok(blk.k0 + blk.kn - 1)));
    std::vector<std::string> keys;
    for (std::int64_t j = 0; j < blk.kn; ++j) keys.push_back(ktok(blk.k0 + j));
    for (const auto& tile : blk.tiles) {
      out << (tile.qn == 1 ? fmt::format("  tile: query {} (\"{}\")", tile.q0, qtok(tile.q0))
                           : fmt::format("  tile: queries {} .. {} (\"{}\" .. \"{}\")", tile.q0, tile.q0 + tile.qn - 1, qtok(tile.q0), qtok(tile.q0 + tile.qn - 1)));
      if (tile.skipped) {
        out << ": every entry masked, skipped\n";
        continue;
      }
      const auto lab = [&](std::int64_t i) { return qtok(tile.q0 + i); };
      const auto n = static_cast<std::size_t>(blk.kn);
      out << fmt::format("\n    P = exp(S − L) [{}, {}]\n", tile.qn, blk.kn) << table(tile.qn, tile.p, n, lab, keys);
      out << fmt::format("    dP = dO Vᵀ [{}, {}]\n", tile.qn, blk.kn) << table(tile.qn, tile.dp, n, lab, keys);
      out << fmt::format("    dS [{}, {}]\n", tile.qn, blk.kn) << table(tile.qn, tile.ds, n, lab, keys);
    }
    const auto klab = [&](std::int64_t j) { return ktok(blk.k0 + j); };
    out << fmt::format("  dK [{}, {}] ({})\n", blk.kn, f.hs, f.dk_id) << table(blk.kn, blk.dk, static_cast<std::size_t>(f.hs), klab, {});
    out << fmt::format("  dV [{}, {}] ({})\n", blk.kn, f.hv, f.dv_id) << table(blk.kn, blk.dv, static_cast<std::size_t>(f.hv), klab, {});
  }
  std::vector<Scalar> dq(f.dq.begin() + (b * f.H + h) * f.T * f.hs, f.dq.begin() + (b * f.H + h + 1) * f.T * f.hs);
  out << fmt::format("\n  dQ [{}, {}] ({}), after every key block\n", f.T, f.hs, f.dq_id) << table(f.T, dq, static_cast<std::size_t>(f.hs), qtok, {});
  const double matrix = static_cast<double>(f.B * f.H * f.T * f.S) * sizeof(Scalar);
  out << fmt::format("\ntiles: {} computed, {} skipped (fully masked), over B·H = {} head{}\n", f.tiles_done, f.tiles_skipped, f.B * f.H,
                     f.B * f.H == 1 ? "" : "s");
  out << fmt::format("largest |tiled − materialised| over dQ, dK and dV = {:.3g} (relative to max(1, |value|)): {}\n", f.max_diff,
                     f.max_diff <= 1e-5 ? "the tiled backward gives the materialised gradients" : "NOT within 1e-5");
  out << fmt::format("never held: the [B, H, T, S] = [{}, {}, {}, {}] weights and their gradients, {} each; held per key block: one [{}, {}] "
                     "tile of P, dP and dS, dK [{}, {}] and dV [{}, {}]\n",
                     f.B, f.H, f.T, f.S, human_bytes(matrix), std::min(f.BQ, f.T), std::min(f.BK, f.S), std::min(f.BK, f.S), f.hs,
                     std::min(f.BK, f.S), f.hv);
}

}  // namespace attn
