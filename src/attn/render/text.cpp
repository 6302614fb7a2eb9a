// The terminal walkthrough: header, then each step with its formula, symbolic and concrete shape and
// its tensor as labelled, aligned matrices (one block per batch row and head), heatmaps of the
// attention pattern, and optional explanations. Large tensors are summarised as numpy prints them.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cmath>
#include <limits>
#include <sstream>

#include "attn/explain.hpp"
#include "attn/render/render.hpp"

namespace attn {

std::string format_fixed(Scalar v, int precision) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // Beyond ten integer digits, fixed notation is a row of digits nobody reads (3e38 has 39): the same
  // decimals in scientific notation, 3.0000e+38
  if (std::fabs(v) >= 1e10F) {
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific, std::max(precision, 0));
    return std::string(buf, r.ptr);
  }
  // The exact value rounded to `precision` decimals (as "{:.Nf}" prints it). Up to 12 decimals, and
  // while the digits fit 2^53, in integers: v · 10^p is exact in double (v's 24-bit significand
  // times 5^p's at most 29 bits), so rounding it to an integer (ties to even, as the exact decimal
  // expansion is rounded) gives the digits.
  constexpr double kPow10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12};
  if (precision >= 0 && precision <= 12) {
    const double scaled = std::nearbyint(std::fabs(static_cast<double>(v)) * kPow10[precision]);
    if (scaled < 0x1p53) {
      char digits[32];
      const auto n = static_cast<std::uint64_t>(scaled);
      auto r = std::to_chars(digits, digits + sizeof digits, n);
      auto len = static_cast<int>(r.ptr - digits);
      std::string s;
      s.reserve(static_cast<std::size_t>(std::max(len, precision + 1) + 3));
      if (std::signbit(v) && n != 0) s += '-';  // "-0.0000" would be a rounding artefact, not a negative number
      if (len <= precision) {  // 0.00ddd
        s += "0.";
        s.append(static_cast<std::size_t>(precision - len), '0');
        s.append(digits, r.ptr);
      } else {
        s.append(digits, digits + (len - precision));
        if (precision > 0) s += '.', s.append(digits + (len - precision), r.ptr);
      }
      return s;
    }
  }
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, precision);
  std::string s = r.ec == std::errc{} ? std::string(buf, r.ptr) : fmt::format("{:.{}f}", v, precision);
  // "-0.0000" is a rounding artefact, not a negative number.
  if (s.front() == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

bool heatmap_able(const Step& s) {
  const auto r = s.dims.size();
  if (r < 2 || s.kind == ValueKind::Mask) return false;
  const auto& a = s.dims[r - 2];
  const auto& b = s.dims[r - 1];
  return is_token_axis(a) && is_token_axis(b);
}

namespace {

constexpr std::string_view kEllipsis = "…";

// The same, appended to a line in place (the matrices append thousands of cells).
void append_left(std::string& line, std::string_view s, std::size_t width) {
  const auto w = cells(s);
  if (width > w) line.append(width - w, ' ');
  line.append(s);
}

void append_right(std::string& line, std::string_view s, std::size_t width) {
  const auto w = cells(s);
  line.append(s);
  if (width > w) line.append(width - w, ' ');
}

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

// Word-wraps a paragraph to `width` cells: the first line starts with `first`, the others with `rest`.
std::string wrap(const std::string& text, std::size_t width, const std::string& first, const std::string& rest) {
  std::istringstream in(text);
  std::string word, line, out;
  while (in >> word) {
    if (!line.empty() && cells(line) + 1 + cells(word) > width) {
      out += (out.empty() ? first : rest) + line + "\n";
      line.clear();
    }
    if (!line.empty()) line += ' ';
    line += word;
  }
  if (!line.empty()) out += (out.empty() ? first : rest) + line + "\n";
  return out;
}

class TextRenderer {
 public:
  TextRenderer(const Trace& trace, std::ostream& out, const TextOptions& o) : tr_(trace), c_(trace.config), out_(out), o_(o) {}

  void header() {
    out_ << "Attention Tracer";
    if (!c_.title.empty()) out_ << " · " << c_.title;
    out_ << "\n";
    std::string sizes = c_.batched ? fmt::format("B = {}", c_.B) : "B = 1 (no batch dimension)";
    sizes += fmt::format(" · T = {} · S = {}", c_.T, c_.S);
    sizes += " · " + widths_text(c_, " · ");
    out_ << fmt::format("mode {} · {}\n", mode_name(c_.mode), sizes);
    out_ << fmt::format("scale {} · starts from {}", c_.scale, c_.starts_from.empty() ? std::string(entry_name(c_.entry)) : c_.starts_from);
    if (c_.entry == Entry::Embeddings) out_ << fmt::format(" · layout {}", layout_name(c_.layout));
    out_ << "\n";
    for (const auto& n : c_.notes) out_ << "  note: " << n << "\n";
  }

  void shape_flow(const std::vector<std::size_t>& indices) {
    out_ << "\nShape flow\n";
    std::size_t id_w = 2, title_w = 4, sym_w = 0;
    for (auto i : indices) {
      const auto& s = tr_.steps[i];
      id_w = std::max(id_w, cells(s.id));
      title_w = std::max(title_w, cells(s.title));
      sym_w = std::max(sym_w, cells(symbolic(s)));
    }
    for (auto i : indices) {
      const auto& s = tr_.steps[i];
      out_ << fmt::format("{:>3}. {}  {}  {} = {}\n", i + 1, pad_right(s.id, id_w), pad_right(s.title, title_w),
                          pad_left(symbolic(s), sym_w), shape_string(s.value.shape()));
    }
  }

  void step(std::size_t index) {
    const Step& s = tr_.steps[index];
    out_ << fmt::format("\n[{}] {} · {}\n", index + 1, s.id, s.title);
    out_ << "    " << s.formula << "\n";
    out_ << fmt::format("    {} = {}\n", symbolic(s), shape_string(s.value.shape()));
    if (!s.note.empty()) out_ << "    " << s.note << "\n";
    if (o_.timings) out_ << fmt::format("    time: {:.3f} ms\n", s.seconds * 1e3);
    const StepLayout layout = layout_step(s, c_, o_.view);
    tensor(s, layout);
    if (heatmap_able(s) && std::find(o_.heatmaps.begin(), o_.heatmaps.end(), s.id) != o_.heatmaps.end()) heatmap(s, layout);
    if (o_.explain) {
      const auto text = explain_step(tr_, s, {o_.view.batch.value_or(0), o_.view.head.value_or(0)});
      if (!text.empty()) out_ << "\n" << wrap(text, 96, "    ▸ ", "      ");
    }
  }

 private:
  static std::string symbolic(const Step& s) { return fmt::format("[{}]", fmt::join(s.dims, ", ")); }

  // a repeated token numbered (the₁, the₂), so its rows and columns can be told apart
  std::string label(Dim dim, std::int64_t index, std::int64_t b) const { return distinct_axis_label(c_, dim, index, b); }

  std::string number(const Step& s, Scalar v) const {
    if (s.kind == ValueKind::Mask) return v != 0 ? "1" : "0";
    return format_fixed(v, o_.precision);
  }

  void tensor(const Step& s, const StepLayout& l) {
    if (l.summarised) out_ << fmt::format("    (summarised: {} values; edges of {} shown)\n", s.value.size(), o_.view.edge_items);
    // Every number shown, formatted once, block by block in the order they are printed. One width
    // for every number column of the step keeps blocks aligned with each other; only the entries
    // shown count (a summarised [12, 2048, 2048] step shows a few hundred of 50 million).
    std::vector<std::string> shown;
    std::size_t num_w = 1;
    for (const auto& b : l.blocks) {
      if (b.gap) continue;
      for (const auto& i : l.rows) {
        if (!i) continue;
        for (const auto& j : l.cols)
          if (j) num_w = std::max(num_w, shown.emplace_back(number(s, s.value.at(b.offset + *i * l.col_count + *j))).size());
        if (s.row_sums) num_w = std::max(num_w, shown.emplace_back(number(s, s.row_sums->data()[b.row_offset + *i])).size());
      }
    }
    std::size_t next = 0;
    each_block(l, [&](const Block& b) { matrix(s, l, b, num_w, shown, next); });
  }

  void matrix(const Step& s, const StepLayout& l, const Block& b, std::size_t num_w, const std::vector<std::string>& shown, std::size_t& next) {
    std::vector<std::string> row_labels;
    std::size_t label_w = 0;
    for (const auto& i : l.rows) label_w = std::max(label_w, cells(row_labels.emplace_back(i ? label(l.row_dim, *i, b.batch) : std::string(kEllipsis))));
    std::vector<std::size_t> col_w;
    std::vector<std::string> col_labels;
    for (const auto& j : l.cols) col_w.push_back(std::max(num_w, cells(col_labels.emplace_back(j ? label(l.col_dim, *j, b.batch) : std::string(kEllipsis)))));
    const bool sums = s.row_sums.has_value();
    std::string line = "    ";
    line.append(label_w, ' ');
    for (std::size_t c = 0; c < l.cols.size(); ++c) line += "  ", append_left(line, col_labels[c], col_w[c]);
    if (sums) line += "  │ ", append_left(line, "sum", num_w);
    line += '\n';
    for (std::size_t r = 0; r < l.rows.size(); ++r) {
      const bool row = l.rows[r].has_value();
      line += "    ";
      append_right(line, row_labels[r], label_w);
      for (std::size_t c = 0; c < l.cols.size(); ++c) line += "  ", append_left(line, row && l.cols[c] ? std::string_view(shown[next++]) : kEllipsis, col_w[c]);
      if (sums) line += "  │ ", append_left(line, row ? std::string_view(shown[next++]) : kEllipsis, num_w);
      line += '\n';
    }
    out_ << line;
  }

  // The attention pattern as coloured (or shaded) cells, one grid per block, below the numbers.
  // Blocked (-inf) cells are "··", never a colour, so they cannot be mistaken for small weights.
  void heatmap(const Step& s, const StepLayout& l) {
    const bool colour = o_.color != ColorMode::None;
    const Step* masked = blocking_step(tr_, s);
    HeatScale sc = heat_scale(s);
    out_ << fmt::format("\n    heatmap of {} · ", s.id);
    if (o_.fit_range) out_ << "colours fitted to each block's own values\n";
    else legend(sc);
    each_block(l, [&](const Block& b) {
      if (o_.fit_range) {
        sc = fitted_heat_scale(s, masked, b.offset, l.row_count * l.col_count);
        out_ << "    ";
        legend(sc);
      }
      std::size_t label_w = 0, cell_w = 2;
      for (const auto& i : l.rows) label_w = std::max(label_w, i ? cells(label(l.row_dim, *i, b.batch)) : 1);
      for (const auto& j : l.cols) cell_w = std::max(cell_w, j ? std::min<std::size_t>(6, cells(label(l.col_dim, *j, b.batch))) : 1);
      std::string head = "    " + std::string(label_w + 1, ' ');
      for (const auto& j : l.cols) {
        head += ' ';
        head += pad_right(j ? fit(label(l.col_dim, *j, b.batch), cell_w) : std::string(kEllipsis), cell_w);
      }
      out_ << head << "\n";
      for (const auto& i : l.rows) {
        std::string line = "    " + pad_right(i ? label(l.row_dim, *i, b.batch) : std::string(kEllipsis), label_w) + " ";
        for (const auto& j : l.cols) {
          line += " ";
          if (!i || !j) {
            line += pad_right(kEllipsis, cell_w);
            continue;
          }
          const auto at = b.offset + *i * l.col_count + *j;
          Scalar v = s.value.at(at);
          if (blocked(masked, at)) v = masked->value.at(at);
          if (!std::isfinite(v)) {
            // -inf (blocked) as "··"; +inf or nan, which a mistaken trace can hold, as "??"
            const std::string mark = repeat(v < 0 ? "·" : "?", cell_w);
            line += colour ? std::string(kAnsiDim) + mark + kAnsiReset : mark;
          } else if (colour) {
            line += heat_background(o_.color, std::clamp(sc.t(v), 0.0, 1.0)) + std::string(cell_w, ' ') + kAnsiReset;
          } else {
            line += repeat(shade(std::clamp(sc.t(v), 0.0, 1.0)), cell_w);
          }
        }
        out_ << line << "\n";
      }
    });
  }

  // Prints each block's title (or a gap's "…" line) and hands real blocks to `body`.
  template <typename Body>
  void each_block(const StepLayout& l, Body&& body) {
    for (const auto& b : l.blocks) {
      if (b.gap) {
        out_ << fmt::format("\n    {} ({})\n", kEllipsis, b.title);
        continue;
      }
      out_ << "\n";
      if (!b.title.empty()) out_ << "    " << b.title << "\n";
      body(b);
    }
  }

  void legend(const HeatScale& sc) {
    const auto lo = format_fixed(static_cast<Scalar>(sc.lo), o_.precision);
    const auto hi = format_fixed(static_cast<Scalar>(sc.hi), o_.precision);
    if (o_.color == ColorMode::None) {
      // The five shades and the value bands they stand for (blank: near the bottom of the range only).
      std::vector<std::string> bands;
      for (int k = 0; k < 5; ++k) {
        const double from = k == 0 ? 0.0 : kShadeBands[k - 1];
        const double a = sc.lo + (sc.hi - sc.lo) * from, z = sc.lo + (sc.hi - sc.lo) * kShadeBands[k];
        bands.push_back(fmt::format("{}{}{} {}–{}", k == 0 ? "'" : "", shade((from + kShadeBands[k]) / 2), k == 0 ? "'" : "",
                                    format_fixed(static_cast<Scalar>(a), 2), format_fixed(static_cast<Scalar>(z), 2)));
      }
      out_ << fmt::format("{} · ·· masked\n", fmt::join(bands, "  "));
      return;
    }
    // one swatch per 256-colour step (the cells' own table), ten samples of viridis in 24-bit colour
    std::string bar;
    const int swatches = o_.color == ColorMode::Ansi256 ? 16 : 10;
    for (int k = 0; k < swatches; ++k) {
      const double t = o_.color == ColorMode::Ansi256 ? (k + 0.5) / 16.0 : k / 9.0;
      bar += heat_background(o_.color, t) + " " + kAnsiReset;
    }
    out_ << fmt::format("{} {} {} · {}··{} masked\n", lo, bar, hi, kAnsiDim, kAnsiReset);
  }

  static std::string repeat(const std::string& s, std::size_t n) {
    std::string out;
    for (std::size_t i = 0; i < n; ++i) out += s;
    return out;
  }

  const Trace& tr_;
  const TraceConfig& c_;
  std::ostream& out_;
  const TextOptions& o_;
};

std::vector<std::size_t> shown_steps(const Trace& t, const TextOptions& o) {
  if (!o.steps.empty()) return o.steps;
  std::vector<std::size_t> all(t.steps.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  return all;
}

}  // namespace

void render_text_header(const Trace& trace, std::ostream& out, const TextOptions& options) {
  TextRenderer(trace, out, options).header();
}

void render_text_step(const Trace& trace, std::size_t index, std::ostream& out, const TextOptions& options) {
  TextRenderer(trace, out, options).step(index);
}

void render_text(const Trace& trace, std::ostream& out, const TextOptions& options) {
  TextRenderer r(trace, out, options);
  r.header();
  const auto indices = shown_steps(trace, options);
  if (options.shapes_only) {
    r.shape_flow(indices);
    return;
  }
  for (auto i : indices) r.step(i);
}

}  // namespace attn
