// NumPy's legacy RandomState, bit for bit: MT19937 seeded by init_genrand, rand() as 53-bit doubles,
// randn() as the legacy polar (Marsaglia) Gaussian with its cached second value. So that
// np.random.RandomState(seed).rand(...) in Python regenerates exactly the tensors attn used.
#pragma once

#include <array>
#include <cstdint>

namespace attn {

class NumpyRandomState {
 public:
  explicit NumpyRandomState(std::uint32_t seed);
  double rand();   // random_sample: [0, 1)
  double randn();  // legacy_gauss: N(0, 1)

 private:
  std::uint32_t next32();
  std::array<std::uint32_t, 624> mt_{};
  int index_ = 624;
  bool has_gauss_ = false;
  double gauss_ = 0;
};

}  // namespace attn
