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

class TextRenderer {
 public:
  TextRenderer(const Trace& trace, std::ostream& out, const TextOptions& o) : tr_(trace), c_(trace.config), out_(out), o_(o) {}

  void header() {
    out_ << (c_.title.empty() ? std::string("Attention Tracer\n") : wrap("Attention Tracer · " + c_.title, width(), "", "  "));
    // the sizes, a line of " · "-separated parts, wrapped between parts
    std::vector<std::string> parts = {fmt::format("mode {}", mode_name(c_.mode)),
                                      c_.batched ? fmt::format("B = {}", c_.B) : std::string("B = 1 (no batch dimension)"),
                                      fmt::format("T = {}", c_.T), fmt::format("S = {}", c_.S)};
    for (auto&& w : split_parts(widths_text(c_, " · "))) parts.push_back(std::move(w));
    out_ << join_fitting(parts, width());
    parts = {fmt::format("scale {}", c_.scale),
             fmt::format("starts from {}", c_.starts_from.empty() ? std::string(entry_name(c_.entry)) : c_.starts_from)};
    if (c_.entry == Entry::Embeddings) parts.push_back(fmt::format("layout {}", layout_name(c_.layout)));
    out_ << join_fitting(parts, width());
    for (const auto& n : c_.notes) out_ << wrap(n, width(), "  note: ", "        ");
    if (o_.code) {
      out_ << wrap("the >>> lines are PyTorch (import math, numpy as np, torch); B, T, S, C, H, hs are the sizes above, each step's "
                   "variable is its id with _ for . (q.heads: q_heads), and x, W_q, … are the inputs: --dump DIR writes them to "
                   "DIR/inputs/ and DIR/steps.py, which runs every step",
                   width(), "  code: ", "        ");
    }
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
    out_ << wrap(s.formula, width(), "    ", "        ");
    out_ << fmt::format("    {} = {}\n", symbolic(s), shape_string(s.value.shape()));
    if (o_.code)
      for (const auto& line : code_lines(s.code)) out_ << wrap(line, width(), "    >>> ", "    ...     ");
    if (!s.note.empty()) out_ << wrap(s.note, width(), "    ", "      ");
    if (o_.timings) out_ << fmt::format("    time: {:.3f} ms\n", s.seconds * 1e3);
    const StepLayout layout = layout_step(s, c_, o_.view);
    tensor(s, layout);
    if (heatmap_able(s) && std::find(o_.heatmaps.begin(), o_.heatmaps.end(), s.id) != o_.heatmaps.end()) heatmap(s, layout);
    if (o_.explain) {
      const auto text = explain_step(tr_, s, {o_.view.batch.value_or(0), o_.view.head.value_or(0)});
      if (!text.empty()) out_ << "\n" << wrap(text, width(), "    ▸ ", "      ");
    }
  }

 private:
  static std::string symbolic(const Step& s) { return fmt::format("[{}]", fmt::join(s.dims, ", ")); }
  std::size_t width() const { return static_cast<std::size_t>(std::max(o_.width, 20)); }



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

  // One block's numbers under its labels; columns that do not fit the width go on in further column
  // blocks (as NumPy prints a wide array), each saying which columns it holds.
  void matrix(const Step& s, const StepLayout& l, const Block& b, std::size_t num_w, const std::vector<std::string>& shown, std::size_t& next) {
    std::vector<std::string> row_labels;
    std::size_t label_w = 0;
    for (const auto& i : l.rows) label_w = std::max(label_w, cells(row_labels.emplace_back(i ? label(l.row_dim, *i, b.batch) : std::string(kEllipsis))));
    std::vector<std::size_t> col_w;
    std::vector<std::string> col_labels;
    for (const auto& j : l.cols) col_w.push_back(std::max(num_w, cells(col_labels.emplace_back(j ? label(l.col_dim, *j, b.batch) : std::string(kEllipsis)))));
    const bool sums = s.row_sums.has_value();
    // where each shown row's numbers start in `shown`: its real columns, then its sum
    std::size_t real_cols = 0;
    for (const auto& j : l.cols) real_cols += j.has_value() ? 1 : 0;
    std::vector<std::size_t> row_start(l.rows.size(), 0);
    for (std::size_t r = 0; r < l.rows.size(); ++r) {
      row_start[r] = next;
      if (l.rows[r]) next += real_cols + (sums ? 1 : 0);
    }
    const auto chunks = column_chunks(col_w, 4 + label_w, sums ? 4 + num_w : 0);
    std::string line;
    for (std::size_t k = 0; k < chunks.size(); ++k) {
      const auto [c0, c1] = chunks[k];
      const bool last = k + 1 == chunks.size();
      if (chunks.size() > 1) {
        line += k > 0 ? "\n" : "";
        line += k == 0 ? fmt::format("    {} {} of {} (split to fit {} columns)\n", c1 - c0 == 1 ? "column" : "columns",
                                     column_range(l, col_labels, c0, c1), l.col_count, std::max(o_.width, 20))
                       : fmt::format("    {} {}\n", c1 - c0 == 1 ? "column" : "columns", column_range(l, col_labels, c0, c1));
      }
      line += "    ";
      line.append(label_w, ' ');
      for (std::size_t c = c0; c < c1; ++c) line += "  ", append_left(line, col_labels[c], col_w[c]);
      if (sums && last) line += "  │ ", append_left(line, "sum", num_w);
      line += '\n';
      for (std::size_t r = 0; r < l.rows.size(); ++r) {
        const bool row = l.rows[r].has_value();
        line += "    ";
        append_right(line, row_labels[r], label_w);
        std::size_t at = row_start[r];
        for (std::size_t c = 0; c < c1; ++c) {
          const bool real = row && l.cols[c].has_value();
          if (c >= c0) line += "  ", append_left(line, real ? std::string_view(shown[at]) : kEllipsis, col_w[c]);
          if (real) ++at;
        }
        if (sums && last) line += "  │ ", append_left(line, row ? std::string_view(shown[row_start[r] + real_cols]) : kEllipsis, num_w);
        line += '\n';
      }
    }
    out_ << line;
  }

  // Columns [c0, c1) of a table, as many as fit the width after `lead` cells of labels (and `tail`
  // cells of row sums on the last), at least one each.
  // (Each column takes `sep` cells before it.)
  std::vector<std::pair<std::size_t, std::size_t>> column_chunks(const std::vector<std::size_t>& col_w, std::size_t lead, std::size_t tail,
                                                                 std::size_t sep = 2) const {
    std::vector<std::pair<std::size_t, std::size_t>> out;
    const auto width = static_cast<std::size_t>(std::max(o_.width, 20));
    std::size_t total = lead + tail;
    for (const auto w : col_w) total += sep + w;
    if (total <= width) return {{0, col_w.size()}};
    for (std::size_t c0 = 0; c0 < col_w.size();) {
      std::size_t c1 = c0, used = lead;
      while (c1 < col_w.size() && (c1 == c0 || used + sep + col_w[c1] + (c1 + 1 == col_w.size() ? tail : 0) <= width)) used += sep + col_w[c1++];
      out.emplace_back(c0, c1);
      c0 = c1;
    }
    return out;
  }

  // "0–7" by the columns' labels (or positions, where a label is "…").
  // "0–7" by the columns' positions along the axis (labels can be word pieces that read oddly as a
  // range); a "…" end by its label.
  static std::string column_range(const StepLayout& l, const std::vector<std::string>& labels, std::size_t c0, std::size_t c1) {
    const auto end = [&](std::size_t c) { return l.cols[c] ? fmt::format("{}", *l.cols[c]) : labels[c]; };
    return c1 - c0 == 1 ? end(c0) : fmt::format("{}–{}", end(c0), end(c1 - 1));
  }

  // The attention pattern as coloured (or shaded) cells, one grid per block, below the numbers.
  // Blocked (-inf) cells are "··", never a colour, so they cannot be mistaken for small weights.
  void heatmap(const Step& s, const StepLayout& l) {
    const bool colour = o_.color != ColorMode::None;
    const Step* masked = blocking_step(tr_, s);
    HeatScale sc = heat_scale(s);
    if (o_.fit_range) out_ << fmt::format("\n    heatmap of {} · colours fitted to each block's own values\n", s.id);
    else out_ << "\n" << legend(fmt::format("    heatmap of {} · ", s.id), sc);
    each_block(l, [&](const Block& b) {
      if (o_.fit_range) {
        sc = fitted_heat_scale(s, masked, b.offset, l.row_count * l.col_count);
        out_ << legend("    ", sc);
      }
      std::size_t label_w = 0, cell_w = 2;
      for (const auto& i : l.rows) label_w = std::max(label_w, i ? cells(label(l.row_dim, *i, b.batch)) : 1);
      for (const auto& j : l.cols) cell_w = std::max(cell_w, j ? std::min<std::size_t>(6, cells(label(l.col_dim, *j, b.batch))) : 1);
      std::vector<std::string> col_labels;
      for (const auto& j : l.cols) col_labels.push_back(j ? label(l.col_dim, *j, b.batch) : std::string(kEllipsis));
      const auto chunks = column_chunks(std::vector<std::size_t>(l.cols.size(), cell_w), 4 + label_w + 1, 0, 1);
      for (std::size_t k = 0; k < chunks.size(); ++k) {
        const auto [c0, c1] = chunks[k];
        if (chunks.size() > 1) {
          if (k > 0) out_ << "\n";
          out_ << (k == 0 ? fmt::format("    keys {} of {} (split to fit {} columns)\n", column_range(l, col_labels, c0, c1), l.col_count, width())
                          : fmt::format("    keys {}\n", column_range(l, col_labels, c0, c1)));
        }
        std::string head = "    " + std::string(label_w + 1, ' ');
        for (std::size_t c = c0; c < c1; ++c) {
          head += ' ';
          head += pad_right(fit(col_labels[c], cell_w), cell_w);
        }
        out_ << head << "\n";
        for (const auto& i : l.rows) {
          std::string line = "    " + pad_right(i ? label(l.row_dim, *i, b.batch) : std::string(kEllipsis), label_w) + " ";
          for (std::size_t c = c0; c < c1; ++c) {
            const auto& j = l.cols[c];
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

  // The legend after `lead`, on as many lines as the width needs (its parts never split).
  std::string legend(const std::string& lead, const HeatScale& sc) const {
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
      bands.emplace_back("·· masked");
      std::string out, line = lead;
      bool fresh = true;  // nothing after the line's lead yet
      for (const auto& part : bands) {
        if (!fresh && cells(line) + 2 + cells(part) > width()) {
          out += line + "\n";
          line = "      ";
          fresh = true;
        }
        line += (fresh ? "" : "  ") + part;
        fresh = false;
      }
      return out + line + "\n";
    }
    // one swatch per 256-colour step (the cells' own table), ten samples of viridis in 24-bit colour
    std::string bar;
    const int swatches = o_.color == ColorMode::Ansi256 ? 16 : 10;
    for (int k = 0; k < swatches; ++k) {
      const double t = o_.color == ColorMode::Ansi256 ? (k + 0.5) / 16.0 : k / 9.0;
      bar += heat_background(o_.color, t) + " " + kAnsiReset;
    }
    return fmt::format("{}{} {} {} · {}··{} masked\n", lead, lo, bar, hi, kAnsiDim, kAnsiReset);
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
