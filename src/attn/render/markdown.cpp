// --format markdown: a handout. A heading per step, its formula and shape, the tensor as markdown
// tables with token labels (one per batch row and head), and the explanation when asked.
#include <fmt/format.h>

#include "attn/tools/explain.hpp"
#include "attn/render/render.hpp"

namespace attn {
namespace {

// A label in a table cell: Markdown's own characters escaped, and < > & as entities, so that a
// token such as Llama's "<s>" is shown rather than read as an HTML tag.
std::string cell_text(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else {
      if (c == '|' || c == '*' || c == '_' || c == '`' || c == '\\') out += '\\';
      out += c;
    }
  }
  return out;
}

std::string base64(const std::string& in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const auto n = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8) | static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[(n >> 18) & 63], out += kAlphabet[(n >> 12) & 63], out += kAlphabet[(n >> 6) & 63], out += kAlphabet[n & 63];
  }
  if (i < in.size()) {
    const bool two = i + 1 < in.size();
    const auto n = (static_cast<unsigned char>(in[i]) << 16) | (two ? static_cast<unsigned char>(in[i + 1]) << 8 : 0);
    out += kAlphabet[(n >> 18) & 63], out += kAlphabet[(n >> 12) & 63];
    out += two ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// DIR/NAME as a markdown link target: no doubled slash, and the characters that would end or break
// the link (space, parentheses, angle brackets, %) percent-encoded, so "my pics" still links.
std::string link_path(std::string dir, const std::string& name) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  std::string out;
  for (char c : dir + "/" + name) {
    if (c == ' ' || c == '(' || c == ')' || c == '<' || c == '>' || c == '%') out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    else out += c;
  }
  return out;
}

std::string number(const Step& s, Scalar v, int precision) {
  if (s.kind == ValueKind::Mask) return v != 0 ? "1" : "0";
  if (s.kind == ValueKind::Index) return fmt::format("{:.0f}", v);
  return format_fixed(v, precision);
}

void table(std::ostream& out, const Trace& t, const Step& s, const StepLayout& l, const Block& b, int precision) {
  const auto& c = t.config;
  out << "| |";
  // token labels as the pictures write them: a repeated token numbered (the₁, the₂)
  for (const auto& j : l.cols) out << " " << (j ? cell_text(distinct_axis_label(c, l.col_dim, *j, b.batch)) : "…") << " |";
  if (s.row_sums) out << " sum |";
  out << "\n|---|";
  for (std::size_t k = 0; k < l.cols.size(); ++k) out << "---:|";
  if (s.row_sums) out << "---:|";
  out << "\n";
  for (const auto& i : l.rows) {
    out << "| **" << (i ? cell_text(distinct_axis_label(c, l.row_dim, *i, b.batch)) : "…") << "** |";
    for (const auto& j : l.cols) {
      out << " " << ((i && j) ? number(s, s.value.at(b.offset + *i * l.col_count + *j), precision) : "…") << " |";
    }
    if (s.row_sums) out << " " << (i ? number(s, s.row_sums->data()[b.row_offset + *i], precision) : "…") << " |";
    out << "\n";
  }
}

// An explanation as a block quote: its paragraphs, and a preformatted block (a matrix) as a code
// block inside the quote.
std::string quoted(const std::vector<ExplainPart>& parts) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += ">\n";
    for (const auto& line : p.lines) out += (p.preformatted ? ">     " : "> ") + line + "\n";
  }
  return out;
}

}  // namespace

void render_markdown(const Trace& t, std::ostream& out, const TextOptions& o) {
  check_text_options(t, o);
  const auto& c = t.config;
  out << "# Attention Tracer" << (c.title.empty() ? "" : " · " + c.title) << "\n\n";
  out << fmt::format("- mode: **{}**\n", mode_name(c.mode));
  out << fmt::format("- sizes: {}T = {}, S = {}{}\n", c.batched ? fmt::format("B = {}, ", c.B) : "no batch dimension, ", c.T, c.S,
                     ", " + widths_text(c, ", "));
  out << fmt::format("- scale: {}\n", c.scale);
  for (const auto& n : c.notes) out << "- note: " << n << "\n";
  const auto pictures = render_svg_pictures(t, o);
  std::vector<std::size_t> indices = o.steps;
  if (indices.empty())
    for (std::size_t i = 0; i < t.steps.size(); ++i) indices.push_back(i);
  for (auto idx : indices) {
    const Step& s = t.steps[idx];
    out << fmt::format("\n## {}. {} (`{}`)\n\n", idx + 1, s.title, s.id);
    out << fmt::format("`{}` · {}\n", s.formula, is_scalar(s) ? shape_line(s) : fmt::format("shape `{}`", shape_line(s)));
    if (!s.note.empty()) out << "\n*" << s.note << "*\n";
    if (!s.code.empty()) out << fmt::format("\n```python\n{}\n```\n", fmt::join(code_lines(s.code), "\n"));
    if (is_scalar(s)) out << fmt::format("\n**{} = {}**\n", s.id, number(s, s.value.at(0), o.precision));
    const StepLayout l = is_scalar(s) ? StepLayout{} : layout_step(s, t.config, o.view);
    if (l.summarised) out << fmt::format("\n(summarised: {} values; edges of {} shown)\n", s.value.size(), o.view.edge_items);
    for (const auto& b : l.blocks) {
      if (b.gap) {
        out << "\n… (" << b.title << ")\n";
        continue;
      }
      out << "\n";
      if (!b.title.empty()) out << "**" << b.title << "**\n\n";
      table(out, t, s, l, b, o.precision);
    }
    // the step's pictures (a heatmap per batch row and head, the mask), after its tables
    for (const auto& p : pictures) {
      if (p.step != s.id) continue;
      const auto alt = p.name.substr(0, p.name.size() - 4);  // without ".svg"
      if (!o.picture_dir.empty()) out << fmt::format("\n![{}]({})\n", alt, link_path(o.picture_dir, p.name));
      else out << fmt::format("\n![{}](data:image/svg+xml;base64,{})\n", alt, base64(p.svg));
    }
    if (o.explain) {
      const auto text = explain_step(t, s, {o.view.batch.value_or(0), o.view.head.value_or(0)});
      if (!text.empty()) out << "\n" << quoted(explain_parts(text));
    }
  }
}

}  // namespace attn
