// The text renderer's layout pass: for one step, every decision the terminal output needs, made
// once: the blocks (batch row × head) and their titles, row and column labels, display widths, the
// column blocks that fit the width, the numbers as text, the heatmap's cells on its colour scale and
// its legend. text.cpp's writer only writes what this decided.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "attn/render/render.hpp"

namespace attn {

// Columns [c0, c1) of a table, and the line that says which when the table is split to fit.
struct ColumnBlock {
  std::size_t c0 = 0, c1 = 0;
  std::string caption;  // "columns 0–7 of 16 (split to fit 80 columns)"; "" when the table fits whole
};

// One block of a step's numbers: row labels down the left, column labels on top, every cell's text.
struct TextTable {
  bool gap = false;                // stands for blocks not shown; only the title is written
  std::string title;               // "batch 0 · head 1", "" for a 2-D step; a gap's "H 3 .. 4 not shown"
  std::vector<std::string> row_labels, col_labels;  // "…" where rows or columns are skipped
  std::size_t label_w = 0;         // display cells of the widest row label
  std::vector<std::size_t> col_w;  // each column's display cells
  std::size_t sum_w = 0;           // the row sums' column (weights), 0: none
  std::vector<std::vector<std::string>> cells;  // [row][column]: a number, or "…"
  std::vector<std::string> sums;               // [row]
  std::vector<ColumnBlock> chunks;
};

// A heatmap cell: its place on the colour scale (0..1), or why it has none.
struct HeatCell {
  enum class Kind { Value, Blocked, Unknown, Gap } kind = Kind::Gap;  // Blocked: −inf; Unknown: +inf or nan
  double t = 0;
};

// One block of the attention pattern as cells.
struct TextHeatmap {
  bool gap = false;
  std::string title;
  std::vector<std::string> legend;        // lines before this block's grid (--heat-range fit: its own range)
  std::vector<std::string> row_labels;    // padded to label_w
  std::vector<std::string> col_labels;    // cut and padded to cell_w
  std::size_t label_w = 0, cell_w = 2;
  std::vector<std::vector<HeatCell>> cells;
  std::vector<ColumnBlock> chunks;
};

struct TextLayout {
  std::string summary;                 // "(summarised: 50331648 values; edges of 3 shown)", or ""
  std::vector<TextTable> tables;
  std::vector<std::string> heat_lead;  // the lines that introduce the heatmaps (the shared legend)
  std::vector<TextHeatmap> heatmaps;   // empty: no heatmap for this step
};

TextLayout layout_text_step(const Trace& trace, const Step& step, const TextOptions& options);

}  // namespace attn
