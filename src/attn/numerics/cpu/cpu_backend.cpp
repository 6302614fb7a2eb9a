// The CPU backend: the numeric primitives of backend.hpp on host memory, in parallel with OpenMP.
// Its buffers are host Tensors, so download() is a view, not a copy. Products are gemm.cpp's fma
// chains; Eigen serves only for a transposing copy.
//
// Determinism: every output element is computed the same way whatever the thread count and the
// machine. Work is cut into fixed chunks (a batch row and head, or blocks of rows), each computed
// by one thread however the chunks are handed out, and each product element is one fma chain over
// k in order (gemm.hpp), the same bits on every x86-64 kernel.
//
// Steps that are cheap functions of others are deferred (held only when shown whole, dumped or
// compared): q, k and v as column slices of qkv, their heads (read in place by the products), kᵀ,
// the scores, scaled and masked scores, the weights, the context in the merged order, the causal
// and padding keep pattern (a rule), and seeded weights (streamed into the projections).
#include <omp.h>

#include <optional>

#include <Eigen/Core>
#include <fmt/format.h>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string_view>

#include "attn/numerics/backend.hpp"
#include "attn/numerics/backend_checks.hpp"
#include "attn/numerics/cpu/deferred.hpp"
#include "attn/numerics/cpu/exp.hpp"
#include "attn/numerics/cpu/gemm.hpp"
#include "attn/numerics/cpu/reduce.hpp"
#include "attn/core/error.hpp"
#include "attn/numerics/soft_cap.hpp"

namespace attn {
namespace {

#include "attn/numerics/cpu/cpu_buffers.hpp"   // buffers, deferral, work sizes (in this anonymous namespace)
#include "attn/numerics/cpu/cpu_products.hpp"  // the eager matrix product (in this anonymous namespace)

namespace check = backend_checks;
constexpr std::string_view kName = "cpu";

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return kName; }

  BackendTensor upload(const Tensor& t) override { return wrap(t); }
  Tensor fetch(const BackendTensor& t, Fetch) override { return host(t).reshaped(t.shape); }

  BackendTensor matmul(const BackendTensor& a, const BackendTensor& b) override {
    // a (N, m, k), b (N, k, n) or (k, n) -> (N, m, n)
    check::matmul(kName, a, b);
    const auto n_batch = a.shape[0], m = a.shape[1], k = a.shape[2];
    const bool shared_b = b.shape.size() == 2;
    const auto n = b.shape.back();
    if (!shared_b && buffer(a).softmax && !deferred(b)) return weights_times(a, b);
    if (deferral() && !shared_b && !deferred(a) && !deferred(b) && cpu::worth_deferring_product(n_batch, m, k, n)) {
      const auto& bt = buffer(b).transpose_of;  // kᵀ not held: the product reads k (in place)
      auto p = bt && !host(b).held() ? std::make_shared<const cpu::Product>(operand(a, n_batch, m, k), *bt, n_batch, m, k, n, true)
                                     : std::make_shared<const cpu::Product>(operand(a, n_batch, m, k), operand(b, n_batch, k, n), n_batch, m, k, n);
      return defer_product({n_batch, m, n}, std::move(p), n);
    }
    return wrap(multiply_eager(a, b));
  }

  template <class F>
  BackendTensor elementwise(const BackendTensor& a, const BackendTensor& b, std::string_view what, F f) {
    check::same_shape(kName, std::string(what).c_str(), a, b);
    const auto n = element_count(a.shape);
    Tensor out = Tensor::uninitialized(a.shape);
    const Scalar* pa = host(a).data();
    const Scalar* pb = host(b).data();
    Scalar* dst = out.mutable_data();
#pragma omp parallel for schedule(static) if (parallel(static_cast<double>(n)))
    for (std::int64_t i = 0; i < n; ++i) dst[i] = f(pa[i], pb[i]);
    return wrap(std::move(out));
  }

  BackendTensor add_bias(const BackendTensor& a, const BackendTensor& bias) override {
    // a (..., n), bias (n)
    check::add_bias(kName, a, bias);
    const auto n = bias.shape[0];
    const auto rows = element_count(a.shape) / n;
    Tensor out = Tensor::uninitialized(a.shape);
    const Scalar* src = host(a).data();
    const Scalar* pb = host(bias).data();
    Scalar* dst = out.mutable_data();
#pragma omp parallel for schedule(static) if (parallel(static_cast<double>(element_count(a.shape))))
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t j = 0; j < n; ++j) dst[r * n + j] = src[r * n + j] + pb[j];
    return wrap(std::move(out));
  }

  BackendTensor rotate_pairs(const BackendTensor& a, const BackendTensor& cos, const BackendTensor& sin, std::int64_t first,
                             bool interleaved) override {
    // a (N, L, h), cos and sin (P, R/2)
    check::rotate_pairs(kName, a, cos, sin, first);
    const auto N = a.shape[0], L = a.shape[1], h = a.shape[2], pairs = cos.shape[1];
    Tensor out = Tensor::uninitialized(a.shape);
    const Scalar* src = host(a).data();
    const Scalar* pc = host(cos).data() + first * pairs;
    const Scalar* ps = host(sin).data() + first * pairs;
    Scalar* dst = out.mutable_data();
    // pair i's two features: (i, i + R/2) or (2i, 2i + 1)
    const std::int64_t stride = interleaved ? 2 : 1, partner = interleaved ? 1 : pairs;
#pragma omp parallel for schedule(static) if (parallel(static_cast<double>(element_count(a.shape))))
    for (std::int64_t r = 0; r < N * L; ++r) {
      const Scalar* x = src + r * h;
      Scalar* y = dst + r * h;
      const Scalar* c = pc + (r % L) * pairs;
      const Scalar* s = ps + (r % L) * pairs;
      for (std::int64_t i = 0; i < pairs; ++i) {
        const std::int64_t u = i * stride, w = u + partner;
        const Scalar xu = x[u] * c[i], xw = x[w] * s[i], yw = x[w] * c[i], yu = x[u] * s[i];  // four products, rounded
        y[u] = xu - xw;
        y[w] = yw + yu;
      }
      for (std::int64_t f = 2 * pairs; f < h; ++f) y[f] = x[f];
    }
    return wrap(std::move(out));
  }

  BackendTensor soft_cap(const BackendTensor& a, double cap_given) override {
    const Scalar cap = static_cast<Scalar>(cap_given);  // float32 arithmetic
    check::soft_cap(kName, a, cap);
    const auto n = element_count(a.shape);
    Tensor out = Tensor::uninitialized(a.shape);
    const Scalar* src = host(a).data();
    Scalar* dst = out.mutable_data();
    constexpr std::int64_t kChunk = 1 << 14;
#pragma omp parallel for schedule(static) if (parallel(static_cast<double>(n) * 20))
    for (std::int64_t i0 = 0; i0 < n; i0 += kChunk) soft_cap_values(src + i0, dst + i0, std::min(kChunk, n - i0), cap);
    return wrap(std::move(out));
  }

  BackendTensor distance_bias(const BackendTensor& slopes, std::int64_t T, std::int64_t S, std::int64_t offset) override {
    check::distance_bias(kName, slopes);
    const auto H = slopes.shape[0];
    Tensor out = Tensor::uninitialized({H, T, S});
    const Scalar* m = host(slopes).data();
    Scalar* dst = out.mutable_data();
#pragma omp parallel for collapse(2) schedule(static) if (parallel(static_cast<double>(H * T * S)))
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < T; ++i)
        for (std::int64_t j = 0; j < S; ++j) dst[(h * T + i) * S + j] = -m[h] * static_cast<Scalar>(i + offset - j);
    return wrap(std::move(out));
  }

  BackendTensor append_rows(const BackendTensor& a, const BackendTensor& b) override {
    // (..., L, h) and (..., M, h), the same leading axes: n matrices
    const auto r = a.shape.size();
    check::append_rows(kName, a, b);
    const auto h = a.shape.back(), L = a.shape[r - 2], M = b.shape[r - 2];
    const std::int64_t n = element_count(b.shape) / (M * h);
    Shape shape = b.shape;
    shape[r - 2] = L + M;
    Tensor out = Tensor::uninitialized(shape);
    const Scalar* pa = L > 0 ? host(a).data() : nullptr;
    const Scalar* pb = host(b).data();
    Scalar* dst = out.mutable_data();
    for (std::int64_t i = 0; i < n; ++i) {
      if (L > 0) std::copy(pa + i * L * h, pa + (i + 1) * L * h, dst + i * (L + M) * h);
      std::copy(pb + i * M * h, pb + (i + 1) * M * h, dst + (i * (L + M) + L) * h);
    }
    return wrap(std::move(out));
  }

  BackendTensor repeat_heads(const BackendTensor& a, std::int64_t n, bool tiled) override {
    check::repeat_heads(kName, a, n);
    const auto B = a.shape[0], G = a.shape[1], plane = a.shape[2] * a.shape[3];
    Tensor out = Tensor::uninitialized({B, G * n, a.shape[2], a.shape[3]});
    const Scalar* src = host(a).data();
    Scalar* dst = out.mutable_data();
#pragma omp parallel for collapse(2) schedule(static) if (parallel(static_cast<double>(B * G * n * plane)))
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t h = 0; h < G * n; ++h) {
        const std::int64_t g = tiled ? h % G : h / n;
        std::copy(src + (b * G + g) * plane, src + (b * G + g + 1) * plane, dst + (b * G * n + h) * plane);
      }
    return wrap(std::move(out));
  }

  BackendTensor transpose_last2(const BackendTensor& a) override {
    // a (N, m, n) -> (N, n, m)
    check::transpose_last2(kName, a);
    const auto n_batch = a.shape[0], m = a.shape[1], n = a.shape[2];
    const bool defer = deferral() && n_batch * m * n >= kDeferMin && !deferred(a) && !buffer(a).slice;
    // a's matrices where they are (k's heads inside qkv), or a's values
    auto src = std::make_shared<const cpu::Operand>(defer ? operand(a, n_batch, m, n) : cpu::Operand::contiguous(host(a), n_batch, m, n));
    auto transpose = [src, n_batch, m, n](Scalar* out) {
      using Strided = Eigen::Map<const Matrix, 0, Eigen::OuterStride<>>;
#pragma omp parallel for schedule(static) if (parallel(static_cast<double>(n_batch * m * n)))
      for (std::int64_t i = 0; i < n_batch; ++i) Map(out + i * m * n, n, m) = Strided(src->matrix(i), m, n, Eigen::OuterStride<>(src->ld)).transpose();
    };
    if (defer) {
      // a re-layout (kᵀ): held only when asked for; the scores product reads a itself
      Tensor t = Tensor::deferred({n_batch, n, m}, transpose, [src, m, n](std::int64_t f) {
        const std::int64_t i = f / (m * n), r = f % (m * n);  // out (i, r / m, r % m) = a (i, r % m, r / m)
        return src->at(i, r % m, r / m);
      });
      auto b = std::make_shared<CpuBuffer>(std::move(t));
      b->transpose_of = std::move(src);
      return BackendTensor{{n_batch, n, m}, std::move(b)};
    }
    Tensor out = Tensor::uninitialized({n_batch, n, m});
    transpose(out.mutable_data());
    return wrap(std::move(out));
  }

  BackendTensor swap_axes_1_2(const BackendTensor& a) override {
    // a (A, B, C, D) -> (A, C, B, D): rows of D contiguous values move as blocks.
    check::swap_axes_1_2(kName, a);
    const auto d0 = a.shape[0], d1 = a.shape[1], d2 = a.shape[2], d3 = a.shape[3];
    // a itself swaps a held tensor's axes (a context written in merged order): that tensor
    if (const auto& held = buffer(a).swap_of; held && held->shape() == Shape{d0, d2, d1, d3}) return wrap(*held);
    // rows of d3 values, read where they are: from a held tensor, or from a deferred column slice's
    // source when the slice's width holds whole rows (q, k and v read from qkv)
    const ColumnSlice* slice = buffer(a).slice.get();
    if (slice != nullptr && (slice->width % d3 != 0 || buffer(a).tensor.held())) slice = nullptr;
    if (deferral() && d0 * d1 * d2 * d3 >= kDeferMin && !deferred(a) && (slice != nullptr ? slice->width == d2 * d3 : host(a).held())) {
      // the heads of q, k or v: a re-layout held only when asked for, whose matrices (d0·d2 of
      // d1 × d3) the products read in place
      const std::int64_t ld = slice != nullptr ? slice->ld : d2 * d3;
      auto op = std::make_shared<const cpu::Operand>(
          cpu::Operand{slice != nullptr ? slice->src : host(a), d0 * d2, d1, d3, slice != nullptr ? slice->offset : 0, d2, d1 * ld, d3, ld});
      auto b = std::make_shared<CpuBuffer>(relayout({d0, d2, d1, d3}, op));
      b->matrices = std::move(op);
      if (slice == nullptr) b->swap_of = host(a).reshaped({d0, d1, d2, d3});
      return BackendTensor{{d0, d2, d1, d3}, std::move(b)};
    }
    Tensor out = Tensor::uninitialized({d0, d2, d1, d3});
    const Scalar* src = slice != nullptr ? nullptr : host(a).data();
    Scalar* dst = out.mutable_data();
#pragma omp parallel for collapse(2) schedule(static) if (parallel(static_cast<double>(d0 * d1 * d2 * d3)))
    for (std::int64_t i = 0; i < d0; ++i)
      for (std::int64_t j = 0; j < d1; ++j)
        for (std::int64_t l = 0; l < d2; ++l) {
          const std::int64_t flat = ((i * d1 + j) * d2 + l) * d3;
          const Scalar* from = slice != nullptr ? slice->at(flat / slice->width, flat % slice->width) : src + flat;
          std::copy(from, from + d3, dst + ((i * d2 + l) * d1 + j) * d3);
        }
    return wrap(std::move(out));
  }

  BackendTensor slice_columns(const BackendTensor& a, std::int64_t offset, std::int64_t width) override {
    // a (N, n) -> (N, width)
    check::slice_columns(kName, a, offset, width);
    const auto rows = a.shape[0], n = a.shape[1];
    auto slice = std::make_shared<const ColumnSlice>(ColumnSlice{host(a), n, offset, width});
    auto copy = [slice, rows, width](Scalar* out) {
#pragma omp parallel for schedule(static) if (parallel(static_cast<double>(rows * width)))
      for (std::int64_t r = 0; r < rows; ++r) std::copy(slice->at(r, 0), slice->at(r, width), out + r * width);
    };
    if (deferral() && rows * width >= kDeferMin && !deferred(a)) {
      // a re-layout: held only when asked for; the head split reads it in place
      Tensor t = Tensor::deferred({rows, width}, copy, [slice, width](std::int64_t i) { return *slice->at(i / width, i % width); });
      auto b = std::make_shared<CpuBuffer>(std::move(t));
      b->slice = std::move(slice);
      return BackendTensor{{rows, width}, std::move(b)};
    }
    Tensor out = Tensor::uninitialized({rows, width});
    copy(out.mutable_data());
    return wrap(std::move(out));
  }

  BackendTensor scale(const BackendTensor& a, double factor_given) override {
    const Scalar factor = static_cast<Scalar>(factor_given);  // float32 arithmetic
    const auto n = element_count(a.shape);
    // |factor| <= 1 keeps finite scores finite, so the deferred step needs no check of its own
    if (deferral() && n >= kDeferMin && std::fabs(factor) <= 1 && !buffer(a).lazy && !buffer(a).softmax) {
      cpu::Elementwise e = *recipe_over(a);
      e.factor = factor;
      return defer_elementwise(a.shape, std::move(e));
    }
    Tensor out = Tensor::uninitialized(a.shape);
    const Scalar* src = host(a).data();
    Scalar* dst = out.mutable_data();
#pragma omp parallel for schedule(static) if (parallel(static_cast<double>(n)))
    for (std::int64_t i = 0; i < n; ++i) dst[i] = src[i] * factor;
    return wrap(std::move(out));
  }

  BackendTensor masked_fill(const BackendTensor& scores, const BackendTensor& keep, double fill_given) override {
    const Scalar fill = static_cast<Scalar>(fill_given);  // float32 arithmetic
    // scores (B, G, T, S), keep (B, T, S)
    check::masked_fill(kName, scores, keep);
    const auto b_count = scores.shape[0], groups = scores.shape[1], plane = scores.shape[2] * scores.shape[3];
    const auto& lazy = buffer(scores).lazy;
    if (deferral() && element_count(scores.shape) >= kDeferMin && !buffer(scores).softmax && (!lazy || !lazy->keep.has_data())) {
      cpu::Elementwise e = *recipe_over(scores);
      e.set_keep(host(keep), buffer(keep).rule, groups, scores.shape[2], scores.shape[3], fill);
      return defer_elementwise(scores.shape, std::move(e));
    }
    Tensor out = Tensor::uninitialized(scores.shape);
    const Scalar* src = host(scores).data();
    const Scalar* k = host(keep).data();
    Scalar* dst = out.mutable_data();
#pragma omp parallel for collapse(2) schedule(static) if (parallel(static_cast<double>(element_count(scores.shape))))
    for (std::int64_t b = 0; b < b_count; ++b)
      for (std::int64_t g = 0; g < groups; ++g) {
        const std::int64_t base = (b * groups + g) * plane;
        for (std::int64_t i = 0; i < plane; ++i) dst[base + i] = k[b * plane + i] != 0 ? src[base + i] : fill;
      }
    return wrap(std::move(out));
  }

  BackendTensor softmax_rows(const BackendTensor& a, EmptyRow empty) override {
    // a (N, n). The row max is subtracted before exp so that large logits cannot overflow;
    // a -inf entry becomes exp(-inf) = 0 exactly.
    check::softmax_rows(kName, a);
    const auto rows = a.shape[0], n = a.shape[1];
    if (deferral() && (buffer(a).lazy || buffer(a).product) && rows * n >= kDeferMin) {
      // over deferred scores: weights deferred too, computed row block by row block when the context
      // product (or a reader) asks
      return defer_softmax(a.shape, std::make_shared<const cpu::Softmax>(recipe_over(a), rows, n, empty));
    }
    Tensor out = Tensor::uninitialized(a.shape);
    const cpu::Elementwise* lazy = buffer(a).lazy.get();  // deferred scaled / masked scores: read row by row
    const Scalar* src = lazy ? nullptr : host(a).data();
    Scalar* dst = out.mutable_data();
#pragma omp parallel for schedule(static) if (parallel(5.0 * rows * n))
    for (std::int64_t r = 0; r < rows; ++r) {
      thread_local std::vector<Scalar> row;
      const Scalar* x;
      if (lazy) {
        row.resize(static_cast<std::size_t>(n));
        lazy->values(r * n, n, row.data());
        x = row.data();
      } else {
        x = src + r * n;
      }
      Scalar* y = dst + r * n;
      const Scalar mx = cpu::row_max(x, n);
      if (mx == -std::numeric_limits<Scalar>::infinity()) {
        // A row with every entry -inf has no distribution: the caller's policy decides (NaN by
        // default, which makes it visible rather than plausible).
        const Scalar fill = empty == EmptyRow::Zeros ? Scalar{0}
                            : empty == EmptyRow::Uniform ? static_cast<Scalar>(1.0 / static_cast<double>(n))
                                                         : std::numeric_limits<Scalar>::quiet_NaN();
        std::fill(y, y + n, fill);
        continue;
      }
      // the sum in double (rows can be thousands of entries long), in reduce.hpp's fixed order
      if (y != x) std::copy(x, x + n, y);
      cpu::exp_shifted(y, n, mx);
      const Scalar inv = static_cast<Scalar>(1.0 / cpu::row_sum(y, n));
      for (std::int64_t j = 0; j < n; ++j) y[j] *= inv;
    }
    return wrap(std::move(out));
  }

  BackendTensor mask_keep(std::int64_t B, std::int64_t T, std::int64_t S, bool causal, std::int64_t offset, std::int64_t window,
                          const std::vector<std::int64_t>& lengths, bool flipped) override {
    check::mask_keep(kName, B, T, S, lengths);
    auto rule = std::make_shared<const cpu::KeepRule>(cpu::KeepRule{causal, offset, window, lengths, flipped});
    auto pattern = [rule, B, T, S](Scalar* k) {
#pragma omp parallel for collapse(2) schedule(static) if (parallel(static_cast<double>(B * T * S)))
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t i = 0; i < T; ++i)
          for (std::int64_t j = 0; j < S; ++j) k[(b * T + i) * S + j] = rule->kept(b, i, j) ? 1 : 0;
    };
    if (deferral() && B * T * S >= kDeferMin) {
      // a rule, held only when asked for: the masked step applies the rule itself
      Tensor t = Tensor::deferred({B, T, S}, pattern, [rule, T, S](std::int64_t f) { return rule->kept(f / (T * S), f / S % T, f % S) ? 1.0f : 0.0f; });
      auto b = std::make_shared<CpuBuffer>(std::move(t));
      b->rule = std::move(rule);
      return BackendTensor{{B, T, S}, std::move(b)};
    }
    Tensor keep = Tensor::uninitialized({B, T, S});
    pattern(keep.mutable_data());
    return wrap(std::move(keep));
  }

  BackendTensor keep_and(const BackendTensor& keep, const BackendTensor& other) override {
    // keep (B, T, S), other (1 or B, T, S)
    check::keep_and(kName, keep, other);
    const auto plane = keep.shape[1] * keep.shape[2];
    Tensor out = Tensor::uninitialized(keep.shape);
    const Scalar* a = host(keep).data();
    const Scalar* b = host(other).data();
    Scalar* dst = out.mutable_data();
    const bool shared = other.shape[0] == 1;
#pragma omp parallel for schedule(static) if (parallel(static_cast<double>(element_count(keep.shape))))
    for (std::int64_t i = 0; i < element_count(keep.shape); ++i) {
      dst[i] = (a[i] != 0 && b[shared ? i % plane : i] != 0) ? 1 : 0;
    }
    return wrap(std::move(out));
  }

  BackendTensor add_mask(const BackendTensor& scores, const BackendTensor& add) override {
    // scores (B, G, T, S), add (1 or B, T, S)
    check::add_mask(kName, scores, add);
    const auto groups = scores.shape[1], plane = scores.shape[2] * scores.shape[3];
    Tensor out = Tensor::uninitialized(scores.shape);
    const Scalar* src = host(scores).data();
    const Scalar* m = host(add).data();
    Scalar* dst = out.mutable_data();
    const bool shared = add.shape[0] == 1;
#pragma omp parallel for schedule(static) if (parallel(static_cast<double>(element_count(scores.shape))))
    for (std::int64_t i = 0; i < element_count(scores.shape); ++i) {
      const auto b = i / (groups * plane);
      dst[i] = src[i] + m[(shared ? 0 : b) * plane + i % plane];
    }
    return wrap(std::move(out));
  }

  BackendTensor add(const BackendTensor& a, const BackendTensor& b) override { return elementwise(a, b, "add", [](Scalar x, Scalar y) { return x + y; }); }
  BackendTensor mul(const BackendTensor& a, const BackendTensor& b) override { return elementwise(a, b, "mul", [](Scalar x, Scalar y) { return x * y; }); }

  BackendTensor softmax_backward_rows(const BackendTensor& w, const BackendTensor& dw) override {
    // w, dw (N, n)
    check::softmax_backward_rows(kName, w, dw);
    const auto rows = w.shape[0], n = w.shape[1];
    Tensor out = Tensor::uninitialized(w.shape);
    const Scalar* pw = host(w).data();
    const Scalar* pd = host(dw).data();
    Scalar* dst = out.mutable_data();
#pragma omp parallel for schedule(static) if (parallel(static_cast<double>(rows * n)))
    for (std::int64_t r = 0; r < rows; ++r) {
      double dot = 0;  // Σ_j dw_j · w_j, in order
      for (std::int64_t j = 0; j < n; ++j) dot += static_cast<double>(pd[r * n + j]) * static_cast<double>(pw[r * n + j]);
      const auto d = static_cast<Scalar>(dot);
      for (std::int64_t j = 0; j < n; ++j) dst[r * n + j] = pw[r * n + j] * (pd[r * n + j] - d);
    }
    return wrap(std::move(out));
  }

  BackendTensor row_sums(const BackendTensor& a) override {
    check::row_sums(kName, a);
    if (const auto sm = buffer(a).softmax) {
      // the sums the softmax recorded for each row (the context product computes every row)
      const auto rows = a.shape[0];
      Tensor t = Tensor::deferred(
          {rows},
          [sm, rows](Scalar* out) {
            for (std::int64_t r = 0; r < rows; ++r) out[r] = sm->row_sum(r);
          },
          [sm](std::int64_t r) { return sm->row_sum(r); });
      return wrap(std::move(t));
    }
    const auto rows = a.shape[0], n = a.shape[1];
    Tensor out = Tensor::uninitialized({rows});
    const Scalar* src = host(a).data();
#pragma omp parallel for schedule(static) if (parallel(static_cast<double>(rows * n)))
    for (std::int64_t r = 0; r < rows; ++r) {
      out.mutable_data()[r] = static_cast<Scalar>(cpu::row_sum(src + r * n, n));
    }
    return wrap(std::move(out));
  }

  BackendTensor rms_norm_rows(const BackendTensor& a, const BackendTensor& w, double eps) override {
    check::rms_norm_rows(kName, a, w);
    const auto rows = a.shape[0], n = a.shape[1];
    Tensor out = Tensor::uninitialized(a.shape);
    const Scalar* src = host(a).data();
    const Scalar* wt = host(w).data();
    Scalar* dst = out.mutable_data();
#pragma omp parallel for schedule(static) if (parallel(3.0 * static_cast<double>(rows * n)))
    for (std::int64_t r = 0; r < rows; ++r) {
      thread_local std::vector<Scalar> sq;
      sq.resize(static_cast<std::size_t>(n));
      const Scalar* x = src + r * n;
      for (std::int64_t j = 0; j < n; ++j) sq[static_cast<std::size_t>(j)] = x[j] * x[j];
      const double mean = n > 0 ? cpu::row_sum(sq.data(), n) / static_cast<double>(n) : 0.0;
      const Scalar inv = static_cast<Scalar>(1.0 / std::sqrt(mean + eps));
      for (std::int64_t j = 0; j < n; ++j) dst[r * n + j] = wt[j] * (x[j] * inv);
    }
    return wrap(std::move(out));
  }

  EmptyRows empty_rows(const BackendTensor& a) override {
    // read entry by entry, stopping at a row's first entry above -inf (usually its first): a
    // deferred masked step is not computed for this
    check::empty_rows(kName, a);
    const auto rows = a.shape[0], n = a.shape[1];
    const Tensor& t = host(a);
    EmptyRows e;
    for (std::int64_t r = 0; r < rows && n > 0; ++r) {
      std::int64_t j = 0;
      while (j < n && t.at(r * n + j) == -std::numeric_limits<Scalar>::infinity()) ++j;
      if (j < n) continue;
      if (e.count++ == 0) e.first = r;
    }
    return e;
  }

  BackendTensor fused_attention(const BackendTensor& q, const BackendTensor& k, const BackendTensor& v, double scale_given, const FusedMask& mask,
                                EmptyRow empty) override {
    const Scalar scale = static_cast<Scalar>(scale_given);  // float32 arithmetic
    // One query row at a time, S scores in a row buffer: the materialised steps' own arithmetic
    // (the products' fma chains, one multiply by the scale, the mask's select, the softmax's max,
    // exp and double sum, weights · v as an fma chain over the keys), so the context has their bits.
    check::fused_attention(kName, q, k, v, mask);
    const auto B = q.shape[0], H = q.shape[1], T = q.shape[2], hs = q.shape[3], Hkv = k.shape[1], S = k.shape[2], hv = v.shape[3];
    const auto group = H / Hkv;
    const cpu::KeepRule rule{mask.causal, mask.offset, mask.window, mask.lengths, false};
    if (S == 0) return wrap(Tensor({B, H, T, hv}));  // a product over no key is 0, as weights · v with S = 0
    Tensor out = Tensor::uninitialized({B, H, T, hv});
    const Scalar *pq = host(q).data(), *pk = host(k).data(), *pv = host(v).data();
    Scalar* po = out.mutable_data();
    constexpr Scalar kMinusInf = -std::numeric_limits<Scalar>::infinity();
#pragma omp parallel for schedule(static) if (parallel(2.0 * static_cast<double>(B * H * T * S * (hs + hv))))
    for (std::int64_t row = 0; row < B * H * T; ++row) {
      thread_local std::vector<Scalar> w;
      w.resize(static_cast<std::size_t>(S));
      const auto i = row % T, h = row / T % H, b = row / (T * H);
      const Scalar* x = pq + row * hs;
      const Scalar* keys = pk + (b * Hkv + h / group) * S * hs;
      const Scalar* values = pv + (b * Hkv + h / group) * S * hv;
      for (std::int64_t j = 0; j < S; ++j) w[static_cast<std::size_t>(j)] = rule.kept(b, i, j) ? cpu::fma_chain(x, keys + j * hs, 1, hs) * scale : kMinusInf;
      Scalar* y = po + row * hv;
      const Scalar mx = S > 0 ? cpu::row_max(w.data(), S) : kMinusInf;
      if (mx == kMinusInf) {
        // every key masked: the policy's row of weights (NaN, zeros or 1/S), times v
        const Scalar fill = empty == EmptyRow::Zeros ? Scalar{0}
                            : empty == EmptyRow::Uniform ? static_cast<Scalar>(1.0 / static_cast<double>(S))
                                                         : std::numeric_limits<Scalar>::quiet_NaN();
        std::fill(w.begin(), w.end(), fill);
      } else {
        cpu::exp_shifted(w.data(), S, mx);
        const Scalar inv = static_cast<Scalar>(1.0 / cpu::row_sum(w.data(), S));
        for (auto& e : w) e *= inv;
      }
      for (std::int64_t e = 0; e < hv; ++e) y[e] = cpu::fma_chain(w.data(), values + e, hv, S);
    }
    return wrap(std::move(out));
  }

 private:
  // context (N, m, n) = weights (N, m, k), deferred, · v (N, k, n): weights rows are computed block
  // by block into scratch and multiplied at once, never held.
  BackendTensor weights_times(const BackendTensor& w, const BackendTensor& v) {
    const auto& sm = *buffer(w).softmax;
    const auto n_batch = w.shape[0], m = w.shape[1], k = w.shape[2], n = v.shape[2];
    const cpu::Operand vo = operand(v, n_batch, k, n);  // v's heads, read in place
    // With v's heads read from a (B, S, H, hv) layout, the context is written in the merged order
    // (B, T, H, hv) too: merging the heads is then no copy, and the context step a re-layout of it.
    const std::int64_t heads = vo.inner, batch_rows = n_batch / heads;
    Tensor out = Tensor::uninitialized(heads > 1 ? Shape{batch_rows, m, heads, n} : Shape{n_batch, m, n});
    Scalar* po = out.mutable_data();
    const std::int64_t ldc = heads * n;
    auto row_of = [&](std::int64_t i, std::int64_t r) { return po + ((i / heads) * m + r) * ldc + (i % heads) * n; };
    constexpr std::int64_t kBlock = 32;
    const std::int64_t blocks = (m + kBlock - 1) / kBlock;
    const bool threads = parallel(2.0 * n_batch * m * k * n);
    // one row block: weights rows into scratch, then times v (packed)
    auto block = [&](std::int64_t i, std::int64_t bl, const gemm::PackedB& vp) {
      thread_local std::vector<Scalar> rows;
      const std::int64_t r0 = bl * kBlock, count = std::min(kBlock, m - r0);
      rows.resize(static_cast<std::size_t>(count * k));
      // weights from column `live` on are exactly 0: their terms would leave each chain unchanged
      const std::int64_t live = sm.compute_rows(i * m + r0, count, rows.data());
      // v is a few panels wide: the weights rows are read in place, not packed
      gemm::multiply(rows.data(), k, count, vp, row_of(i, r0), ldc, live, 0, -1, true);
    };
    if (n_batch >= 4) {
      // heads enough to share: each thread packs one head's v at a time into storage it reuses
#pragma omp parallel for schedule(dynamic, 1) if (threads)
      for (std::int64_t i = 0; i < n_batch; ++i) {
        thread_local gemm::PackedB vp;
        gemm::pack_b_into(vp, vo.matrix(i), vo.ld, false, k, n);
        for (std::int64_t bl = 0; bl < blocks; ++bl) block(i, bl, vp);
      }
    } else {
      // few heads: each v packed once, then their row blocks shared
      std::vector<gemm::PackedB> packed(static_cast<std::size_t>(n_batch));
      for (std::int64_t i = 0; i < n_batch; ++i) packed[static_cast<std::size_t>(i)] = gemm::pack_b(vo.matrix(i), vo.ld, false, k, n);
#pragma omp parallel for collapse(2) schedule(dynamic, 1) if (threads)
      for (std::int64_t i = 0; i < n_batch; ++i)
        for (std::int64_t bl = 0; bl < blocks; ++bl) block(i, bl, packed[static_cast<std::size_t>(i)]);
    }
    if (heads == 1) return wrap(std::move(out));
    auto op = std::make_shared<const cpu::Operand>(cpu::Operand{out, n_batch, m, n, 0, heads, m * ldc, n, ldc});
    // a value out of range is looked for in the merged order, and named at its place in this one
    auto nonfinite = [op, m, n](bool minus_inf_allowed) -> std::int64_t {
      if (all_finite(op->src.data(), op->src.size())) return -1;
      for (std::int64_t f = 0; f < op->batches * m * n; ++f) {
        const Scalar v = op->at(f / (m * n), f % (m * n) / n, f % n);
        if (!std::isfinite(v) && !(minus_inf_allowed && v == -std::numeric_limits<Scalar>::infinity())) return f;
      }
      return -1;
    };
    auto b = std::make_shared<CpuBuffer>(relayout({n_batch, m, n}, op, nonfinite));
    b->matrices = std::move(op);
    b->swap_of = out;
    return BackendTensor{{n_batch, m, n}, std::move(b)};
  }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() {
  return std::make_unique<CpuBackend>();
}

}  // namespace attn
