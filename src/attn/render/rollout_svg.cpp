// attn heads --rollout --format svg and html: one heatmap per layer, the rollout after it (queries
// down, input tokens across) in viridis on each row's own 0 .. largest scale, query labels beside the
// first map and input-token labels under each, the chosen query's row outlined; at most 128 cells a
// side (a longer input pooled into blocks, each its block's largest share, said in the caption). The HTML page holds the SVG, the
// chosen query's input tokens per layer and the explanation. Draws; computes nothing.
#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "attn/render/color.hpp"
#include "attn/render/heads_layout.hpp"
#include "attn/render/rollout_views.hpp"

namespace attn::model {

using namespace heads_detail;

namespace {

constexpr std::int64_t kMaxCells = 128;  // cells a side before pooling
constexpr int kLabelPx = 90;
constexpr int kKeyLabelsPx = 80;  // under the maps: 14 characters of 9 px, upright

struct Pooled {
  std::int64_t block = 1, n = 0;  // tokens a cell, cells a side
  int px = 4;                     // pixels a cell
};

Pooled pooling(std::int64_t T) {
  Pooled p;
  p.block = std::max<std::int64_t>(1, (T + kMaxCells - 1) / kMaxCells);
  p.n = (T + p.block - 1) / p.block;
  p.px = static_cast<int>(std::clamp<std::int64_t>(256 / std::max<std::int64_t>(p.n, 1), 2, 16));
  return p;
}

// One layer's map at (x, y): a rect per visible cell, a <title> with its share when cells are tokens.
void map_svg(const Rollout& r, const std::vector<std::string>& labels, std::int64_t l, const Pooled& p, int x, int y, std::ostringstream& b) {
  std::vector<float> top(static_cast<std::size_t>(r.T), 0.0f);  // each row's largest share
  for (std::int64_t i = 0; i < r.T; ++i)
    for (std::int64_t j = 0; j < r.T; ++j) top[static_cast<std::size_t>(i)] = std::max(top[static_cast<std::size_t>(i)], r.at(l, i, j));
  b << fmt::format("  <text x=\"{}\" y=\"{}\" font-size=\"11\">after L{}</text>\n", x, y - 6, l);
  for (std::int64_t row = 0; row < p.n; ++row)
    for (std::int64_t col = 0; col < p.n; ++col) {
      double v = 0, share = 0;
      bool any = false;
      for (std::int64_t i = row * p.block; i < std::min(r.T, (row + 1) * p.block); ++i)
        for (std::int64_t j = col * p.block; j < std::min(r.T, (col + 1) * p.block); ++j)
          if (!r.causal || j <= i) {
            const double t = top[static_cast<std::size_t>(i)];
            if (t > 0 && r.at(l, i, j) / t >= v) v = r.at(l, i, j) / t, share = r.at(l, i, j);
            any = true;
          }
      const std::string fill = any ? svg_hex(viridis(v)) : std::string("#e6e6e6");
      b << fmt::format("  <rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\">", x + col * p.px, y + row * p.px, p.px, p.px, fill);
      if (any && p.block == 1) b << fmt::format("<title>{}</title>", esc(fmt::format("{} → {}: {:.4f}", labels[static_cast<std::size_t>(row)], labels[static_cast<std::size_t>(col)], share)));
      b << "</rect>\n";
    }
  const std::int64_t q = r.query / p.block;
  b << fmt::format("  <rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"1.5\"/>\n", x, y + q * p.px,
                   p.n * p.px, p.px);
}

// The first map's query labels, every few tokens where the cells are thin.
void labels_svg(const std::vector<std::string>& labels, const Pooled& p, int y, std::ostringstream& b) {
  const std::int64_t step = std::max<std::int64_t>(1, 10 / p.px);
  for (std::int64_t row = 0; row < p.n; row += step) {
    const std::string name = p.block == 1 ? fmt::format("{} {}", row, labels[static_cast<std::size_t>(row)]) : fmt::format("{}–", row * p.block);
    b << fmt::format("  <text x=\"{}\" y=\"{}\" font-size=\"9\" text-anchor=\"end\">{}</text>\n", kLabelPx - 4, y + row * p.px + p.px - 1, esc(clip(name, 14)));
  }
}

// A map's input-token labels, upright under it from y down, every few tokens where the cells are thin.
void key_labels_svg(const std::vector<std::string>& labels, const Pooled& p, int x, int y, std::ostringstream& b) {
  const std::int64_t step = std::max<std::int64_t>(1, 10 / p.px);
  for (std::int64_t col = 0; col < p.n; col += step) {
    const std::string name = p.block == 1 ? fmt::format("{} {}", col, labels[static_cast<std::size_t>(col)]) : fmt::format("{}–", col * p.block);
    const double cx = x + (static_cast<double>(col) + 0.5) * p.px + 3.0;
    b << fmt::format("  <text x=\"{0:.1f}\" y=\"{1}\" font-size=\"9\" text-anchor=\"end\" transform=\"rotate(-90 {0:.1f} {1})\">{2}</text>\n", cx, y,
                     esc(clip(name, 14)));
  }
}

std::string svg_document(const Rollout& r, const std::vector<std::string>& labels) {
  const Pooled p = pooling(r.T);
  const int side = static_cast<int>(p.n) * p.px, pitch = std::max(side, 110) + 20;
  const std::string title = fmt::format("attention rollout: the heads' {}, the identity for the residual, multiplied from L0 up", rollout_heads_name(r.combine));
  std::vector<std::string> caption = {
      fmt::format("T = {}: queries down, input tokens across; the outlined row: query {} {}", r.T, r.query, labels[static_cast<std::size_t>(r.query)]),
      fmt::format("each row on its own scale (yellow: the row's largest share, dark: none){}",
                  p.block > 1 ? fmt::format("; a cell the largest share of {0} × {0} tokens", p.block) : std::string())};
  if (!r.model.empty()) caption.insert(caption.begin(), r.model);
  std::ostringstream b;
  b << fmt::format("  <text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{}</text>\n", esc(title));
  for (std::size_t i = 0; i < caption.size(); ++i)
    b << fmt::format("  <text x=\"10\" y=\"{}\" font-size=\"11\" fill=\"#555555\">{}</text>\n", 38 + 14 * static_cast<int>(i), esc(caption[i]));
  const int top = 38 + 14 * static_cast<int>(caption.size()) + 8;
  labels_svg(labels, p, top, b);
  for (std::int64_t l = 0; l < r.layers; ++l) {
    const int x = kLabelPx + static_cast<int>(l) * pitch;
    map_svg(r, labels, l, p, x, top, b);
    key_labels_svg(labels, p, x, top + side + 4, b);
  }
  b << fmt::format("  <text x=\"{}\" y=\"{}\" font-size=\"9\" font-style=\"italic\" fill=\"#555555\" text-anchor=\"end\">input tokens →</text>\n", kLabelPx - 4,
                   top + side + 12);
  // wide enough for the title (about 8.5 px a character at 14 px bold) and the captions (6.5 at 11 px)
  std::size_t text_px = 20 + static_cast<std::size_t>(8.5 * static_cast<double>(cells(title)));
  for (const auto& c : caption) text_px = std::max(text_px, 20 + static_cast<std::size_t>(6.5 * static_cast<double>(cells(c))));
  const int width = std::max(kLabelPx + static_cast<int>(r.layers) * pitch, static_cast<int>(text_px)), height = top + side + 4 + kKeyLabelsPx;
  return fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" font-family=\"DejaVu Sans, Verdana, sans-serif\">\n"
                     "  <rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n{2}</svg>\n",
                     width, height, b.str());
}

}  // namespace

void render_rollout_svg(const Rollout& r, const std::vector<std::string>& labels, std::ostream& out) {
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" << svg_document(r, labels);
}

void render_rollout_html(const Rollout& r, const std::vector<std::string>& labels, std::ostream& out, const std::vector<std::string>& explanation) {
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>attn heads --rollout" << (r.model.empty() ? "" : " · " + esc(r.model)) << "</title>\n"
      << "<style>body{font-family:DejaVu Sans,Verdana,sans-serif;margin:1em}td,th{padding:2px 8px;text-align:left}</style>\n</head>\n<body>\n"
      << svg_document(r, labels) << "<h2>" << esc(fmt::format("query {} {} draws on", r.query, labels[static_cast<std::size_t>(r.query)]))
      << "</h2>\n<table>\n<tr><th>after</th><th>input tokens, largest share first</th></tr>\n";
  for (std::int64_t l = 0; l < r.layers; ++l) {
    std::string items;
    for (const auto& [j, share] : rollout_top(r, l, r.query, kRolloutTop)) items += fmt::format("{}{} {:.2f} @{}", items.empty() ? "" : " · ", labels[static_cast<std::size_t>(j)], share, j);
    out << "<tr><td>L" << l << "</td><td>" << esc(items) << "</td></tr>\n";
  }
  out << "</table>\n";
  for (const auto& e : explanation) out << "<p>" << esc(e) << "</p>\n";
  out << "</body>\n</html>\n";
}

}  // namespace attn::model
