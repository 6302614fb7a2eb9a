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

#include "attn/tools/explain.hpp"
#include "attn/render/render.hpp"
#include "attn/render/text_layout.hpp"

namespace attn {

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

class TextRenderer {
 public:
  TextRenderer(const Trace& trace, std::ostream& out, const TextOptions& o) : tr_(trace), c_(trace.config), out_(out), o_(o) {
    check_text_options(trace, o);
  }

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
      out_ << wrap(fmt::format("the >>> lines are PyTorch (import math, numpy as np, torch); B, T, S, C, H, hs{} are the sizes above, "
                               "each step's variable is its id with _ for . (q.heads: q_heads), and x, W_q, … are the inputs: attn run "
                               "--dump DIR writes them to DIR/inputs/, with DIR/steps.py, which runs every step",
                               c_.Hkv != c_.H ? " and kv_heads (Hkv above, as the trace's JSON names it)" : ""),
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
    out_ << "    " << shape_line(s) << "\n";
    if (o_.code)
      for (const auto& line : code_lines(s.code)) out_ << wrap(line, width(), "    >>> ", "    ...     ");
    if (!s.note.empty()) out_ << wrap(s.note, width(), "    ", "      ");
    if (o_.timings) out_ << fmt::format("    time: {:.3f} ms\n", s.seconds * 1e3);
    if (is_scalar(s)) {
      out_ << fmt::format("\n    {} = {}\n", s.id, format_fixed(s.value.at(0), o_.precision));
    } else {
      const TextLayout layout = layout_text_step(tr_, s, o_);
      if (!layout.summary.empty()) out_ << wrap(layout.summary, width(), "    ", "     ");  // (its hint makes it long)
      for (const auto& t : layout.tables) write_table(t);
      for (const auto& line : layout.heat_lead) out_ << line << "\n";
      for (const auto& h : layout.heatmaps) write_heatmap(h);
    }
    if (o_.explain) {
      const auto text = explain_step(tr_, s, {o_.view.batch.value_or(0), o_.view.head.value_or(0)});
      if (!text.empty()) out_ << "\n" << explanation(text);
    }
  }

 private:
  static std::string symbolic(const Step& s) { return fmt::format("[{}]", fmt::join(s.dims, ", ")); }
  std::size_t width() const { return static_cast<std::size_t>(std::max(o_.width, 20)); }

  // An explanation: its paragraphs wrapped under "▸", a preformatted block (a matrix) as written,
  // a blank line between parts.
  std::string explanation(const std::string& text) const {
    std::string out;
    for (const auto& p : explain_parts(text)) {
      if (p.preformatted) {
        out += "\n";
        for (const auto& line : p.lines) out += "        " + line + "\n";
        out += "\n";
      } else {
        if (!out.empty() && !out.ends_with("\n\n")) out += "\n";  // a blank line between paragraphs
        out += wrap(p.lines.front(), width(), out.empty() ? "    ▸ " : "      ", "      ");
      }
    }
    return out;
  }



  // A block's title (a gap's "…" line): what comes before its table or grid. Returns whether a
  // body follows.
  bool block_title(bool gap, const std::string& title) {
    if (gap) {
      out_ << fmt::format("\n    {} ({})\n", kEllipsis, title);
      return false;
    }
    out_ << "\n";
    if (!title.empty()) out_ << "    " << title << "\n";
    return true;
  }

  // Before each column block of a split table: a blank line between blocks, and which columns.
  static void column_caption(std::string& line, const std::vector<ColumnBlock>& chunks, std::size_t k) {
    if (chunks.size() < 2) return;
    if (k > 0) line += "\n";
    line += "    " + chunks[k].caption + "\n";
  }

  void write_table(const TextTable& t) {
    if (!block_title(t.gap, t.title)) return;
    std::string line;
    for (std::size_t k = 0; k < t.chunks.size(); ++k) {
      const auto& [c0, c1, caption] = t.chunks[k];
      const bool sums = t.sum_w > 0 && k + 1 == t.chunks.size();
      column_caption(line, t.chunks, k);
      line += "    ";
      line.append(t.label_w, ' ');
      for (std::size_t c = c0; c < c1; ++c) line += "  ", append_left(line, t.col_labels[c], t.col_w[c]);
      if (sums) line += "  │ ", append_left(line, "sum", t.sum_w);
      line += '\n';
      for (std::size_t r = 0; r < t.row_labels.size(); ++r) {
        line += "    ";
        append_right(line, t.row_labels[r], t.label_w);
        for (std::size_t c = c0; c < c1; ++c) line += "  ", append_left(line, t.cells[r][c], t.col_w[c]);
        if (sums) line += "  │ ", append_left(line, t.sums[r], t.sum_w);
        line += '\n';
      }
    }
    out_ << line;
  }

  void write_heatmap(const TextHeatmap& h) {
    if (!block_title(h.gap, h.title)) return;
    for (const auto& l : h.legend) out_ << l << "\n";
    const bool colour = o_.color != ColorMode::None;
    for (std::size_t k = 0; k < h.chunks.size(); ++k) {
      const auto& [c0, c1, caption] = h.chunks[k];
      std::string line;
      column_caption(line, h.chunks, k);
      line += "    " + std::string(h.label_w + 1, ' ');
      for (std::size_t c = c0; c < c1; ++c) line += " " + h.col_labels[c];
      line.erase(line.find_last_not_of(' ') + 1);  // (the last label's padding)
      line += "\n";
      for (std::size_t r = 0; r < h.row_labels.size(); ++r) {
        line += "    " + h.row_labels[r] + " ";
        for (std::size_t c = c0; c < c1; ++c) {
          const HeatCell& cell = h.cells[r][c];
          line += " ";
          switch (cell.kind) {
            case HeatCell::Kind::Gap: line += pad_right(kEllipsis, h.cell_w); break;
            case HeatCell::Kind::Blocked:
            case HeatCell::Kind::Unknown: {
              // -inf (blocked) as "··"; +inf or nan, which a mistaken trace can hold, as "??"
              const std::string mark = repeat(cell.kind == HeatCell::Kind::Blocked ? "·" : "?", h.cell_w);
              line += colour ? std::string(kAnsiDim) + mark + kAnsiReset : mark;
              break;
            }
            case HeatCell::Kind::Value:
              line += colour ? heat_background(o_.color, cell.t) + std::string(h.cell_w, ' ') + kAnsiReset : repeat(shade(cell.t), h.cell_w);
              break;
          }
        }
        line += "\n";
      }
      out_ << line;
    }
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
