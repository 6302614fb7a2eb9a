// What the two tiled passes' text (flash_text.cpp, flash_backward_text.cpp) shares: the view they
// show and their tables of numbers. Formatting only; the tiles themselves are pipeline/flash*.hpp's.
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
  const TraceConfig& config;
  std::int64_t b, h;
  std::size_t width, label_w = 4;
};

}  // namespace attn
