// Position tables (see position_tables.hpp). Built with -ffp-contract=off, as fixed_math.hpp asks.
#include "attn/position_tables.hpp"

#include "attn/error.hpp"
#include "attn/fixed_math.hpp"

namespace attn {

Tensor sinusoidal_positions(std::int64_t L, std::int64_t C) {
  if (L > kMaxPosition) throw InternalError("sinusoidal_positions: too many positions");
  Tensor t = Tensor::uninitialized({L, C});
  Scalar* out = t.mutable_data();
  const double ln_base = fixed::log(10000.0);
  for (std::int64_t i2 = 0; i2 < C; i2 += 2) {
    const double wavelength = fixed::exp(static_cast<double>(i2) / static_cast<double>(C) * ln_base);  // 10000^(2i/C)
    for (std::int64_t p = 0; p < L; ++p) {
      const fixed::SinCos sc = fixed::sincos(static_cast<double>(p) / wavelength);
      out[p * C + i2] = static_cast<Scalar>(sc.s);
      if (i2 + 1 < C) out[p * C + i2 + 1] = static_cast<Scalar>(sc.c);
    }
  }
  return t;
}

RopeTables rope_tables(std::int64_t first, std::int64_t L, std::int64_t R, double theta) {
  if (first < 0 || first + L > kMaxPosition || R % 2 != 0 || !(theta > 0)) throw InternalError("rope_tables: bad arguments");
  const std::int64_t pairs = R / 2;
  RopeTables t{Tensor::uninitialized({L, pairs}), Tensor::uninitialized({L, pairs})};
  Scalar* c = t.cos.mutable_data();
  Scalar* s = t.sin.mutable_data();
  const double ln_theta = fixed::log(theta);
  for (std::int64_t i = 0; i < pairs; ++i) {
    const double rate = fixed::exp(-static_cast<double>(2 * i) / static_cast<double>(R) * ln_theta);  // theta^(−2i/R)
    for (std::int64_t r = 0; r < L; ++r) {
      const fixed::SinCos sc = fixed::sincos(static_cast<double>(first + r) * rate);
      c[r * pairs + i] = static_cast<Scalar>(sc.c);
      s[r * pairs + i] = static_cast<Scalar>(sc.s);
    }
  }
  return t;
}

}  // namespace attn
