// Seeded values, reproducible across machines: see random.hpp.
#include "attn/random.hpp"

#include <cmath>
#include <numbers>
#include <algorithm>
#include <vector>

namespace attn {
namespace {

std::uint64_t stream_seed(std::uint64_t seed, std::string_view name) {
  // FNV-1a of the tensor name, mixed with the user's seed.
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : name) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h ^ (seed * 0x9E3779B97F4A7C15ULL);
}

}  // namespace

// std::mt19937_64, word for word (the standard fixes its output), producing a block of 312 words per
// twist in loops the compiler vectorises; libstdc++'s generates one word per call.
Mt64::Mt64(std::uint64_t seed) {
  s_[0] = seed;
  for (int i = 1; i < kN; ++i) s_[i] = 6364136223846793005ULL * (s_[i - 1] ^ (s_[i - 1] >> 62)) + static_cast<std::uint64_t>(i);
}

void Mt64::twist() {
  constexpr std::uint64_t kUpper = 0xFFFFFFFF80000000ULL, kLower = 0x7FFFFFFFULL, kA = 0xB5026F5AA96619E9ULL;
  auto mix = [](std::uint64_t hi, std::uint64_t lo, std::uint64_t far) {
    const std::uint64_t y = (hi & kUpper) | (lo & kLower);
    return far ^ (y >> 1) ^ ((y & 1) * kA);
  };
  int i = 0;
  for (; i < kN - kM; ++i) s_[i] = mix(s_[i], s_[i + 1], s_[i + kM]);
  for (; i < kN - 1; ++i) s_[i] = mix(s_[i], s_[i + 1], s_[i + kM - kN]);
  s_[kN - 1] = mix(s_[kN - 1], s_[0], s_[kM - 1]);
}

void Mt64::fill(std::uint64_t* out, std::int64_t n) {
  while (n > 0) {
    if (next_ == kN) {
      twist();
      next_ = 0;
    }
    const std::int64_t take = std::min<std::int64_t>(n, kN - next_);
    for (std::int64_t j = 0; j < take; ++j) {
      std::uint64_t y = s_[next_ + j];
      y ^= (y >> 29) & 0x5555555555555555ULL;
      y ^= (y << 17) & 0x71D67FFFEDA60000ULL;
      y ^= (y << 37) & 0xFFF7EEE000000000ULL;
      y ^= y >> 43;
      out[j] = y;
    }
    next_ += static_cast<int>(take), out += take, n -= take;
  }
}

namespace {

// 53 random bits -> [0, 1), exactly representable.
double unit(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

constexpr std::int64_t kBlock = 4096;  // words drawn at a time

}  // namespace

Tensor random_normal(std::uint64_t seed, std::string_view name, Shape shape) {
  Mt64 g(stream_seed(seed, name));
  Tensor t = Tensor::uninitialized(std::move(shape));
  Scalar* p = t.mutable_data();
  const auto n = t.size();
  std::vector<std::uint64_t> bits(static_cast<std::size_t>(n + (n & 1)));  // whole pairs
  g.fill(bits.data(), static_cast<std::int64_t>(bits.size()));
  // the words come from one stream, in order; turning each pair into two numbers is independent
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
  for (std::int64_t i = 0; i < n; i += 2) {
    const double u1 = 1.0 - unit(bits[static_cast<std::size_t>(i)]);  // (0, 1]: log(u1) is finite
    const double u2 = unit(bits[static_cast<std::size_t>(i + 1)]);
    const double r = std::sqrt(-2.0 * std::log(u1));
    p[i] = static_cast<Scalar>(r * std::cos(2.0 * std::numbers::pi * u2));
    if (i + 1 < n) p[i + 1] = static_cast<Scalar>(r * std::sin(2.0 * std::numbers::pi * u2));
  }
  return t;
}

Tensor random_uniform(std::uint64_t seed, std::string_view name, Shape shape, double bound) {
  Mt64 g(stream_seed(seed, name));
  Tensor t = Tensor::uninitialized(std::move(shape));
  Scalar* p = t.mutable_data();
  const auto n = t.size();
  std::uint64_t bits[kBlock];
  for (std::int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const std::int64_t m = std::min(kBlock, n - i0);
    g.fill(bits, m);
    for (std::int64_t j = 0; j < m; ++j) p[i0 + j] = static_cast<Scalar>((2.0 * unit(bits[j]) - 1.0) * bound);
  }
  return t;
}

}  // namespace attn
