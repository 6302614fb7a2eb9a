// attn heads as one SVG document: a grid of layers (rows) × heads (columns), each head a T × T
// heatmap (queries down, keys across) in viridis on one fixed 0..1 scale, grey above the diagonal
// (masked by causality), its pattern and share under it; query labels left of the first column, key
// labels (turned upright) under the last row, every k-th token when rows are too thin for all.
// Each panel is drawn in token units under one scale() transform, one path per colour with runs of
// equal colour merged, so 12 × 12 heads of 64 tokens stay a few MB. Deterministic text.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "attn/model/tools/heads.hpp"
#include "attn/render/heads_layout.hpp"

namespace attn::model {

using namespace heads_detail;

namespace {

constexpr const char* kFontFamily = "DejaVu Sans, Verdana, sans-serif";
constexpr const char* kMasked = "#e6e6e6";
constexpr int kFont = 10;          // px: token labels and captions
constexpr double kCharW = 6.1;     // px per character at kFont, a conservative estimate for DejaVu Sans
constexpr std::size_t kLabelChars = 12;

// Pixels per token: panels about 128 px wide, at least 2 px a token up to T = 64, 1 beyond.
int token_px(std::int64_t T) {
  if (T <= 0) return 16;
  if (T > 128) return 1;
  return static_cast<int>(std::clamp<std::int64_t>(128 / T, 2, 32));
}

void panel(std::ostream& o, const HeadsView& v, std::int64_t l, std::int64_t h, int x, int y, int s) {
  const auto T = v.T, S = v.keys();
  o << fmt::format("  <g transform=\"translate({},{}) scale({})\" shape-rendering=\"crispEdges\">\n", x, y, s);
  o << fmt::format("   <rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"{}\"/>\n", S, T, kMasked);
  std::map<std::string, std::string> paths;  // colour -> path data
  for (std::int64_t i = 0; i < T; ++i) {
    std::int64_t j = v.window(l) > 0 ? std::max<std::int64_t>(0, i - v.window(l) + 1) : 0;
    const std::int64_t last = v.bidirectional || v.cross ? S - 1 : i;  // an encoder's (a cross-attention's) every key
    while (j <= last) {
      const std::string c = svg_hex(viridis(static_cast<double>(v.weight(l, h, i, j))));
      std::int64_t e = j + 1;
      while (e <= last && svg_hex(viridis(static_cast<double>(v.weight(l, h, i, e)))) == c) ++e;
      paths[c] += fmt::format("M{} {}h{}v1h-{}z", j, i, e - j, e - j);
      j = e;
    }
  }
  for (const auto& [c, d] : paths) o << fmt::format("   <path fill=\"{}\" d=\"{}\"/>\n", c, d);
  o << "  </g>\n";
  o << fmt::format("  <rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#9a9a9a\" stroke-width=\"0.5\"/>\n", x, y, S * s, T * s);
}

// One view's grid: pixels per token, the panels' size and pitch, how the labels are thinned, and the
// left edge and top of the panels (set once the titles above them are written).
struct Grid {
  std::vector<std::string> labels, key_labels;
  int s = 0, P = 0, PW = 0, step = 1;  // px per token, panel height and width, label every step-th token
  int label_px = 0, pitch_x = 0, pitch_y = 0;
  std::size_t caption_chars = 0;
  int left = 0, head_row = 0, top = 0;

  bool positions = false;  // a long input's cells, labelled by their positions ("96–111") already
  std::string label_of(const std::vector<std::string>& ls, std::int64_t i) const {
    return clip(step > 1 && !positions ? fmt::format("{} {}", i, ls[static_cast<std::size_t>(i)]) : ls[static_cast<std::size_t>(i)], kLabelChars);
  }
  std::string label(std::int64_t i) const { return label_of(labels, i); }
  std::string key_label(std::int64_t j) const { return label_of(key_labels, j); }
};

Grid grid_of(const HeadsView& view) {
  Grid g;
  g.labels = token_labels(view);
  g.positions = view.drawn_from > 0;
  g.key_labels = token_labels(view.key_labels());
  const auto T = view.T, S = view.keys();
  g.s = token_px(std::max(T, S));
  g.P = static_cast<int>(T) * g.s;                                  // panel height
  g.PW = static_cast<int>(S) * g.s;                                 // panel width
  g.step = std::max(1, static_cast<int>(std::ceil(12.0 / g.s)));  // label every step-th token
  std::size_t label_chars = cells("queries ↓");
  for (std::int64_t i = 0; i < T; i += g.step) label_chars = std::max(label_chars, cells(g.label(i)));
  g.label_px = static_cast<int>(std::ceil(label_chars * kCharW));
  g.pitch_x = std::max(g.PW, 116) + 16;                   // a caption needs about 116 px
  const int caption_h = 16;
  g.pitch_y = g.P + caption_h + 10;
  g.caption_chars = static_cast<std::size_t>((g.pitch_x - 8) / kCharW);
  return g;
}

// The document's title (the first view), the part's notes and title, the view's sizes and notes; returns the y below them.
int titles_svg(const HeadsView& view, std::ostringstream& b, int y, bool first) {
  const auto T = view.T, S = view.keys();
  if (first) {
    y += 22;
    b << fmt::format("  <text x=\"10\" y=\"{}\" font-size=\"15\" font-weight=\"bold\">{}</text>\n", y, esc("attn heads · " + view.model));
  }
  if (!view.part.empty()) {  // the notes (about the whole input) before the first part's title
    for (const auto& n : view.notes) {
      y += 15;
      b << fmt::format("  <text x=\"10\" y=\"{}\" font-size=\"11\" fill=\"#555555\">{}</text>\n", y, esc("note: " + n));
    }
    y += 24;
    b << fmt::format("  <text x=\"10\" y=\"{}\" font-size=\"14\" font-weight=\"bold\">{}</text>\n", y, esc(view.part_title()));
  }
  y += 18;
  b << fmt::format("  <text x=\"10\" y=\"{}\" font-size=\"11\" fill=\"#555555\">{}</text>\n", y,
                   esc(view.cross ? fmt::format("{} layers × {} heads, T = {} decoder tokens down, S = {} source tokens across; every head on one "
                                                "scale, 0 to 1", view.layers, view.heads, T, S)
                                  : fmt::format("{} × {}, T = {}: queries down, keys across; every head on one scale, 0 to 1", counted(view.layers, "layer"),
                                                counted(view.heads, "head"), tokens_of(view))));
  for (const auto& n : view.notes) {
    if (!view.part.empty()) break;
    y += 15;
    b << fmt::format("  <text x=\"10\" y=\"{}\" font-size=\"11\" fill=\"#555555\">{}</text>\n", y, esc("note: " + n));
  }
  return y;
}

// The head numbers, and each layer's row: its number, the query labels, the panels and their captions.
void panels_svg(const HeadsView& view, const Grid& g, std::ostringstream& b) {
  b << fmt::format("  <text x=\"{}\" y=\"{}\" font-size=\"{}\" font-style=\"italic\" fill=\"#555555\" text-anchor=\"end\">queries ↓</text>\n", g.left - 6,
                   g.top - 4, kFont);
  for (std::int64_t h = 0; h < view.heads; ++h)
    b << fmt::format("  <text x=\"{}\" y=\"{}\" font-size=\"12\" font-weight=\"bold\" text-anchor=\"middle\">h{}</text>\n",
                     g.left + static_cast<int>(h) * g.pitch_x + g.PW / 2, g.head_row, view.first_head + h);
  for (std::int64_t l = 0; l < view.layers; ++l) {
    const int py = g.top + static_cast<int>(l) * g.pitch_y;
    b << fmt::format("  <text x=\"10\" y=\"{}\" font-size=\"12\" font-weight=\"bold\">L{}</text>\n", py + std::min(g.P, 40) / 2 + 5, view.first_layer + l);
    // the queries, left of the first column
    for (std::int64_t i = 0; i < view.T; i += g.step)
      b << fmt::format("  <text x=\"{}\" y=\"{:.1f}\" font-size=\"{}\" text-anchor=\"end\">{}</text>\n", g.left - 4, py + (i + 0.5) * g.s + 3.5, kFont,
                       esc(g.label(i)));
    for (std::int64_t h = 0; h < view.heads; ++h) {
      const int px = g.left + static_cast<int>(h) * g.pitch_x;
      panel(b, view, l, h, px, py, g.s);
      const auto& sm = view.summary(l, h);
      b << fmt::format("  <text x=\"{}\" y=\"{}\" font-size=\"{}\" fill=\"#333333\">{}</text>\n", px, py + g.P + 12, kFont,
                       esc(clip(pattern_text(sm), g.caption_chars)));
    }
  }
}

// The keys, upright under the last row's panels and captions, from keys_y up; returns the longest label's cells.
std::size_t key_labels_svg(const HeadsView& view, const Grid& g, std::ostringstream& b, int keys_y) {
  std::size_t key_chars = 1;
  if (view.layers > 0) {
    for (std::int64_t h = 0; h < view.heads; ++h) {
      const int px = g.left + static_cast<int>(h) * g.pitch_x;
      for (std::int64_t i = 0; i < view.keys(); i += g.step) {
        key_chars = std::max(key_chars, cells(g.key_label(i)));
        const double x = px + (i + 0.5) * g.s + 3.5;
        b << fmt::format("  <text x=\"{0:.1f}\" y=\"{1}\" font-size=\"{2}\" text-anchor=\"end\" transform=\"rotate(-90 {0:.1f} {1})\">{3}</text>\n", x,
                         keys_y, kFont, esc(g.key_label(i)));
      }
    }
    b << fmt::format("  <text x=\"{}\" y=\"{}\" font-size=\"{}\" font-style=\"italic\" fill=\"#555555\" text-anchor=\"end\">keys →</text>\n", g.left - 6,
                     keys_y + 10, kFont);
  }
  return key_chars;
}

// The legend from ly on: the ramp, the masked grey, how the labels are thinned, the induction label's
// measure where a head has it; widens `width` and returns the y below it.
int legend_svg(const HeadsView& view, const Grid& g, std::ostringstream& b, int ly, int& width) {
  b << fmt::format("  <text x=\"10\" y=\"{}\" font-size=\"11\">weight 0</text>\n", ly + 11);
  for (int k = 0; k < 10; ++k)
    b << fmt::format("  <rect x=\"{}\" y=\"{}\" width=\"18\" height=\"14\" fill=\"{}\"/>\n", 66 + k * 18, ly, svg_hex(viridis(k / 9.0)));
  b << fmt::format("  <text x=\"{}\" y=\"{}\" font-size=\"11\">1</text>\n", 66 + 180 + 6, ly + 11);
  b << fmt::format("  <rect x=\"276\" y=\"{}\" width=\"14\" height=\"14\" fill=\"{}\" stroke=\"#9a9a9a\" stroke-width=\"0.5\"/>\n", ly, kMasked);
  b << fmt::format("  <text x=\"296\" y=\"{}\" font-size=\"11\">{}</text>\n", ly + 11,
                   esc(view.cross ? std::string("nothing masked: every decoder token sees every source token") : view.masked_text()));
  ly += 30;
  std::string foot = "under each head: its pattern and the mean weight behind it (broad: entropy ÷ uniform entropy)";
  if (g.step > 1) foot += g.positions ? fmt::format("; one cell in {} labelled, by its positions", g.step) : fmt::format("; one token in {} labelled, with its position", g.step);
  b << fmt::format("  <text x=\"10\" y=\"{}\" font-size=\"11\" fill=\"#555555\">{}</text>\n", ly, esc(foot));
  width = std::max(width, 10 + static_cast<int>(std::ceil(cells(foot) * 6.7)));
  // the induction label's measure, where a head has it
  if (std::any_of(view.summaries.begin(), view.summaries.end(), [](const HeadSummary& s) { return s.pattern == HeadPattern::Induction; })) {
    const std::string ind = "induction: the mean weight on the key right after the query token's earlier occurrence (a repeated sequence continued)";
    ly += 16;
    b << fmt::format("  <text x=\"10\" y=\"{}\" font-size=\"11\" fill=\"#555555\">{}</text>\n", ly, esc(ind));
    width = std::max(width, 10 + static_cast<int>(std::ceil(cells(ind) * 6.7)));
  }
  return ly + 14;
}

// One view's title (the first), grid and legend into b from y on; returns the y below it and widens `width`.
int view_svg(const HeadsView& view, std::ostringstream& b, int y, int& width, bool first) {
  check_view(view);
  Grid g = grid_of(view);
  y = titles_svg(view, b, y, first);
  g.left = 10 + 34 + g.label_px + 8;  // layer label, query labels, a margin
  g.head_row = y + 30;
  g.top = g.head_row + 10;
  width = std::max({width, g.left + static_cast<int>(view.heads) * g.pitch_x, 560});
  width = std::max(width, 10 + static_cast<int>(std::ceil(cells("attn heads · " + view.model) * 9.0)));
  for (const auto& n : view.notes) width = std::max(width, 10 + static_cast<int>(std::ceil(cells("note: " + n) * 6.0)));  // 11 px text

  panels_svg(view, g, b);
  const int keys_y = g.top + static_cast<int>(view.layers) * g.pitch_y - 6;
  const std::size_t key_chars = key_labels_svg(view, g, b, keys_y);
  return legend_svg(view, g, b, keys_y + static_cast<int>(std::ceil(key_chars * kCharW)) + 20, width);
}

}  // namespace

void render_heads_svg(const std::vector<HeadsView>& views, std::ostream& out) {
  std::ostringstream b;
  int y = 0, width = 0;
  for (std::size_t k = 0; k < views.size(); ++k) y = view_svg(views[k].kept() ? views[k] : pooled_view(views[k]), b, y, width, k == 0);
  const int height = y;
  out << fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" font-family=\"{2}\">\n"
      "  <rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n{3}</svg>\n",
      width, height, kFontFamily, b.str());
}

}  // namespace attn::model
