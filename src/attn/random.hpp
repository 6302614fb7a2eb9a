// Deterministic values for tensors the input does not give: the same seed gives the same numbers
// on every machine. Uses std::mt19937_64's sequence (fixed by the C++ standard; Mt64 below produces
// it in blocks) and our own conversions, never std::*_distribution (whose algorithms differ between
// standard libraries).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "attn/tensor.hpp"

namespace attn {

// The words std::mt19937_64 produces for a seed, in the same order, a block at a time.
class Mt64 {
 public:
  explicit Mt64(std::uint64_t seed);
  void fill(std::uint64_t* out, std::int64_t n);
  // Skips n words, as n calls of std::mt19937_64's discard: the state twisted on, nothing tempered.
  void discard(std::int64_t n);

 private:
  static constexpr int kN = 312, kM = 156;
  void twist();
  std::uint64_t s_[kN];
  int next_ = kN;
};

// Each tensor draws from its own stream, keyed by seed and name, so adding a tensor to the input
// never changes the values of another. This is the stream's Mt64 seed.
std::uint64_t stream_seed(std::uint64_t seed, std::string_view name);
// normal: N(0, 1) by Box-Muller, like torch.randn.
Tensor random_normal(std::uint64_t seed, std::string_view name, Shape shape);
// uniform on [-bound, bound), like nn.Linear's default initialisation with bound = 1/sqrt(in).
Tensor random_uniform(std::uint64_t seed, std::string_view name, Shape shape, double bound);
// The uniform values of one tensor's stream, read in order from any position: what a generated
// weight is (Tensor::generated), streamed by a product instead of held.
class UniformStream {
 public:
  UniformStream(std::uint64_t seed, std::string_view name, double bound, std::int64_t first = 0);
  void read(Scalar* out, std::int64_t n);  // the next n values
  void skip(std::int64_t n);               // past the next n values, without drawing them

 private:
  Mt64 g_;
  double bound_;
};
// A seeded U(-bound, bound) tensor, generated when read (Tensor::generated): the values
// random_uniform gives, never held unless a reader needs them all.
Tensor generated_uniform(std::uint64_t seed, std::string name, Shape shape, double bound);

// Values [first, first + n) of the same stream, written to out[0, n): for tensors drawn side by
// side, each from its own stream, and large ones in parts (first even for normals: whole pairs).
void fill_normal(std::uint64_t seed, std::string_view name, Scalar* out, std::int64_t n, std::int64_t first = 0);
void fill_uniform(std::uint64_t seed, std::string_view name, Scalar* out, std::int64_t n, double bound, std::int64_t first = 0);

}  // namespace attn
