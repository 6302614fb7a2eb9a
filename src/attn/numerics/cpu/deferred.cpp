// Deferred steps: the recipes' arithmetic, written as the eager primitives write it (the same fma
// chains, multiplies, selects and softmax), so a deferred value has the eager value's bits.
#include "attn/numerics/cpu/deferred.hpp"

#include "attn/numerics/cpu/exp.hpp"
#include "attn/numerics/cpu/reduce.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace attn::cpu {
namespace {

constexpr std::int64_t kDeferMin = std::int64_t{1} << 16;

}  // namespace

bool worth_deferring_product(std::int64_t batches, std::int64_t m, std::int64_t k, std::int64_t n) {
  // recomputing a row costs k multiply-adds per entry; holding it costs a fresh write per entry:
  // worth it when the output is far larger than the inputs it is recomputed from
  return batches * m * n >= kDeferMin && m * n >= 4 * (m + n) * k;
}

Operand Operand::contiguous(Tensor t, std::int64_t batches, std::int64_t rows, std::int64_t cols) {
  t.data();  // a deferred tensor's values, filled once here rather than by the first reader
  return Operand{std::move(t), batches, rows, cols, 0, 1, rows * cols, 0, cols};
}

// ---- Product ----------------------------------------------------------------------------------

Product::Product(Operand a, Operand b, std::int64_t batches, std::int64_t m, std::int64_t k, std::int64_t n, bool b_transposed)
    : a_(std::move(a)), b_(std::move(b)), batches_(batches), m_(m), k_(k), n_(n), bt_(b_transposed),
      packed_once_(new std::once_flag[static_cast<std::size_t>(batches)]), packed_(static_cast<std::size_t>(batches)),
      done_(new std::atomic<std::int64_t>[static_cast<std::size_t>(batches * m)]),
      bad_(new std::atomic<std::uint8_t>[static_cast<std::size_t>(batches * m)]) {
  for (std::int64_t r = 0; r < batches * m; ++r) {
    done_[static_cast<std::size_t>(r)].store(0, std::memory_order_relaxed);
    bad_[static_cast<std::size_t>(r)].store(0, std::memory_order_relaxed);
  }
}

const gemm::PackedB& Product::packed(std::int64_t batch) const {
  const auto i = static_cast<std::size_t>(batch);
  std::call_once(packed_once_[i], [&] { packed_[i] = gemm::pack_b(b_.matrix(batch), b_.ld, bt_, k_, n_); });
  return packed_[i];
}

// std::fma is correctly rounded everywhere; the clone for FMA hardware makes it one instruction
// instead of a call into libm per term (the masked-row check reads an entry per row).
__attribute__((target_clones("fma", "default"))) float fma_chain(const float* a, const float* b, std::int64_t step, std::int64_t k) {
  float c = 0.0f;
  for (std::int64_t kk = 0; kk < k; ++kk) c = std::fma(a[kk], b[kk * step], c);
  return c;
}

Scalar Product::entry(std::int64_t batch, std::int64_t row, std::int64_t col) const {
  const Scalar* a = a_.matrix(batch) + row * a_.ld;
  const Scalar* b = b_.matrix(batch) + (bt_ ? col * b_.ld : col);
  return fma_chain(a, b, bt_ ? 1 : b_.ld, k_);
}

void Product::block(std::int64_t batch, std::int64_t row, std::int64_t rows, std::int64_t col0, std::int64_t col1, Scalar* out,
                    std::int64_t ld) const {
  gemm::multiply(a_.matrix(batch) + row * a_.ld, a_.ld, rows, packed(batch), out, ld, -1, col0, col1);
  // no need to look for a value out of range where the inputs' bound rules one out
  std::call_once(bounded_once_, [&] { bounded_ = cannot_overflow(); });
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto i = static_cast<std::size_t>(batch * m_ + row + r);
    if (!bounded_ && !all_finite(out + r * ld + col0, col1 - col0)) bad_[i].store(1, std::memory_order_relaxed);
    // columns are recorded as a prefix: a block starting at or before what is known extends it
    std::int64_t done = done_[i].load(std::memory_order_relaxed);
    while (col0 <= done && done < col1 && !done_[i].compare_exchange_weak(done, col1, std::memory_order_relaxed)) {
    }
  }
}

void Product::rows(std::int64_t row0, std::int64_t count, std::int64_t col1, Scalar* out, std::int64_t ld) const {
  while (count > 0) {
    const std::int64_t batch = row0 / m_, row = row0 % m_, n = std::min(count, m_ - row);
    block(batch, row, n, 0, col1, out, ld);
    row0 += n, count -= n, out += n * ld;
  }
}

void Product::values(std::int64_t i0, std::int64_t count, Scalar* out) const {
  while (count > 0) {
    const std::int64_t batch = i0 / (m_ * n_), rem = i0 % (m_ * n_), row = rem / n_, col = rem % n_;
    if (col == 0 && count >= n_) {
      const std::int64_t rows = std::min(count / n_, m_ - row);
      block(batch, row, rows, 0, n_, out, n_);
      i0 += rows * n_, out += rows * n_, count -= rows * n_;
      continue;
    }
    const std::int64_t seg = std::min(count, n_ - col);
    for (std::int64_t j = 0; j < seg; ++j) out[j] = entry(batch, row, col + j);
    i0 += seg, out += seg, count -= seg;
  }
}

namespace {

// The largest |x| of n entries; NaN if an entry is NaN. On the bit patterns: |x|'s bits, read as an
// unsigned integer, order like |x| (inf is 0x7f800000, NaN above it), in 16 lanes the compiler vectorises.
double largest_magnitude(const Scalar* x, std::int64_t n) {
  constexpr int kLanes = 16;
  std::uint32_t lane[kLanes] = {};
  std::int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    std::uint32_t bits[kLanes];
    std::memcpy(bits, x + j, sizeof bits);
    for (int l = 0; l < kLanes; ++l) lane[l] = std::max(lane[l], bits[l] & 0x7fffffffu);
  }
  std::uint32_t m = *std::max_element(lane, lane + kLanes);
  for (; j < n; ++j) {
    std::uint32_t bits;
    std::memcpy(&bits, x + j, sizeof bits);
    m = std::max(m, bits & 0x7fffffffu);
  }
  if (m > 0x7f800000u) return std::numeric_limits<double>::quiet_NaN();
  float f;
  std::memcpy(&f, &m, sizeof f);
  return f;
}

}  // namespace

bool Product::cannot_overflow() const {
  // Each entry is an fma chain c ← fl(a·b + c) over k terms: with finite inputs, |c| never exceeds
  // (1 + 2⁻²⁴)ᵏ · k · max|a| · max|b|, so when that stays far below float32's largest value no entry
  // can become ±inf, and without an inf no NaN can arise. (1 + 2⁻²⁴)ᵏ < 1.01 for k < 10⁵.
  // (over the whole tensors the operands are read from: a bound for any part of them)
  const double max_a = largest_magnitude(a_.src.data(), a_.src.size());
  const double max_b = b_.src.data() == a_.src.data() ? max_a : largest_magnitude(b_.src.data(), b_.src.size());  // q and k in one qkv
  const double bound = 1.01 * static_cast<double>(k_) * max_a * max_b;
  return k_ < 100000 && bound < 1e38;  // false for NaN or inf inputs
}

std::int64_t Product::first_nonfinite(bool minus_inf_allowed) const {
  std::call_once(bounded_once_, [&] { bounded_ = cannot_overflow(); });
  if (bounded_) return -1;
  // the columns no pass has computed yet, 32 rows at a time; then the first row found not finite
  constexpr std::int64_t kBlock = 32;
  std::vector<Scalar> buf(static_cast<std::size_t>(kBlock * n_));
  for (std::int64_t batch = 0; batch < batches_; ++batch)
    for (std::int64_t row = 0; row < m_; row += kBlock) {
      const std::int64_t rows = std::min(kBlock, m_ - row);
      std::int64_t from = n_;
      for (std::int64_t r = 0; r < rows; ++r) from = std::min(from, done_[static_cast<std::size_t>(batch * m_ + row + r)].load());
      if (from < n_) block(batch, row, rows, from, n_, buf.data(), n_);
    }
  for (std::int64_t r = 0; r < batches_ * m_; ++r) {
    if (bad_[static_cast<std::size_t>(r)].load() == 0) continue;
    values(r * n_, n_, buf.data());
    for (std::int64_t j = 0; j < n_; ++j) {
      const Scalar v = buf[static_cast<std::size_t>(j)];
      if (!std::isfinite(v) && !(minus_inf_allowed && v == -std::numeric_limits<Scalar>::infinity())) return r * n_ + j;
    }
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
  if (rule) {
    for (std::int64_t j = 0; j < count; ++j) {
      const std::int64_t i = i0 + j, b = i / (groups * plane), in_plane = i % plane;
      out[j] = rule->kept(b, in_plane / keys, in_plane % keys) ? out[j] * factor : fill;
    }
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

void Elementwise::set_keep(Tensor k, std::shared_ptr<const KeepRule> r, std::int64_t g, std::int64_t T, std::int64_t S, Scalar f) {
  keep = std::move(k), rule = std::move(r), groups = g, plane = T * S, keys = S, fill = f;
  const std::int64_t keep_rows = keep.size() / S;
  visible.assign(static_cast<std::size_t>(keep_rows), 0);
  prefix.assign(static_cast<std::size_t>(keep_rows), 0);
  for (std::int64_t row = 0; row < keep_rows; ++row) {
    const std::int64_t b = row / T, i = row % T;
    auto kept = [&](std::int64_t j) { return rule ? rule->kept(b, i, j) : keep.data()[row * S + j] != 0; };
    std::int64_t last = S;
    if (rule && !rule->flipped) {  // kept up to the causal limit and the row's length
      if (rule->causal) last = std::clamp<std::int64_t>(i + rule->offset + 1, 0, S);
      if (!rule->lengths.empty()) last = std::min(last, rule->lengths[static_cast<std::size_t>(b)]);
      visible[static_cast<std::size_t>(row)] = last;
      // every key before that too, unless a sliding window starts after key 0 (then the rule is read per key)
      prefix[static_cast<std::size_t>(row)] = rule->window == 0 || i + rule->offset - rule->window < 0;
      continue;
    }
    while (last > 0 && !kept(last - 1)) --last;
    visible[static_cast<std::size_t>(row)] = last;
    std::int64_t j = 0;
    while (j < last && kept(j)) ++j;
    prefix[static_cast<std::size_t>(row)] = j == last;
  }
}

std::int64_t Elementwise::visible_end(std::int64_t row0, std::int64_t count, std::int64_t width) const {
  if (!keep.has_data()) return width;
  const std::int64_t rows_per_plane = plane / width;  // T: a batch's keep is (T, S)
  std::int64_t end = 0;
  for (std::int64_t r = row0; r < row0 + count && end < width; ++r) {
    const std::int64_t b = r / (groups * rows_per_plane), i = r % rows_per_plane;
    end = std::max(end, visible[static_cast<std::size_t>(b * rows_per_plane + i)]);
  }
  return end;
}

void Elementwise::rows(std::int64_t row0, std::int64_t count, std::int64_t width, std::int64_t end, Scalar* out) const {
  if (product) {
    if (end > 0) product->rows(row0, count, end, out, width);
  } else {
    for (std::int64_t r = 0; r < count; ++r)
      std::memcpy(out + r * width, held.data() + (row0 + r) * width, sizeof(Scalar) * static_cast<std::size_t>(end));
  }
  const std::int64_t rows_per_plane = plane / width;
  for (std::int64_t r = 0; r < count; ++r) {
    Scalar* y = out + r * width;
    if (!keep.has_data()) {
      for (std::int64_t j = 0; j < end; ++j) y[j] = y[j] * factor;
      continue;
    }
    const std::int64_t row = row0 + r, b = row / (groups * rows_per_plane), i = row % rows_per_plane;
    const auto keep_row = static_cast<std::size_t>(b * rows_per_plane + i);
    if (prefix[keep_row]) {  // kept exactly up to its last kept key (causal, padding): no need to read keep
      const std::int64_t last = visible[keep_row];
      for (std::int64_t j = 0; j < last; ++j) y[j] = y[j] * factor;
      std::fill(y + last, y + width, fill);
      continue;
    }
    if (rule) {
      for (std::int64_t j = 0; j < end; ++j) y[j] = rule->kept(b, i, j) ? y[j] * factor : fill;
    } else {
      const Scalar* k = keep.data() + b * plane + i * width;
      for (std::int64_t j = 0; j < end; ++j) y[j] = k[j] != 0 ? y[j] * factor : fill;
    }
    std::fill(y + end, y + width, fill);  // every key from `end` on is blocked
  }
}

bool Elementwise::blocks_with_minus_infinity() const {
  return keep.has_data() && fill == -std::numeric_limits<Scalar>::infinity();
}

// ---- Softmax ----------------------------------------------------------------------------------

Softmax::Softmax(std::shared_ptr<const Elementwise> logits, std::int64_t rows, std::int64_t n, Backend::EmptyRow empty)
    : logits_(std::move(logits)), rows_(rows), n_(n), empty_(empty), max_(static_cast<std::size_t>(rows)),
      inv_(static_cast<std::size_t>(rows)), sum_(static_cast<std::size_t>(rows)),
      known_(new std::atomic<std::uint8_t>[static_cast<std::size_t>(rows)]) {
  for (std::int64_t r = 0; r < rows; ++r) known_[static_cast<std::size_t>(r)].store(0, std::memory_order_relaxed);
}

std::int64_t Softmax::compute_rows(std::int64_t r0, std::int64_t count, Scalar* out) const {
  // Keys from `end` on are blocked in every row here: their scores are not computed (they are
  // replaced by the fill), and with a -inf fill their weights are exp(-inf) = 0 without an exp.
  const std::int64_t end = logits_->visible_end(r0, count, n_);
  logits_->rows(r0, count, n_, end, out);
  const bool zero_tail = logits_->blocks_with_minus_infinity();
  bool every_row_kept_a_key = true;
  for (std::int64_t r = 0; r < count; ++r) {
    // the eager softmax_rows, line for line: the row max subtracted before exp, the sum in double
    Scalar* y = out + r * n_;
    // With a -inf tail (keys from `end` on), the max, the exps, the scaling and the sums need only the
    // first `end` entries, rounded up to whole groups of row_sum's 8 lanes: the tail's -inf never
    // raises a max and its exps are +0, which leave every lane's sum as it was (reduce.hpp).
    const std::int64_t span = zero_tail ? std::min(n_, (end + 7) / 8 * 8) : n_;
    const Scalar mx = row_max(y, zero_tail ? end : n_);
    Scalar inv = 0;
    if (mx == -std::numeric_limits<Scalar>::infinity()) {
      const Scalar fill = empty_ == Backend::EmptyRow::Zeros     ? Scalar{0}
                          : empty_ == Backend::EmptyRow::Uniform ? static_cast<Scalar>(1.0 / static_cast<double>(n_))
                                                                 : std::numeric_limits<Scalar>::quiet_NaN();
      std::fill(y, y + n_, fill);
      every_row_kept_a_key = false;
    } else {
      const std::int64_t live = zero_tail ? end : n_;
      exp_shifted(y, live, mx);
      std::fill(y + live, y + n_, 0.0f);  // exp(-inf - mx) is exactly +0
      inv = static_cast<Scalar>(1.0 / cpu::row_sum(y, span));
    }
    // y · inv (+0 · inv stays +0 past the span), summed as the row_sums primitive adds them, in one pass
    // (a row with no key left is its fill everywhere: summed whole)
    // (and a NaN 1/sum, which only a mistaken run can make, scales the whole row, as the eager softmax does)
    const double s = inv == 0 ? cpu::row_sum(y, n_) : cpu::scale_and_sum(y, std::isfinite(inv) ? span : n_, inv);
    const auto i = static_cast<std::size_t>(r0 + r);
    max_[i] = mx, inv_[i] = inv, sum_[i] = static_cast<Scalar>(s);
    known_[i].store(1, std::memory_order_release);
  }
  return zero_tail && every_row_kept_a_key ? end : n_;
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
  const Scalar y = exp_deterministic(x - max_[i]);
  return y * inv_[i];
}

Scalar Softmax::row_sum(std::int64_t row) const {
  statistics(row);
  return sum_[static_cast<std::size_t>(row)];
}

}  // namespace attn::cpu
