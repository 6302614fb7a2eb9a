// The CPU backend's matrix product, written so that every x86-64 machine gives the same bits: each
// output element is one fused multiply-add chain over k in order, c = fma(a[i][k], b[k][j], c) from
// c = 0, whatever the blocking, the thread, or the kernel (AVX-512, AVX2 + FMA, or portable code
// with std::fma, which is correctly rounded everywhere). No threading here: callers split the rows.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attn::gemm {

// B (k, n), or B stored transposed as (n, k), packed once into column panels of the kernel's width:
// panel p holds B[0..k)[p·nr .. p·nr + nr), k-major, zero-padded past n. Read-only once packed, so
// one packed B serves every row chunk of a product in parallel.
struct PackedB {
  std::int64_t k = 0, n = 0;
  int nr = 0;
  std::unique_ptr<float[]> data;  // panels() · k · nr floats (or more: capacity)
  std::size_t capacity = 0;
  std::int64_t panels() const { return (n + nr - 1) / nr; }
};

// b: row-major, leading dimension ldb; transposed: b holds B as (n, k) rows (kᵀ given as k).
PackedB pack_b(const float* b, std::int64_t ldb, bool transposed, std::int64_t k, std::int64_t n);
// The same into `out`, reusing its storage when large enough (a thread packing one B after another).
void pack_b_into(PackedB& out, const float* b, std::int64_t ldb, bool transposed, std::int64_t k, std::int64_t n);
// The same in two parts, for callers that pack in parallel: the storage (unfilled), then panels
// [p0, p1) of it from b (each panel is written by exactly one call).
PackedB unpacked_b(std::int64_t k, std::int64_t n);
void pack_b_panels(const float* b, std::int64_t ldb, bool transposed, PackedB& out, std::int64_t p0, std::int64_t p1);
// Or by rows, for a B read in order rather than held: rows [kk0, kk0 + count) of B (not transposed),
// given as `rows` (count × n, leading dimension ldb), into every panel.
void pack_b_rows(const float* rows, std::int64_t ldb, PackedB& out, std::int64_t kk0, std::int64_t count);

// C (m, n) = A (m, k) · B, row-major with leading dimensions lda and ldc. Optionally only columns
// [col0, col1) of C (col0 is rounded down to a panel: those columns are written too, with the same
// bits), and only the first k_used terms of each chain (exact when A's later columns are zero).
// With a_in_place, A's rows are read where they are rather than packed first (for a narrow B,
// where packing A costs as much as the product): the same chains, the same bits.
// With accumulate, each chain continues from C's value (B a block of k rows: a product over k in
// blocks, each packed in turn, gives the bits of one pass).
void multiply(const float* a, std::int64_t lda, std::int64_t m, const PackedB& b, float* c, std::int64_t ldc,
              std::int64_t k_used = -1, std::int64_t col0 = 0, std::int64_t col1 = -1, bool a_in_place = false, bool accumulate = false);

// Rows of B packed per k-block: what a product packs at a time.
std::int64_t k_block();

// C (m, n) = A (m, k) · B (k, n) with B read where it is, unpacked: the same chains, for a few rows
// (packing B costs more than it saves when m is small). Rows of C at ldc, of B at ldb. With
// accumulate, each chain continues from C's value: a product over k in blocks, B a block of rows at
// a time, gives the bits of one pass.
void multiply_unpacked(const float* a, std::int64_t lda, std::int64_t m, const float* b, std::int64_t ldb, std::int64_t k,
                       std::int64_t n, float* c, std::int64_t ldc, bool accumulate = false);

// The kernel in use ("avx512", "avx2", "portable"), for benchmarks and notes.
const char* kernel_name();
// The kernels this CPU can run, and a switch between them (for the test that compares their bits;
// not thread-safe, and a B packed before the switch cannot be used after it).
std::vector<std::string> available_kernels();
void use_kernel(std::string_view name);

}  // namespace attn::gemm
