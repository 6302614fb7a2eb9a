// A handout's blocks written as markdown and as a self-contained web page (no script, no font, no
// link: it opens offline), and the page's print style: a handout a page, answer cells to write in.
#include "attn/render/exercise_blocks.hpp"

#include <fmt/format.h>

#include "attn/core/text.hpp"

namespace attn {

namespace {

std::string md_cell(const std::string& s) {
  std::string out;
  for (const char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

constexpr const char* kStyle = R"(body { font-family: sans-serif; font-size: 11pt; margin: 2em; color: #111; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin: 0.8em 0 0.3em; } h3 { font-size: 1em; margin: 0.4em 0 0.2em; }
p { margin: 0.3em 0; }
div.item { display: inline-block; vertical-align: top; margin-right: 2.5em; }
section.handout { break-after: page; page-break-after: always; }
section.handout:last-child { break-after: auto; page-break-after: auto; }
table { border-collapse: collapse; margin: 0.3em 0 0.6em; }
caption { text-align: left; font-style: italic; }
th, td { border: 1px solid #888; padding: 0.25em 0.6em; text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f0f0f0; font-weight: normal; }
td.answer { min-width: 4em; height: 1.5em; }
@media print { body { margin: 0; } })";

}  // namespace

void write_blocks_markdown(const std::vector<HandoutBlock>& blocks, std::ostream& out) {
  for (const auto& b : blocks) {
    if (b.kind == HandoutBlock::Heading) out << std::string(static_cast<std::size_t>(b.level), '#') << ' ' << b.text << "\n\n";
    if (b.kind == HandoutBlock::Para) out << b.text << "\n\n";
    if (b.kind != HandoutBlock::Table) continue;
    if (!b.text.empty()) out << '*' << b.text << "*\n\n";
    for (std::size_t r = 0; r < b.rows.size(); ++r) {
      out << '|';
      for (std::size_t c = 0; c < b.rows[r].size(); ++c) {
        const bool bold = r > 0 && c == 0 && !b.rows[r][c].empty();  // a row's label
        out << ' ' << (bold ? "**" + md_cell(b.rows[r][c]) + "**" : md_cell(b.rows[r][c])) << " |";
      }
      out << '\n';
      if (r == 0) {
        out << "|---|";
        for (std::size_t c = 1; c < b.rows[r].size(); ++c) out << "---:|";
        out << '\n';
      }
    }
    out << '\n';
  }
}

void write_blocks_html(const std::vector<HandoutBlock>& blocks, std::ostream& out) {
  out << "<section class=\"handout\">\n";
  bool in_item = false;  // a level-3 heading and what follows it, side by side with the next (one page a handout)
  for (const auto& b : blocks) {
    if (b.kind == HandoutBlock::Heading && in_item) out << "</div>\n";
    if (b.kind == HandoutBlock::Heading) in_item = b.level == 3;
    if (b.kind == HandoutBlock::Heading && in_item) out << "<div class=\"item\">\n";
    if (b.kind == HandoutBlock::Heading) out << fmt::format("<h{0}>{1}</h{0}>\n", b.level, markup_escape(b.text));
    if (b.kind == HandoutBlock::Para) out << "<p>" << markup_escape(b.text) << "</p>\n";
    if (b.kind != HandoutBlock::Table) continue;
    out << "<table>";
    if (!b.text.empty()) out << "<caption>" << markup_escape(b.text) << "</caption>";
    out << '\n';
    for (std::size_t r = 0; r < b.rows.size(); ++r) {
      out << "<tr>";
      for (std::size_t c = 0; c < b.rows[r].size(); ++c) {
        const bool head = r == 0 || c == 0;
        const bool blank = !head && b.rows[r][c].empty();
        out << (head ? "<th>" : blank ? "<td class=\"answer\">" : "<td>") << markup_escape(b.rows[r][c]) << (head ? "</th>" : "</td>");
      }
      out << "</tr>\n";
    }
    out << "</table>\n";
  }
  if (in_item) out << "</div>\n";
  out << "</section>\n";
}

std::string handout_page_start(const std::string& title) {
  return fmt::format("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>\n{}\n</style>\n</head>\n<body>\n",
                     markup_escape(title), kStyle);
}

std::string handout_page_end() { return "</body>\n</html>\n"; }

}  // namespace attn
