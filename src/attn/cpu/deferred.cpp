// Deferred steps: the recipes' arithmetic, written as the eager primitives write it (the same fma
// chains, multiplies, selects and softmax), so a deferred value has the eager value's bits.
#include "attn/cpu/deferred.hpp"

#include "attn/cpu/reduce.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace attn::cpu {
namespace {

constexpr std::int64_t kDeferMin = std::int64_t{1} << 16;

bool finite_row(const Scalar* p, std::int64_t n) {
  std::uint32_t any = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    std::uint32_t bits;
    std::memcpy(&bits, p + j, sizeof bits);
    any |= static_cast<std::uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  return any == 0;
}

}  // namespace

bool worth_deferring_product(std::int64_t batches, std::int64_t m, std::int64_t k, std::int64_t n) {
  // recomputing a row costs k multiply-adds per entry; holding it costs a fresh write per entry:
  // worth it when the output is far larger than the inputs it is recomputed from
  return batches * m * n >= kDeferMin && m * n >= 4 * (m + n) * k;
}

// ---- Product ----------------------------------------------------------------------------------

Product::Product(Tensor a, Tensor b, std::int64_t batches, std::int64_t m, std::int64_t k, std::int64_t n)
    : a_(std::move(a)), b_(std::move(b)), batches_(batches), m_(m), k_(k), n_(n),
      packed_once_(new std::once_flag[static_cast<std::size_t>(batches)]), packed_(static_cast<std::size_t>(batches)),
      row_state_(new std::atomic<std::uint8_t>[static_cast<std::size_t>(batches * m)]) {
  for (std::int64_t r = 0; r < batches * m; ++r) row_state_[static_cast<std::size_t>(r)].store(0, std::memory_order_relaxed);
}

const gemm::PackedB& Product::packed(std::int64_t batch) const {
  const auto i = static_cast<std::size_t>(batch);
  std::call_once(packed_once_[i], [&] { packed_[i] = gemm::pack_b(b_.data() + batch * k_ * n_, n_, false, k_, n_); });
  return packed_[i];
}

Scalar Product::entry(std::int64_t batch, std::int64_t row, std::int64_t col) const {
  const Scalar* a = a_.data() + (batch * m_ + row) * k_;
  const Scalar* b = b_.data() + batch * k_ * n_ + col;
  float c = 0.0f;
  for (std::int64_t kk = 0; kk < k_; ++kk) c = std::fma(a[kk], b[kk * n_], c);
  return c;
}

void Product::full_rows(std::int64_t batch, std::int64_t row, std::int64_t rows, Scalar* out) const {
  gemm::multiply(a_.data() + (batch * m_ + row) * k_, k_, rows, packed(batch), out, n_);
  for (std::int64_t r = 0; r < rows; ++r) {
    row_state_[static_cast<std::size_t>(batch * m_ + row + r)].store(finite_row(out + r * n_, n_) ? 1 : 2, std::memory_order_relaxed);
  }
}

void Product::values(std::int64_t i0, std::int64_t count, Scalar* out) const {
  while (count > 0) {
    const std::int64_t batch = i0 / (m_ * n_), rem = i0 % (m_ * n_), row = rem / n_, col = rem % n_;
    if (col == 0 && count >= n_) {
      const std::int64_t rows = std::min(count / n_, m_ - row);
      full_rows(batch, row, rows, out);
      i0 += rows * n_, out += rows * n_, count -= rows * n_;
      continue;
    }
    const std::int64_t seg = std::min(count, n_ - col);
    for (std::int64_t j = 0; j < seg; ++j) out[j] = entry(batch, row, col + j);
    i0 += seg, out += seg, count -= seg;
  }
}

std::int64_t Product::first_nonfinite() const {
  std::vector<Scalar> buf(static_cast<std::size_t>(n_));
  for (std::int64_t r = 0; r < batches_ * m_; ++r) {
    if (row_state_[static_cast<std::size_t>(r)].load(std::memory_order_relaxed) == 0) full_rows(r / m_, r % m_, 1, buf.data());
    if (row_state_[static_cast<std::size_t>(r)].load(std::memory_order_relaxed) != 2) continue;
    values(r * n_, n_, buf.data());
    for (std::int64_t j = 0; j < n_; ++j)
      if (!std::isfinite(buf[static_cast<std::size_t>(j)])) return r * n_ + j;
  }
  return -1;
}

// ---- Elementwise ------------------------------------------------------------------------------

void Elementwise::values(std::int64_t i0, std::int64_t count, Scalar* out) const {
  if (product) product->values(i0, count, out);
  else std::memcpy(out, held.data() + i0, sizeof(Scalar) * static_cast<std::size_t>(count));
  if (!keep.has_data()) {
    for (std::int64_t j = 0; j < count; ++j) out[j] = out[j] * factor;
    return;
  }
  const Scalar* k = keep.data();
  for (std::int64_t j = 0; j < count;) {
    const std::int64_t i = i0 + j, in_plane = i % plane, span = std::min(count - j, plane - in_plane);
    const Scalar* kr = k + (i / (groups * plane)) * plane + in_plane;
    for (std::int64_t t = 0; t < span; ++t) out[j + t] = kr[t] != 0 ? out[j + t] * factor : fill;
    j += span;
  }
}

// ---- Softmax ----------------------------------------------------------------------------------

Softmax::Softmax(std::shared_ptr<const Elementwise> logits, std::int64_t rows, std::int64_t n, Backend::EmptyRow empty)
    : logits_(std::move(logits)), rows_(rows), n_(n), empty_(empty), max_(static_cast<std::size_t>(rows)),
      inv_(static_cast<std::size_t>(rows)), sum_(static_cast<std::size_t>(rows)),
      known_(new std::atomic<std::uint8_t>[static_cast<std::size_t>(rows)]) {
  for (std::int64_t r = 0; r < rows; ++r) known_[static_cast<std::size_t>(r)].store(0, std::memory_order_relaxed);
}

void Softmax::compute_rows(std::int64_t r0, std::int64_t count, Scalar* out) const {
  logits_->values(r0 * n_, count * n_, out);
  for (std::int64_t r = 0; r < count; ++r) {
    // the eager softmax_rows, line for line: the row max subtracted before exp, the sum in double
    Scalar* y = out + r * n_;
    const Scalar mx = row_max(y, n_);
    Scalar inv = 0;
    if (mx == -std::numeric_limits<Scalar>::infinity()) {
      const Scalar fill = empty_ == Backend::EmptyRow::Zeros     ? Scalar{0}
                          : empty_ == Backend::EmptyRow::Uniform ? static_cast<Scalar>(1.0 / static_cast<double>(n_))
                                                                 : std::numeric_limits<Scalar>::quiet_NaN();
      std::fill(y, y + n_, fill);
    } else {
      for (std::int64_t j = 0; j < n_; ++j) y[j] = std::exp(y[j] - mx);
      inv = static_cast<Scalar>(1.0 / cpu::row_sum(y, n_));
      for (std::int64_t j = 0; j < n_; ++j) y[j] *= inv;
    }
    const double s = cpu::row_sum(y, n_);  // as the row_sums primitive adds them
    const auto i = static_cast<std::size_t>(r0 + r);
    max_[i] = mx, inv_[i] = inv, sum_[i] = static_cast<Scalar>(s);
    known_[i].store(1, std::memory_order_release);
  }
}

void Softmax::statistics(std::int64_t row) const {
  if (known_[static_cast<std::size_t>(row)].load(std::memory_order_acquire) != 0) return;
  std::vector<Scalar> buf(static_cast<std::size_t>(n_));
  compute_rows(row, 1, buf.data());
}

Scalar Softmax::entry(std::int64_t flat) const {
  const std::int64_t row = flat / n_;
  statistics(row);
  const auto i = static_cast<std::size_t>(row);
  if (max_[i] == -std::numeric_limits<Scalar>::infinity()) {
    return empty_ == Backend::EmptyRow::Zeros     ? Scalar{0}
           : empty_ == Backend::EmptyRow::Uniform ? static_cast<Scalar>(1.0 / static_cast<double>(n_))
                                                  : std::numeric_limits<Scalar>::quiet_NaN();
  }
  Scalar x;
  logits_->values(flat, 1, &x);
  Scalar y = std::exp(x - max_[i]);
  return y * inv_[i];
}

Scalar Softmax::row_sum(std::int64_t row) const {
  statistics(row);
  return sum_[static_cast<std::size_t>(row)];
}

}  // namespace attn::cpu
