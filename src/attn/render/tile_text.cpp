// What the two tiled passes' text shares: the view, the tables of numbers, and the lines that name
// a span of queries or keys, the tile sizes, the tiles counted and the matrices never held.
// Formatting only (and the bytes of those matrices).
#include "attn/render/tile_text.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "attn/core/bytes.hpp"
#include "attn/core/text.hpp"

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
std::string TileView::query(std::int64_t i) const { return distinct_axis_label(config, Dim::T, i, b); }
std::string TileView::key(std::int64_t j) const { return distinct_axis_label(config, config.mode == Mode::Cross ? Dim::S : Dim::T, j, b); }

std::string TileView::shown() const {
  return fmt::format("shown: {}head {} (--batch, --head choose another)\n", config.batched ? fmt::format("batch row {}, ", b) : "", h);
}

std::string tile_span(std::int64_t first, std::int64_t n, const char* one, const char* many, const std::function<std::string(std::int64_t)>& label) {
  return n == 1 ? fmt::format("{} {} (\"{}\")", one, first, label(first))
                : fmt::format("{} {} .. {} (\"{}\" .. \"{}\")", many, first, first + n - 1, label(first), label(first + n - 1));
}

std::string tile_sizes(std::int64_t BQ, std::int64_t BK) {
  return fmt::format("BQ = {} quer{} × BK = {} key{}", BQ, BQ == 1 ? "y" : "ies", BK, BK == 1 ? "" : "s");
}

std::string tiles_counted(std::int64_t done, std::int64_t skipped, std::int64_t heads) {
  return fmt::format("\ntiles: {} computed, {} skipped (fully masked), over B·H = {} head{}\n", done, skipped, heads, heads == 1 ? "" : "s");
}

std::string never_held(std::int64_t B, std::int64_t H, std::int64_t T, std::int64_t S, const char* what) {
  return fmt::format("never held: the [B, H, T, S] = [{}, {}, {}, {}] {}, {} each; ", B, H, T, S, what,
                     human_bytes(static_cast<double>(B * H * T * S) * sizeof(Scalar)));
}

}  // namespace attn
