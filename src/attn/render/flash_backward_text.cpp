// attn backward --flash's text: FlashAttention-2's tiled backward pass tile by tile, for one batch row
// and head, then the comparison with the materialised gradients and the memory never held. Reads what
// run_flash_backward (pipeline/flash_backward.hpp) kept; computes nothing but the sizes and bytes shown.
#include <fmt/format.h>

#include <algorithm>

#include "attn/core/text.hpp"
#include "attn/pipeline/flash_backward.hpp"
#include "attn/render/render.hpp"
#include "attn/render/tile_text.hpp"

namespace attn {

void render_flash_backward_text(const FlashBackward& f, const Trace& t, std::ostream& out, const TextOptions& o) {
  const TileView view(t, o);
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
  out << fmt::format("\n══ FlashAttention-2's tiled backward pass: tiles of {} ══\n", tile_sizes(f.BQ, f.BK));
  out << "saved by the forward pass: O (the context) and, per query row, L = m + log l\n"
         "  (the tiled forward pass's last m and l)\n"
         "once per query row: D = rowsum(dO ⊙ O), dO the context's gradient\n"
         "then for each block of keys (its dK and dV start at 0), for each block of queries:\n"
         "  S = the tile's scores, recomputed as the forward pass did\n"
         "  P = exp(S − L): the weights, recomputed, never stored\n"
         "  dV += Pᵀ dO;  dP = dO Vᵀ\n"
         "  dS = P ⊙ (dP − D), times the soft-cap's slope and the scale: the scores' gradient\n"
         "  dQ += dS K (summed across the key blocks);  dK += dSᵀ Q\n";
  out << view.shown();
  std::vector<Scalar> lr;  // L and D side by side
  for (std::int64_t i = 0; i < f.T; ++i) {
    lr.push_back(static_cast<Scalar>(f.L[static_cast<std::size_t>((b * f.H + h) * f.T + i)]));
    lr.push_back(static_cast<Scalar>(f.D[static_cast<std::size_t>((b * f.H + h) * f.T + i)]));
  }
  out << "  L and D per query row\n" << table(f.T, lr, 2, qtok, {"L", "D"});
  for (const auto& blk : f.blocks) {
    if (blk.b != b || blk.h != h) continue;
    out << "\n── " << tile_span(blk.k0, blk.kn, "key", "keys", ktok) << " ──\n";
    std::vector<std::string> keys;
    for (std::int64_t j = 0; j < blk.kn; ++j) keys.push_back(ktok(blk.k0 + j));
    for (const auto& tile : blk.tiles) {
      out << "  tile: " << tile_span(tile.q0, tile.qn, "query", "queries", qtok);
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
  out << tiles_counted(f.tiles_done, f.tiles_skipped, f.B * f.H);
  out << fmt::format("largest |tiled − materialised| over dQ, dK and dV = {:.3g} (relative to max(1, |value|)): {}\n", f.max_diff,
                     f.agrees() ? "the tiled backward gives the materialised gradients" : "NOT within 1e-5");
  const auto bq = std::min(f.BQ, f.T), bk = std::min(f.BK, f.S);  // the tiles as large as they get here
  out << never_held(f.B, f.H, f.T, f.S, "weights and their gradients")
      << fmt::format("held per key block: one [{}, {}] tile of P, dP and dS, dK [{}, {}] and dV [{}, {}]\n", bq, bk, bk, f.hs, bk, f.hv);
}

}  // namespace attn
