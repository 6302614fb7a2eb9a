// What every reader of one input shares, passed explicitly from parse_spec down: where {"npy": ...}
// files are, how large a generated tensor may be, and the notes. No reading happens here.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <string>
#include <vector>

namespace attn {

struct ReadContext {
  std::string base_dir;             // where {"npy": "path"} tensors are looked up ("" = the working directory)
  std::int64_t max_bytes = 0;       // the most bytes one generated tensor may take
  std::vector<std::string>& notes;  // Spec::notes: where values came from
  // Seeded tensors are allocated as they are read and drawn at the end, side by side and in parts
  // (each from its own stream, which a part skips ahead in, so neither order nor parts change a value).
  struct Draw {
    std::int64_t count;                                         // elements
    std::function<void(std::int64_t first, std::int64_t n)> part;  // populates and draws [first, first + n)
  };
  std::vector<Draw> draws = {};
};

// Draws the seeded tensors read so far, side by side when there is enough to draw. A reader that
// needs a seeded tensor's values while reading (the cross-mode split of a fused W_qkv) calls it first.
void draw_seeded(ReadContext& ctx);

}  // namespace attn
