// Seeded values, reproducible across machines: see random.hpp.
#include "attn/random.hpp"

#include <cmath>
#include <numbers>
#include <random>

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

// 53 random bits -> [0, 1), exactly representable.
double unit(std::mt19937_64& g) { return static_cast<double>(g() >> 11) * 0x1.0p-53; }

}  // namespace

Tensor random_normal(std::uint64_t seed, std::string_view name, Shape shape) {
  std::mt19937_64 g(stream_seed(seed, name));
  Tensor t(std::move(shape));
  Scalar* p = t.mutable_data();
  const auto n = t.size();
  for (std::int64_t i = 0; i < n; i += 2) {
    const double u1 = 1.0 - unit(g);  // (0, 1]: log(u1) is finite
    const double u2 = unit(g);
    const double r = std::sqrt(-2.0 * std::log(u1));
    p[i] = static_cast<Scalar>(r * std::cos(2.0 * std::numbers::pi * u2));
    if (i + 1 < n) p[i + 1] = static_cast<Scalar>(r * std::sin(2.0 * std::numbers::pi * u2));
  }
  return t;
}

Tensor random_uniform(std::uint64_t seed, std::string_view name, Shape shape, double bound) {
  std::mt19937_64 g(stream_seed(seed, name));
  Tensor t(std::move(shape));
  Scalar* p = t.mutable_data();
  for (std::int64_t i = 0; i < t.size(); ++i) p[i] = static_cast<Scalar>((2.0 * unit(g) - 1.0) * bound);
  return t;
}

}  // namespace attn
