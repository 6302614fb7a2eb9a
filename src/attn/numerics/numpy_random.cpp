// MT19937 (Matsumoto & Nishimura) and NumPy's legacy conversions; see numpy_random.hpp.
#include "attn/numerics/numpy_random.hpp"

#include <cmath>

namespace attn {

NumpyRandomState::NumpyRandomState(std::uint32_t seed) {
  // init_genrand, which RandomState uses for an integer seed.
  mt_[0] = seed;
  for (std::uint32_t i = 1; i < 624; ++i) mt_[i] = 1812433253U * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + i;
}

std::uint32_t NumpyRandomState::next32() {
  if (index_ >= 624) {
    for (int i = 0; i < 624; ++i) {
      const std::uint32_t y = (mt_[static_cast<std::size_t>(i)] & 0x80000000U) | (mt_[static_cast<std::size_t>((i + 1) % 624)] & 0x7fffffffU);
      mt_[static_cast<std::size_t>(i)] = mt_[static_cast<std::size_t>((i + 397) % 624)] ^ (y >> 1) ^ ((y & 1U) ? 0x9908b0dfU : 0U);
    }
    index_ = 0;
  }
  std::uint32_t y = mt_[static_cast<std::size_t>(index_++)];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= y >> 18;
  return y;
}

double NumpyRandomState::rand() {
  const std::uint32_t a = next32() >> 5, b = next32() >> 6;
  return (a * 67108864.0 + b) / 9007199254740992.0;
}

double NumpyRandomState::randn() {
  if (has_gauss_) {
    has_gauss_ = false;
    return gauss_;
  }
  double x1, x2, r2;
  do {
    x1 = 2.0 * rand() - 1.0;
    x2 = 2.0 * rand() - 1.0;
    r2 = x1 * x1 + x2 * x2;
  } while (r2 >= 1.0 || r2 == 0.0);
  const double f = std::sqrt(-2.0 * std::log(r2) / r2);
  gauss_ = f * x1;
  has_gauss_ = true;
  return f * x2;
}

}  // namespace attn
