// The CPU backend: the numeric primitives of backend.hpp on host memory, with Eigen, in parallel
// with OpenMP. Its buffers are host Tensors, so download() is a view, not a copy.
//
// Determinism: every output element is computed the same way whatever the thread count and the
// machine's caches. Work is cut into fixed chunks (one matrix product per batch row and head, or
// blocks of kRowChunk rows), each chunk runs single-threaded Eigen, and Eigen's blocking is fixed
// (setCpuCacheSizes) instead of derived from the caches it detects. Eigen's own GEMM threading is
// off (EIGEN_DONT_PARALLELIZE, set in CMakeLists.txt): it re-blocks by thread count.
#include <omp.h>

#include <Eigen/Core>
#include <cmath>
#include <limits>

#include "attn/backend.hpp"
#include "attn/cpu/gemm.hpp"
#include "attn/error.hpp"

namespace attn {
namespace {

constexpr std::int64_t kRowChunk = 64;  // rows per parallel block of a shared-weight product

// Work below this many floating-point operations (or elements moved) runs on the calling thread: a
// thread team costs more than it saves there, and idle OpenMP workers spin on the CPU afterwards
// (a 2×3 walkthrough spent 70 ms of CPU so). Which thread does a fixed chunk never changes its bits.
constexpr double kParallelWork = 1 << 18;
bool parallel(double work) { return work >= kParallelWork; }

// Fixed cache sizes for Eigen's product blocking: the same blocking, so the same rounding, on every
// machine. Values of a typical current x86 core.
struct FixedBlocking {
  FixedBlocking() { Eigen::setCpuCacheSizes(32 * 1024, 1024 * 1024, 8 * 1024 * 1024); }
};

using Matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapC = Eigen::Map<const Matrix>;
using Map = Eigen::Map<Matrix>;

// Steps at least this large that are cheap functions of another (scaled, masked) are deferred.
constexpr std::int64_t kDeferMin = std::int64_t{1} << 16;

// A deferred elementwise step, held as its recipe: base · factor, then `fill` wherever keep is 0.
// scaled = scores · c and masked = scaled with blocked keys filled are never held unless shown,
// dumped or compared: softmax reads the recipe row by row. Computed exactly as the eager
// primitives would (the same multiply, the same select), so the bits are the same.
struct Elementwise {
  Tensor base;                        // held
  Scalar factor = 1;
  Tensor keep;                        // held (B, T, S), or no data: nothing blocked
  std::int64_t groups = 1, plane = 1;  // with keep: base is (B, groups, plane), plane = T·S
  Scalar fill = 0;

  // out[j] = value of flat index i0 + j, for j < n
  void range(std::int64_t i0, std::int64_t n, Scalar* out) const {
    const Scalar* b = base.data() + i0;
    if (!keep.has_data()) {
      for (std::int64_t j = 0; j < n; ++j) out[j] = b[j] * factor;
      return;
    }
    const Scalar* k = keep.data();
    for (std::int64_t j = 0; j < n;) {
      const std::int64_t i = i0 + j, in_plane = i % plane, span = std::min(n - j, plane - in_plane);
      const Scalar* kr = k + (i / (groups * plane)) * plane + in_plane;
      for (std::int64_t t = 0; t < span; ++t) out[j + t] = kr[t] != 0 ? b[j + t] * factor : fill;
      j += span;
    }
  }
  Scalar value(std::int64_t i) const {
    Scalar v;
    range(i, 1, &v);
    return v;
  }
};

struct CpuBuffer final : BackendBuffer {
  explicit CpuBuffer(Tensor t, std::shared_ptr<const Elementwise> recipe = nullptr) : tensor(std::move(t)), lazy(std::move(recipe)) {}
  Tensor tensor;                             // deferred when lazy is set
  std::shared_ptr<const Elementwise> lazy;  // the recipe of a deferred elementwise step
};

const CpuBuffer& buffer(const BackendTensor& t) {
  const auto* b = dynamic_cast<const CpuBuffer*>(t.buffer.get());
  if (b == nullptr) throw InternalError("cpu backend given a tensor from another backend");
  return *b;
}

const Tensor& host(const BackendTensor& t) { return buffer(t).tensor; }

BackendTensor wrap(Tensor t) {
  Shape s = t.shape();
  return BackendTensor{std::move(s), std::make_shared<CpuBuffer>(std::move(t))};
}

// A deferred step of shape `shape` computed by `e`.
BackendTensor defer(Shape shape, Elementwise e) {
  auto recipe = std::make_shared<const Elementwise>(std::move(e));
  const std::int64_t count = element_count(shape);
  Tensor t = Tensor::deferred(
      shape,
      [recipe, count](Scalar* out) {
        constexpr std::int64_t kChunk = 1 << 16;
        const std::int64_t chunks = (count + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (parallel(static_cast<double>(count)))
        for (std::int64_t c = 0; c < chunks; ++c) recipe->range(c * kChunk, std::min(kChunk, count - c * kChunk), out + c * kChunk);
      },
      [recipe](std::int64_t i) { return recipe->value(i); });
  return BackendTensor{std::move(shape), std::make_shared<CpuBuffer>(std::move(t), std::move(recipe))};
}

void require(bool ok, const char* what, const BackendTensor& a) {
  if (!ok) throw InternalError(std::string("cpu backend: ") + what + ", got " + shape_string(a.shape));
}

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }

  BackendTensor upload(const Tensor& t) override { return wrap(t); }
  Tensor download(const BackendTensor& t) override { return host(t).reshaped(t.shape); }

  BackendTensor matmul(const BackendTensor& a, const BackendTensor& b) override {
    // a (N, m, k), b (N, k, n) or (k, n) -> (N, m, n)
    require(a.shape.size() == 3, "matmul wants a (N, m, k)", a);
    const auto n_batch = a.shape[0], m = a.shape[1], k = a.shape[2];
    const bool shared_b = b.shape.size() == 2;
    require(shared_b ? b.shape[0] == k : (b.shape.size() == 3 && b.shape[0] == n_batch && b.shape[1] == k),
            "matmul wants b (k, n) or (N, k, n)", b);
    const auto n = b.shape.back();
    Tensor out = Tensor::uninitialized({n_batch, m, n});
    const Scalar* pa = host(a).data();
    const Scalar* pb = host(b).data();
    Scalar* po = out.mutable_data();
    if (shared_b) {
      // (N·m, k) · (k, n): B packed once, then fixed blocks of kRowChunk rows in parallel
      const gemm::PackedB packed = gemm::pack_b(pb, n, false, k, n);
      const std::int64_t rows = n_batch * m;
      const std::int64_t chunks = (rows + kRowChunk - 1) / kRowChunk;
#pragma omp parallel for schedule(static) if (parallel(2.0 * rows * k * n))
      for (std::int64_t c = 0; c < chunks; ++c) {
        const std::int64_t r0 = c * kRowChunk, nr = std::min(kRowChunk, rows - r0);
        gemm::multiply(pa + r0 * k, k, nr, packed, po + r0 * n, n);
      }
    } else {
#pragma omp parallel for schedule(static) if (parallel(2.0 * n_batch * m * k * n))
      for (std::int64_t i = 0; i < n_batch; ++i) {
        const gemm::PackedB packed = gemm::pack_b(pb + i * k * n, n, false, k, n);
        gemm::multiply(pa + i * m * k, k, m, packed, po + i * m * n, n);
      }
    }
    return wrap(std::move(out));
  }

  BackendTensor add_bias(const BackendTensor& a, const BackendTensor& bias) override {
    // a (..., n), bias (n)
    require(bias.shape.size() == 1 && !a.shape.empty() && a.shape.back() == bias.shape[0], "add_bias wants (n)", bias);
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

  BackendTensor transpose_last2(const BackendTensor& a) override {
    // a (N, m, n) -> (N, n, m)
    require(a.shape.size() == 3, "transpose_last2 wants (N, m, n)", a);
    const auto n_batch = a.shape[0], m = a.shape[1], n = a.shape[2];
    Tensor out = Tensor::uninitialized({n_batch, n, m});
#pragma omp parallel for schedule(static) if (parallel(static_cast<double>(n_batch * m * n)))
    for (std::int64_t i = 0; i < n_batch; ++i) {
      Map(out.mutable_data() + i * m * n, n, m) = MapC(host(a).data() + i * m * n, m, n).transpose();
    }
    return wrap(std::move(out));
  }

  BackendTensor swap_axes_1_2(const BackendTensor& a) override {
    // a (A, B, C, D) -> (A, C, B, D): rows of D contiguous values move as blocks.
    require(a.shape.size() == 4, "swap_axes_1_2 wants (A, B, C, D)", a);
    const auto d0 = a.shape[0], d1 = a.shape[1], d2 = a.shape[2], d3 = a.shape[3];
    Tensor out = Tensor::uninitialized({d0, d2, d1, d3});
    const Scalar* src = host(a).data();
    Scalar* dst = out.mutable_data();
#pragma omp parallel for collapse(2) schedule(static) if (parallel(static_cast<double>(d0 * d1 * d2 * d3)))
    for (std::int64_t i = 0; i < d0; ++i)
      for (std::int64_t j = 0; j < d1; ++j)
        for (std::int64_t l = 0; l < d2; ++l) {
          const Scalar* from = src + ((i * d1 + j) * d2 + l) * d3;
          std::copy(from, from + d3, dst + ((i * d2 + l) * d1 + j) * d3);
        }
    return wrap(std::move(out));
  }

  BackendTensor slice_columns(const BackendTensor& a, std::int64_t offset, std::int64_t width) override {
    // a (N, n) -> (N, width)
    require(a.shape.size() == 2 && offset >= 0 && width >= 0 && offset + width <= a.shape[1],
            "slice_columns out of range", a);
    const auto rows = a.shape[0], n = a.shape[1];
    Tensor out = Tensor::uninitialized({rows, width});
    Map(out.mutable_data(), rows, width) = MapC(host(a).data(), rows, n).middleCols(offset, width);
    return wrap(std::move(out));
  }

  BackendTensor scale(const BackendTensor& a, Scalar factor) override {
    const auto n = element_count(a.shape);
    // |factor| <= 1 keeps finite scores finite, so the deferred step needs no check of its own
    if (n >= kDeferMin && std::fabs(factor) <= 1 && !buffer(a).lazy) return defer(a.shape, Elementwise{host(a), factor});
    Tensor out = Tensor::uninitialized(a.shape);
    const Scalar* src = host(a).data();
    Scalar* dst = out.mutable_data();
#pragma omp parallel for schedule(static) if (parallel(static_cast<double>(n)))
    for (std::int64_t i = 0; i < n; ++i) dst[i] = src[i] * factor;
    return wrap(std::move(out));
  }

  BackendTensor masked_fill(const BackendTensor& scores, const BackendTensor& keep, Scalar fill) override {
    // scores (B, G, T, S), keep (B, T, S)
    require(scores.shape.size() == 4, "masked_fill wants scores (B, G, T, S)", scores);
    require(keep.shape.size() == 3 && keep.shape[0] == scores.shape[0] && keep.shape[1] == scores.shape[2] &&
                keep.shape[2] == scores.shape[3],
            "masked_fill wants keep (B, T, S)", keep);
    const auto b_count = scores.shape[0], groups = scores.shape[1], plane = scores.shape[2] * scores.shape[3];
    const auto& lazy = buffer(scores).lazy;
    if (element_count(scores.shape) >= kDeferMin && (!lazy || !lazy->keep.has_data())) {
      Elementwise e = lazy ? *lazy : Elementwise{host(scores)};
      e.keep = host(keep), e.groups = groups, e.plane = plane, e.fill = fill;
      return defer(scores.shape, std::move(e));
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
    require(a.shape.size() == 2, "softmax_rows wants (N, n)", a);
    const auto rows = a.shape[0], n = a.shape[1];
    Tensor out = Tensor::uninitialized(a.shape);
    const Elementwise* lazy = buffer(a).lazy.get();  // deferred scaled / masked scores: read row by row
    const Scalar* src = lazy ? nullptr : host(a).data();
    Scalar* dst = out.mutable_data();
#pragma omp parallel for schedule(static) if (parallel(5.0 * rows * n))
    for (std::int64_t r = 0; r < rows; ++r) {
      thread_local std::vector<Scalar> row;
      const Scalar* x;
      if (lazy) {
        row.resize(static_cast<std::size_t>(n));
        lazy->range(r * n, n, row.data());
        x = row.data();
      } else {
        x = src + r * n;
      }
      Scalar* y = dst + r * n;
      Scalar mx = -std::numeric_limits<Scalar>::infinity();
      for (std::int64_t j = 0; j < n; ++j) mx = std::max(mx, x[j]);
      if (mx == -std::numeric_limits<Scalar>::infinity()) {
        // A row with every entry -inf has no distribution: the caller's policy decides (NaN by
        // default, which makes it visible rather than plausible).
        const Scalar fill = empty == EmptyRow::Zeros ? Scalar{0}
                            : empty == EmptyRow::Uniform ? static_cast<Scalar>(1.0 / static_cast<double>(n))
                                                         : std::numeric_limits<Scalar>::quiet_NaN();
        std::fill(y, y + n, fill);
        continue;
      }
      double sum = 0.0;  // accumulated in double: rows can be thousands of entries long
      for (std::int64_t j = 0; j < n; ++j) {
        y[j] = std::exp(x[j] - mx);
        sum += y[j];
      }
      const Scalar inv = static_cast<Scalar>(1.0 / sum);
      for (std::int64_t j = 0; j < n; ++j) y[j] *= inv;
    }
    return wrap(std::move(out));
  }

  BackendTensor mask_keep(std::int64_t B, std::int64_t T, std::int64_t S, bool causal, std::int64_t offset,
                          const std::vector<std::int64_t>& lengths, bool flipped) override {
    Tensor keep = Tensor::uninitialized({B, T, S});
    Scalar* k = keep.mutable_data();
#pragma omp parallel for collapse(2) schedule(static) if (parallel(static_cast<double>(B * T * S)))
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t i = 0; i < T; ++i)
        for (std::int64_t j = 0; j < S; ++j) {
          bool ok = !(causal && j > i + offset) && !(!lengths.empty() && j >= lengths[static_cast<std::size_t>(b)]);
          k[(b * T + i) * S + j] = (ok != flipped) ? 1 : 0;
        }
    return wrap(std::move(keep));
  }

  BackendTensor keep_and(const BackendTensor& keep, const BackendTensor& other) override {
    // keep (B, T, S), other (1 or B, T, S)
    require(keep.shape.size() == 3 && other.shape.size() == 3 && other.shape[1] == keep.shape[1] && other.shape[2] == keep.shape[2] &&
                (other.shape[0] == 1 || other.shape[0] == keep.shape[0]),
            "keep_and wants (B, T, S) and (1 or B, T, S)", other);
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
    require(scores.shape.size() == 4 && add.shape.size() == 3 && add.shape[1] == scores.shape[2] && add.shape[2] == scores.shape[3] &&
                (add.shape[0] == 1 || add.shape[0] == scores.shape[0]),
            "add_mask wants (B, G, T, S) and (1 or B, T, S)", add);
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

  BackendTensor row_sums(const BackendTensor& a) override {
    require(a.shape.size() == 2, "row_sums wants (N, n)", a);
    const auto rows = a.shape[0], n = a.shape[1];
    Tensor out = Tensor::uninitialized({rows});
    const Scalar* src = host(a).data();
#pragma omp parallel for schedule(static) if (parallel(static_cast<double>(rows * n)))
    for (std::int64_t r = 0; r < rows; ++r) {
      double s = 0.0;
      for (std::int64_t j = 0; j < n; ++j) s += src[r * n + j];
      out.mutable_data()[r] = static_cast<Scalar>(s);
    }
    return wrap(std::move(out));
  }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() {
  static const FixedBlocking fixed;  // once, before the first product
  return std::make_unique<CpuBackend>();
}

}  // namespace attn
