// Deterministic values for tensors the input does not give: the same seed gives the same numbers
// on every machine. Uses std::mt19937_64's sequence (fixed by the C++ standard; Mt64 below produces
// it in blocks) and our own conversions, never std::*_distribution (whose algorithms differ between
// standard libraries).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/tensor.hpp"

namespace attn {

// The words std::mt19937_64 produces for a seed, in the same order, a block at a time.
class Mt64 {
 public:
  explicit Mt64(std::uint64_t seed);
  void fill(std::uint64_t* out, std::int64_t n);
  // Skips n words, as n calls of std::mt19937_64's discard: the state twisted on, nothing tempered.
  void discard(std::int64_t n);
  // The next n words untempered, handed to use(state, count) a run of at most 312 at a time: for a
  // reader that tempers them as it converts them (temper_word gives each one's output).
  template <class Use>
  void raw(std::int64_t n, Use use) {
    while (n > 0) {
      if (next_ == kN) {
        twist();
        next_ = 0;
      }
      const int take = static_cast<int>(std::min<std::int64_t>(n, kN - next_));
      use(s_ + next_, take);
      next_ += take, n -= take;
    }
  }
  static constexpr std::uint64_t temper_word(std::uint64_t y) {
    y ^= (y >> 29) & 0x5555555555555555ULL;
    y ^= (y << 17) & 0x71D67FFFEDA60000ULL;
    y ^= (y << 37) & 0xFFF7EEE000000000ULL;
    return y ^ (y >> 43);
  }

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
// The ways this CPU can turn words into uniforms ("avx512", with AVX-512 DQ's exact 64-bit integer
// conversion; "portable", any x86-64), and a switch between them for the test that compares their
// bits. The widest is used unless switched.
std::vector<std::string> available_uniform_kernels();
void use_uniform_kernel(std::string_view name);

// Values [first, first + n) of the same stream, written to out[0, n): for tensors drawn side by
// side, each from its own stream, and large ones in parts (first even for normals: whole pairs).
void fill_normal(std::uint64_t seed, std::string_view name, Scalar* out, std::int64_t n, std::int64_t first = 0);
void fill_uniform(std::uint64_t seed, std::string_view name, Scalar* out, std::int64_t n, double bound, std::int64_t first = 0);

}  // namespace attn
