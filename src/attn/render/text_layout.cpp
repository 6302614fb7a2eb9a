// The text renderer's layout pass (text_layout.hpp): blocks, labels, widths, column blocks, the
// numbers as text and the heatmap cells, decided once for a step.
#include "attn/render/text_layout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "attn/core/options.hpp"

namespace attn {
namespace {

constexpr std::string_view kEllipsis = "…";

// Cuts a label to `width` cells, ending in "…" when cut.
std::string fit(const std::string& s, std::size_t width) {
  if (cells(s) <= width) return s;
  std::string out;
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size() && n + 1 < width; ++i) {
    out += s[i];
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && (i + 1 >= s.size() || (static_cast<unsigned char>(s[i + 1]) & 0xC0) != 0x80)) ++n;
  }
  return out + "…";
}

class Layouter {
 public:
  Layouter(const Trace& t, const Step& s, const TextOptions& o)
      : tr_(t), c_(t.config), s_(s), o_(o), l_(layout_step(s, c_, o.view)), masked_(blocking_step(t, s) != nullptr) {}

  TextLayout run() const {
    TextLayout out;
    if (l_.summarised) out.summary = fmt::format("(summarised: {} values; edges of {} shown; {} shows every value)", s_.value.size(), o_.view.edge_items,
                                                  option_with(o_.door, "summary_threshold", static_cast<std::int64_t>(s_.value.size())));
    tables(out);
    if (heatmap_able(s_) && std::find(o_.heatmaps.begin(), o_.heatmaps.end(), s_.id) != o_.heatmaps.end()) heatmaps(out);
    return out;
  }

 private:
  std::size_t width() const { return static_cast<std::size_t>(std::max(o_.width, 20)); }

  // a repeated token numbered (the₁, the₂), so its rows and columns can be told apart
  std::string label(Dim dim, std::int64_t index, std::int64_t b) const { return distinct_axis_label(c_, dim, index, b); }

  std::string number(Scalar v) const {
    if (s_.kind == ValueKind::Mask) return v != 0 ? "1" : "0";
    if (s_.kind == ValueKind::Index) return fmt::format("{:.0f}", v);
    return format_fixed(v, o_.precision);
  }

  // Every block's numbers as text, with one width for every number column of the step (blocks stay
  // aligned with each other); only the entries shown count (a summarised [12, 2048, 2048] step
  // shows a few hundred of 50 million).
  void tables(TextLayout& out) const {
    std::size_t num_w = 1;
    for (const auto& b : l_.blocks) {
      TextTable& t = out.tables.emplace_back();
      t.gap = b.gap;
      t.title = b.title;
      if (b.gap) continue;
      for (const auto& i : l_.rows) {
        auto& row = t.cells.emplace_back();
        for (const auto& j : l_.cols) {
          row.push_back(i && j ? number(s_.value.at(b.offset + *i * l_.col_count + *j)) : std::string(kEllipsis));
          if (i && j) num_w = std::max(num_w, row.back().size());
        }
        if (!s_.row_sums) continue;
        t.sums.push_back(i ? number(s_.row_sums->data()[b.row_offset + *i]) : std::string(kEllipsis));
        if (i) num_w = std::max(num_w, t.sums.back().size());
      }
    }
    for (std::size_t k = 0; k < out.tables.size(); ++k)
      if (!out.tables[k].gap) labels(out.tables[k], l_.blocks[k], num_w);
  }

  void labels(TextTable& t, const Block& b, std::size_t num_w) const {
    for (const auto& i : l_.rows) t.label_w = std::max(t.label_w, cells(t.row_labels.emplace_back(i ? label(l_.row_dim, *i, b.batch) : std::string(kEllipsis))));
    for (const auto& j : l_.cols) t.col_w.push_back(std::max(num_w, cells(t.col_labels.emplace_back(j ? label(l_.col_dim, *j, b.batch) : std::string(kEllipsis)))));
    t.sum_w = s_.row_sums ? num_w : 0;
    t.chunks = chunks(t.col_w, 4 + t.label_w, t.sum_w > 0 ? 4 + num_w : 0, 2, t.col_labels, "column", "columns");
  }

  // Columns [c0, c1) of a table, as many as fit the width after `lead` cells of labels (and `tail`
  // cells of row sums on the last), at least one each; each column takes `sep` cells before it.
  // A table that does not fit says which columns each block holds, in `one` or `many` words.
  std::vector<ColumnBlock> chunks(const std::vector<std::size_t>& col_w, std::size_t lead, std::size_t tail, std::size_t sep,
                                  const std::vector<std::string>& labels, const char* one, const char* many) const {
    std::size_t total = lead + tail;
    for (const auto w : col_w) total += sep + w;
    if (total <= width()) return {{0, col_w.size(), ""}};
    std::vector<ColumnBlock> out;
    for (std::size_t c0 = 0; c0 < col_w.size();) {
      std::size_t c1 = c0, used = lead;
      while (c1 < col_w.size() && (c1 == c0 || used + sep + col_w[c1] + (c1 + 1 == col_w.size() ? tail : 0) <= width())) used += sep + col_w[c1++];
      const std::string range = column_range(labels, c0, c1);
      const char* word = c1 - c0 == 1 ? one : many;
      out.push_back({c0, c1, out.empty() ? fmt::format("{} {} of {} (split to fit {} columns)", word, range, l_.col_count, width())
                                         : fmt::format("{} {}", word, range)});
      c0 = c1;
    }
    return out;
  }

  // "0–7" by the columns' positions along the axis (labels can be word pieces that read oddly as a
  // range); a "…" end by its label.
  std::string column_range(const std::vector<std::string>& labels, std::size_t c0, std::size_t c1) const {
    const auto end = [&](std::size_t c) { return l_.cols[c] ? fmt::format("{}", *l_.cols[c]) : labels[c]; };
    return c1 - c0 == 1 ? end(c0) : fmt::format("{}–{}", end(c0), end(c1 - 1));
  }

  // The attention pattern, one grid per block: each cell's place on the colour scale; blocked (−inf)
  // cells apart, so they cannot be mistaken for small weights.
  void heatmaps(TextLayout& out) const {
    const Step* masked = blocking_step(tr_, s_);
    const HeatScale shared = heat_scale(s_);
    out.heat_lead.emplace_back();  // a blank line
    if (o_.fit_range) {
      out.heat_lead.push_back(fmt::format("    heatmap of {} · colours fitted to each block's own values", s_.id));
    } else {
      for (auto&& line : legend(fmt::format("    heatmap of {} · ", s_.id), shared)) out.heat_lead.push_back(std::move(line));
    }
    for (const auto& b : l_.blocks) {
      TextHeatmap& h = out.heatmaps.emplace_back();
      h.gap = b.gap;
      h.title = b.title;
      if (b.gap) continue;
      HeatScale sc = shared;
      if (o_.fit_range) {
        sc = fitted_heat_scale(s_, masked, b.offset, l_.row_count * l_.col_count);
        h.legend = legend("    ", sc);
      }
      grid(h, b, masked, sc);
    }
  }

  void grid(TextHeatmap& h, const Block& b, const Step* masked, const HeatScale& sc) const {
    for (const auto& i : l_.rows) h.label_w = std::max(h.label_w, i ? cells(label(l_.row_dim, *i, b.batch)) : 1);
    for (const auto& j : l_.cols) h.cell_w = std::max(h.cell_w, j ? std::min<std::size_t>(6, cells(label(l_.col_dim, *j, b.batch))) : 1);
    std::vector<std::string> labels;
    for (const auto& j : l_.cols) labels.push_back(j ? label(l_.col_dim, *j, b.batch) : std::string(kEllipsis));
    for (const auto& x : labels) h.col_labels.push_back(pad_right(fit(x, h.cell_w), h.cell_w));
    h.chunks = chunks(std::vector<std::size_t>(l_.cols.size(), h.cell_w), 4 + h.label_w + 1, 0, 1, labels, "keys", "keys");
    for (const auto& i : l_.rows) {
      h.row_labels.push_back(pad_right(i ? label(l_.row_dim, *i, b.batch) : std::string(kEllipsis), h.label_w));
      auto& row = h.cells.emplace_back();
      for (const auto& j : l_.cols) {
        HeatCell& cell = row.emplace_back();
        if (!i || !j) continue;  // a gap
        const auto at = b.offset + *i * l_.col_count + *j;
        Scalar v = s_.value.at(at);
        if (blocked(masked, at)) v = masked->value.at(at);
        if (!std::isfinite(v)) cell.kind = v < 0 ? HeatCell::Kind::Blocked : HeatCell::Kind::Unknown;
        else cell = {HeatCell::Kind::Value, std::clamp(sc.t(v), 0.0, 1.0)};
      }
    }
  }

  // The legend after `lead`, on as many lines as the width needs (its parts never split).
  std::vector<std::string> legend(const std::string& lead, const HeatScale& sc) const {
    const auto lo = format_fixed(static_cast<Scalar>(sc.lo), o_.precision);
    const auto hi = format_fixed(static_cast<Scalar>(sc.hi), o_.precision);
    if (o_.color == ColorMode::None) {
      // The five shades and the value bands they stand for (blank: near the bottom of the range only),
      // with 2 decimals, or as many more as a narrow range needs for its bands to differ (a gradient's)
      int digits = 2;
      const double step = (sc.hi - sc.lo) / 5;
      while (digits < 6 && step > 0 && step < 5 * std::pow(10.0, -digits)) ++digits;
      std::vector<std::string> bands;
      for (int k = 0; k < 5; ++k) {
        const double from = k == 0 ? 0.0 : kShadeBands[k - 1];
        const double a = sc.lo + (sc.hi - sc.lo) * from, z = sc.lo + (sc.hi - sc.lo) * kShadeBands[k];
        bands.push_back(fmt::format("{}{}{} {}–{}", k == 0 ? "'" : "", shade((from + kShadeBands[k]) / 2), k == 0 ? "'" : "",
                                    format_fixed(static_cast<Scalar>(a), digits), format_fixed(static_cast<Scalar>(z), digits)));
      }
      if (masked_) bands.emplace_back("·· masked");
      std::vector<std::string> out;
      std::string line = lead;
      bool fresh = true;  // nothing after the line's lead yet
      for (const auto& part : bands) {
        if (!fresh && cells(line) + 2 + cells(part) > width()) {
          out.push_back(line);
          line = "      ";
          fresh = true;
        }
        line += (fresh ? "" : "  ") + part;
        fresh = false;
      }
      out.push_back(line);
      return out;
    }
    // one swatch per 256-colour step (the cells' own table), ten samples of viridis in 24-bit colour
    std::string bar;
    const int swatches = o_.color == ColorMode::Ansi256 ? 16 : 10;
    for (int k = 0; k < swatches; ++k) {
      const double t = o_.color == ColorMode::Ansi256 ? (k + 0.5) / 16.0 : k / 9.0;
      bar += heat_background(o_.color, t) + " " + kAnsiReset;
    }
    if (!masked_) return {fmt::format("{}{} {} {}", lead, lo, bar, hi)};
    return {fmt::format("{}{} {} {} · {}··{} masked", lead, lo, bar, hi, kAnsiDim, kAnsiReset)};
  }

  const Trace& tr_;
  const TraceConfig& c_;
  const Step& s_;
  const TextOptions& o_;
  const StepLayout l_;
  const bool masked_;  // the step has blocked cells: only then does the legend name "··"
};

}  // namespace

TextLayout layout_text_step(const Trace& trace, const Step& step, const TextOptions& options) { return Layouter(trace, step, options).run(); }

}  // namespace attn
