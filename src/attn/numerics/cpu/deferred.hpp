// The CPU backend's deferred steps: recipes for the [B, H, T, S] steps that are cheap to recompute
// and costly to hold (scores = q · kᵀ, scaled, masked, weights). A recipe computes any rows, or one
// entry, with exactly the operations an eager computation uses, so a value shown, dumped or
// compared is the value the next step consumed. The context product reads weights rows straight
// from the recipe, tile by tile, and records each row's softmax statistics and sum as it goes.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "attn/numerics/backend.hpp"
#include "attn/numerics/cpu/gemm.hpp"
#include "attn/core/tensor.hpp"

namespace attn::cpu {

// Products whose output is far larger than their inputs (q · kᵀ) are deferred.
bool worth_deferring_product(std::int64_t batches, std::int64_t m, std::int64_t k, std::int64_t n);

// A batch of row-major matrices read where they are, in a held tensor: matrix i (of `batches`,
// each rows × cols) starts at src + offset + (i / inner)·outer + (i % inner)·step, its rows ld
// apart. A contiguous (N, rows, cols) tensor is inner = 1, outer = rows·cols, ld = cols; the heads
// of q inside qkv (B·T, 2dk + dv) are inner = H, outer = T·ld, step = hs, ld = 2dk + dv.
struct Operand {
  Tensor src;  // held
  std::int64_t batches = 0, rows = 0, cols = 0;
  std::int64_t offset = 0, inner = 1, outer = 0, step = 0, ld = 0;
  const Scalar* matrix(std::int64_t i) const { return src.data() + offset + (i / inner) * outer + (i % inner) * step; }
  Scalar at(std::int64_t i, std::int64_t row, std::int64_t col) const { return matrix(i)[row * ld + col]; }
  // t (its values filled if deferred) as (batches, rows, cols)
  static Operand contiguous(Tensor t, std::int64_t batches, std::int64_t rows, std::int64_t cols);
};

// c (N, m, n) = a (N, m, k) · b (N, k, n): each entry the fma chain over k (gemm.hpp). With
// b_transposed, b holds bᵀ (N, n, k) (kᵀ given as k). Both are read where they are.
class Product {
 public:
  Product(Operand a, Operand b, std::int64_t batches, std::int64_t m, std::int64_t k, std::int64_t n, bool b_transposed = false);
  std::int64_t size() const { return batches_ * m_ * n_; }
  // out[j] = entry i0 + j (flat, row-major), j < count; whole rows by the gemm kernels
  void values(std::int64_t i0, std::int64_t count, Scalar* out) const;
  // Columns [0, col1) of rows [row0, row0 + count) (rows flat over the batches), row r at out + r·ld.
  void rows(std::int64_t row0, std::int64_t count, std::int64_t col1, Scalar* out, std::int64_t ld) const;
  // The first flat index whose value is not finite, or -1: from the rows computed so far, and the
  // rest computed now.
  std::int64_t first_nonfinite(bool minus_inf_allowed = false) const;  // -inf counts as finite when allowed
  // True when no entry can leave float32's range (a bound from the inputs' largest magnitudes), so
  // that first_nonfinite need not compute the columns no pass has needed.
  bool cannot_overflow() const;

 private:
  Scalar entry(std::int64_t batch, std::int64_t row, std::int64_t col) const;
  // rows of one batch, columns [col0, col1): computed, checked and recorded
  void block(std::int64_t batch, std::int64_t row, std::int64_t rows, std::int64_t col0, std::int64_t col1, Scalar* out,
             std::int64_t ld) const;
  const gemm::PackedB& packed(std::int64_t batch) const;

  Operand a_, b_;
  std::int64_t batches_, m_, k_, n_;
  bool bt_;
  mutable std::once_flag bounded_once_;
  mutable bool bounded_ = false;  // cannot_overflow(), computed once
  mutable std::unique_ptr<std::once_flag[]> packed_once_;
  mutable std::vector<gemm::PackedB> packed_;
  // per row: columns [0, done) computed and checked; whether one of them was not finite
  mutable std::unique_ptr<std::atomic<std::int64_t>[]> done_;
  mutable std::unique_ptr<std::atomic<std::uint8_t>[]> bad_;
};

// The keep pattern of causal and padding masks as a rule, so that it need not be held: key j is
// kept for query i of batch row b iff not (causal and j > i + offset) and not (lengths given and
// j >= lengths[b]); the other way round when flipped.
// One product entry as the products compute it: c = fma(a[kk], b[kk·step], c) for kk = 0 .. k−1, from 0.
float fma_chain(const float* a, const float* b, std::int64_t step, std::int64_t k);

struct KeepRule {
  bool causal = false;
  std::int64_t offset = 0;
  std::int64_t window = 0;            // with causal: only the last `window` keys up to the diagonal; 0 = all
  std::vector<std::int64_t> lengths;  // per batch row, or empty
  bool flipped = false;
  bool kept(std::int64_t b, std::int64_t i, std::int64_t j) const {
    const bool ok = !(causal && j > i + offset) && !(window > 0 && j <= i + offset - window) &&
                    !(!lengths.empty() && j >= lengths[static_cast<std::size_t>(b)]);
    return ok != flipped;
  }
};

// base · factor, then `fill` wherever keep is 0 (scaled and masked scores).
struct Elementwise {
  Tensor held;                              // the base, when held
  std::shared_ptr<const Product> product;  // the base, when itself deferred
  Scalar factor = 1;
  Tensor keep;                              // (B, T, S), or no data: nothing blocked
  std::shared_ptr<const KeepRule> rule;     // keep's rule, when it has one: keep is then never read
  std::int64_t groups = 1, plane = 1;       // with keep: base is (B, groups, plane), plane = T·S
  std::int64_t keys = 1;                    // with keep: S
  Scalar fill = 0;
  std::vector<std::int64_t> visible;  // with keep: per keep row (b, i), one past its last kept key
  std::vector<std::uint8_t> prefix;   // with keep: per keep row, 1 when every key before that is kept

  // Sets keep (and its rule, if any) and what goes with it; keep is (B, T, S), the base (B, groups, T·S).
  void set_keep(Tensor k, std::shared_ptr<const KeepRule> rule, std::int64_t groups, std::int64_t T, std::int64_t S, Scalar fill);
  void values(std::int64_t i0, std::int64_t count, Scalar* out) const;
  // Where the rows' visible keys end: every entry of these rows from this column on is blocked.
  std::int64_t visible_end(std::int64_t row0, std::int64_t count, std::int64_t width) const;
  // Rows [row0, row0 + count) of `width` entries into out; the base is computed only for columns
  // [0, end) (`end` from visible_end: the rest are blocked, so `fill`).
  void rows(std::int64_t row0, std::int64_t count, std::int64_t width, std::int64_t end, Scalar* out) const;
  bool blocks_with_minus_infinity() const;
};

// softmax along rows of n entries of `logits`; a row whose entries are all -inf gets `empty`.
class Softmax {
 public:
  Softmax(std::shared_ptr<const Elementwise> logits, std::int64_t rows, std::int64_t n, Backend::EmptyRow empty);
  std::int64_t rows() const { return rows_; }
  std::int64_t width() const { return n_; }
  // rows [r0, r0 + count) into out (count × n); records their statistics and sums. Returns the
  // column from which every entry of these rows is exactly 0 (blocked by -inf), or n.
  std::int64_t compute_rows(std::int64_t r0, std::int64_t count, Scalar* out) const;
  Scalar entry(std::int64_t flat) const;  // from the row's statistics (computing them if needed)
  Scalar row_sum(std::int64_t row) const;

 private:
  void statistics(std::int64_t row) const;

  std::shared_ptr<const Elementwise> logits_;
  std::int64_t rows_, n_;
  Backend::EmptyRow empty_;
  // per row, once known: the max, the reciprocal of the sum of exp(x - max), the sum of the row
  mutable std::vector<Scalar> max_, inv_, sum_;
  mutable std::unique_ptr<std::atomic<std::uint8_t>[]> known_;
};

}  // namespace attn::cpu
