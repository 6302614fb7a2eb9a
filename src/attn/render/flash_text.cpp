// --flash's text: FlashAttention's tiled forward pass tile by tile, for one batch row and head, then
// the comparison with the context and the memory never held. Reads what run_flash (pipeline/flash.hpp)
// kept; computes nothing but the sizes and byte counts of the matrices it names.
#include <fmt/format.h>

#include <algorithm>

#include "attn/core/bytes.hpp"
#include "attn/core/text.hpp"
#include "attn/pipeline/flash.hpp"
#include "attn/render/render.hpp"
#include "attn/render/tile_text.hpp"

namespace attn {

void render_flash_text(const Flash& f, const Trace& t, std::ostream& out, const TextOptions& o) {
  const TileView view(t, o);
  const std::int64_t b = view.b, h = view.h;
  const auto num = [&](Scalar v) { return format_fixed(v, o.precision); };
  const auto qtok = [&](std::int64_t i) { return view.query(i); };
  const auto ktok = [&](std::int64_t j) { return view.key(j); };
  const auto width = view.width, label_w = view.label_w;
  // rows q0 .. q0 + rows − 1 of n numbers each (v[from + i·n + k]), under `heads` when given
  const auto table = [&](std::int64_t q0, std::int64_t rows, const std::vector<Scalar>& v, std::size_t from, std::size_t n,
                         const std::vector<std::string>& heads) {
    return tile_table(rows, v, from, n, [&](std::int64_t i) { return qtok(q0 + i); }, heads, label_w, width, o);
  };
  const auto bq = std::min(f.BQ, f.T), bk = std::min(f.BK, f.S);  // the tiles as large as they get here
  out << fmt::format("\n══ FlashAttention's tiled forward pass: tiles of {} ══\n", tile_sizes(f.BQ, f.BK));
  out << "each block of queries starts with m = −inf (running row max), l = 0 (running row sum), acc = 0, then per key tile:\n"
         "  s = the tile's scores (scaled, biased, capped, masked as above), computed from q and k\n"
         "  m_new = max(m, rowmax(s)); rescale = exp(m − m_new); l = rescale·l + Σ_j exp(s − m_new)\n"
         "  acc = rescale·acc + exp(s − m_new)·v_tile; and at the end out = acc / l\n";
  out << view.shown();
  for (const auto& blk : f.blocks) {
    if (blk.b != b || blk.h != h) continue;
    out << "\n── " << tile_span(blk.q0, blk.qn, "query", "queries", qtok) << " ──\n";
    for (const auto& tile : blk.tiles) {
      out << "  tile: " << tile_span(tile.k0, tile.kn, "key", "keys", ktok);
      if (tile.skipped) {
        out << ": every entry masked, skipped (no exp, no product)\n";
        continue;
      }
      std::vector<std::string> keys;
      for (std::int64_t j = 0; j < tile.kn; ++j) keys.push_back(ktok(tile.k0 + j));
      out << fmt::format("\n    s [{}, {}]\n", blk.qn, tile.kn) << table(blk.q0, blk.qn, tile.scores, 0, static_cast<std::size_t>(tile.kn), keys);
      out << "    m_old → m_new, rescale = exp(m_old − m_new), l\n";
      for (std::int64_t i = 0; i < blk.qn; ++i) {
        const auto r = static_cast<std::size_t>(i);
        out << fmt::format("      {} {} → {}   rescale {}   l {}\n", pad_right(qtok(blk.q0 + i), label_w), pad_left(num(tile.m_old[r]), width),
                           pad_left(num(tile.m[r]), width), pad_left(num(tile.rescale[r]), width), pad_left(num(tile.l[r]), width));
      }
      out << fmt::format("    acc [{}, {}]\n", blk.qn, f.hv);
      out << table(blk.q0, blk.qn, tile.acc, 0, static_cast<std::size_t>(f.hv), {});
    }
    out << fmt::format("  out = acc / l [{}, {}]\n", blk.qn, f.hv);
    out << table(blk.q0, blk.qn, blk.out, 0, static_cast<std::size_t>(f.hv), {});
  }
  out << tiles_counted(f.tiles_done, f.tiles_skipped, f.B * f.H);
  out << fmt::format("largest |flash − context| = {:.3g}: the tiled pass gives the materialised context{}\n", f.max_diff,
                     f.agrees() ? "" : " — NOT within 1e-5");
  out << never_held(f.B, f.H, f.T, f.S, "scores, scaled (biased, capped), masked and weights")
      << fmt::format("held at once per block: the q tile [{0}, {2}], one k and one v tile [{1}, {2}] and [{1}, {3}], one [{0}, {1}] score "
                     "tile, m and l [{0}], acc [{0}, {3}] = {4}\n",
                     bq, bk, f.hs, f.hv,
                     human_bytes(static_cast<double>(bq * f.hs + bk * f.hs + bk * f.hv + bq * bk + 2 * bq + bq * f.hv) * sizeof(Scalar)));
}

}  // namespace attn
