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

#include "attn/backend.hpp"
#include "attn/cpu/gemm.hpp"
#include "attn/tensor.hpp"

namespace attn::cpu {

// Products whose output is far larger than their inputs (q · kᵀ) are deferred.
bool worth_deferring_product(std::int64_t batches, std::int64_t m, std::int64_t k, std::int64_t n);

// c (N, m, n) = a (N, m, k) · b (N, k, n): each entry the fma chain over k (gemm.hpp).
class Product {
 public:
  Product(Tensor a, Tensor b, std::int64_t batches, std::int64_t m, std::int64_t k, std::int64_t n);
  std::int64_t size() const { return batches_ * m_ * n_; }
  // out[j] = entry i0 + j (flat, row-major), j < count; whole rows by the gemm kernels
  void values(std::int64_t i0, std::int64_t count, Scalar* out) const;
  // The first flat index whose value is not finite, or -1: from the rows computed so far, and the
  // rest computed now.
  std::int64_t first_nonfinite() const;

 private:
  Scalar entry(std::int64_t batch, std::int64_t row, std::int64_t col) const;
  void full_rows(std::int64_t batch, std::int64_t row, std::int64_t rows, Scalar* out) const;
  const gemm::PackedB& packed(std::int64_t batch) const;

  Tensor a_, b_;
  std::int64_t batches_, m_, k_, n_;
  mutable std::unique_ptr<std::once_flag[]> packed_once_;
  mutable std::vector<gemm::PackedB> packed_;
  mutable std::unique_ptr<std::atomic<std::uint8_t>[]> row_state_;  // per row: 0 unknown, 1 finite, 2 not
};

// base · factor, then `fill` wherever keep is 0 (scaled and masked scores).
struct Elementwise {
  Tensor held;                              // the base, when held
  std::shared_ptr<const Product> product;  // the base, when itself deferred
  Scalar factor = 1;
  Tensor keep;                              // held (B, T, S), or no data: nothing blocked
  std::int64_t groups = 1, plane = 1;       // with keep: base is (B, groups, plane), plane = T·S
  Scalar fill = 0;

  void values(std::int64_t i0, std::int64_t count, Scalar* out) const;
};

// softmax along rows of n entries of `logits`; a row whose entries are all -inf gets `empty`.
class Softmax {
 public:
  Softmax(std::shared_ptr<const Elementwise> logits, std::int64_t rows, std::int64_t n, Backend::EmptyRow empty);
  std::int64_t rows() const { return rows_; }
  std::int64_t width() const { return n_; }
  // rows [r0, r0 + count) into out (count × n); records their statistics and sums
  void compute_rows(std::int64_t r0, std::int64_t count, Scalar* out) const;
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
