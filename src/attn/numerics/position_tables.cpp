// Position tables (see position_tables.hpp). Built with -ffp-contract=off, as fixed_math.hpp asks.
#include "attn/numerics/position_tables.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "attn/core/error.hpp"
#include "attn/numerics/fixed_math.hpp"

namespace attn {

namespace {
// Values computed in double: rounded to float32, and kept as they are for attn check's float64 judge.
Tensor rounded(Shape shape, Tensor::Wide values) {
  Tensor t = Tensor::uninitialized(std::move(shape));
  for (std::size_t i = 0; i < values.size(); ++i) t.mutable_data()[i] = static_cast<Scalar>(values[i]);
  return t.with_wide(std::move(values));
}
}  // namespace

Tensor sinusoidal_positions(std::int64_t L, std::int64_t C) {
  if (L > kMaxPosition) throw InternalError("sinusoidal_positions: too many positions");
  Tensor::Wide out(static_cast<std::size_t>(L * C));
  const double ln_base = fixed::log(10000.0);
  for (std::int64_t i2 = 0; i2 < C; i2 += 2) {
    const double wavelength = fixed::exp(static_cast<double>(i2) / static_cast<double>(C) * ln_base);  // 10000^(2i/C)
    for (std::int64_t p = 0; p < L; ++p) {
      const fixed::SinCos sc = fixed::sincos(static_cast<double>(p) / wavelength);
      out[static_cast<std::size_t>(p * C + i2)] = sc.s;
      if (i2 + 1 < C) out[static_cast<std::size_t>(p * C + i2 + 1)] = sc.c;
    }
  }
  return rounded({L, C}, std::move(out));
}

Tensor sinusoidal_positions_halves(std::int64_t L, std::int64_t C) {
  if (L > kMaxPosition) throw InternalError("sinusoidal_positions_halves: too many positions");
  Tensor::Wide out(static_cast<std::size_t>(L * C));
  const double ln_base = fixed::log(10000.0);
  const std::int64_t half = (C + 1) / 2;  // the sines take ⌈C/2⌉ features, as the published code's sentinel
  for (std::int64_t i = 0; i < half; ++i) {
    const double wavelength = fixed::exp(static_cast<double>(2 * i) / static_cast<double>(C) * ln_base);  // 10000^(2i/C)
    for (std::int64_t p = 0; p < L; ++p) {
      const fixed::SinCos sc = fixed::sincos(static_cast<double>(p) / wavelength);
      out[static_cast<std::size_t>(p * C + i)] = sc.s;
      if (half + i < C) out[static_cast<std::size_t>(p * C + half + i)] = sc.c;
    }
  }
  return rounded({L, C}, std::move(out));
}

std::int64_t t5_bucket(std::int64_t n, bool bidirectional, std::int64_t num_buckets, std::int64_t max_distance) {
  std::int64_t bucket = 0;
  if (bidirectional) {
    num_buckets /= 2;
    if (n > 0) bucket += num_buckets;
    n = n < 0 ? -n : n;
  } else {
    n = n < 0 ? -n : 0;
  }
  const std::int64_t max_exact = num_buckets / 2;
  if (n < max_exact) return bucket + n;
  // float32 throughout, as torch computes it: log(n.float() / max_exact) / log(max_distance / max_exact) · (buckets − max_exact)
  const auto ratio = static_cast<float>(n) / static_cast<float>(max_exact);
  const auto ln = static_cast<float>(fixed::log(static_cast<double>(ratio)));
  const auto span = static_cast<float>(fixed::log(static_cast<double>(max_distance) / static_cast<double>(max_exact)));
  const float scaled = ln / span * static_cast<float>(num_buckets - max_exact);
  const std::int64_t large = max_exact + static_cast<std::int64_t>(scaled);  // truncated, as .to(torch.long)
  return bucket + std::min(large, num_buckets - 1);
}

RelativeBiasTables relative_bias_tables(const Tensor& table, std::int64_t T, std::int64_t S, std::int64_t offset, bool bidirectional,
                                        std::int64_t max_distance) {
  const std::int64_t NB = table.dim(0), H = table.dim(1);
  RelativeBiasTables r{Tensor::uninitialized({T, S}), Tensor::uninitialized({H, T, S})};
  for (std::int64_t i = 0; i < T; ++i)
    for (std::int64_t j = 0; j < S; ++j) {
      const std::int64_t b = t5_bucket(j - (i + offset), bidirectional, NB, max_distance);
      r.buckets.mutable_data()[i * S + j] = static_cast<Scalar>(b);
      for (std::int64_t h = 0; h < H; ++h) r.bias.mutable_data()[(h * T + i) * S + j] = table.data()[b * H + h];
    }
  return r;
}

namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;

double unscaled_rate(std::int64_t i, std::int64_t R, double ln_theta) {
  return fixed::exp(-static_cast<double>(2 * i) / static_cast<double>(R) * ln_theta);  // theta^(−2i/R)
}

}  // namespace

RopeBand rope_band(std::int64_t i, std::int64_t R, double theta, const RopeScaling& sc) {
  if (sc.kind != RopeScaling::Kind::Llama3) return RopeBand::High;
  const double wavelength = kTwoPi / unscaled_rate(i, R, fixed::log(theta));
  if (wavelength < sc.original / sc.high_freq_factor) return RopeBand::High;
  if (wavelength > sc.original / sc.low_freq_factor) return RopeBand::Low;
  return RopeBand::Middle;
}

std::vector<double> rope_rates(std::int64_t R, double theta, const RopeScaling& sc) {
  const double ln_theta = fixed::log(theta);
  std::vector<double> rates(static_cast<std::size_t>(R / 2));
  for (std::int64_t i = 0; i < R / 2; ++i) {
    const double rate = unscaled_rate(i, R, ln_theta);
    double scaled = rate;
    if (sc.kind == RopeScaling::Kind::Linear) {
      scaled = rate / sc.factor;
    } else if (sc.kind == RopeScaling::Kind::Llama3) {
      switch (rope_band(i, R, theta, sc)) {
        case RopeBand::High: break;
        case RopeBand::Low: scaled = rate / sc.factor; break;
        case RopeBand::Middle: {
          const double s = (sc.original / (kTwoPi / rate) - sc.low_freq_factor) / (sc.high_freq_factor - sc.low_freq_factor);
          scaled = (1 - s) * rate / sc.factor + s * rate;
          break;
        }
      }
    }
    rates[static_cast<std::size_t>(i)] = scaled;
  }
  return rates;
}

RopeTables rope_tables(std::int64_t first, std::int64_t L, std::int64_t R, double theta, const RopeScaling& scaling) {
  if (first < 0 || first + L > kMaxPosition || R % 2 != 0 || !(theta > 0)) throw InternalError("rope_tables: bad arguments");
  const std::int64_t pairs = R / 2;
  Tensor::Wide c(static_cast<std::size_t>(L * pairs)), s(c.size());
  const std::vector<double> rates = rope_rates(R, theta, scaling);
  for (std::int64_t i = 0; i < pairs; ++i) {
    const double rate = rates[static_cast<std::size_t>(i)];
    for (std::int64_t r = 0; r < L; ++r) {
      const fixed::SinCos sc = fixed::sincos(static_cast<double>(first + r) * rate);
      c[static_cast<std::size_t>(r * pairs + i)] = sc.c;
      s[static_cast<std::size_t>(r * pairs + i)] = sc.s;
    }
  }
  return RopeTables{rounded({L, pairs}, std::move(c)), rounded({L, pairs}, std::move(s))};
}

}  // namespace attn
