// Packed, blocked matrix products with one accumulation order. The micro-kernels compute an mr × nr
// tile of C as fma chains over a k-block, loading the tile's running sums when the block is not the
// first: blocking therefore never regroups a sum, and the AVX-512, AVX2 and portable kernels (whose
// std::fma is correctly rounded, in hardware or in libm) produce the same bits. Tiles on the edges are
// computed in full over zero padding and only their valid part is stored.
#include "attn/numerics/cpu/gemm.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <string>
#include <string_view>

#include "attn/core/error.hpp"

namespace attn::gemm {
namespace {

constexpr std::int64_t kKC = 256;  // k per block: an nr-wide panel of B stays in L1
constexpr std::int64_t kMC = 96;   // rows of A packed per block (a multiple of every mr)

// c (mr × nr tile, leading dimension ldc) = (accumulate ? c : 0) + a (kc × mr) · b (kc × nr, packed),
// a packed (micro) or mr rows read where they are, lda apart (micro_rows)
using Micro = void (*)(std::int64_t kc, const float* a, std::int64_t lda, const float* b, float* c, std::int64_t ldc, bool accumulate);

struct Kernel {
  const char* name;
  int mr, nr;
  Micro micro, micro_rows;
};

// A's element (row i, k index kk) of a tile: packed k-major in panels of MR rows (lda unused), or
// read where it is, rows lda apart.
template <int MR, bool Packed>
inline const float& a_at(const float* a, std::int64_t lda, std::int64_t kk, int i) {
  return Packed ? a[kk * MR + i] : a[i * lda + kk];
}

template <int MR, int NR, bool Packed>
void micro_portable(std::int64_t kc, const float* a, std::int64_t lda, const float* b, float* c, std::int64_t ldc, bool accumulate) {
  float acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = accumulate ? c[i * ldc + j] : 0.0f;
  for (std::int64_t kk = 0; kk < kc; ++kk, b += NR)
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NR; ++j) acc[i][j] = std::fma(a_at<MR, Packed>(a, lda, kk, i), b[j], acc[i][j]);
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) c[i * ldc + j] = acc[i][j];
}

template <bool Packed>
__attribute__((target("avx2,fma"))) void micro_avx2(std::int64_t kc, const float* a, std::int64_t lda, const float* b, float* c,
                                                     std::int64_t ldc, bool accumulate) {
  constexpr int MR = 6;
  __m256 acc[MR][2];
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
    acc[i][0] = accumulate ? _mm256_loadu_ps(c + i * ldc) : _mm256_setzero_ps();
    acc[i][1] = accumulate ? _mm256_loadu_ps(c + i * ldc + 8) : _mm256_setzero_ps();
  }
  for (std::int64_t kk = 0; kk < kc; ++kk, b += 16) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const __m256 ai = _mm256_broadcast_ss(&a_at<MR, Packed>(a, lda, kk, i));
      acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
    }
  }
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
    _mm256_storeu_ps(c + i * ldc, acc[i][0]);
    _mm256_storeu_ps(c + i * ldc + 8, acc[i][1]);
  }
}

template <bool Packed>
__attribute__((target("avx512f"))) void micro_avx512(std::int64_t kc, const float* a, std::int64_t lda, const float* b, float* c,
                                                      std::int64_t ldc, bool accumulate) {
  constexpr int MR = 8;
  __m512 acc[MR][2];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    acc[i][0] = accumulate ? _mm512_loadu_ps(c + i * ldc) : _mm512_setzero_ps();
    acc[i][1] = accumulate ? _mm512_loadu_ps(c + i * ldc + 16) : _mm512_setzero_ps();
  }
  for (std::int64_t kk = 0; kk < kc; ++kk, b += 32) {
    const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512 ai = _mm512_set1_ps(a_at<MR, Packed>(a, lda, kk, i));
      acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    _mm512_storeu_ps(c + i * ldc, acc[i][0]);
    _mm512_storeu_ps(c + i * ldc + 16, acc[i][1]);
  }
}

// R rows of C over columns [0, n), B read once: c = fma(a[kk], b[kk][j], c) for kk in order, from 0
// (or, with accumulate, from c's value: the chain continued from an earlier block of k).
using RowsKernel = void (*)(const float* a, std::int64_t lda, const float* b, std::int64_t ldb, std::int64_t k, std::int64_t n, float* c,
                            std::int64_t ldc, bool accumulate);

template <int R>
void rows_portable(const float* a, std::int64_t lda, const float* b, std::int64_t ldb, std::int64_t k, std::int64_t n, float* c,
                   std::int64_t ldc, bool accumulate) {
  if (!accumulate)
    for (int r = 0; r < R; ++r) std::fill(c + r * ldc, c + r * ldc + n, 0.0f);
  for (std::int64_t kk = 0; kk < k; ++kk)
    for (int r = 0; r < R; ++r)
      for (std::int64_t j = 0; j < n; ++j) c[r * ldc + j] = std::fma(a[r * lda + kk], b[kk * ldb + j], c[r * ldc + j]);
}

template <int R>
__attribute__((target("avx2,fma"))) void rows_avx2(const float* a, std::int64_t lda, const float* b, std::int64_t ldb, std::int64_t k,
                                                    std::int64_t n, float* c, std::int64_t ldc, bool accumulate) {
  std::int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = accumulate ? _mm256_loadu_ps(c + r * ldc + j) : _mm256_setzero_ps();
    for (std::int64_t kk = 0; kk < k; ++kk) {
      _mm_prefetch(reinterpret_cast<const char*>(b + std::min(kk + 16, k - 1) * ldb + j), _MM_HINT_T0);
      const __m256 bv = _mm256_loadu_ps(b + kk * ldb + j);
      for (int r = 0; r < R; ++r) acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(a[r * lda + kk]), bv, acc[r]);
    }
    for (int r = 0; r < R; ++r) _mm256_storeu_ps(c + r * ldc + j, acc[r]);
  }
  for (; j < n; ++j)
    for (int r = 0; r < R; ++r) {
      float acc = accumulate ? c[r * ldc + j] : 0.0f;
      for (std::int64_t kk = 0; kk < k; ++kk) acc = std::fma(a[r * lda + kk], b[kk * ldb + j], acc);
      c[r * ldc + j] = acc;
    }
}

template <int R>
__attribute__((target("avx512f"))) void rows_avx512(const float* a, std::int64_t lda, const float* b, std::int64_t ldb, std::int64_t k,
                                                     std::int64_t n, float* c, std::int64_t ldc, bool accumulate) {
  // 32 columns at a time (two strips), B's rows prefetched ahead: a long stride defeats the hardware's
  for (std::int64_t j = 0; j < n; j += 32) {
    auto mask = [&](std::int64_t at) {
      return at + 16 <= n ? __mmask16(0xffff) : at >= n ? __mmask16(0) : static_cast<__mmask16>((1u << (n - at)) - 1);
    };
    const __mmask16 live0 = mask(j), live1 = mask(j + 16);
    __m512 acc0[R], acc1[R];
    for (int r = 0; r < R; ++r) {
      acc0[r] = accumulate ? _mm512_maskz_loadu_ps(live0, c + r * ldc + j) : _mm512_setzero_ps();
      acc1[r] = accumulate ? _mm512_maskz_loadu_ps(live1, c + r * ldc + j + 16) : _mm512_setzero_ps();
    }
    for (std::int64_t kk = 0; kk < k; ++kk) {
      _mm_prefetch(reinterpret_cast<const char*>(b + std::min(kk + 16, k - 1) * ldb + j), _MM_HINT_T0);
      const __m512 b0 = _mm512_maskz_loadu_ps(live0, b + kk * ldb + j), b1 = _mm512_maskz_loadu_ps(live1, b + kk * ldb + j + 16);
      for (int r = 0; r < R; ++r) {
        const __m512 ar = _mm512_set1_ps(a[r * lda + kk]);
        acc0[r] = _mm512_fmadd_ps(ar, b0, acc0[r]);
        acc1[r] = _mm512_fmadd_ps(ar, b1, acc1[r]);
      }
    }
    for (int r = 0; r < R; ++r) {
      _mm512_mask_storeu_ps(c + r * ldc + j, live0, acc0[r]);
      _mm512_mask_storeu_ps(c + r * ldc + j + 16, live1, acc1[r]);
    }
  }
}

template <RowsKernel One, RowsKernel Two, RowsKernel Four, RowsKernel Eight>
void rows_in_groups(const float* a, std::int64_t lda, std::int64_t m, const float* b, std::int64_t ldb, std::int64_t k, std::int64_t n,
                    float* c, std::int64_t ldc, bool accumulate) {
  std::int64_t i = 0;
  for (; i + 8 <= m; i += 8) Eight(a + i * lda, lda, b, ldb, k, n, c + i * ldc, ldc, accumulate);
  if (i + 4 <= m) Four(a + i * lda, lda, b, ldb, k, n, c + i * ldc, ldc, accumulate), i += 4;
  if (i + 2 <= m) Two(a + i * lda, lda, b, ldb, k, n, c + i * ldc, ldc, accumulate), i += 2;
  if (i < m) One(a + i * lda, lda, b, ldb, k, n, c + i * ldc, ldc, accumulate);
}

constexpr Kernel kPortable{"portable", 4, 16, micro_portable<4, 16, true>, micro_portable<4, 16, false>};
constexpr Kernel kAvx2{"avx2", 6, 16, micro_avx2<true>, micro_avx2<false>};
constexpr Kernel kAvx512{"avx512", 8, 32, micro_avx512<true>, micro_avx512<false>};

bool supported(const Kernel& k) {
  __builtin_cpu_init();
  if (&k == &kAvx512) return __builtin_cpu_supports("avx512f");
  if (&k == &kAvx2) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return true;
}

// The widest kernel this CPU runs; ATTN_GEMM_KERNEL=portable|avx2|avx512 asks for a narrower one.
const Kernel*& chosen_slot() {
  static const Kernel* k = [] {
    const char* env = std::getenv("ATTN_GEMM_KERNEL");
    for (const Kernel* c : {&kPortable, &kAvx2, &kAvx512})
      if (env != nullptr && std::string_view(env) == c->name && supported(*c)) return c;
    return supported(kAvx512) ? &kAvx512 : supported(kAvx2) ? &kAvx2 : &kPortable;
  }();
  return k;
}

const Kernel* chosen() { return chosen_slot(); }

// Rows [i0, i0 + rows) and columns [p0, p0 + kc) of A, packed k-major into panels of mr rows,
// zero-padded to whole panels.
void pack_a(const float* a, std::int64_t lda, std::int64_t rows, std::int64_t p0, std::int64_t kc, int mr, float* out) {
  for (std::int64_t i0 = 0; i0 < rows; i0 += mr) {
    const std::int64_t r = std::min<std::int64_t>(mr, rows - i0);
    for (std::int64_t kk = 0; kk < kc; ++kk) {
      for (std::int64_t i = 0; i < r; ++i) out[kk * mr + i] = a[(i0 + i) * lda + p0 + kk];
      for (std::int64_t i = r; i < mr; ++i) out[kk * mr + i] = 0.0f;
    }
    out += kc * mr;
  }
}

}  // namespace

const char* kernel_name() { return chosen()->name; }

std::int64_t k_block() { return kKC; }

std::vector<std::string> available_kernels() {
  std::vector<std::string> out;
  for (const Kernel* k : {&kPortable, &kAvx2, &kAvx512})
    if (supported(*k)) out.emplace_back(k->name);
  return out;
}

void use_kernel(std::string_view name) {
  for (const Kernel* k : {&kPortable, &kAvx2, &kAvx512})
    if (name == k->name && supported(*k)) chosen_slot() = k;
}

PackedB unpacked_b(std::int64_t k, std::int64_t n) {
  PackedB p;
  p.k = k, p.n = n, p.nr = chosen()->nr;
  p.capacity = static_cast<std::size_t>(p.panels() * k * p.nr);
  p.data = std::make_unique_for_overwrite<float[]>(p.capacity);
  return p;
}

void pack_b_panels(const float* b, std::int64_t ldb, bool transposed, PackedB& p, std::int64_t p0, std::int64_t p1) {
  const std::int64_t nr = p.nr, k = p.k;
  for (std::int64_t q = p0; q < std::min(p1, p.panels()); ++q) {
    float* out = p.data.get() + q * k * nr;
    const std::int64_t j0 = q * nr, cols = std::min<std::int64_t>(nr, p.n - j0);
    for (std::int64_t kk = 0; kk < k; ++kk, out += nr) {
      for (std::int64_t j = 0; j < cols; ++j) out[j] = transposed ? b[(j0 + j) * ldb + kk] : b[kk * ldb + j0 + j];
      for (std::int64_t j = cols; j < nr; ++j) out[j] = 0.0f;
    }
  }
}

void pack_b_rows(const float* rows, std::int64_t ldb, PackedB& p, std::int64_t kk0, std::int64_t count) {
  const std::int64_t nr = p.nr, k = p.k;
  for (std::int64_t q = 0; q < p.panels(); ++q) {
    float* out = p.data.get() + (q * k + kk0) * nr;
    const std::int64_t j0 = q * nr, cols = std::min<std::int64_t>(nr, p.n - j0);
    for (std::int64_t r = 0; r < count; ++r, out += nr) {
      std::memcpy(out, rows + r * ldb + j0, sizeof(float) * static_cast<std::size_t>(cols));
      std::fill(out + cols, out + nr, 0.0f);
    }
  }
}

PackedB pack_b(const float* b, std::int64_t ldb, bool transposed, std::int64_t k, std::int64_t n) {
  PackedB p = unpacked_b(k, n);
  pack_b_panels(b, ldb, transposed, p, 0, p.panels());
  return p;
}

void pack_b_into(PackedB& out, const float* b, std::int64_t ldb, bool transposed, std::int64_t k, std::int64_t n) {
  const int nr = chosen()->nr;
  const auto need = static_cast<std::size_t>((n + nr - 1) / nr * k * nr);
  if (out.capacity < need) out = unpacked_b(k, n);
  out.k = k, out.n = n, out.nr = nr;
  pack_b_panels(b, ldb, transposed, out, 0, out.panels());
}

void multiply(const float* a, std::int64_t lda, std::int64_t m, const PackedB& b, float* c, std::int64_t ldc, std::int64_t k_used,
              std::int64_t col0, std::int64_t col1, bool a_in_place, bool accumulate_c) {
  const Kernel& kn = *chosen();
  if (b.nr != kn.nr) throw InternalError("gemm: B was packed for another kernel");
  const std::int64_t k = k_used < 0 ? b.k : std::min(k_used, b.k), n = col1 < 0 ? b.n : std::min(col1, b.n);
  const std::int64_t first_panel = col0 / kn.nr;
  if (k == 0) {  // an empty sum (or nothing to add)
    if (!accumulate_c)
      for (std::int64_t i = 0; i < m; ++i) std::fill(c + i * ldc + first_panel * kn.nr, c + i * ldc + n, 0.0f);
    return;
  }
  thread_local std::vector<float> apack, tile;
  apack.resize(static_cast<std::size_t>(kMC * kKC));
  tile.resize(static_cast<std::size_t>(kn.mr * kn.nr));
  const std::int64_t panels = (n + kn.nr - 1) / kn.nr;
  for (std::int64_t p0 = 0; p0 < k; p0 += kKC) {
    const std::int64_t kc = std::min(kKC, k - p0);
    const bool accumulate = p0 > 0 || accumulate_c;  // later k-blocks continue each chain from its running sum
    for (std::int64_t i0 = 0; i0 < m; i0 += kMC) {
      const std::int64_t mc = std::min(kMC, m - i0);
      // whole tiles of rows read in place when asked (a narrow B: packing A would cost as much as
      // the product), the rest packed
      const std::int64_t in_place = a_in_place ? mc / kn.mr * kn.mr : 0;
      if (in_place < mc) pack_a(a + (i0 + in_place) * lda, lda, mc - in_place, p0, kc, kn.mr, apack.data());
      for (std::int64_t q = first_panel; q < panels; ++q) {
        const float* bp = b.data.get() + (q * b.k + p0) * kn.nr;
        const std::int64_t j0 = q * kn.nr, cols = std::min<std::int64_t>(kn.nr, n - j0);
        for (std::int64_t r0 = 0; r0 < mc; r0 += kn.mr) {
          const bool direct = r0 < in_place;
          const Micro micro = direct ? kn.micro_rows : kn.micro;
          const float* ap = direct ? a + (i0 + r0) * lda + p0 : apack.data() + ((r0 - in_place) / kn.mr) * kc * kn.mr;
          const std::int64_t rows = std::min<std::int64_t>(kn.mr, mc - r0);
          float* cp = c + (i0 + r0) * ldc + j0;
          if (rows == kn.mr && cols == kn.nr) {
            micro(kc, ap, lda, bp, cp, ldc, accumulate);
            continue;
          }
          // an edge tile: computed whole in a scratch tile, only its valid part kept
          std::fill(tile.begin(), tile.end(), 0.0f);
          if (accumulate)
            for (std::int64_t i = 0; i < rows; ++i) std::memcpy(tile.data() + i * kn.nr, cp + i * ldc, sizeof(float) * cols);
          micro(kc, ap, lda, bp, tile.data(), kn.nr, accumulate);
          for (std::int64_t i = 0; i < rows; ++i) std::memcpy(cp + i * ldc, tile.data() + i * kn.nr, sizeof(float) * cols);
        }
      }
    }
  }
}

void multiply_unpacked(const float* a, std::int64_t lda, std::int64_t m, const float* b, std::int64_t ldb, std::int64_t k,
                       std::int64_t n, float* c, std::int64_t ldc, bool accumulate) {
  const Kernel* kn = chosen();
  if (kn == &kAvx512)
    rows_in_groups<rows_avx512<1>, rows_avx512<2>, rows_avx512<4>, rows_avx512<8>>(a, lda, m, b, ldb, k, n, c, ldc, accumulate);
  else if (kn == &kAvx2)
    rows_in_groups<rows_avx2<1>, rows_avx2<2>, rows_avx2<4>, rows_avx2<8>>(a, lda, m, b, ldb, k, n, c, ldc, accumulate);
  else
    rows_in_groups<rows_portable<1>, rows_portable<2>, rows_portable<4>, rows_portable<8>>(a, lda, m, b, ldb, k, n, c, ldc, accumulate);
}

}  // namespace attn::gemm
