// Text for people: display widths in terminal cells, wrapping, clipping and padding, markup
// escapes, and the one number format every renderer and explanation prints. Strings in, strings out:
// nothing here knows a trace.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attn/core/tensor.hpp"

namespace attn {

// Shared number formatting: fixed decimals, "-inf"/"inf"/"nan", never "-0"; scientific (3.0000e+38)
// from 1e10 on, where fixed notation would be a row of unreadable digits.
std::string format_fixed(Scalar v, int precision);

// For SVG and HTML text and attribute values: < > & " ' as entities.
std::string markup_escape(std::string_view s);

// Display width in terminal cells (display_width.cpp): East Asian wide characters and emoji count 2,
// combining marks 0, everything else 1; not bytes, not code points.
std::size_t cells(std::string_view s);
// Word-wraps a paragraph to `width` cells, the prefixes included: the first line starts with
// `first`, the others with `rest` (a hanging indent); each line ends in "\n".
std::string wrap(const std::string& text, std::size_t width, const std::string& first, const std::string& rest);
// A line's " · "-separated parts, and the parts joined again within `width` after `lead`: a line
// that would pass it ends in " ·" and the next starts with lead + two spaces.
// A step's code as lines: its "; "-separated statements one a line.
std::vector<std::string> code_lines(const std::string& code);
std::vector<std::string> split_parts(const std::string& text);
std::string join_fitting(const std::vector<std::string>& parts, std::size_t width, const std::string& lead = "");
// Text fitted to `width`: a line that would pass it wraps under its own indent (+2), between its
// " · " parts where it has them, else at words; lines with colour escapes and table rows (runs of
// spaces inside) are left whole.
std::string fit_lines(const std::string& text, std::size_t width);
int char_width(char32_t c);
// The code point at byte i of UTF-8 text and its length in bytes (a malformed byte: U+FFFD, 1).
std::pair<char32_t, std::size_t> decode_utf8(std::string_view s, std::size_t i);
// Cut to at most max_cells code points, ending in "…" when cut ("" when max_cells is 0).
std::string clip(std::string_view s, std::size_t max_cells);
// Padded with spaces to `width` cells, on the left (right-aligned) or the right.
std::string pad_left(std::string_view s, std::size_t width);
std::string pad_right(std::string_view s, std::size_t width);

}  // namespace attn
