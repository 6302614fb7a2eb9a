// --format svg / --svg-dir: attention heatmaps per batch row and head, with token labels, the values
// in the cells when they fit and a colour legend, and the mask pattern as its own picture.
// Plain, deterministic SVG text: fixed sizes and number formats, no timestamps or ids from memory.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "attn/render/render.hpp"

namespace attn {
namespace {

constexpr int kCell = 44;       // px per cell
constexpr int kFont = 11;       // px, values and labels
constexpr double kCharW = 6.6;  // px per character at kFont, a conservative estimate for DejaVu Sans
constexpr const char* kFontFamily = "DejaVu Sans, Verdana, sans-serif";
constexpr const char* kBlocked = "#e6e6e6";

// Text and attribute values: the markup characters escaped.
std::string esc(std::string_view s) { return markup_escape(s); }


struct Picture {
  std::string step;  // step id
  std::string block; // block key
  std::string name;  // file name
  int width = 0, height = 0;
  std::string body;  // SVG elements, origin at the picture's top left
};

constexpr std::size_t kLabelChars = 12;  // labels are cut to this many characters, on both axes

// How one cell of a picture looks: its colour, the value written in it (where it fits) and the
// text's colour; blocked: grey, for a key the mask blocks.
struct CellLook {
  std::string fill, text, text_fill = "#000000";
  bool blocked = false;
};

CellLook cell_look(const Step& s, const Step* masked, std::int64_t at, const HeatScale& rg, int precision) {
  CellLook c;
  auto& [fill, text, text_fill, any_blocked] = c;
  const bool mask = s.kind == ValueKind::Mask;
  Scalar v = s.value.at(at);
  if (blocked(masked, at)) v = masked->value.at(at);
  if (mask) {
    fill = v != 0 ? svg_hex(viridis(0.5)) : kBlocked;
    text.assign(1, v != 0 ? '1' : '0');
    text_fill = v != 0 ? "#ffffff" : "#777777";
  } else if (!std::isfinite(v)) {
    fill = kBlocked;
    any_blocked = true;
    // Grey says the mask blocks it: the masked step itself holds −∞; a weight is exactly 0; a step
    // before the mask keeps its own value, printed as in the tables (where it fits)
    const Scalar own = s.value.at(at);
    if (!std::isfinite(own)) text = own < 0 ? "−∞" : (own > 0 ? "+∞" : "nan");
    else if (own == 0) text = "0";
    else text = format_fixed(own, precision);
    if (cells(text) * kCharW > kCell - 4) text.clear();
    text_fill = "#777777";
  } else {
    const Rgb col = viridis(std::clamp(rg.t(v), 0.0, 1.0));
    fill = svg_hex(col);
    text = format_fixed(v, precision);
    text_fill = is_light(col) ? "#000000" : "#ffffff";
    if (text.size() * kCharW > kCell - 4) text.clear();  // values only where they fit
  }
  return c;
}

// The legend below the grid at height ly: the ramp between the scale's ends and which scale it is
// (the mask's two colours for the mask), grey only when a cell is blocked. Returns the width it needs.
int legend(std::ostringstream& o_, const Step& s, const HeatScale& rg, int precision, bool any_blocked, int ly) {
  const bool mask = s.kind == ValueKind::Mask;
  if (mask) {
    o_ << fmt::format("  <rect x=\"8\" y=\"{}\" width=\"14\" height=\"14\" fill=\"{}\"/>\n", ly, svg_hex(viridis(0.5)));
    o_ << fmt::format("  <text x=\"28\" y=\"{}\" font-size=\"{}\">1 may attend</text>\n", ly + 11, kFont);
    o_ << fmt::format("  <rect x=\"120\" y=\"{}\" width=\"14\" height=\"14\" fill=\"{}\"/>\n", ly, kBlocked);
    o_ << fmt::format("  <text x=\"140\" y=\"{}\" font-size=\"{}\">0 blocked</text>\n", ly + 11, kFont);
  } else {
    o_ << fmt::format("  <text x=\"8\" y=\"{}\" font-size=\"{}\" text-anchor=\"start\">{}</text>\n", ly + 11, kFont,
                      format_fixed(static_cast<Scalar>(rg.lo), precision));
    const int bx = 60;
    for (int k = 0; k < 10; ++k) {
      o_ << fmt::format("  <rect x=\"{}\" y=\"{}\" width=\"16\" height=\"14\" fill=\"{}\"/>\n", bx + k * 16, ly, svg_hex(viridis(k / 9.0)));
    }
    o_ << fmt::format("  <text x=\"{}\" y=\"{}\" font-size=\"{}\">{}</text>\n", bx + 166, ly + 11, kFont,
                      format_fixed(static_cast<Scalar>(rg.hi), precision));
    int x = bx + 220;
    if (any_blocked) {
      o_ << fmt::format("  <rect x=\"{}\" y=\"{}\" width=\"14\" height=\"14\" fill=\"{}\"/>\n", x, ly, kBlocked);
      o_ << fmt::format("  <text x=\"{}\" y=\"{}\" font-size=\"{}\">masked</text>\n", x + 18, ly + 11, kFont);
      x += 70;
    }
    const std::string scale = rg.fitted ? "fitted to this picture's values" : s.id == "weights" ? "fixed, 0 to 1" : "the step's whole range";
    o_ << fmt::format("  <text x=\"8\" y=\"{}\" font-size=\"{}\" fill=\"#555555\">colour scale: {}</text>\n", ly + 27, kFont, scale);
    return x + 8;
  }
  return 0;
}

Picture picture(const Trace& t, const Step& s, const StepLayout& l, const Block& b, const TextOptions& o, bool many) {
  const auto& c = t.config;
  const Step* masked = blocking_step(t, s);
  const HeatScale rg = o.fit_range ? fitted_heat_scale(s, masked, b.offset, l.row_count * l.col_count) : heat_scale(s);
  std::vector<std::int64_t> rows, cols;
  for (const auto& i : l.rows)
    if (i) rows.push_back(*i);
  for (const auto& j : l.cols)
    if (j) cols.push_back(*j);
  // labels: repeated tokens numbered (the₁, the₂), cut the same way on both axes
  std::vector<std::string> row_labels, col_labels;
  for (auto i : rows) row_labels.push_back(clip(distinct_axis_label(c, l.row_dim, i, b.batch), kLabelChars));
  for (auto j : cols) col_labels.push_back(clip(distinct_axis_label(c, l.col_dim, j, b.batch), kLabelChars));
  std::size_t row_chars = 1, col_chars = 1;
  for (const auto& x : row_labels) row_chars = std::max(row_chars, cells(x));
  for (const auto& x : col_labels) col_chars = std::max(col_chars, cells(x));
  const bool upright = col_chars * kCharW > kCell - 4;  // column labels too wide for a cell are turned upright
  const int col_label_h = upright ? static_cast<int>(std::ceil(col_chars * kCharW)) + 4 : 14;
  // axis titles: which tokens ask (rows) and which are asked (columns)
  const bool cross = c.mode == Mode::Cross;
  const std::string row_title = cross ? "target (queries) ↓" : "queries ↓";
  const std::string col_title = cross ? "source (keys) →" : "keys →";
  const int left = 12 + static_cast<int>(std::ceil(std::max(row_chars, cells(row_title)) * kCharW));
  const int top = 56 + 16 + col_label_h;
  const int grid_w = static_cast<int>(cols.size()) * kCell, grid_h = static_cast<int>(rows.size()) * kCell;
  const int legend_h = 44;
  Picture p;
  p.width = std::max(left + grid_w + 16, 340);
  p.height = top + grid_h + legend_h;
  std::string title = fmt::format("{} · {}", s.id, s.title);
  if (!b.title.empty()) title += " · " + b.title;
  // wide enough for the title (14 px bold) and the formula line
  const std::string formula_line = fmt::format("{} · [{}] = {}", s.formula, fmt::join(s.dims, ", "), shape_string(s.value.shape()));
  p.width = std::max({p.width, 16 + static_cast<int>(std::ceil(cells(title) * 8.6)), 16 + static_cast<int>(std::ceil(cells(formula_line) * kCharW))});
  p.step = s.id;
  p.block = b.key;
  p.name = s.id + (many && !b.key.empty() ? "." + b.key : "");
  p.name += ".svg";

  std::ostringstream o_;
  o_ << fmt::format("  <text x=\"8\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{}</text>\n", esc(title));
  o_ << fmt::format("  <text x=\"8\" y=\"36\" font-size=\"{}\" fill=\"#555555\">{}</text>\n", kFont, esc(formula_line));
  o_ << fmt::format("  <text x=\"{}\" y=\"{}\" font-size=\"{}\" font-style=\"italic\" fill=\"#555555\">{}</text>\n", left, 56 + 8, kFont,
                    esc(col_title));
  o_ << fmt::format("  <text x=\"{}\" y=\"{}\" font-size=\"{}\" font-style=\"italic\" fill=\"#555555\" text-anchor=\"end\">{}</text>\n",
                    left - 6, top - 6, kFont, esc(row_title));
  // column labels (keys) above the grid, upright when long; row labels (queries) on the left
  for (std::size_t k = 0; k < cols.size(); ++k) {
    const int x = left + static_cast<int>(k) * kCell + kCell / 2;
    if (upright) {
      o_ << fmt::format("  <text x=\"{0}\" y=\"{1}\" font-size=\"{2}\" text-anchor=\"start\" transform=\"rotate(-90 {0} {1})\">{3}</text>\n", x + 4,
                        top - 4, kFont, esc(col_labels[k]));
    } else {
      o_ << fmt::format("  <text x=\"{}\" y=\"{}\" font-size=\"{}\" text-anchor=\"middle\">{}</text>\n", x, top - 6, kFont, esc(col_labels[k]));
    }
  }
  for (std::size_t r = 0; r < rows.size(); ++r) {
    o_ << fmt::format("  <text x=\"{}\" y=\"{}\" font-size=\"{}\" text-anchor=\"end\">{}</text>\n", left - 6,
                      top + static_cast<int>(r) * kCell + kCell / 2 + 4, kFont, esc(row_labels[r]));
  }
  bool any_blocked = false;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::size_t k = 0; k < cols.size(); ++k) {
      const auto at = b.offset + rows[r] * l.col_count + cols[k];
      const int x = left + static_cast<int>(k) * kCell, y = top + static_cast<int>(r) * kCell;
      const CellLook look = cell_look(s, masked, at, rg, o.precision);
      any_blocked = any_blocked || look.blocked;
      const auto& [fill, text, text_fill, blocked_cell] = look;
      o_ << fmt::format("  <rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"#ffffff\" stroke-width=\"1\"/>\n", x, y, kCell,
                        kCell, fill);
      if (!text.empty()) {
        o_ << fmt::format("  <text x=\"{}\" y=\"{}\" font-size=\"{}\" text-anchor=\"middle\" fill=\"{}\">{}</text>\n", x + kCell / 2,
                          y + kCell / 2 + 4, kFont, text_fill, esc(text));
      }
    }
  }
  // legend: the ramp between the scale's ends, which scale it is, and grey only when a cell is blocked
  const int ly = top + grid_h + 14;
  p.width = std::max(p.width, legend(o_, s, rg, o.precision, any_blocked, ly));
  p.body = o_.str();
  return p;
}

std::string document(int width, int height, const std::string& body) {
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" font-family=\"{2}\">\n"
      "  <rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n{3}</svg>\n",
      width, height, kFontFamily, body);
}

std::vector<Picture> pictures(const Trace& t, const TextOptions& o) {
  check_text_options(t, o);
  std::vector<Picture> out;
  std::vector<std::size_t> indices = o.steps;
  if (indices.empty())
    for (std::size_t i = 0; i < t.steps.size(); ++i) indices.push_back(i);
  for (auto idx : indices) {
    const Step& s = t.steps[idx];
    const bool wanted = s.kind == ValueKind::Mask ||
                        (heatmap_able(s) && std::find(o.heatmaps.begin(), o.heatmaps.end(), s.id) != o.heatmaps.end());
    if (!wanted) continue;
    const StepLayout l = layout_step(s, t.config, o.view);
    std::size_t real = 0;
    for (const auto& b : l.blocks) real += b.gap ? 0 : 1;
    for (const auto& b : l.blocks)
      if (!b.gap) out.push_back(picture(t, s, l, b, o, real > 1 || !b.title.empty()));
  }
  return out;
}

}  // namespace

std::vector<SvgPicture> render_svg_pictures(const Trace& t, const TextOptions& o) {
  std::vector<SvgPicture> out;
  for (const auto& p : pictures(t, o)) out.push_back({p.step, p.block, p.name, document(p.width, p.height, p.body)});
  return out;
}

void render_svg(const Trace& t, std::ostream& out, const TextOptions& o) {
  int width = 0, height = 0;
  std::string body;
  for (const auto& p : pictures(t, o)) {
    body += fmt::format(" <g transform=\"translate(0,{})\">\n{} </g>\n", height, p.body);
    height += p.height + 16;
    width = std::max(width, p.width);
  }
  out << document(width, height, body);
}

}  // namespace attn
