// attn backward --flash's text: FlashAttention-2's tiled backward pass tile by tile, for one batch row
// and head, then the comparison with the materialised gradients and the memory never held. Reads what
// run_flash_backward (pipeline/flash_backward.hpp) kept; computes nothing but the sizes and bytes shown.
#include <fmt/format.h>

#include <algorithm>

#include "attn/core/bytes.hpp"
#include "attn/core/text.hpp"
#include "attn/pipeline/flash_backward.hpp"
#include "attn/render/render.hpp"
#include "attn/render/tile_text.hpp"

namespace attn {

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
                     f.agrees() ? "the tiled backward gives the materialised gradients" : "NOT within 1e-5");
  out << fmt::format("never held: the [B, H, T, S] = [{}, {}, {}, {}] weights and their gradients, {} each; held per key block: one [{}, {}] "
                     "tile of P, dP and dS, dK [{}, {}] and dV [{}, {}]\n",
                     f.B, f.H, f.T, f.S, human_bytes(matrix), std::min(f.BQ, f.T), std::min(f.BK, f.S), std::min(f.BK, f.S), f.hs,
                     std::min(f.BK, f.S), f.hv);
}

}  // namespace attn
