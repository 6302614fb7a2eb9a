// Elementary functions written out as fixed IEEE double operations: glibc's pick an implementation
// per CPU (with or without FMA), these give the same bits on every x86-64 machine, and they
// vectorise. fdlibm's methods and coefficients; measured against glibc over 40 million values: within
// 1 ulp in double. Include only from files built with -ffp-contract=off (CMakeLists.txt lists them),
// so that no compiler fuses a multiply-add of its own.
#pragma once

#include <cstdint>
#include <cstring>

namespace attn::fixed {


inline double as_double(std::uint64_t b) {
  double d;
  std::memcpy(&d, &b, sizeof d);
  return d;
}
inline std::uint64_t as_bits(double d) {
  std::uint64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}

// ln x for a positive normal x (Box–Muller's is in (0, 1]): x = 2^k · m with m in [√½, √2), then ln m = 2·atanh(f / (2 + f)), f = m − 1.
inline double log(double x) {
  constexpr double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
  constexpr double Lg1 = 6.666666666666735130e-01, Lg2 = 3.999999999940941908e-01, Lg3 = 2.857142874366239149e-01,
                   Lg4 = 2.222219843214978396e-01, Lg5 = 1.818357216161805012e-01, Lg6 = 1.531383769920937332e-01,
                   Lg7 = 1.479819860511658591e-01;
  // on the bits, with logical shifts only (what SSE2 and AVX2 have for 64-bit lanes)
  const std::uint64_t b = as_bits(x);
  const std::uint64_t ex = (b + (0x3ff0000000000000ULL - 0x3fe6a09e667f3bcdULL)) >> 52;  // k + 1023
  const double m = as_double(b - ((ex - 1023) << 52));
  const double k = (as_double(ex | 0x4330000000000000ULL) - 0x1p52) - 1023.0;
  const double f = m - 1.0;
  const double hfsq = 0.5 * f * f;
  const double s = f / (2.0 + f);
  const double z = s * s;
  const double w = z * z;
  const double t1 = w * (Lg2 + w * (Lg4 + w * Lg6));
  const double t2 = z * (Lg1 + w * (Lg3 + w * (Lg5 + w * Lg7)));
  return k * ln2_hi - ((hfsq - (s * (hfsq + (t2 + t1)) + k * ln2_lo)) - f);
}

struct SinCos {
  double s, c;
};

// sin and cos of θ, |θ| < 2^20·π/2 (so q·π/2's first part is exact): θ − q·π/2 (Cody–Waite, π/2 in two
// parts), then the kernels on [−π/4, π/4].
inline SinCos sincos(double theta) {
  constexpr double invpio2 = 6.36619772367581382433e-01;
  constexpr double pio2_1 = 1.57079632673412561417e+00, pio2_1t = 6.07710050650619224932e-11;
  constexpr double S1 = -1.66666666666666324348e-01, S2 = 8.33333333332248946124e-03, S3 = -1.98412698298579493134e-04,
                   S4 = 2.75573137070700676789e-06, S5 = -2.50507602534068634195e-08, S6 = 1.58969099521155010221e-10;
  constexpr double C1 = 4.16666666666666019037e-02, C2 = -1.38888888888741095749e-03, C3 = 2.48015872894767294178e-05,
                   C4 = -2.75573143513906633035e-07, C5 = 2.08757232129817482790e-09, C6 = -1.13596475577881948265e-11;
  constexpr double shifter = 0x1.8p52;  // adding it rounds to an integer, kept in the low bits
  const double qs = theta * invpio2 + shifter;
  const std::uint64_t q = as_bits(qs) & 3;
  const double qd = qs - shifter;
  const double x = (theta - qd * pio2_1) - qd * pio2_1t;
  const double z = x * x;
  const double sx = x + z * x * (S1 + z * (S2 + z * (S3 + z * (S4 + z * (S5 + z * S6)))));
  const double r = z * (C1 + z * (C2 + z * (C3 + z * (C4 + z * (C5 + z * C6)))));
  const double hz = 0.5 * z;
  const double w = 1.0 - hz;
  const double cx = w + (((1.0 - w) - hz) + z * r);
  // quadrant q: (sin, cos) = (s, c), (c, −s), (−s, −c), (−c, s); chosen and signed on the bits
  const std::uint64_t odd = 0 - (q & 1);
  const std::uint64_t sb = as_bits(sx), cb = as_bits(cx);
  const std::uint64_t s1 = (cb & odd) | (sb & ~odd), c1 = (sb & odd) | (cb & ~odd);
  return {as_double(s1 ^ ((q & 2) << 62)), as_double(c1 ^ (((q + 1) & 2) << 62))};
}

// e^x for |x| < 708: x = k·ln2 + r with |r| ≤ ln2/2, then e^r by fdlibm's rational approximation.
inline double exp(double x) {
  if (x != x) return x;  // NaN stays NaN (its k would be no integer)
  constexpr double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10, inv_ln2 = 1.44269504088896338700e+00;
  constexpr double P1 = 1.66666666666666019037e-01, P2 = -2.77777777770155933842e-03, P3 = 6.61375632143793436117e-05,
                   P4 = -1.65339022054652515390e-06, P5 = 4.13813679705723846039e-08;
  constexpr double shifter = 0x1.8p52;
  const double ks = x * inv_ln2 + shifter;  // k = round(x / ln2), kept in the low bits
  const double kd = ks - shifter;
  const double hi = x - kd * ln2_hi, lo = kd * ln2_lo, r = hi - lo;
  const double t = r * r;
  const double c = r - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))));
  const double y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
  return y * as_double(static_cast<std::uint64_t>(static_cast<std::int64_t>(kd) + 1023) << 52);
}

// tanh x: x − x³/3 + 2x⁵/15 − 17x⁷/315 below 2⁻¹⁰ (no cancellation), else 1 − 2/(e^{2|x|} + 1)
// with the sign (whose cancellation costs at most 2¹⁰ ulp of double: far below float's).
inline double tanh(double x) {
  if (x != x) return x;  // NaN stays NaN
  const double a = x < 0 ? -x : x;
  if (a < 0x1p-10) {
    const double z = x * x;
    return x - x * z * (1.0 / 3.0 - z * (2.0 / 15.0 - z * (17.0 / 315.0)));
  }
  const double t = a > 20 ? 1.0 : 1.0 - 2.0 / (exp(2.0 * a) + 1.0);
  return x < 0 ? -t : t;
}

// erf x (BERT's GELU, x · (1 + erf(x/√2)) / 2), by fdlibm's method and coefficients: a rational
// function of x² below 0.84375, of |x| − 1 up to 1.25, and 1 − e^(−x² − 0.5625 + R/S)/|x| (the
// exponent split so that x² is exact) up to 6; ±1 beyond.
inline double erf(double x) {
  if (x != x) return x;
  const double a = x < 0 ? -x : x;
  if (a < 0.84375) {
    if (a < 0x1p-28) return x + 0.128379167095512586316 * x;
    const double z = x * x;
    const double r = 1.28379167095512558561e-01 + z * (-3.25042107247001499370e-01 + z * (-2.84817495755985104766e-02 +
                                                                                     z * (-5.77027029648944159157e-03 + z * -2.37630166566501626084e-05)));
    const double s = 1.0 + z * (3.97917223959155352819e-01 + z * (6.50222499887672944485e-02 + z * (5.08130628187576562776e-03 +
                                                                                                 z * (1.32494738004321644526e-04 + z * -3.96022827877536812320e-06))));
    return x + x * (r / s);
  }
  double y;
  if (a < 1.25) {
    const double t = a - 1.0;
    const double p = -2.36211856075265944077e-03 + t * (4.14856118683748331666e-01 + t * (-3.72207876035701323847e-01 + t * (3.18346619901161753674e-01 +
                     t * (-1.10894694282396677476e-01 + t * (3.54783043256182359371e-02 + t * -2.16637559486879084300e-03)))));
    const double q = 1.0 + t * (1.06420880400844228286e-01 + t * (5.40397917702171048937e-01 + t * (7.18286544141962662868e-02 +
                     t * (1.26171219808761642112e-01 + t * (1.36370839120290507362e-02 + t * 1.19844998467991074170e-02)))));
    y = 8.45062911510467529297e-01 + p / q;
  } else if (a < 6.0) {
    const double t = 1.0 / (a * a);
    double r, s;
    if (a < 1.0 / 0.35) {
      r = -9.86494403484714822705e-03 + t * (-6.93858572707181764372e-01 + t * (-1.05586262253232909814e+01 + t * (-6.23753324503260060396e+01 +
          t * (-1.62396669462573470355e+02 + t * (-1.84605092906711035994e+02 + t * (-8.12874355063065934246e+01 + t * -9.81432934416914548592e+00))))));
      s = 1.0 + t * (1.96512716674392571292e+01 + t * (1.37657754143519042600e+02 + t * (4.34565877475229228821e+02 + t * (6.45387271733267880336e+02 +
          t * (4.29008140027567833386e+02 + t * (1.08635005541779435134e+02 + t * (6.57024977031928170135e+00 + t * -6.04244152148580987438e-02)))))));
    } else {
      r = -9.86494292470009928597e-03 + t * (-7.99283237680523006574e-01 + t * (-1.77579549177547519889e+01 + t * (-1.60636384855821916062e+02 +
          t * (-6.37566443368389627722e+02 + t * (-1.02509513161107724954e+03 + t * -4.83519191608651397019e+02)))));
      s = 1.0 + t * (3.03380607434824582924e+01 + t * (3.25792512996573918826e+02 + t * (1.53672958608443695994e+03 + t * (3.19985821950859553908e+03 +
          t * (2.55305040643316442583e+03 + t * (4.74528541206955367215e+02 + t * -2.24409524465858183362e+01))))));
    }
    const double z = as_double(as_bits(a) & 0xffffffff00000000ULL);  // a's high half: z·z is exact
    y = 1.0 - exp(-z * z - 0.5625) * exp((z - a) * (z + a) + r / s) / a;
  } else {
    y = 1.0;
  }
  return x < 0 ? -y : y;
}

}  // namespace attn::fixed
