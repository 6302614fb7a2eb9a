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

std::string tile_table(std::int64_t rows, const std::vector<Scalar>& v, std::size_t from, std::size_t n,
                       const std::function<std::string(std::int64_t)>& label, const std::vector<std::string>& heads, std::size_t label_w,
                       std::size_t width, const TextOptions& o) {
  const std::size_t room = static_cast<std::size_t>(std::max(o.width, 20)), lead = 6 + label_w;
  const std::size_t per = std::max<std::size_t>(1, room > lead ? (room - lead) / (width + 1) : 1);
  std::string text;
  for (std::size_t c0 = 0; c0 < n; c0 += per) {
    const std::size_t c1 = std::min(n, c0 + per);
    if (per < n) text += c1 - c0 == 1 ? fmt::format("      column {} of {}\n", c0, n) : fmt::format("      columns {}–{} of {}\n", c0, c1 - 1, n);
    if (!heads.empty()) {
      text.append(6 + label_w, ' ');
      for (std::size_t k = c0; k < c1; ++k) text.append(1, ' ').append(pad_left(heads[k], width));
      text.append(1, '\n');
    }
    for (std::int64_t i = 0; i < rows; ++i) {
      text.append(6, ' ').append(pad_right(label(i), label_w));
      for (std::size_t k = c0; k < c1; ++k) text.append(1, ' ').append(pad_left(format_fixed(v[from + static_cast<std::size_t>(i) * n + k], o.precision), width));
      text.append(1, '\n');
    }
  }
  return text;
}

TileView::TileView(const Trace& t, const TextOptions& o)
    : config(t.config), b(o.view.batch.value_or(0)), h(o.view.head.value_or(0)), width(static_cast<std::size_t>(std::max(8, o.precision + 5))) {
  check_text_options(t, o);  // (b and h index the tiles)
  for (std::int64_t i = 0; i < config.T; ++i) label_w = std::max(label_w, cells(query(i)));
}
std::string TileView::query(std::int64_t i) const { return axis_label(config, Dim::T, i, b); }
std::string TileView::key(std::int64_t j) const { return axis_label(config, config.mode == Mode::Cross ? Dim::S : Dim::T, j, b); }

void render_flash_text(const Flash& f, const Trace& t, std::ostream& out, const TextOptions& o) {
  const TileView view(t, o);
  const auto& c = t.config;
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
  out << fmt::format("\n══ FlashAttention's tiled forward pass: tiles of BQ = {} quer{} × BK = {} key{} ══\n", f.BQ, f.BQ == 1 ? "y" : "ies", f.BK,
                     f.BK == 1 ? "" : "s");
  out << "each block of queries starts with m = −inf (running row max), l = 0 (running row sum), acc = 0, then per key tile:\n"
         "  s = the tile's scores (scaled, biased, capped, masked as above), computed from q and k\n"
         "  m_new = max(m, rowmax(s)); rescale = exp(m − m_new); l = rescale·l + Σ_j exp(s − m_new)\n"
         "  acc = rescale·acc + exp(s − m_new)·v_tile; and at the end out = acc / l\n";
  out << fmt::format("shown: {}head {} (--batch, --head choose another)\n", c.batched ? fmt::format("batch row {}, ", b) : "", h);
  for (const auto& blk : f.blocks) {
    if (blk.b != b || blk.h != h) continue;
    out << (blk.qn == 1 ? fmt::format("\n── query {} (\"{}\") ──\n", blk.q0, qtok(blk.q0))
                        : fmt::format("\n── queries {} .. {} (\"{}\" .. \"{}\") ──\n", blk.q0, blk.q0 + blk.qn - 1, qtok(blk.q0), qtok(blk.q0 + blk.qn - 1)));
    for (const auto& tile : blk.tiles) {
      out << (tile.kn == 1 ? fmt::format("  tile: key {} (\"{}\")", tile.k0, ktok(tile.k0))
                           : fmt::format("  tile: keys {} .. {} (\"{}\" .. \"{}\")", tile.k0, tile.k0 + tile.kn - 1, ktok(tile.k0), ktok(tile.k0 + tile.kn - 1)));
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
  const double matrix = static_cast<double>(f.B * f.H * f.T * f.S) * sizeof(Scalar);
  out << fmt::format("\ntiles: {} computed, {} skipped (fully masked), over B·H = {} head{}\n", f.tiles_done, f.tiles_skipped, f.B * f.H,
                     f.B * f.H == 1 ? "" : "s");
  out << fmt::format("largest |flash − context| = {:.3g}: the tiled pass gives the materialised context{}\n", f.max_diff,
                     f.agrees() ? "" : " — NOT within 1e-5");
  out << fmt::format("never held: the [B, H, T, S] = [{}, {}, {}, {}] scores, scaled (biased, capped), masked and weights, {} each; held at once "
                     "per block: one [{}, {}] tile, m and l [{}], acc [{}, {}] = {}\n",
                     f.B, f.H, f.T, f.S, human_bytes(matrix), bq, bk, bq, bq, f.hv,
                     human_bytes(static_cast<double>(bq * bk + 2 * bq + bq * f.hv) * sizeof(Scalar)));
}

}  // namespace attn
