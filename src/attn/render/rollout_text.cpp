// attn heads --rollout in the terminal: the rolled-out map after each layer side by side (queries down,
// input tokens across), shades on each row's own scale (a rolled-out row spreads thinner with every
// layer and every position, so one fixed 0..1 scale would fade the later maps and rows away), fitted to the width as attn heads'
// grid is (heads_layout.hpp's fit); then the chosen query's input tokens; then --explain's lines.
// Shades only, no colour: the same bytes in every terminal. Draws; computes nothing.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "attn/render/color.hpp"
#include "attn/render/heads_layout.hpp"
#include "attn/render/rollout_views.hpp"

namespace attn::model {

using namespace heads_detail;

namespace {

// The largest share in row i of the map after layer l.
float row_max(const Rollout& r, std::int64_t l, std::int64_t i) {
  float m = 0;
  for (std::int64_t j = 0; j < r.T; ++j) m = std::max(m, r.at(l, i, j));
  return m;
}

// Cell (row, col) of map l: the largest of its block's shares, each on its own row's scale; "·" when the
// whole block is above a causal diagonal.
std::string cell(const Rollout& r, std::int64_t l, std::int64_t row, std::int64_t col, std::int64_t block) {
  double v = 0;
  bool any = false;
  for (std::int64_t i = row * block; i < std::min(r.T, (row + 1) * block); ++i) {
    const float top = row_max(r, l, i);
    for (std::int64_t j = col * block; j < std::min(r.T, (col + 1) * block); ++j) {
      if (r.causal && j > i) continue;
      v = std::max(v, top > 0 ? static_cast<double>(r.at(l, i, j)) / top : 0.0), any = true;
    }
  }
  return any ? shade(v) : "·";
}

// The grid: a heading line per band of maps, then one line per (block of) queries.
void grid(const Rollout& r, const std::vector<std::string>& labels, std::ostream& out, int width) {
  std::size_t label_w = 0;
  for (std::int64_t i = 0; i < r.T; ++i) label_w = std::max(label_w, cells(fmt::format("{:>3} {}", i, labels[static_cast<std::size_t>(i)])));
  label_w = std::min<std::size_t>(label_w, 16) + 1;
  const TextFit f = fit_text_grid(r.T, r.T, r.layers, label_w, width);
  for (std::int64_t first = 0; first < r.layers; first += f.per_band) {
    const std::int64_t last = std::min(r.layers, first + f.per_band);
    std::string head = std::string(label_w, ' ');
    for (std::int64_t l = first; l < last; ++l) head += pad_right(fmt::format("after L{}", l), static_cast<std::size_t>(f.m * f.cell_w + (l + 1 < last ? f.gap : 0)));
    while (!head.empty() && head.back() == ' ') head.pop_back();
    out << head << "\n";
    for (std::int64_t row = 0; row < f.n; ++row) {
      const std::string name = f.block == 1 ? fmt::format("{:>3} {}", row, labels[static_cast<std::size_t>(row)])
                                            : fmt::format("{:>3}–{}", row * f.block, std::min(r.T, (row + 1) * f.block) - 1);
      std::string line = pad_right(clip(name, label_w - 1), label_w);
      for (std::int64_t l = first; l < last; ++l) {
        for (std::int64_t col = 0; col < f.m; ++col)
          for (int k = 0; k < f.cell_w; ++k) line += cell(r, l, row, col, f.block);
        if (l + 1 < last) line.append(static_cast<std::size_t>(f.gap), ' ');
      }
      out << line << "\n";
    }
  }
  out << wrap(fmt::format("(shades: each query's row on its own scale, █ = the largest share in that row{}{})",
                          f.block > 1 ? fmt::format("; a cell is a {0} × {0} block of tokens, its largest share", f.block) : std::string(),
                          r.causal ? "; · above the diagonal: a causal model's token draws on no later one" : std::string()),
              static_cast<std::size_t>(width), "", "  ");
}

}  // namespace

void render_rollout_text(const Rollout& r, const std::vector<std::string>& labels, std::ostream& out, int width,
                         const std::vector<std::string>& explanation) {
  const auto w = static_cast<std::size_t>(width);
  out << "\n"
      << wrap(fmt::format("attention rollout (Abnar & Zuidema 2020): each layer's heads combined by their {}, the identity added for the "
                          "residual, rows renormalised, multiplied from L0 up; row i: the input tokens query i draws on",
                          rollout_heads_name(r.combine)),
              w, "", "  ");
  if (r.T == 0 || r.layers == 0) return;
  grid(r, labels, out, width);
  out << wrap(fmt::format("query {} {} draws on, largest share first:", r.query, labels[static_cast<std::size_t>(r.query)]), w, "", "  ");
  for (std::int64_t l = 0; l < r.layers; ++l) {
    std::string line = fmt::format("  after L{}:", l);
    const char* sep = "";
    for (const auto& [j, share] : rollout_top(r, l, r.query, kRolloutTop)) line += fmt::format("{} {} {:.2f} @{}", sep, labels[static_cast<std::size_t>(j)], share, j), sep = " ·";
    out << wrap(line, w, "  ", "    ");
  }
  for (const auto& e : explanation) out << "\n" << wrap(e, w, "", "  ");
}

}  // namespace attn::model
