// Seeded values, reproducible across machines: see random.hpp.
#include "attn/numerics/random.hpp"

#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <numbers>
#include <algorithm>
#include <vector>

#include "attn/core/error.hpp"
#include "attn/numerics/fixed_math.hpp"

namespace attn {

std::uint64_t stream_seed(std::uint64_t seed, std::string_view name) {
  // FNV-1a of the tensor name, mixed with the user's seed.
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : name) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h ^ (seed * 0x9E3779B97F4A7C15ULL);
}

// std::mt19937_64, word for word (the standard fixes its output), producing a block of 312 words per
// twist in loops the compiler vectorises; libstdc++'s generates one word per call.
Mt64::Mt64(std::uint64_t seed) {
  s_[0] = seed;
  for (int i = 1; i < kN; ++i) s_[i] = 6364136223846793005ULL * (s_[i - 1] ^ (s_[i - 1] >> 62)) + static_cast<std::uint64_t>(i);
}

namespace {

constexpr int kStateWords = 312, kShift = 156;

// The twist and the tempering, as internal functions cloned per instruction set (integer operations:
// the same words on every machine; an exported member cannot be cloned portably across compilers).
__attribute__((target_clones("avx512f", "avx2", "default"))) void twist_state(std::uint64_t* s) {
  constexpr std::uint64_t kUpper = 0xFFFFFFFF80000000ULL, kLower = 0x7FFFFFFFULL, kA = 0xB5026F5AA96619E9ULL;
  auto mix = [](std::uint64_t hi, std::uint64_t lo, std::uint64_t far) {
    const std::uint64_t y = (hi & kUpper) | (lo & kLower);
    return far ^ (y >> 1) ^ ((0 - (y & 1)) & kA);  // kA where y is odd, without a 64-bit multiply
  };
  int i = 0;
  for (; i < kStateWords - kShift; ++i) s[i] = mix(s[i], s[i + 1], s[i + kShift]);
  for (; i < kStateWords - 1; ++i) s[i] = mix(s[i], s[i + 1], s[i + kShift - kStateWords]);
  s[kStateWords - 1] = mix(s[kStateWords - 1], s[0], s[kShift - 1]);
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void temper(const std::uint64_t* s, int n, std::uint64_t* out) {
  for (int j = 0; j < n; ++j) out[j] = Mt64::temper_word(s[j]);
}

}  // namespace

void Mt64::twist() {
  static_assert(kN == kStateWords && kM == kShift);
  twist_state(s_);
}

void Mt64::fill(std::uint64_t* out, std::int64_t n) {
  raw(n, [&](const std::uint64_t* state, int count) {
    temper(state, count, out);
    out += count;
  });
}

void Mt64::discard(std::int64_t n) {
  raw(n, [](const std::uint64_t*, int) {});
}

namespace {

// 53 random bits -> [0, 1), exactly representable; in two exact halves (no 64-bit integer
// conversion, which SSE2 and AVX2 lack).
inline double unit(std::uint64_t bits) {
  const std::uint64_t x = bits >> 11, hi = x >> 26, lo = x & ((std::uint64_t{1} << 26) - 1);
  return ((fixed::as_double(hi | 0x4330000000000000ULL) - 0x1p52) * 0x1p26 + (fixed::as_double(lo | 0x4330000000000000ULL) - 0x1p52)) * 0x1.0p-53;
}

// n values (n even) from n words, pairs by Box–Muller.
__attribute__((target_clones("avx512f", "avx2", "default"))) void normals(const std::uint64_t* bits, std::int64_t n, Scalar* out) {
  for (std::int64_t i = 0; i < n; i += 2) {
    const double u1 = 1.0 - unit(bits[i]);  // (0, 1]: log(u1) is finite
    const fixed::SinCos sc = fixed::sincos(2.0 * std::numbers::pi * unit(bits[i + 1]));
    const double r = std::sqrt(-2.0 * fixed::log(u1));
    out[i] = static_cast<Scalar>(r * sc.c);
    out[i + 1] = static_cast<Scalar>(r * sc.s);
  }
}

// Untempered words -> U(-bound, bound): (2·unit − 1)·bound in double, rounded once to float.
using UniformsFn = void (*)(const std::uint64_t* state, int n, double bound, Scalar* out);

__attribute__((target_clones("avx512f", "avx2", "default"))) void uniforms_portable(const std::uint64_t* state, int n, double bound,
                                                                                   Scalar* out) {
  for (int i = 0; i < n; ++i) out[i] = static_cast<Scalar>((2.0 * unit(Mt64::temper_word(state[i])) - 1.0) * bound);
}

// The same operations, eight words at a time. AVX-512 DQ converts the 53 bits to double in one exact
// instruction; 2·unit = bits·2⁻⁵² is exact too, so the rounded operations are the portable ones: − 1,
// · bound, and the float conversion.
#define ATTN_AVX512_DQ __attribute__((target("avx512f,avx512dq,avx512vl")))
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push  // GCC 12's own shift intrinsics start from an "undefined" vector it then warns of
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
ATTN_AVX512_DQ inline __m256 uniforms8(__m512i y, __m512d bound) {
  constexpr int kXorAnd = 0x78;  // ternary logic: a ^ (b & c)
  y = _mm512_ternarylogic_epi64(y, _mm512_srli_epi64(y, 29), _mm512_set1_epi64(0x5555555555555555LL), kXorAnd);
  y = _mm512_ternarylogic_epi64(y, _mm512_slli_epi64(y, 17), _mm512_set1_epi64(0x71D67FFFEDA60000LL), kXorAnd);
  y = _mm512_ternarylogic_epi64(y, _mm512_slli_epi64(y, 37), _mm512_set1_epi64(static_cast<long long>(0xFFF7EEE000000000ULL)), kXorAnd);
  y = _mm512_xor_si512(y, _mm512_srli_epi64(y, 43));
  const __m512d u2 = _mm512_mul_pd(_mm512_cvtepu64_pd(_mm512_srli_epi64(y, 11)), _mm512_set1_pd(0x1p-52));
  return _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_sub_pd(u2, _mm512_set1_pd(1.0)), bound));
}

ATTN_AVX512_DQ void uniforms_avx512(const std::uint64_t* state, int n, double bound, Scalar* out) {
  const __m512d b = _mm512_set1_pd(bound);
  int i = 0;
  for (; i + 16 <= n; i += 16) {  // two independent chains, whole vectors
    const __m256 lo = uniforms8(_mm512_loadu_si512(state + i), b), hi = uniforms8(_mm512_loadu_si512(state + i + 8), b);
    _mm256_storeu_ps(out + i, lo);
    _mm256_storeu_ps(out + i + 8, hi);
  }
  for (; i < n; i += 8) {
    const __mmask8 lanes = n - i >= 8 ? 0xFF : static_cast<__mmask8>((1u << (n - i)) - 1);
    _mm256_mask_storeu_ps(out + i, lanes, uniforms8(_mm512_maskz_loadu_epi64(lanes, state + i), b));
  }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

struct UniformKernel {
  const char* name;
  UniformsFn fn;
};
constexpr UniformKernel kUniformPortable{"portable", uniforms_portable}, kUniformAvx512{"avx512", uniforms_avx512};

bool supported(const UniformKernel& k) {
  __builtin_cpu_init();
  return &k != &kUniformAvx512 || (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"));
}

const UniformKernel*& uniform_kernel() {
  static const UniformKernel* k = supported(kUniformAvx512) ? &kUniformAvx512 : &kUniformPortable;
  return k;
}

constexpr std::int64_t kBlock = 4096;  // words drawn at a time (even)

}  // namespace

void fill_normal(std::uint64_t seed, std::string_view name, Scalar* p, std::int64_t n, std::int64_t first) {
  if (first % 2 != 0) throw InternalError("fill_normal: a part must start on a pair");
  Mt64 g(stream_seed(seed, name));
  g.discard(first);  // value i is drawn from word i (pairs from pairs of words)
  std::uint64_t bits[kBlock];
  Scalar last[2];
  for (std::int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const std::int64_t m = std::min(kBlock, n - i0), words = m + (m & 1);  // whole pairs: an odd n draws one word more
    g.fill(bits, words);
    if (words == m) {
      normals(bits, m, p + i0);
    } else {  // the last, odd value: its pair's first
      normals(bits, m - 1, p + i0);
      normals(bits + m - 1, 2, last);
      p[i0 + m - 1] = last[0];
    }
  }
}

UniformStream::UniformStream(std::uint64_t seed, std::string_view name, double bound, std::int64_t first)
    : g_(stream_seed(seed, name)), bound_(bound) {
  g_.discard(first);
}

void UniformStream::read(Scalar* p, std::int64_t n) {
  const UniformsFn convert = uniform_kernel()->fn;
  g_.raw(n, [&](const std::uint64_t* state, int count) {
    convert(state, count, bound_, p);
    p += count;
  });
}

void UniformStream::skip(std::int64_t n) { g_.discard(n); }

void fill_uniform(std::uint64_t seed, std::string_view name, Scalar* p, std::int64_t n, double bound, std::int64_t first) {
  UniformStream(seed, name, bound, first).read(p, n);
}

Tensor generated_uniform(std::uint64_t seed, std::string name, Shape shape, double bound) {
  return Tensor::generated(std::move(shape), [seed, name = std::move(name), bound](std::int64_t first) {
    return [stream = std::make_shared<UniformStream>(seed, name, bound, first)](Scalar* out, std::int64_t n) {
      if (out != nullptr) stream->read(out, n);
      else stream->skip(n);
    };
  });
}

std::vector<std::string> available_uniform_kernels() {
  std::vector<std::string> out;
  for (const UniformKernel* k : {&kUniformPortable, &kUniformAvx512})
    if (supported(*k)) out.emplace_back(k->name);
  return out;
}

void use_uniform_kernel(std::string_view name) {
  for (const UniformKernel* k : {&kUniformPortable, &kUniformAvx512})
    if (name == k->name && supported(*k)) uniform_kernel() = k;
}

Tensor random_normal(std::uint64_t seed, std::string_view name, Shape shape) {
  Tensor t = Tensor::uninitialized(std::move(shape));
  fill_normal(seed, name, t.mutable_data(), t.size());
  return t;
}

Tensor random_uniform(std::uint64_t seed, std::string_view name, Shape shape, double bound) {
  Tensor t = Tensor::uninitialized(std::move(shape));
  fill_uniform(seed, name, t.mutable_data(), t.size(), bound);
  return t;
}

}  // namespace attn
