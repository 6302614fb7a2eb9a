// The input's "random" block: sizes, seed and generator, and the tensors it fills in when the input
// does not give them, each with a note saying how to regenerate it. What it fills is the readers' call.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "attn/numerics/numpy_random.hpp"
#include "attn/io/json_read.hpp"
#include "attn/io/read_context.hpp"
#include "attn/core/tensor.hpp"

namespace attn {

struct RandomFill {
  bool present = false;
  std::uint64_t seed = 0;
  std::optional<std::int64_t> B, T, S, C;
  std::optional<std::int64_t> Cs, dk, dv, Co;  // general widths of generated tensors (default C, C, dk, C)
  bool fused = false, output_projection = false;
  // generator "numpy": one RandomState stream, drawn in the documented order; every tensor is
  // rs.rand(*shape) (or rs.randn) exactly, unscaled, so Python regenerates it.
  std::shared_ptr<NumpyRandomState> numpy;
  bool numpy_normal = false;

  std::shared_ptr<int> draws = std::make_shared<int>(0);

  // Embeddings (B, length, width) ~ N(0, 1), or the stream's next draw ([length, width] without B).
  Tensor sequence(ReadContext& ctx, const std::string& path, std::int64_t length, std::int64_t width) const;
  // A weight ~ U(-1/√in, 1/√in) (nn.Linear's default init range; in_name is how the note writes in),
  // or the stream's next draw.
  Tensor weight(ReadContext& ctx, const std::string& path, Shape shape, std::int64_t in, std::string_view in_name) const;

 private:
  // Draws the next tensor of the stream and says which draw it was, for the notes.
  Tensor draw_numpy(const Shape& shape, const std::string& path, std::vector<std::string>& notes) const;
};

RandomFill read_random(const json& root);

}  // namespace attn
