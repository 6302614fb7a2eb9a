// exp for softmax rows, vectorised and the same bits on every x86-64 machine: one sequence of IEEE
// operations (a float multiply, round to nearest even, Cody-Waite reduction and a degree-6
// polynomial with fused multiply-adds, scaling by 2^n in one or two exact-then-rounded steps),
// written three times: portable (std::fma, std::nearbyint), AVX2 + FMA and AVX-512. Accuracy within
// 2 ulp of exp (a unit test measures it); glibc's expf is not used because its variants are chosen
// per CPU.
#include "attn/numerics/cpu/exp.hpp"

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>

#include "attn/numerics/cpu/gemm.hpp"

namespace attn::cpu {
namespace {

constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693145751953125f;           // ln 2, high bits (exact times any n we see)
constexpr float kLn2Lo = 1.428606765330187045e-06f;    // ln 2 - kLn2Hi
constexpr float kC5 = 0.000198527617612853646278381f;  // minimax coefficients of exp(s) on |s| <= ln2/2
constexpr float kC4 = 0.00139304355252534151077271f;
constexpr float kC3 = 0.00833336077630519866943359f;
constexpr float kC2 = 0.0416664853692054748535156f;
constexpr float kC1 = 0.166666671633720397949219f;
constexpr float kC0 = 0.5f;
constexpr float kLow = -104.0f;  // below: 0 (exp(-104) is under half the smallest subnormal)
constexpr float kHigh = 88.7228394f;  // above: inf

float pow2(int n) {  // 2^n for -126 <= n <= 127
  const std::uint32_t bits = static_cast<std::uint32_t>(n + 127) << 23;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

float exp_one(float x) {
  if (std::isnan(x)) return x;
  if (x < kLow) return 0.0f;
  if (x > kHigh) return std::numeric_limits<float>::infinity();
  const float kf = std::nearbyint(x * kLog2e);
  float s = std::fma(-kf, kLn2Hi, x);
  s = std::fma(-kf, kLn2Lo, s);
  float u = kC5;
  u = std::fma(u, s, kC4);
  u = std::fma(u, s, kC3);
  u = std::fma(u, s, kC2);
  u = std::fma(u, s, kC1);
  u = std::fma(u, s, kC0);
  u = std::fma(s * s, u, s) + 1.0f;
  const int n = static_cast<int>(kf);
  if (n >= -126) return n > 127 ? (u * pow2(127)) * pow2(n - 127) : u * pow2(n);
  return (u * pow2(n + 64)) * pow2(-64);  // into the subnormals: exact, then one rounding
}

void exp_portable(float* y, std::int64_t n, float shift) {
  for (std::int64_t j = 0; j < n; ++j) y[j] = exp_one(y[j] - shift);
}

__attribute__((target("avx2,fma"))) void exp_avx2(float* y, std::int64_t n, float shift) {
  const __m256 vshift = _mm256_set1_ps(shift);
  std::int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 x = _mm256_sub_ps(_mm256_loadu_ps(y + j), vshift);
    const __m256 kf = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 s = _mm256_fmadd_ps(_mm256_sub_ps(_mm256_setzero_ps(), kf), _mm256_set1_ps(kLn2Hi), x);
    s = _mm256_fmadd_ps(_mm256_sub_ps(_mm256_setzero_ps(), kf), _mm256_set1_ps(kLn2Lo), s);
    __m256 u = _mm256_set1_ps(kC5);
    u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(kC4));
    u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(kC3));
    u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(kC2));
    u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(kC1));
    u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(kC0));
    u = _mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(s, s), u, s), _mm256_set1_ps(1.0f));
    // the lanes whose n is ordinary take u · 2^n; the rare others go through exp_one below
    const __m256i ni = _mm256_cvtps_epi32(kf);
    const __m256i biased = _mm256_add_epi32(ni, _mm256_set1_epi32(127));
    const __m256 scale = _mm256_castsi256_ps(_mm256_slli_epi32(biased, 23));
    __m256 r = _mm256_mul_ps(u, scale);
    const __m256 ordinary = _mm256_and_ps(_mm256_cmp_ps(x, _mm256_set1_ps(-87.0f), _CMP_GE_OQ),
                                          _mm256_cmp_ps(x, _mm256_set1_ps(88.0f), _CMP_LE_OQ));
    const __m256 below = _mm256_cmp_ps(x, _mm256_set1_ps(kLow), _CMP_LT_OQ);
    r = _mm256_blendv_ps(_mm256_setzero_ps(), r, ordinary);
    _mm256_storeu_ps(y + j, r);
    const int special = _mm256_movemask_ps(_mm256_andnot_ps(_mm256_or_ps(ordinary, below), _mm256_castsi256_ps(_mm256_set1_epi32(-1))));
    if (special != 0) {
      alignas(32) float xs[8];
      _mm256_store_ps(xs, x);
      for (int l = 0; l < 8; ++l)
        if (special & (1 << l)) y[j + l] = exp_one(xs[l]);
    }
  }
  for (; j < n; ++j) y[j] = exp_one(y[j] - shift);
}

__attribute__((target("avx512f"))) void exp_avx512(float* y, std::int64_t n, float shift) {
  const __m512 vshift = _mm512_set1_ps(shift);
  std::int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m512 x = _mm512_sub_ps(_mm512_loadu_ps(y + j), vshift);
    const __m512 kf = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 nkf = _mm512_sub_ps(_mm512_setzero_ps(), kf);
    __m512 s = _mm512_fmadd_ps(nkf, _mm512_set1_ps(kLn2Hi), x);
    s = _mm512_fmadd_ps(nkf, _mm512_set1_ps(kLn2Lo), s);
    __m512 u = _mm512_set1_ps(kC5);
    u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(kC4));
    u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(kC3));
    u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(kC2));
    u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(kC1));
    u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(kC0));
    u = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(s, s), u, s), _mm512_set1_ps(1.0f));
    const __m512i ni = _mm512_cvtps_epi32(kf);
    const __m512 scale = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(ni, _mm512_set1_epi32(127)), 23));
    const __mmask16 ordinary = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_GE_OQ) & _mm512_cmp_ps_mask(x, _mm512_set1_ps(88.0f), _CMP_LE_OQ);
    const __mmask16 below = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kLow), _CMP_LT_OQ);
    _mm512_storeu_ps(y + j, _mm512_maskz_mul_ps(ordinary, u, scale));
    const __mmask16 special = static_cast<__mmask16>(~(ordinary | below));
    if (special != 0) {
      alignas(64) float xs[16];
      _mm512_store_ps(xs, x);
      for (int l = 0; l < 16; ++l)
        if (special & (1 << l)) y[j + l] = exp_one(xs[l]);
    }
  }
  for (; j < n; ++j) y[j] = exp_one(y[j] - shift);
}

}  // namespace

float exp_deterministic(float x) { return exp_one(x); }

void exp_shifted(float* y, std::int64_t n, float shift) {
  // the same kernel family as the products (gemm.hpp), so ATTN_GEMM_KERNEL switches both
  const std::string_view k = gemm::kernel_name();
  if (k == "avx512") exp_avx512(y, n, shift);
  else if (k == "avx2") exp_avx2(y, n, shift);
  else exp_portable(y, n, shift);
}

}  // namespace attn::cpu
