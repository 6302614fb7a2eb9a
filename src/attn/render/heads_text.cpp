// attn heads in the terminal: the model and the tokens, a grid of layers (rows) × heads (columns)
// of small heatmaps (queries down, keys across, one fixed 0..1 scale for every head), its legend,
// then one summary line per head. Deterministic bytes for a given width: no locale, fixed decimals.
// Every line fits the width (a word longer than a line aside).
//
// Fitting the width: two characters a key when every head fits side by side (about square in a
// terminal), else one; else each head drawn smaller, one character a block × block square of tokens
// showing the block's largest weight (so a lone strong weight is never averaged away), the smallest
// block that fits with at least 4 cells a side, said in a line under the grid; if even that is too
// wide, the heads wrap onto several bands of the grid. Each grid row is labelled with its query
// ("10 ␣milk₂", as the tokens line names it; "8–9" for a block of tokens), the token cut short
// where a full label would make the grid smaller; each layer's first line gives the keys' positions
// ("0    5    10") above every head.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "attn/model/tools/heads.hpp"
#include "attn/core/options.hpp"
#include "attn/render/heads_layout.hpp"

namespace attn::model {

using namespace heads_detail;

namespace {

// Drops trailing blanks (a line may end in an ANSI reset, which is kept).
void rtrim(std::string& s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
}

// `lead` then the items, `first` between the lead and the first item, two spaces between the others,
// wrapped between items to the width (the next lines indented two spaces).
void item_lines(std::ostream& out, std::string line, const std::vector<std::string>& items, int width, const std::string& first = " ") {
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string sep = i == 0 ? first : "  ";
    if (cells(line) + sep.size() + cells(items[i]) > static_cast<std::size_t>(width) && cells(line) > 2) {
      out << line << "\n";
      line = "  " + items[i];
    } else {
      line += sep + items[i];
    }
  }
  out << line << "\n";
}

// The tokens, "0 The  1 cat  2 sat …", wrapped to the width.
void token_lines(std::ostream& out, const std::vector<std::string>& labels, int width, const std::string& what = "tokens") {
  std::vector<std::string> items;
  for (std::size_t i = 0; i < labels.size(); ++i) items.push_back(fmt::format("{} {}", i, labels[i]));
  item_lines(out, fmt::format("{} ({}):", what, labels.size()), items, width);
}

// The model (once for all views), the part's title, the sizes, the notes and the tokens.
void view_heading(const HeadsView& view, std::ostream& out, int width, bool first) {
  const auto w = static_cast<std::size_t>(width);
  if (first) out << wrap("attn heads · " + view.model, w, "", "  ");
  if (!view.part.empty()) {  // the notes (the first view's, about the whole input) before the first part's heading
    for (const auto& n : view.notes) out << wrap(n, w, "  note: ", "        ");
    out << "\n" << wrap(fmt::format("══ {} ══", view.part_title()), w, "", "  ");
  }
  // (the layer and head counts once: in the model's name where it gives them, else here)
  const std::string counts = fmt::format("{} {} × {} {}", view.layers, view.layers == 1 ? "layer" : "layers", view.heads, view.heads == 1 ? "head" : "heads");
  out << wrap(fmt::format("{}T = {}{}; weights on one scale, 0 to 1, for every head", view.model.find(counts) == std::string::npos ? counts + ", " : "",
                          view.drawn_from > 0 ? fmt::format("{} (drawn as {} cells a side, {} positions each way a cell)", view.drawn_from, view.T, view.drawn_pool)
                                              : std::to_string(view.T), view.cross ? fmt::format(" decoder tokens (queries), S = {} source tokens (keys)", view.S) : ""),
              w, "", "  ");
  if (view.part.empty())
    for (const auto& n : view.notes) out << wrap(n, w, "  note: ", "        ");
  if (view.drawn_from > 0) return;  // a long input's cells: positions, named on the grid's edges (the notes say so)
  token_lines(out, token_labels(view), width, view.cross || view.part == "decoder" ? "decoder tokens" : view.part == "encoder" ? "source tokens" : "tokens");
  if (view.cross) token_lines(out, token_labels(view.key_labels()), width, "source tokens");
}

// The grid's fit and its label column: each row's query label (padded to the column) and the
// column's width, the space after it included.
struct LabelledFit {
  TextFit fit;
  std::vector<std::string> rows;
  std::size_t label_w = 0;
  bool named = false;  // the rows carry their tokens whole ("10 ␣milk₂"), not only positions or cut ones
};

// A token's label cut to `width` cells, ending in "…" but keeping its occurrence's subscript
// ("␣milk₂" in 5: "␣mi…₂"), which tells repeated tokens apart.
std::string cut_label(const std::string& label, std::size_t width) {
  if (cells(label) <= width) return label;
  std::size_t base = label.size();
  while (base >= 3 && label.compare(base - 3, 2, "\xe2\x82") == 0 && static_cast<unsigned char>(label[base - 1]) >= 0x80 &&
         static_cast<unsigned char>(label[base - 1]) <= 0x89)
    base -= 3;  // ₀ … ₉ are E2 82 80 … E2 82 89
  const std::string sub = label.substr(base);
  return cells(sub) + 2 <= width ? clip(label.substr(0, base), width - cells(sub)) + sub : clip(label, width);
}

// The largest grid that labels of the query's position alone allow; then, for whole tokens, the
// widest token labels (the longest, else cut, at least 3 cells) that keep it; for blocks, the
// blocks' ranges of positions.
LabelledFit fit_labelled(const HeadsView& view, const std::vector<std::string>& labels, int width) {
  const std::size_t idx_w = std::to_string(std::max<std::int64_t>((view.drawn_from > 0 ? view.drawn_from : view.T) - 1, 0)).size();
  const std::size_t layer_w = cells(fmt::format("L{}", view.first_layer + view.layers - 1));
  auto column = [&](std::size_t label) { return std::max(layer_w, label) + 1; };
  auto fit = [&](std::size_t label) { return fit_text_grid(view.T, view.keys(), view.heads, column(label), width); };
  LabelledFit out{fit(idx_w), {}, column(idx_w)};
  if (out.fit.block > 1) {
    const std::size_t range_w = 2 * idx_w + 1;  // "12–15"
    out.fit = fit(range_w), out.label_w = column(range_w);
    for (std::int64_t r = 0; r < out.fit.n; ++r) {
      // (a long input's pooled view: its rows are cells of drawn_pool positions)
      const std::int64_t p = view.drawn_pool, i0 = r * out.fit.block * p;
      const std::int64_t i1 = std::min(view.drawn_from > 0 ? view.drawn_from : view.T, i0 + out.fit.block * p) - 1;
      out.rows.push_back(pad_left(i0 == i1 ? std::to_string(i0) : fmt::format("{}–{}", i0, i1), range_w));
    }
    return out;
  }
  std::size_t longest = 0, tw = 0;
  for (const auto& l : labels) longest = std::max(longest, cells(l));
  for (std::size_t t = longest; t >= 3 && tw == 0; --t) {
    const TextFit f = fit(idx_w + 1 + t);
    if (f.block == out.fit.block && f.cell_w == out.fit.cell_w && f.per_band == out.fit.per_band) tw = t, out.fit = f, out.label_w = column(idx_w + 1 + t);
  }
  out.named = tw > 0 && tw >= longest;
  for (std::int64_t i = 0; i < view.T; ++i)
    out.rows.push_back(pad_left(std::to_string(i), idx_w) + (tw == 0 ? "" : " " + pad_right(cut_label(labels[static_cast<std::size_t>(i)], tw), tw)));
  return out;
}

// The narrowest width above `width` (up to --width's largest) whose grid gives every token its own
// row, labelled with its whole token, where the reader finds a token by its name; 0 when none does.
int unpooled_width(const HeadsView& view, const std::vector<std::string>& labels, int width) {
  for (int w = width + 1; w <= static_cast<int>(kWidthRange.hi); ++w)
    if (const LabelledFit lf = fit_labelled(view, labels, w); lf.fit.block == 1 && lf.named) return w;
  return 0;
}

// The keys' positions above a head's cells: every k-th key's at its column ("0    5    10"), k the
// smallest of 1, 2, 5, 10, 20, 50, … that leaves a space after each; one that would pass the head's
// right edge left out.
// A long input's pooled view (pool positions a cell): the ticks are positions too.
std::string key_ticks(const TextFit& f, std::int64_t pool) {
  const std::size_t head_w = static_cast<std::size_t>(f.m * f.cell_w);
  const std::size_t widest = std::to_string((f.m - 1) * f.block * pool).size();
  std::int64_t k = 1;
  for (std::int64_t p = 1; k * f.cell_w < static_cast<std::int64_t>(widest) + 1; p *= 10)
    for (std::int64_t m : {1, 2, 5})
      if (k * f.cell_w < static_cast<std::int64_t>(widest) + 1) k = m * p;
  std::string line(head_w, ' ');
  for (std::int64_t c = 0; c < f.m; c += k) {
    const std::string label = std::to_string(c * f.block * pool);
    const auto at = static_cast<std::size_t>(c * f.cell_w);
    if (at + label.size() > head_w) break;
    line.replace(at, label.size(), label);
  }
  return line;
}

// Row r of head h's cells in layer l: shades (no colour), or coloured blanks.
std::string grid_cells(const HeadsView& view, const TextFit& f, std::int64_t l, std::int64_t h, std::int64_t r, ColorMode color) {
  std::string line;
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
  return line;
}

// The grid: per band of heads, the heads' names, then per layer its name with the keys' positions
// and a labelled line per row of cells.
void grid(const HeadsView& view, const LabelledFit& lf, std::ostream& out, ColorMode color, int width) {
  const TextFit& f = lf.fit;
  const std::size_t head_w = static_cast<std::size_t>(f.m * f.cell_w);
  const std::string ticks = key_ticks(f, view.drawn_pool), axes = "queries ↓ keys →";
  out << "\n" << std::string(std::min(lf.label_w, static_cast<std::size_t>(width) - cells(axes)), ' ') << axes << "\n";
  for (std::int64_t h0 = 0; h0 < view.heads; h0 += f.per_band) {
    const std::int64_t h1 = std::min(view.heads, h0 + f.per_band);
    std::string top = pad_right("", lf.label_w), keys = top;
    for (std::int64_t h = h0; h < h1; ++h) {
      std::string name = fmt::format("h{}", h);
      if (cells(name) > head_w) name = clip(fmt::format("{}", h), head_w);
      const std::size_t gap = h + 1 < h1 ? static_cast<std::size_t>(f.gap) : 0;
      top += pad_right(name, head_w + gap);
      keys += ticks + std::string(gap, ' ');
    }
    rtrim(top);
    out << top << "\n";
    for (std::int64_t l = 0; l < view.layers; ++l) {
      std::string layer = pad_right(fmt::format("L{}", view.first_layer + l), lf.label_w) + keys.substr(lf.label_w);
      rtrim(layer);
      out << layer << "\n";
      for (std::int64_t r = 0; r < f.n; ++r) {
        std::string line = pad_right(lf.rows[static_cast<std::size_t>(r)], lf.label_w);
        for (std::int64_t h = h0; h < h1; ++h) line += grid_cells(view, f, l, h, r, color) + (h + 1 < h1 ? std::string(static_cast<std::size_t>(f.gap), ' ') : "");
        rtrim(line);
        out << line << "\n";
      }
      if (l + 1 < view.layers) out << "\n";
    }
    if (h1 < view.heads) out << "\n";
  }
}

void pattern_legend(const HeadsView& view, std::ostream& out, std::size_t w);

// Under the grid: how it was shrunk or wrapped, the shades' or colours' scale, what is masked, and
// what the summaries' numbers mean; each wrapped to the width.
void legend(const HeadsView& view, const TextFit& f, int unpooled, std::ostream& out, ColorMode color, int width) {
  const auto w = static_cast<std::size_t>(width);
  out << "\n";
  if (view.drawn_from > 0) {
    // a long input's pooled view: its cells are blocks of positions already
    const std::int64_t side = f.block * view.drawn_pool;
    out << wrap(fmt::format("each cell shows the largest weight of a {0} × {0} block of positions (0–{1}, {0}–{2}, …), the rows and the "
                            "columns labelled by the positions they cover{3}",
                            side, side - 1, 2 * side - 1,
                            side >= 32 ? fmt::format("; at this size a cell says little: --format svg or html draws {0} × {0} cells, and "
                                                     "--head L{1}H{2} one head's every weight (a block of columns at a time)",
                                                     view.T, view.first_layer, view.first_head)
                                       : std::string()),
                w, "", "  ");
  } else if (f.block > 1) {
    const std::int64_t last = std::max(view.T - (f.n - 1) * f.block, view.keys() - (f.m - 1) * f.block);
    out << wrap(fmt::format("each cell shows the largest weight of a {0} × {0} block of tokens (tokens 0–{1}, {0}–{2}, …{3}){4}", f.block, f.block - 1,
                            2 * f.block - 1, last != f.block ? fmt::format("; the last block has {}", last) : "",
                            unpooled > 0 ? fmt::format("; --width {} gives each token its row, named", unpooled) : ""),
                w, "", "  ");
  }
  if (f.per_band < view.heads)
    out << wrap(fmt::format("the heads wrap onto {} bands of at most {} heads to fit {} columns", (view.heads + f.per_band - 1) / f.per_band, f.per_band, width), w,
                "", "  ");
  if (color == ColorMode::None) {
    static const char* kGlyph[5] = {"' '", "░", "▒", "▓", "█"};
    std::vector<std::string> items;
    double lo = 0;
    for (int k = 0; k < 5; ++k) {
      items.push_back(fmt::format("{} {}", kGlyph[k], k == 0 ? fmt::format("< {:.2f}", kShadeBands[0]) : k == 4 ? fmt::format("≥ {:.2f}", lo)
                                                                                                            : fmt::format("{:.2f}–{:.2f}", lo, kShadeBands[k])));
      lo = kShadeBands[k];
    }
    item_lines(out, "weight:", items, width, "  ");
  } else {
    const int swatches = std::clamp((width - 12) / 2, 1, 16);  // "weight: 0 " and " 1" around them
    out << "weight: 0 ";
    for (int k = 0; k < swatches; ++k) out << heat_background(color, (k + 0.5) / swatches) << "  ";
    out << kAnsiReset << " 1\n";
  }
  const bool windowed = std::any_of(view.windows.begin(), view.windows.end(), [](std::int64_t v) { return v > 0; });
  if (view.cross) out << wrap("nothing masked: every decoder token sees every source token", w, "", "  ");
  else if (view.bidirectional) out << wrap(view.masked_text(), w, "", "  ");
  else out << wrap(std::string(color == ColorMode::None ? "· above the diagonal" : "blank above the diagonal") + (windowed ? " and left of the window" : "") +
                       ": " + view.masked_text(),
                   w, "", "  ");
  pattern_legend(view, out, w);
}

// What the numbers after each pattern and the entropy mean.
void pattern_legend(const HeadsView& view, std::ostream& out, std::size_t w) {
  out << wrap(view.cross ? "after each pattern: the mean weight on that key (diagonal: the source token as far through the source as "
                           "the query is through the decoder's tokens; the start or end token), or for broad its entropy ÷ a uniform "
                           "head's, or for mixed the largest of the means (under 0.5)"
              : view.bidirectional ? "after each pattern: the mean weight on that key (previous, next or same token, the start or end "
                                   "token), or for broad its entropy ÷ a uniform head's, or for mixed the largest of the means (under 0.5)"
                                 : "after each pattern: the mean weight on that key (previous, first or same token), or for broad its entropy ÷ a "
                                   "uniform head's, or for mixed the largest of the three means (under 0.5)",
              w, "", "  ");
  if (std::any_of(view.summaries.begin(), view.summaries.end(), [](const HeadSummary& s) { return s.pattern == HeadPattern::Induction; }))
    out << wrap("induction: over the queries whose token occurred before, the mean weight on the key right after that earlier "
                "occurrence (the head copies what followed it last time: a repeated sequence continued)",
                w, "", "  ");
  out << wrap("entropy X of Y bits: how spread a head's rows are, averaged over the queries (0: each row on one key); Y is a "
              "uniform head's, where every query spreads evenly over the keys it may see (log2 of their number, averaged)",
              w, "", "  ");
  if (view.cross) return;
  out << wrap(fmt::format("under each head, means over the queries: first, previous, self{}: the weight on the first token, the token before, "
                          "the token itself; distance: Σ weight × |query − key|, in tokens; local (from T = {}): the weight on {}. The label: the "
                          "largest of the named shares if ≥ 0.5; else local if ≥ 0.8; induction (≥ 0.4) if larger than either; else broad if "
                          "the entropy is ≥ 0.8 of a uniform head's; else mixed",
                          view.bidirectional ? "" : " (the first query left out: it sees only itself)", 4 * kLocalWindow,
                          view.bidirectional ? fmt::format("the keys within {} tokens either side", kLocalWindow - 1)
                                             : fmt::format("the query and the {} tokens before it", kLocalWindow - 1)),
              w, "", "  ");
}

void summary_line(const HeadsView& view, const std::string& line, std::ostream& out, std::size_t w);

// A line a head (summary_line), and after each layer's heads their means.
void summaries(const HeadsView& view, std::ostream& out, std::size_t w) {
  out << "\n";
  const auto lines = summary_lines(view, token_labels(view), token_labels(view.key_labels()));
  for (std::size_t k = 0; k < lines.size(); ++k) {
    const std::string& line = lines[k];
    summary_line(view, line, out, w);
    if (view.cross) continue;  // (its keys are another sequence: no shares by position)
    const auto l = static_cast<std::int64_t>(k) / view.heads;
    out << wrap(shares_text(view, view.summary(l, static_cast<std::int64_t>(k) % view.heads)), w, "       ", "         ");
    // after a layer's heads, their means (heads.hpp's layer_means; one head is its own)
    if (view.heads == 1 || (k + 1) % static_cast<std::size_t>(view.heads) != 0) continue;
    const LayerMeans m = layer_means(&view.summary(l, 0), view.heads);
    out << wrap(fmt::format("L{} mean: entropy {:.2f} of {:.2f} bits, {}", view.first_layer + l, m.entropy, m.max_entropy,
                            shares_text(view, m.first, m.previous, m.same, m.distance, m.local)),
                w, "", "         ");
  }
}

// One head's line: one that would pass the width goes on below, indented, from its largest
// off-diagonal weight (and wraps at words where even its first part is too long).
void summary_line(const HeadsView& view, const std::string& line, std::ostream& out, std::size_t w) {
  {
    const auto at = line.find(view.cross ? "   max weight" : "   max off-diagonal");
    if (cells(line) <= w || at == std::string::npos) {
      out << (cells(line) <= w ? line + "\n" : wrap(line, w, "", "         "));
      return;
    }
    const std::string head = line.substr(0, at);
    out << (cells(head) <= w ? head + "\n" : wrap(head, w, "", "       ")) << wrap(line.substr(at + 3), w, "       ", "         ");
  }
}

// One view: its heading, the grid, the legend, a line a head.
void render_view_text(const HeadsView& view, std::ostream& out, ColorMode color, int width, bool first) {
  check_view(view);
  width = std::max(width, 20);
  view_heading(view, out, width, first);
  if (view.layers == 0 || view.heads == 0 || view.T == 0 || view.keys() == 0) return;
  const auto labels = token_labels(view);
  const LabelledFit lf = fit_labelled(view, labels, width);
  grid(view, lf, out, color, width);
  legend(view, lf.fit, lf.fit.block > 1 && view.drawn_from == 0 ? unpooled_width(view, labels, width) : 0, out, color, width);
  summaries(view, out, static_cast<std::size_t>(width));
}

}  // namespace

void render_heads_text(const std::vector<HeadsView>& views, std::ostream& out, ColorMode color, int width) {
  for (std::size_t k = 0; k < views.size(); ++k) render_view_text(views[k].kept() ? views[k] : pooled_view(views[k]), out, color, width, k == 0);
}

namespace {

// The key positions above a column block [j0, j1): every 10th key's number where it fits.
std::string block_ticks(std::int64_t j0, std::int64_t j1) {
  std::string line(static_cast<std::size_t>(j1 - j0), ' ');
  for (std::int64_t j = (j0 + 9) / 10 * 10; j < j1; j += 10) {
    const std::string label = std::to_string(j);
    const auto at = static_cast<std::size_t>(j - j0);
    if (at + label.size() <= line.size()) line.replace(at, label.size(), label);
  }
  return line;
}

// One column block of the head's map: a row a query ("12 ␣cat"), a character a key.
void column_block(const HeadsView& v, const std::vector<std::string>& rows, std::size_t label_w, std::int64_t j0, std::int64_t j1,
                  std::ostream& out, ColorMode color) {
  std::string ticks = std::string(label_w, ' ') + block_ticks(j0, j1);
  rtrim(ticks);
  out << ticks << "\n";
  for (std::int64_t i = 0; i < v.T; ++i) {
    if (!v.bidirectional && !v.cross && j0 > i) continue;  // nothing but masked keys in this block: the row is left out
    std::string line;
    bool painted = false;
    for (std::int64_t j = j0; j < j1; ++j) {
      const BlockCell b = block_cell(v, 0, 0, i, j, 1);
      if (color == ColorMode::None) {
        line += b.masked ? "·" : shade(b.value);
      } else if (b.masked) {
        if (painted) line += kAnsiReset, painted = false;
        line += ' ';
      } else {
        line += heat_background(color, b.value) + " ";
        painted = true;
      }
    }
    if (painted) line += kAnsiReset;
    rtrim(line);
    out << pad_right(rows[static_cast<std::size_t>(i)], label_w) << line << "\n";
  }
}

}  // namespace

void render_head_text(const HeadsView& v, std::ostream& out, ColorMode color, int width) {
  check_view(v);
  width = std::max(width, 20);
  const auto w = static_cast<std::size_t>(width);
  out << wrap("attn heads · " + v.model, w, "", "  ");
  out << wrap(fmt::format("L{} h{} alone: T = {}, every weight of its map, a row a query and a character a key, the keys in blocks as wide as "
                          "the width allows (one after another); weights 0 to 1",
                          v.first_layer, v.first_head, v.T),
              w, "", "  ");
  for (const auto& n : v.notes) out << wrap(n, w, "  note: ", "        ");
  summaries(v, out, w);
  // the rows' labels: position and token, cut to leave at least 20 keys a block
  const std::vector<std::string> labels = token_labels(v);
  const std::size_t idx_w = std::to_string(std::max<std::int64_t>(v.T - 1, 0)).size();
  std::size_t label_w = idx_w + 1 + 12 + 1;
  if (label_w + 20 > w) label_w = idx_w + 1;
  std::vector<std::string> rows;
  for (std::int64_t i = 0; i < v.T; ++i)
    rows.push_back(label_w > idx_w + 1 ? pad_left(std::to_string(i), idx_w) + " " + cut_label(labels[static_cast<std::size_t>(i)], label_w - idx_w - 2)
                                       : pad_left(std::to_string(i), idx_w));
  const std::int64_t per = std::max<std::int64_t>(1, static_cast<std::int64_t>(w - label_w));
  const std::int64_t blocks = (v.keys() + per - 1) / per;
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t j0 = b * per, j1 = std::min(v.keys(), j0 + per);
    out << "\n" << wrap(fmt::format("keys {}–{} (block {} of {}){}", j0, j1 - 1, b + 1, blocks,
                                     !v.bidirectional && !v.cross && j0 > 0 ? fmt::format("; queries 0–{} see none of them and are left out", j0 - 1) : ""),
                         w, "", "  ");
    column_block(v, rows, label_w, j0, j1, out, color);
  }
  out << "\n" << wrap("weight: ' ' < 0.02  ░ 0.02–0.25  ▒ 0.25–0.50  ▓ 0.50–0.75  █ ≥ 0.75; · " + v.masked_text(), w, "", "  ");
}

}  // namespace attn::model
