// attn heads in the terminal: the model and the tokens, a grid of layers (rows) × heads (columns)
// of small heatmaps (queries down, keys across, one fixed 0..1 scale for every head), its legend,
// then one summary line per head. Deterministic bytes for a given width: no locale, fixed decimals.
//
// Fitting the width: two characters a key when every head fits side by side (about square in a
// terminal), else one; else each head drawn smaller, one character a block × block square of tokens
// showing the block's largest weight (so a lone strong weight is never averaged away), the smallest
// block that fits with at least 4 cells a side, said in a line under the grid; if even that is too
// wide, the heads wrap onto several bands of the grid.
#include <fmt/format.h>

#include <string>

#include "attn/model/heads.hpp"
#include "attn/render/heads_layout.hpp"

namespace attn::model {

using namespace heads_detail;

namespace {

// Drops trailing blanks (a line may end in an ANSI reset, which is kept).
void rtrim(std::string& s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
}

// The tokens, "0 The  1 cat  2 sat …", wrapped to the width.
void token_lines(std::ostream& out, const std::vector<std::string>& labels, int width, const std::string& what = "tokens") {
  std::string line = fmt::format("{} ({}):", what, labels.size());
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const std::string item = fmt::format("{} {}", i, labels[i]);
    if (cells(line) + 2 + cells(item) > static_cast<std::size_t>(width) && cells(line) > 2) {
      out << line << "\n";
      line = "  " + item;
    } else {
      line += (line.back() == ':' ? " " : "  ") + item;
    }
  }
  out << line << "\n";
}

// One view: its header (the model, once for all views), its tokens, the grid, the legend, a line a head.
void render_view_text(const HeadsView& view, std::ostream& out, ColorMode color, int width, bool first) {
  check_view(view);
  width = std::max(width, 20);
  const auto labels = token_labels(view);
  const auto key_labels = token_labels(view.key_labels());
  const auto w = static_cast<std::size_t>(width);
  if (first) out << wrap("attn heads · " + view.model, w, "", "  ");
  if (!view.part.empty()) {  // the notes (the first view's, about the whole input) before the first part's heading
    for (const auto& n : view.notes) out << wrap(n, w, "  note: ", "        ");
    out << "\n" << wrap(fmt::format("══ {} ══", view.part_title()), w, "", "  ");
  }
  // (the layer and head counts once: in the model's name where it gives them, else here)
  const std::string counts = fmt::format("{} {} × {} {}", view.layers, view.layers == 1 ? "layer" : "layers", view.heads, view.heads == 1 ? "head" : "heads");
  out << wrap(fmt::format("{}T = {}{}; weights on one scale, 0 to 1, for every head", view.model.find(counts) == std::string::npos ? counts + ", " : "",
                          view.T, view.cross ? fmt::format(" decoder tokens (queries), S = {} source tokens (keys)", view.S) : ""),
              w, "", "  ");
  if (view.part.empty())
    for (const auto& n : view.notes) out << wrap(n, w, "  note: ", "        ");
  token_lines(out, labels, width, view.cross || view.part == "decoder" ? "decoder tokens" : view.part == "encoder" ? "source tokens" : "tokens");
  if (view.cross) token_lines(out, key_labels, width, "source tokens");
  if (view.layers == 0 || view.heads == 0 || view.T == 0 || view.keys() == 0) return;

  const std::size_t label_w = cells(fmt::format("L{}", view.layers - 1)) + 2;
  const TextFit f = fit_text_grid(view.T, view.keys(), view.heads, label_w, width);
  const std::size_t head_w = static_cast<std::size_t>(f.m * f.cell_w);
  out << "\n" << pad_right("", label_w) << "queries ↓ keys →\n";
  for (std::int64_t h0 = 0; h0 < view.heads; h0 += f.per_band) {
    const std::int64_t h1 = std::min(view.heads, h0 + f.per_band);
    std::string top = pad_right("", label_w);
    for (std::int64_t h = h0; h < h1; ++h) {
      std::string name = fmt::format("h{}", h);
      if (cells(name) > head_w) name = clip(fmt::format("{}", h), head_w);
      top += pad_right(name, head_w + (h + 1 < h1 ? static_cast<std::size_t>(f.gap) : 0));
    }
    rtrim(top);
    out << top << "\n";
    for (std::int64_t l = 0; l < view.layers; ++l) {
      for (std::int64_t r = 0; r < f.n; ++r) {
        std::string line = pad_right(r == 0 ? fmt::format("L{}", l) : "", label_w);
        for (std::int64_t h = h0; h < h1; ++h) {
          bool painted = false;
          for (std::int64_t c = 0; c < f.m; ++c) {
            const BlockCell b = block_cell(view, l, h, r, c, f.block);
            if (color == ColorMode::None) {
              const std::string s = b.masked ? "·" : shade(b.value);  // masked apart from a weight near 0, which is blank
              for (int k = 0; k < f.cell_w; ++k) line += s;
            } else if (b.masked) {
              if (painted) line += kAnsiReset, painted = false;
              line.append(static_cast<std::size_t>(f.cell_w), ' ');
            } else {
              line += heat_background(color, b.value);
              line.append(static_cast<std::size_t>(f.cell_w), ' ');
              painted = true;
            }
          }
          if (painted) line += kAnsiReset;
          if (h + 1 < h1) line.append(static_cast<std::size_t>(f.gap), ' ');
        }
        rtrim(line);
        out << line << "\n";
      }
      if (l + 1 < view.layers) out << "\n";
    }
    if (h1 < view.heads) out << "\n";
  }

  out << "\n";
  if (f.block > 1) {
    const std::int64_t last = std::max(view.T - (f.n - 1) * f.block, view.keys() - (f.m - 1) * f.block);
    out << fmt::format("each cell shows the largest weight of a {0} × {0} block of tokens (tokens 0–{1}, {0}–{2}, …", f.block, f.block - 1,
                       2 * f.block - 1);
    if (last != f.block) out << fmt::format("; the last block has {}", last);
    out << ")\n";
  }
  if (f.per_band < view.heads) out << fmt::format("the heads wrap onto {} bands of at most {} heads to fit {} columns\n",
                                                  (view.heads + f.per_band - 1) / f.per_band, f.per_band, width);
  if (color == ColorMode::None) {
    out << "weight:";
    static const char* kGlyph[5] = {"' '", "░", "▒", "▓", "█"};
    double lo = 0;
    for (int k = 0; k < 5; ++k) {
      out << fmt::format("  {} {}", kGlyph[k], k == 0 ? fmt::format("< {:.2f}", kShadeBands[0]) : k == 4 ? fmt::format("≥ {:.2f}", lo)
                                                                                                             : fmt::format("{:.2f}–{:.2f}", lo, kShadeBands[k]));
      lo = kShadeBands[k];
    }
    out << "\n";
  } else {
    out << "weight: 0 ";
    for (int k = 0; k < 16; ++k) out << heat_background(color, (k + 0.5) / 16.0) << "  ";
    out << kAnsiReset << " 1\n";
  }
  const bool windowed = std::any_of(view.windows.begin(), view.windows.end(), [](std::int64_t v) { return v > 0; });
  if (view.cross) out << wrap("nothing masked: every decoder token sees every source token", w, "", "  ");
  else if (view.bidirectional) out << wrap(view.masked_text(), w, "", "  ");
  else out << wrap(std::string(color == ColorMode::None ? "· above the diagonal" : "blank above the diagonal") + (windowed ? " and left of the window" : "") +
                       ": " + view.masked_text(),
                   w, "", "  ");
  out << wrap(view.cross ? "after each pattern: the mean weight on that key (diagonal: the source token as far through the source as "
                           "the query is through the decoder's tokens; the start or end token), or for broad its entropy ÷ a uniform "
                           "head's, or for mixed the largest of the means (under 0.5)"
              : view.bidirectional ? "after each pattern: the mean weight on that key (previous, next or same token, the start or end "
                                   "token), or for broad its entropy ÷ a uniform head's, or for mixed the largest of the means (under 0.5)"
                                 : "after each pattern: the mean weight on that key (previous, first or same token), or for broad its entropy ÷ a "
                                   "uniform head's, or for mixed the largest of the three means (under 0.5)",
              w, "", "  ")
      << (std::any_of(view.summaries.begin(), view.summaries.end(), [](const HeadSummary& s) { return s.pattern == HeadPattern::Induction; })
              ? wrap("induction: over the queries whose token occurred before, the mean weight on the key right after that earlier "
                     "occurrence (the head copies what followed it last time: a repeated sequence continued)",
                     w, "", "  ")
              : std::string())
      << wrap("entropy X of Y bits: how spread a head's rows are, averaged over the queries (0: each row on one key); Y is a "
              "uniform head's, where every query spreads evenly over the keys it may see (log2 of their number, averaged)",
              w, "", "  ")
      << "\n";
  // a line that would pass the width goes on below, indented: the largest off-diagonal weight
  for (const auto& line : summary_lines(view, labels, key_labels)) {
    const auto at = line.find(view.cross ? "   max weight" : "   max off-diagonal");
    if (cells(line) <= w || at == std::string::npos) out << line << "\n";
    else out << line.substr(0, at) << "\n" << wrap(line.substr(at + 3), w, "       ", "         ");
  }
}

}  // namespace

void render_heads_text(const std::vector<HeadsView>& views, std::ostream& out, ColorMode color, int width) {
  for (std::size_t k = 0; k < views.size(); ++k) render_view_text(views[k], out, color, width, k == 0);
}

}  // namespace attn::model
