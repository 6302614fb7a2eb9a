// The CUDA backend. Row-major tensors in device memory; products through cuBLAS (strided-batched,
// FP32 without TF32, so the numbers stay comparable with the CPU's); everything else in small
// kernels with grid-stride loops. Only the backend interface and tensor headers are included:
// no Eigen, fmt or JSON under nvcc.
//
// A trace stays on the device: every primitive runs on one stream and allocates from one
// stream-ordered pool (cudaMallocAsync, nothing given back to the driver during the run), and
// fetch() hands the host a deferred tensor. A step the run shows is copied at once on a second
// stream, into pinned memory, while the next primitives run; any other step moves only when read.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "attn/numerics/backend_checks.hpp"
#include "attn/numerics/cuda/cuda_backend.hpp"
#include "attn/core/error.hpp"

namespace attn {
namespace {

namespace checks = backend_checks;
constexpr std::string_view kName = "cuda";

#include "attn/numerics/cuda/cuda_context.cuh"  // errors, device arrays, the context, buffers (in this anonymous namespace)

constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 65535;
unsigned grid(std::int64_t n) {
  const std::int64_t g = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(g < kMaxBlocks ? (g > 0 ? g : 1) : kMaxBlocks);  // grid-stride loops cover the rest
}
// Blocks for a kernel with one block per row at a time: at most kMaxBlocks, each taking every
// gridDim.x-th row (row counts past 32 bits included).
unsigned row_grid(std::int64_t rows) { return static_cast<unsigned>(std::clamp<std::int64_t>(rows, 1, kMaxBlocks)); }

#include "attn/numerics/cuda/cuda_kernels.cuh"  // the kernels (in this anonymous namespace)

// The first non-finite entry of n values on the device (-inf allowed where asked), or -1: searched
// there, after the work queued before it, so a step that stays on the device is checked where it is.
std::int64_t first_nonfinite(Context& ctx, const Scalar* p, std::int64_t n, bool minus_inf_allowed) {
  if (n == 0) return -1;
  unsigned long long* d = nullptr;
  check(cudaMallocAsync(reinterpret_cast<void**>(&d), sizeof *d, ctx.compute), "the range check", "cudaMallocAsync");
  check(cudaMemsetAsync(d, 0xff, sizeof *d, ctx.compute), "the range check", "cudaMemsetAsync");
  k_first_nonfinite<<<grid(n), kThreads, 0, ctx.compute>>>(p, n, minus_inf_allowed, d);
  check(cudaGetLastError(), "the range check", "launch");
  unsigned long long got = 0;
  check(cudaMemcpyAsync(&got, d, sizeof got, cudaMemcpyDeviceToHost, ctx.compute), "the range check", "cudaMemcpyAsync");
  check(cudaFreeAsync(d, ctx.compute), "the range check", "cudaFreeAsync");
  check(cudaStreamSynchronize(ctx.compute), "the range check", "cudaStreamSynchronize");
  return got == ~0ULL ? -1 : static_cast<std::int64_t>(got);
}

int as_int(std::int64_t v, const char* what) {
  if (v > std::numeric_limits<int>::max()) throw InputError(std::string("--backend cuda: ") + what + " exceeds cuBLAS's int range");
  return static_cast<int>(v);
}

class CudaBackend final : public Backend {
 public:
  CudaBackend() : ctx_(std::make_shared<Context>()) {
    check_usable(cublasCreate(&handle_), "cublasCreate");
    // Plain FP32 products: no TF32 tensor-core shortcut, whose 10-bit mantissa would not match the CPU.
    check_usable(cublasSetMathMode(handle_, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
    check_usable(cublasSetStream(handle_, ctx_->compute), "cublasSetStream");
    const cudaError_t e = cudaEventCreateWithFlags(&lengths_copied_, cudaEventDisableTiming);
    if (e != cudaSuccess) {
      cublasDestroy(handle_);
      check(e, "the backend's setup", "cudaEventCreate");
    }
    warm_up();
  }
  ~CudaBackend() override {
    cudaStreamSynchronize(ctx_->compute);
    cudaEventDestroy(lengths_copied_);
    cublasDestroy(handle_);
  }
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string_view name() const override { return kName; }
  // the primitives' work and the range scans beside it (copies to the host go on)
  void synchronize() override {
    check(cudaStreamSynchronize(stream()), "synchronize", "cudaStreamSynchronize");
    check(cudaStreamSynchronize(ctx_->scan), "synchronize", "cudaStreamSynchronize (the range scans)");
  }
  Traffic traffic() const override { return ctx_->traffic(); }
  Memory memory() override {
    std::size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "memory", "cudaMemGetInfo");
    return {static_cast<std::int64_t>(free), static_cast<std::int64_t>(total)};
  }

  // A copy to the device on the upload stream, staged through pinned memory, which the compute stream
  // waits for by an event: the host never waits for queued primitives (a pageable copy on the
  // compute stream would wait for all of them first), and the copy runs beside them.
  BackendTensor upload(const Tensor& t) override {
    const auto n = static_cast<std::size_t>(t.size());
    auto buffer = std::make_shared<CudaBuffer>(ctx_, n, "upload", t.shape(), ctx_->upload);
    char* dst = reinterpret_cast<char*>(buffer->p);
    BackendTensor d{t.shape(), std::move(buffer)};
    const auto bytes = n * sizeof(Scalar);
    if (bytes == 0) return d;
    const char* src = reinterpret_cast<const char*>(t.data());
    void* staged = ctx_->take_pinned(bytes);
    if (staged != nullptr) {
      stage_upload(*ctx_, static_cast<char*>(staged), src, dst, bytes);
    } else {  // no pinned memory to be had: a pageable copy, still on the upload stream
      check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, ctx_->upload), "upload", "cudaMemcpyAsync");
    }
    cudaEvent_t copied = nullptr;
    check(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming), "upload", "cudaEventCreate");
    check(cudaEventRecord(copied, ctx_->upload), "upload", "cudaEventRecord");
    check(cudaStreamWaitEvent(stream(), copied, 0), "upload", "cudaStreamWaitEvent");
    if (staged != nullptr) ctx_->give_pinned_after(staged, copied);  // the block is reused once the copy is done
    else cudaEventDestroy(copied);                                    // (destroyed once waited for)
    ctx_->count(static_cast<std::int64_t>(bytes), 0);
    return d;
  }

  // A deferred tensor over the device's values: Soon stages a copy now (pinned, on the copy stream,
  // beside the next primitives); OnRead copies only what a reader asks for, when it asks.
  Tensor fetch(const BackendTensor& t, Fetch when) override {
    auto f = std::make_shared<Fetched>();
    f->keep = t.buffer;
    f->ctx = ctx_;
    f->p = dev(t);
    f->n = element_count(t.shape);
    if (f->n == 0) return Tensor(t.shape);
    check(cudaEventCreateWithFlags(&f->ready, cudaEventDisableTiming), "fetch", "cudaEventCreate");
    check(cudaEventRecord(f->ready, stream()), "fetch", "cudaEventRecord");
    const auto bytes = static_cast<std::size_t>(f->n) * sizeof(Scalar);
    if (when == Fetch::Soon && (f->pinned = static_cast<Scalar*>(ctx_->take_pinned(bytes))) != nullptr) {
      check(cudaEventCreateWithFlags(&f->copied, cudaEventDisableTiming), "fetch", "cudaEventCreate");
      check(cudaStreamWaitEvent(ctx_->copy, f->ready, 0), "fetch", "cudaStreamWaitEvent");
      check(cudaMemcpyAsync(f->pinned, f->p, bytes, cudaMemcpyDeviceToHost, ctx_->copy), "fetch", "cudaMemcpyAsync");
      check(cudaEventRecord(f->copied, ctx_->copy), "fetch", "cudaEventRecord");
      ctx_->count(0, static_cast<std::int64_t>(bytes));
    }
    // the range flags on their way now, beside the rest: the kernel that wrote the values noted
    // them, or one read of the values does (the values themselves stay where they are)
    if ((f->range = static_cast<unsigned*>(ctx_->take_pinned(2 * sizeof(unsigned)))) != nullptr) {
      const auto* buffer = static_cast<const CudaBuffer*>(t.buffer.get());
      unsigned* flags = buffer->flags;
      unsigned* scratch = nullptr;
      cudaStream_t on = stream();
      if (flags == nullptr) {
        // the read goes on the scan stream, beside the next primitives (the values are final at
        // `ready`, and stay allocated until ~Fetched has waited for `ranged`)
        on = ctx_->scan;
        check(cudaStreamWaitEvent(on, f->ready, 0), "fetch", "cudaStreamWaitEvent");
        check(cudaMallocAsync(reinterpret_cast<void**>(&scratch), 2 * sizeof(unsigned), on), "fetch", "cudaMallocAsync");
        check(cudaMemsetAsync(scratch, 0, 2 * sizeof(unsigned), on), "fetch", "cudaMemsetAsync");
        if (f->n % 4 == 0) {
          LAUNCH_INDEXED(k_range_flags4, f->n, grid(f->n / 4), on, reinterpret_cast<const float4*>(f->p), f->n / 4, scratch);
        } else {
          LAUNCH_INDEXED(k_range_flags, f->n, grid(f->n), on, f->p, f->n, scratch);
        }
        done("fetch");
        flags = scratch;
      }
      check(cudaEventCreateWithFlags(&f->ranged, cudaEventDisableTiming), "fetch", "cudaEventCreate");
      check(cudaMemcpyAsync(f->range, flags, 2 * sizeof(unsigned), cudaMemcpyDeviceToHost, on), "fetch", "cudaMemcpyAsync");
      check(cudaEventRecord(f->ranged, on), "fetch", "cudaEventRecord");
      if (scratch != nullptr) check(cudaFreeAsync(scratch, on), "fetch", "cudaFreeAsync");
    }
    const std::int64_t n = f->n;
    return Tensor::deferred(
        t.shape, [f, n](Scalar* out) { f->read(0, n, out); },
        [f](std::int64_t i) {
          Scalar v;
          f->read(i, 1, &v);
          return v;
        },
        [this_ctx = ctx_, f](bool minus_inf_allowed) -> std::int64_t {
          if (!f->maybe_out_of_range(minus_inf_allowed)) return -1;
          return first_nonfinite(*this_ctx, f->p, f->n, minus_inf_allowed);  // where: searched on the device
        });
  }

  BackendTensor matmul(const BackendTensor& a, const BackendTensor& b) override {
    checks::matmul(kName, a, b);
    // Row-major C (m, n) = A (m, k) · B (k, n) is column-major Cᵀ = Bᵀ · Aᵀ: cuBLAS gets B first.
    const auto N = a.shape[0], m = a.shape[1], k = a.shape[2], n = b.shape.back();
    auto c = make({N, m, n}, "matmul");
    if (N * m * n == 0) return c;
    if (k == 0) {  // (cuBLAS leaves C alone when k = 0: a product over nothing is 0)
      check(cudaMemsetAsync(dev(c), 0, static_cast<std::size_t>(N * m * n) * sizeof(Scalar), stream()), "matmul", "cudaMemsetAsync");
      done("matmul");
      return c;
    }
    const Scalar one = 1, zero = 0;
    if (b.shape.size() == 2) {
      check(cublasSgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, as_int(n, "n"), as_int(N * m, "rows"), as_int(k, "k"), &one, dev(b), as_int(n, "n"),
                        dev(a), as_int(k, "k"), &zero, dev(c), as_int(n, "n")),
            "matmul", "cublasSgemm");
    } else {
      check(cublasSgemmStridedBatched(handle_, CUBLAS_OP_N, CUBLAS_OP_N, as_int(n, "n"), as_int(m, "m"), as_int(k, "k"), &one, dev(b),
                                      as_int(n, "n"), k * n, dev(a), as_int(k, "k"), m * k, &zero, dev(c), as_int(n, "n"), m * n,
                                      as_int(N, "batch")),
            "matmul", "cublasSgemmStridedBatched");
    }
    done("matmul");
    return c;
  }

  BackendTensor add_bias(const BackendTensor& a, const BackendTensor& bias) override {
    checks::add_bias(kName, a, bias);
    auto out = make(a.shape, "add_bias");
    const auto total = element_count(a.shape);
    k_add_bias<<<grid(total), kThreads, 0, stream()>>>(dev(a), dev(bias), dev(out), total, bias.shape[0]);
    done("add_bias");
    return out;
  }

  BackendTensor rotate_pairs(const BackendTensor& a, const BackendTensor& cos, const BackendTensor& sin, std::int64_t first,
                             bool interleaved) override {
    checks::rotate_pairs(kName, a, cos, sin, first);
    auto out = make(a.shape, "rotate_pairs");
    const auto rows = a.shape[0] * a.shape[1], h = a.shape[2], pairs = cos.shape[1];
    const std::int64_t stride = interleaved ? 2 : 1, partner = interleaved ? 1 : pairs;
    k_rotate_pairs<<<grid(rows * h), kThreads, 0, stream()>>>(dev(a), dev(cos), dev(sin), dev(out), rows, a.shape[1], h, pairs, first, stride, partner);
    done("rotate_pairs");
    return out;
  }

  BackendTensor soft_cap(const BackendTensor& a, double cap_given) override {
    const Scalar cap = static_cast<Scalar>(cap_given);  // float32 arithmetic
    checks::soft_cap(kName, a, cap);
    auto out = make(a.shape, "soft_cap");
    k_soft_cap<<<grid(element_count(a.shape)), kThreads, 0, stream()>>>(dev(a), dev(out), element_count(a.shape), cap);
    done("soft_cap");
    return out;
  }

  BackendTensor distance_bias(const BackendTensor& slopes, std::int64_t T, std::int64_t S, std::int64_t offset) override {
    checks::distance_bias(kName, slopes);
    const auto H = slopes.shape[0];
    auto out = make({H, T, S}, "distance_bias");
    k_distance_bias<<<grid(H * T * S), kThreads, 0, stream()>>>(dev(slopes), dev(out), H, T, S, offset);
    done("distance_bias");
    return out;
  }

  BackendTensor append_rows(const BackendTensor& a, const BackendTensor& b) override {
    checks::append_rows(kName, a, b);
    const auto r = b.shape.size();
    const auto h = b.shape[r - 1], L = a.shape[r - 2], M = b.shape[r - 2];
    Shape shape = b.shape;
    shape[r - 2] = L + M;
    auto out = make(shape, "append_rows");
    const auto N = h > 0 ? element_count(b.shape) / (M * h) : 0;
    k_append_rows<<<grid(element_count(shape)), kThreads, 0, stream()>>>(L > 0 ? dev(a) : nullptr, dev(b), dev(out), N, L, M, h);
    done("append_rows");
    return out;
  }

  BackendTensor repeat_heads(const BackendTensor& a, std::int64_t n, bool tiled) override {
    checks::repeat_heads(kName, a, n);
    auto out = make({a.shape[0], a.shape[1] * n, a.shape[2], a.shape[3]}, "repeat_heads");
    k_repeat_heads<<<grid(element_count(out.shape)), kThreads, 0, stream()>>>(dev(a), dev(out), a.shape[0], a.shape[1], n, a.shape[2] * a.shape[3], tiled);
    done("repeat_heads");
    return out;
  }

  BackendTensor transpose_last2(const BackendTensor& a) override {
    checks::transpose_last2(kName, a);
    auto [out, flags] = make_flagged({a.shape[0], a.shape[2], a.shape[1]}, "transpose_last2");
    LAUNCH_INDEXED(k_transpose_last2, element_count(a.shape), grid(element_count(a.shape)), stream(), dev(a), dev(out), a.shape[0], a.shape[1],
                   a.shape[2], flags);
    done("transpose_last2");
    return out;
  }

  BackendTensor swap_axes_1_2(const BackendTensor& a) override {
    checks::swap_axes_1_2(kName, a);
    auto [out, flags] = make_flagged({a.shape[0], a.shape[2], a.shape[1], a.shape[3]}, "swap_axes_1_2");
    LAUNCH_INDEXED(k_swap12, element_count(a.shape), grid(element_count(a.shape)), stream(), dev(a), dev(out), a.shape[0], a.shape[1], a.shape[2],
                   a.shape[3], flags);
    done("swap_axes_1_2");
    return out;
  }

  BackendTensor slice_columns(const BackendTensor& a, std::int64_t offset, std::int64_t width) override {
    checks::slice_columns(kName, a, offset, width);
    auto [out, flags] = make_flagged({a.shape[0], width}, "slice_columns");
    LAUNCH_INDEXED(k_slice_columns, element_count(a.shape), grid(a.shape[0] * width), stream(), dev(a), dev(out), a.shape[0], a.shape[1], offset,
                   width, flags);
    done("slice_columns");
    return out;
  }

  BackendTensor scale(const BackendTensor& a, double factor_given) override {
    const Scalar factor = static_cast<Scalar>(factor_given);  // float32 arithmetic
    auto [out, flags] = make_flagged(a.shape, "scale");
    const auto n = element_count(a.shape);
    if (n % 4 == 0) {
      LAUNCH_INDEXED(k_scale4, n, grid(n / 4), stream(), reinterpret_cast<const float4*>(dev(a)), reinterpret_cast<float4*>(dev(out)), n / 4, factor,
                     flags);
    } else {
      LAUNCH_INDEXED(k_scale, n, grid(n), stream(), dev(a), dev(out), n, factor, flags);
    }
    done("scale");
    return out;
  }

  BackendTensor masked_fill(const BackendTensor& scores, const BackendTensor& keep, double fill_given) override {
    const Scalar fill = static_cast<Scalar>(fill_given);  // float32 arithmetic
    checks::masked_fill(kName, scores, keep);
    auto [out, flags] = make_flagged(scores.shape, "masked_fill");
    const auto plane = scores.shape[2] * scores.shape[3];
    const auto n = element_count(scores.shape);
    if (plane % 4 == 0) {
      LAUNCH_INDEXED(k_masked_fill4, n, grid(n / 4), stream(), reinterpret_cast<const float4*>(dev(scores)), reinterpret_cast<const float4*>(dev(keep)),
                     reinterpret_cast<float4*>(dev(out)), scores.shape[0], scores.shape[1], plane / 4, fill, flags);
    } else {
      LAUNCH_INDEXED(k_masked_fill, n, grid(n), stream(), dev(scores), dev(keep), dev(out), scores.shape[0], scores.shape[1], plane, fill, flags);
    }
    done("masked_fill");
    return out;
  }

  BackendTensor softmax_rows(const BackendTensor& a, EmptyRow empty) override {
    checks::softmax_rows(kName, a);
    auto [out, flags] = make_flagged(a.shape, "softmax_rows");
    const int policy = empty == EmptyRow::Zeros ? 1 : empty == EmptyRow::Uniform ? 2 : 0;
    const auto rows = a.shape[0], n = a.shape[1];
    if (rows == 0) return out;
    if (n <= 32 * kWarpCols) {
      // a warp per row, its sums written beside (row_sums hands them back)
      auto sums = make({rows}, "softmax_rows");
      k_softmax_warp<<<grid(rows * 32), kThreads, 0, stream()>>>(dev(a), dev(out), dev(sums), rows, n, policy, flags);
      softmax_out_ = out.buffer;
      softmax_sums_ = sums;
    } else {
      k_softmax_rows<<<row_grid(rows), kThreads, 0, stream()>>>(dev(a), dev(out), rows, n, policy, flags);
    }
    done("softmax_rows");
    return out;
  }

  BackendTensor row_sums(const BackendTensor& a) override {
    checks::row_sums(kName, a);
    const auto rows = a.shape[0];
    // the weights the last softmax wrote: their sums were written beside them
    if (!softmax_out_.owner_before(a.buffer) && !a.buffer.owner_before(softmax_out_) && softmax_sums_.shape == Shape{rows} &&
        !softmax_out_.expired())
      return softmax_sums_;
    auto out = make({rows}, "row_sums");
    if (rows > 0) {
      k_row_sums<<<row_grid(rows), kThreads, 0, stream()>>>(dev(a), dev(out), rows, a.shape[1]);
      done("row_sums");
    }
    return out;
  }

  BackendTensor mask_keep(std::int64_t B, std::int64_t T, std::int64_t S, bool causal, std::int64_t offset, std::int64_t window,
                          const std::vector<std::int64_t>& lengths, bool flipped) override {
    checks::mask_keep(kName, B, T, S, lengths);
    auto out = make({B, T, S}, "mask_keep");
    const std::int64_t* d_lengths = lengths.empty() ? nullptr : device_lengths(lengths);
    LAUNCH_INDEXED(k_mask_keep, B * T * S, grid(B * T * S), stream(), dev(out), B, T, S, causal, offset, window, d_lengths, flipped);
    done("mask_keep");
    return out;
  }

  BackendTensor keep_and(const BackendTensor& keep, const BackendTensor& other) override {
    checks::keep_and(kName, keep, other);
    auto out = make(keep.shape, "keep_and");
    const auto total = element_count(keep.shape), plane = keep.shape[1] * keep.shape[2];
    k_keep_and<<<grid(total), kThreads, 0, stream()>>>(dev(keep), dev(other), dev(out), total, plane, other.shape[0] == 1);
    done("keep_and");
    return out;
  }

  BackendTensor add_mask(const BackendTensor& scores, const BackendTensor& add) override {
    checks::add_mask(kName, scores, add);
    auto out = make(scores.shape, "add_mask");
    const auto total = element_count(scores.shape), plane = scores.shape[2] * scores.shape[3];
    k_add_mask<<<grid(total), kThreads, 0, stream()>>>(dev(scores), dev(add), dev(out), total, scores.shape[1], plane, add.shape[0] == 1);
    done("add_mask");
    return out;
  }

  BackendTensor rms_norm_rows(const BackendTensor& a, const BackendTensor& w, double eps) override {
    checks::rms_norm_rows(kName, a, w);
    auto out = make(a.shape, "rms_norm_rows");
    const auto rows = a.shape[0], n = a.shape[1];
    if (rows * n == 0) return out;
    k_rms_norm_rows<<<grid(rows * 32), kThreads, 0, stream()>>>(dev(a), dev(w), dev(out), rows, n, eps);
    done("rms_norm_rows");
    return out;
  }

  // ---- the backward pass's primitives
  BackendTensor add(const BackendTensor& a, const BackendTensor& b) override { return binary(a, b, 0, "add"); }
  BackendTensor mul(const BackendTensor& a, const BackendTensor& b) override { return binary(a, b, 1, "mul"); }

  BackendTensor softmax_backward_rows(const BackendTensor& w, const BackendTensor& dw) override {
    checks::softmax_backward_rows(kName, w, dw);
    auto [out, flags] = make_flagged(w.shape, "softmax_backward_rows");
    const auto rows = w.shape[0], n = w.shape[1];
    if (rows * n == 0) return out;
    k_softmax_backward_rows<<<grid(rows * 32), kThreads, 0, stream()>>>(dev(w), dev(dw), dev(out), rows, n, flags);
    done("softmax_backward_rows");
    return out;
  }

  EmptyRows empty_rows(const BackendTensor& a) override { return empty_rows_later(a)(); }

  // Counted in the compute stream's order and copied back into pinned memory; the function waits
  // only when called (the pipeline calls it after queueing the softmax).
  std::function<EmptyRows()> empty_rows_later(const BackendTensor& a) override {
    checks::empty_rows(kName, a);
    const auto rows = a.shape[0], n = a.shape[1];
    if (rows == 0 || n == 0) return [] { return EmptyRows{}; };
    auto slots = make({4}, "empty_rows");  // (two 64-bit counters in four floats' room: count 0, first ~0)
    auto* c = reinterpret_cast<unsigned long long*>(dev(slots));
    check(cudaMemsetAsync(c, 0, sizeof *c, stream()), "empty_rows", "cudaMemsetAsync");
    check(cudaMemsetAsync(c + 1, 0xff, sizeof *c, stream()), "empty_rows", "cudaMemsetAsync");
    k_empty_rows<<<grid(rows * 32), kThreads, 0, stream()>>>(dev(a), rows, n, c, c + 1);
    done("empty_rows");
    auto pending = std::make_shared<PendingCount>();
    pending->ctx = ctx_;
    pending->host = static_cast<unsigned long long*>(ctx_->take_pinned(2 * sizeof *c));
    if (pending->host == nullptr) {  // no pinned memory: copied and waited for now
      unsigned long long got[2];
      check(cudaMemcpyAsync(got, c, sizeof got, cudaMemcpyDeviceToHost, stream()), "empty_rows", "cudaMemcpyAsync");
      synchronize();
      const EmptyRows r{static_cast<std::int64_t>(got[0]), got[0] == 0 ? -1 : static_cast<std::int64_t>(got[1])};
      return [r] { return r; };
    }
    check(cudaMemcpyAsync(pending->host, c, 2 * sizeof *c, cudaMemcpyDeviceToHost, stream()), "empty_rows", "cudaMemcpyAsync");
    check(cudaEventCreateWithFlags(&pending->copied, cudaEventDisableTiming), "empty_rows", "cudaEventCreate");
    check(cudaEventRecord(pending->copied, stream()), "empty_rows", "cudaEventRecord");
    return [pending] { return pending->get(); };  // (slots is freed in stream order, after the copy)
  }

  BackendTensor fused_attention(const BackendTensor& q, const BackendTensor& k, const BackendTensor& v, double scale_given, const FusedMask& mask,
                                EmptyRow empty) override {
    const Scalar scale = static_cast<Scalar>(scale_given);  // float32 arithmetic
    checks::fused_attention(kName, q, k, v, mask);
    FusedArgs a{};
    a.B = q.shape[0], a.H = q.shape[1], a.T = q.shape[2], a.hs = q.shape[3], a.Hkv = k.shape[1], a.S = k.shape[2], a.hv = v.shape[3];
    auto out = make({a.B, a.H, a.T, a.hv}, "fused_attention");
    const auto total = element_count(out.shape);
    if (total == 0) return out;
    if (a.S == 0) {  // a product over no key is 0, as weights · v with S = 0
      check(cudaMemsetAsync(dev(out), 0, static_cast<std::size_t>(total) * sizeof(Scalar), stream()), "fused_attention", "cudaMemsetAsync");
      done("fused_attention");
      return out;
    }
    a.q = dev(q), a.k = dev(k), a.v = dev(v), a.out = dev(out);
    a.scale = scale, a.causal = mask.causal, a.offset = mask.offset, a.window = mask.window;
    a.lengths = mask.lengths.empty() ? nullptr : device_lengths(mask.lengths);
    a.empty = empty == EmptyRow::Zeros ? 1 : empty == EmptyRow::Uniform ? 2 : 0;
    const auto width = std::max(a.hs, a.hv);
    const auto tiles = a.B * a.H * ((a.T + kFusedRows - 1) / kFusedRows);
    const auto blocks = static_cast<unsigned>(std::min(tiles, kMaxBlocks));
    if (width <= 16) k_fused_attention<16, 32><<<blocks, kFusedRows, 0, stream()>>>(a);
    else if (width <= 32) k_fused_attention<32, 32><<<blocks, kFusedRows, 0, stream()>>>(a);
    else if (width <= 64) k_fused_attention<64, 32><<<blocks, kFusedRows, 0, stream()>>>(a);
    else if (width <= 128) k_fused_attention<128, 8><<<blocks, kFusedRows, 0, stream()>>>(a);
    else k_fused_attention_wide<<<grid(a.B * a.H * a.T), kThreads, 0, stream()>>>(a);
    done("fused_attention");
    return out;
  }

 private:
  // a (...) op b (...), the same shape: 0 add, 1 multiply
  BackendTensor binary(const BackendTensor& a, const BackendTensor& b, int op, const char* primitive) {
    checks::same_shape(kName, primitive, a, b);
    auto [out, flags] = make_flagged(a.shape, primitive);
    const auto n = element_count(a.shape);
    if (n == 0) return out;
    LAUNCH_INDEXED(k_binary, n, grid(n), stream(), dev(a), dev(b), dev(out), n, op, flags);
    done(primitive);
    return out;
  }

  // After a primitive's launches: a launch that failed is reported now; with ATTN_CUDA_SYNC=1 its
  // work is also waited for, so that a fault in it is reported under its name.
  void done(const char* primitive) const {
    check(cudaGetLastError(), primitive, "launch");
    if (sync_) check(cudaStreamSynchronize(stream()), primitive, "its work (ATTN_CUDA_SYNC=1)");
  }

  // cuBLAS's setup failing is the device's state (busy, unusable, full), not a bug
  void check_usable(cublasStatus_t s, const char* call) {
    if (s == CUBLAS_STATUS_SUCCESS) return;
    if (handle_ != nullptr) cublasDestroy(handle_);
    throw DeviceError(std::string("--backend cuda: no usable CUDA device (") + call + " failed, cuBLAS status " + std::to_string(static_cast<int>(s)) +
                      "; the device has " + device_memory_text() + ")");
  }

  // The padding lengths on the device. Kept while they stay the same (a run asks for the same
  // lengths at every step, a decode at every token): no copy then. New lengths are copied
  // asynchronously from lengths_ (which is left alone until that copy is done), after any kernel
  // still reading the old ones (the same stream).
  const std::int64_t* device_lengths(const std::vector<std::int64_t>& lengths) {
    if (lengths_dev_.p != nullptr && lengths == lengths_) return lengths_dev_.p;
    if (lengths_dev_.n < lengths.size()) {
      lengths_dev_ = DeviceArray<std::int64_t>(lengths.size(), "mask_keep", Shape{static_cast<std::int64_t>(lengths.size())});
    }
    check(cudaEventSynchronize(lengths_copied_), "mask_keep", "waiting for the last copy of the lengths");  // (done long ago, as a rule)
    lengths_ = lengths;
    check(cudaMemcpyAsync(lengths_dev_.p, lengths_.data(), lengths_.size() * sizeof(std::int64_t), cudaMemcpyHostToDevice, stream()),
          "mask_keep", "cudaMemcpyAsync lengths");
    check(cudaEventRecord(lengths_copied_, stream()), "mask_keep", "cudaEventRecord");
    return lengths_dev_.p;
  }

  cudaStream_t stream() const { return ctx_->compute; }

  // A new tensor of `shape` for `primitive`'s result, from the run's pool.
  BackendTensor make(Shape shape, const char* primitive) {
    const auto n = static_cast<std::size_t>(element_count(shape));
    auto buffer = std::make_shared<CudaBuffer>(ctx_, n, primitive, shape);
    return BackendTensor{std::move(shape), std::move(buffer)};
  }
  // The same, with range flags (cleared) for the kernel that writes it to note its values in.
  std::pair<BackendTensor, unsigned*> make_flagged(Shape shape, const char* primitive) {
    const auto n = static_cast<std::size_t>(element_count(shape));
    auto buffer = std::make_shared<CudaBuffer>(ctx_, n, primitive, shape);
    check(cudaMallocAsync(reinterpret_cast<void**>(&buffer->flags), 2 * sizeof(unsigned), stream()), primitive, "cudaMallocAsync");
    check(cudaMemsetAsync(buffer->flags, 0, 2 * sizeof(unsigned), stream()), primitive, "cudaMemsetAsync");
    unsigned* flags = buffer->flags;
    return {BackendTensor{std::move(shape), std::move(buffer)}, flags};
  }

  // The row sums the last warp softmax wrote beside its weights (row_sums hands them back).
  std::weak_ptr<const BackendBuffer> softmax_out_;
  BackendTensor softmax_sums_;

  // cuBLAS's first product loads its kernels and workspace: done here, once, so that no step's
  // time holds it.
  void warm_up() {
    auto a = make({2, 2, 2}, "the backend's warm-up");
    check(cudaMemsetAsync(dev(a), 0, 8 * sizeof(Scalar), stream()), "the backend's warm-up", "cudaMemsetAsync");
    matmul(a, a);
    matmul(a, a.view({4, 2}).view({2, 2, 2}));
    matmul(a, BackendTensor{{2, 2}, a.buffer});
    synchronize();
  }

  std::shared_ptr<Context> ctx_;
  cublasHandle_t handle_ = nullptr;
  bool sync_ = sync_mode();
  std::vector<std::int64_t> lengths_;         // the host copy the device's lengths were copied from
  DeviceArray<std::int64_t> lengths_dev_;     // (capacity lengths_dev_.n)
  cudaEvent_t lengths_copied_ = nullptr;      // recorded after the last copy from lengths_
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend() {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice) {
      // (the runtime says "insufficient driver" also where there is no NVIDIA driver at all)
      throw InputError("--backend cuda: no usable CUDA device: no NVIDIA GPU with a driver for CUDA 13 on this machine (cudaGetDeviceCount: " +
                       error_text(e) + ")");
    }
    throw InputError("--backend cuda: no usable CUDA device (cudaGetDeviceCount: " + error_text(e) + ")");
  }
  if (count == 0) throw InputError("--backend cuda: no CUDA device on this machine");
  // Create the device's context now: a device that is busy (exclusive mode, taken), unusable or
  // full is refused here, with the CUDA error, not as a fault of the first primitive.
  e = cudaSetDevice(0);
  if (e == cudaSuccess) e = cudaFree(nullptr);
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw DeviceError("--backend cuda: no usable CUDA device (creating its context: " + error_text(e) + ")");
  }
  return std::make_unique<CudaBackend>();
}

}  // namespace attn

extern "C" attn::Backend* attn_make_cuda_backend() { return attn::make_cuda_backend().release(); }
