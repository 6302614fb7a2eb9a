// What the two tiled passes' text (flash_text.cpp, flash_backward_text.cpp) shares: the view they
// show, their tables of numbers and their recurring lines (tile_text.cpp). Formatting only; the tiles
// themselves are pipeline/flash*.hpp's.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attn/core/trace.hpp"
#include "attn/render/render.hpp"

namespace attn {

// The tiled passes' tables: rows of n numbers (v[from + i·n + k]) labelled label(i) in label_w
// cells, each number in width cells at the options' precision; in column blocks that fit the width,
// each saying which columns it holds, under heads when given.
std::string tile_table(std::int64_t rows, const std::vector<Scalar>& v, std::size_t from, std::size_t n,
                       const std::function<std::string(std::int64_t)>& label, const std::vector<std::string>& heads, std::size_t label_w,
                       std::size_t width, const TextOptions& options);

// What the tiled passes' text shows: the view's batch row and head, the query and key labels, and
// the cells a label and a number take.
struct TileView {
  TileView(const Trace& t, const TextOptions& o);
  std::string query(std::int64_t i) const;
  std::string key(std::int64_t j) const;
  std::string shown() const;  // the line saying which batch row and head the tiles are of
  const TraceConfig& config;
  std::int64_t b, h;
  std::size_t width, label_w = 4;
};

// n queries or keys from first, one or many naming them: "key 3 ("sat")", "keys 3 .. 5 ("sat" .. "mat")".
std::string tile_span(std::int64_t first, std::int64_t n, const char* one, const char* many, const std::function<std::string(std::int64_t)>& label);
// "BQ = 2 queries × BK = 1 key"
std::string tile_sizes(std::int64_t BQ, std::int64_t BK);
// The line counting the tiles computed and skipped over the B·H heads.
std::string tiles_counted(std::int64_t done, std::int64_t skipped, std::int64_t heads);
// "never held: the [B, H, T, S] = [1, 2, 3, 4] <what>, 96 B each; ": the matrices the tiled pass does without.
std::string never_held(std::int64_t B, std::int64_t H, std::int64_t T, std::int64_t S, const char* what);

}  // namespace attn
