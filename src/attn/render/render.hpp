// Renderers: read a trace, write a stream. They format; they compute nothing.
#pragma once

#include <cstdint>
#include <ostream>

#include "attn/trace.hpp"

namespace attn {

struct TextOptions {
  int precision = 4;                   // decimals of every printed number
  bool shapes_only = false;            // the shape flow alone
  std::int64_t summary_threshold = 1000;  // tensors with more elements are summarised, numpy-style
  std::int64_t edge_items = 3;         // entries kept at each edge of a summarised axis
};

void render_text(const Trace& trace, std::ostream& out, const TextOptions& options);
void render_json(const Trace& trace, std::ostream& out);

// Shared number formatting: fixed decimals, "-inf"/"inf"/"nan", never "-0".
std::string format_fixed(Scalar v, int precision);

// A JSON string literal (quotes and escapes included), for every JSON writer of the project.
std::string json_quote(std::string_view s);

}  // namespace attn
