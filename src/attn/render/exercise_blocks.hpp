// A handout as blocks (render/exercise's own): headings, paragraphs and tables, written as markdown
// or as HTML by the same walk, and the web page around them (class.html holds several).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "attn/render/exercise.hpp"

namespace attn {

struct HandoutBlock {
  enum Kind { Heading, Para, Table } kind;
  int level = 0;     // a heading's
  std::string text;  // a heading's or paragraph's text; a table's caption ("" for none)
  std::vector<std::vector<std::string>> rows;  // a table's, the first its header (an empty corner first)
};

std::vector<HandoutBlock> handout_blocks(const ExercisePaper& p);
void write_blocks_markdown(const std::vector<HandoutBlock>& blocks, std::ostream& out);
void write_blocks_html(const std::vector<HandoutBlock>& blocks, std::ostream& out);
// A self-contained page's start (its style: answer cells to write in, one handout a printed page)
// and end.
std::string handout_page_start(const std::string& title);
std::string handout_page_end();

}  // namespace attn
