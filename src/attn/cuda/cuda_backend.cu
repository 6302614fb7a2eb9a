// The CUDA backend. Row-major tensors in device memory; products through cuBLAS (strided-batched,
// FP32 without TF32, so the numbers stay comparable with the CPU's); everything else in small
// kernels with grid-stride loops. Only the backend interface and tensor headers are included:
// no Eigen, fmt or JSON under nvcc.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "attn/backend_checks.hpp"
#include "attn/cuda/cuda_backend.hpp"
#include "attn/error.hpp"

namespace attn {
namespace {

namespace checks = backend_checks;
constexpr std::string_view kName = "cuda";

// "1.5 GB" (powers of 1000, as attn's other messages)
std::string bytes_text(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  int u = 0;
  while (b >= 1000 && u < 5) b /= 1000, ++u;
  char text[32];
  std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return text;
}

// "12.0 GB free of 80.0 GB": the device's memory now, or what went wrong asking
std::string device_memory_text() {
  std::size_t free = 0, total = 0;
  const cudaError_t e = cudaMemGetInfo(&free, &total);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return std::string("free memory unknown: cudaMemGetInfo: ") + cudaGetErrorName(e);
  }
  return bytes_text(static_cast<double>(free)) + " free of " + bytes_text(static_cast<double>(total));
}

// "cudaErrorIllegalAddress: an illegal memory access was encountered"
std::string error_text(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }

// ATTN_CUDA_SYNC=1: wait for every primitive's work and check it there, so a fault is reported
// under the primitive that made it (slower; for finding a fault, not for timing).
bool sync_mode() {
  const char* v = std::getenv("ATTN_CUDA_SYNC");
  return v != nullptr && std::string_view(v) == "1";
}

[[noreturn]] void out_of_memory(const char* primitive, const std::string& what) {
  cudaGetLastError();  // (an allocation failure is not sticky: clear it, the device stays usable)
  throw DeviceError(std::string("--backend cuda: out of GPU memory in ") + primitive + ": " + what + " (the device has " + device_memory_text() +
                    "). Use a smaller T (attn cost shows how the size grows), or --backend cpu");
}

// A failed CUDA call. Running out of memory is the device's limit (DeviceError, exit 2); anything
// else (an illegal address, a bad launch) a bug in attn. Work runs asynchronously: without
// ATTN_CUDA_SYNC=1 a fault surfaces at a later call than the primitive that made it.
void check(cudaError_t e, const char* primitive, const char* call) {
  if (e == cudaSuccess) return;
  if (e == cudaErrorMemoryAllocation) out_of_memory(primitive, call);
  std::string message = std::string("cuda: ") + primitive + ": " + call + ": " + error_text(e);
  if (!sync_mode()) message += " (work runs asynchronously: the fault may be an earlier primitive's; ATTN_CUDA_SYNC=1 checks after each)";
  throw InternalError(message);
}

void check(cublasStatus_t s, const char* primitive, const char* call) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  if (s == CUBLAS_STATUS_ALLOC_FAILED) out_of_memory(primitive, std::string(call) + ": cuBLAS could not allocate its workspace");
  throw InternalError(std::string("cublas: ") + primitive + ": " + call + " failed (status " + std::to_string(static_cast<int>(s)) + ")");
}

// Device memory for n values of T, freed with the object.
template <typename T>
struct DeviceArray {
  DeviceArray() = default;
  // `primitive` and `shape` name the allocation when the device has no room for it
  DeviceArray(std::size_t count, const char* primitive, const Shape& shape) : n(count) {
    if (n == 0) return;
    const cudaError_t e = cudaMalloc(&p, n * sizeof(T));
    if (e == cudaErrorMemoryAllocation) {
      p = nullptr;
      out_of_memory(primitive, "its result " + shape_string(shape) + " needs " + bytes_text(static_cast<double>(n * sizeof(T))));
    }
    check(e, primitive, "cudaMalloc");
  }
  ~DeviceArray() {
    if (p != nullptr) cudaFree(p);
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& o) noexcept : p(o.p), n(o.n) { o.p = nullptr, o.n = 0; }
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    std::swap(p, o.p);
    std::swap(n, o.n);
    return *this;
  }
  T* p = nullptr;
  std::size_t n = 0;
};

struct CudaBuffer final : BackendBuffer {
  CudaBuffer(std::size_t count, const char* primitive, const Shape& shape) : values(count, primitive, shape) {}
  DeviceArray<Scalar> values;
};

Scalar* dev(const BackendTensor& t) {
  const auto* b = dynamic_cast<const CudaBuffer*>(t.buffer.get());
  if (b == nullptr) throw InternalError("cuda backend given a tensor from another backend");
  return b->values.p;
}

// A new tensor of `shape` for `primitive`'s result.
BackendTensor make(Shape shape, const char* primitive) {
  const auto n = static_cast<std::size_t>(element_count(shape));
  auto buffer = std::make_shared<CudaBuffer>(n, primitive, shape);
  return BackendTensor{std::move(shape), std::move(buffer)};
}

constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 65535;
unsigned grid(std::int64_t n) {
  const std::int64_t g = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(g < kMaxBlocks ? (g > 0 ? g : 1) : kMaxBlocks);  // grid-stride loops cover the rest
}
// Blocks for a kernel with one block per row at a time: at most kMaxBlocks, each taking every
// gridDim.x-th row (row counts past 32 bits included).
unsigned row_grid(std::int64_t rows) { return static_cast<unsigned>(std::clamp<std::int64_t>(rows, 1, kMaxBlocks)); }

#define GRID_STRIDE(i, n) for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < (n); \
                               i += static_cast<std::int64_t>(blockDim.x) * gridDim.x)

__global__ void k_add_bias(const Scalar* a, const Scalar* bias, Scalar* out, std::int64_t total, std::int64_t n) {
  GRID_STRIDE(i, total) out[i] = a[i] + bias[i % n];
}

// RoPE: one thread per (row, pair); products and sums rounded one by one, as on the CPU (no fused
// multiply-add). Features from 2·pairs on are copied.
__global__ void k_rotate_pairs(const Scalar* a, const Scalar* cos, const Scalar* sin, Scalar* out, std::int64_t rows, std::int64_t L,
                               std::int64_t h, std::int64_t pairs, std::int64_t first, std::int64_t stride, std::int64_t partner) {
  GRID_STRIDE(o, rows * h) {
    const std::int64_t r = o / h, f = o % h;
    if (f >= 2 * pairs) {
      out[o] = a[o];
      continue;
    }
    // this feature's pair i, and whether it is the pair's first (u) or second (w) member
    const bool second = stride == 1 ? f >= pairs : f % 2 == 1;
    const std::int64_t i = stride == 1 ? (second ? f - pairs : f) : f / 2;
    const std::int64_t u = i * stride, w = u + partner;
    const std::int64_t t = (first + r % L) * pairs + i;
    const Scalar x = a[r * h + u], y = a[r * h + w], c = cos[t], s = sin[t];
    out[o] = second ? __fadd_rn(__fmul_rn(y, c), __fmul_rn(x, s)) : __fsub_rn(__fmul_rn(x, c), __fmul_rn(y, s));
  }
}

__global__ void k_soft_cap(const Scalar* a, Scalar* out, std::int64_t n, Scalar cap) {
  GRID_STRIDE(i, n) out[i] = __fmul_rn(static_cast<Scalar>(tanh(static_cast<double>(__fdiv_rn(a[i], cap)))), cap);
}

__global__ void k_distance_bias(const Scalar* slopes, Scalar* out, std::int64_t H, std::int64_t T, std::int64_t S, std::int64_t offset) {
  GRID_STRIDE(o, H * T * S) {
    const std::int64_t j = o % S, i = (o / S) % T, h = o / (S * T);
    out[o] = __fmul_rn(-slopes[h], static_cast<Scalar>(i + offset - j));
  }
}

// out (N, L + M, h): a's L rows, then b's M, per matrix
__global__ void k_append_rows(const Scalar* a, const Scalar* b, Scalar* out, std::int64_t N, std::int64_t L, std::int64_t M, std::int64_t h) {
  GRID_STRIDE(o, N * (L + M) * h) {
    const std::int64_t e = o % h, row = (o / h) % (L + M), i = o / (h * (L + M));
    out[o] = row < L ? a[(i * L + row) * h + e] : b[(i * M + row - L) * h + e];
  }
}

// out (B, G·n, L, h) from a (B, G, L, h): head k of out is a's head k / n (repeat_kv), or k % G tiled
__global__ void k_repeat_heads(const Scalar* a, Scalar* out, std::int64_t B, std::int64_t G, std::int64_t n, std::int64_t plane, bool tiled) {
  GRID_STRIDE(o, B * G * n * plane) {
    const std::int64_t e = o % plane, k = (o / plane) % (G * n), b = o / (plane * G * n);
    const std::int64_t g = tiled ? k % G : k / n;
    out[o] = a[(b * G + g) * plane + e];
  }
}

// out (N, n, m)[i][c][r] = a (N, m, n)[i][r][c]
__global__ void k_transpose_last2(const Scalar* a, Scalar* out, std::int64_t N, std::int64_t m, std::int64_t n) {
  GRID_STRIDE(o, N * m * n) {
    const std::int64_t r = o % m, c = (o / m) % n, i = o / (m * n);
    out[o] = a[(i * m + r) * n + c];
  }
}

// out (A, C, B, D) from a (A, B, C, D)
__global__ void k_swap12(const Scalar* a, Scalar* out, std::int64_t A, std::int64_t B, std::int64_t C, std::int64_t D) {
  GRID_STRIDE(o, A * B * C * D) {
    const std::int64_t d = o % D, b = (o / D) % B, c = (o / (D * B)) % C, x = o / (D * B * C);
    out[o] = a[((x * B + b) * C + c) * D + d];
  }
}

__global__ void k_slice_columns(const Scalar* a, Scalar* out, std::int64_t rows, std::int64_t n, std::int64_t offset, std::int64_t width) {
  GRID_STRIDE(o, rows * width) out[o] = a[(o / width) * n + offset + o % width];
}

__global__ void k_scale(const Scalar* a, Scalar* out, std::int64_t n, Scalar f) {
  GRID_STRIDE(i, n) out[i] = a[i] * f;
}

// scores (B, G, T·S), keep (B, T·S)
__global__ void k_masked_fill(const Scalar* s, const Scalar* keep, Scalar* out, std::int64_t B, std::int64_t G, std::int64_t plane, Scalar fill) {
  GRID_STRIDE(i, B * G * plane) {
    const std::int64_t b = i / (G * plane);
    out[i] = keep[b * plane + i % plane] != 0 ? s[i] : fill;
  }
}

__global__ void k_mask_keep(Scalar* keep, std::int64_t B, std::int64_t T, std::int64_t S, bool causal, std::int64_t offset,
                            std::int64_t window, const std::int64_t* lengths, bool flipped) {
  GRID_STRIDE(o, B * T * S) {
    const std::int64_t j = o % S, i = (o / S) % T, b = o / (S * T);
    const bool ok = !(causal && j > i + offset) && !(window > 0 && j <= i + offset - window) && !(lengths != nullptr && j >= lengths[b]);
    keep[o] = (ok != flipped) ? 1 : 0;
  }
}

__global__ void k_keep_and(const Scalar* a, const Scalar* b, Scalar* out, std::int64_t total, std::int64_t plane, bool shared) {
  GRID_STRIDE(i, total) out[i] = (a[i] != 0 && b[shared ? i % plane : i] != 0) ? 1 : 0;
}

__global__ void k_add_mask(const Scalar* s, const Scalar* m, Scalar* out, std::int64_t total, std::int64_t G, std::int64_t plane, bool shared) {
  GRID_STRIDE(i, total) {
    const std::int64_t b = i / (G * plane);
    out[i] = s[i] + m[(shared ? 0 : b) * plane + i % plane];
  }
}

// Block-wide reductions over kThreads threads.
template <typename T, typename Op>
__device__ T block_reduce(T v, T* shared, Op op) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) shared[threadIdx.x] = op(shared[threadIdx.x], shared[threadIdx.x + stride]);
    __syncthreads();
  }
  const T r = shared[0];
  __syncthreads();
  return r;
}

// A block per row, each block taking every gridDim.x-th row: pass 1 the row max, pass 2 the sum of
// exp(x - max) (in double, as the CPU), pass 3 the normalised values. A row of all -inf gets the
// empty-row policy's value. (Every thread of a block walks the same rows: the reductions' barriers
// are reached by all of them.)
__global__ void k_softmax_rows(const Scalar* a, Scalar* out, std::int64_t rows, std::int64_t n, int empty) {
  __shared__ Scalar smax[kThreads];
  __shared__ double ssum[kThreads];
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const Scalar* x = a + row * n;
    Scalar* y = out + row * n;
    Scalar mx = -INFINITY;
    for (std::int64_t j = threadIdx.x; j < n; j += kThreads) mx = fmaxf(mx, x[j]);
    mx = block_reduce(mx, smax, [](Scalar l, Scalar r) { return fmaxf(l, r); });
    if (mx == -INFINITY) {
      const Scalar fill = empty == 1 ? 0.0f : empty == 2 ? static_cast<Scalar>(1.0 / static_cast<double>(n)) : NAN;
      for (std::int64_t j = threadIdx.x; j < n; j += kThreads) y[j] = fill;
      continue;
    }
    double sum = 0;
    for (std::int64_t j = threadIdx.x; j < n; j += kThreads) {
      const Scalar e = expf(x[j] - mx);
      y[j] = e;
      sum += e;
    }
    sum = block_reduce(sum, ssum, [](double l, double r) { return l + r; });
    const Scalar inv = static_cast<Scalar>(1.0 / sum);
    for (std::int64_t j = threadIdx.x; j < n; j += kThreads) y[j] *= inv;
  }
}

__global__ void k_row_sums(const Scalar* a, Scalar* out, std::int64_t rows, std::int64_t n) {
  __shared__ double ssum[kThreads];
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    double sum = 0;
    for (std::int64_t j = threadIdx.x; j < n; j += kThreads) sum += a[row * n + j];
    sum = block_reduce(sum, ssum, [](double l, double r) { return l + r; });
    if (threadIdx.x == 0) out[row] = static_cast<Scalar>(sum);
  }
}

int as_int(std::int64_t v, const char* what) {
  if (v > std::numeric_limits<int>::max()) throw InputError(std::string("--backend cuda: ") + what + " exceeds cuBLAS's int range");
  return static_cast<int>(v);
}

class CudaBackend final : public Backend {
 public:
  CudaBackend() {
    check_usable(cublasCreate(&handle_), "cublasCreate");
    // Plain FP32 products: no TF32 tensor-core shortcut, whose 10-bit mantissa would not match the CPU.
    check_usable(cublasSetMathMode(handle_, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
    const cudaError_t e = cudaEventCreateWithFlags(&lengths_copied_, cudaEventDisableTiming);
    if (e != cudaSuccess) {
      cublasDestroy(handle_);
      check(e, "the backend's setup", "cudaEventCreate");
    }
  }
  ~CudaBackend() override {
    cudaEventDestroy(lengths_copied_);
    cublasDestroy(handle_);
  }
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string_view name() const override { return kName; }
  void synchronize() override { check(cudaDeviceSynchronize(), "synchronize", "cudaDeviceSynchronize"); }
  Memory memory() override {
    std::size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "memory", "cudaMemGetInfo");
    return {static_cast<std::int64_t>(free), static_cast<std::int64_t>(total)};
  }

  BackendTensor upload(const Tensor& t) override {
    auto d = make(t.shape(), "upload");
    traffic_.uploaded += t.size() * static_cast<std::int64_t>(sizeof(Scalar));
    if (t.size() > 0) check(cudaMemcpy(dev(d), t.data(), static_cast<std::size_t>(t.size()) * sizeof(Scalar), cudaMemcpyHostToDevice), "upload", "cudaMemcpy");
    return d;
  }

  Tensor download(const BackendTensor& t) override {
    Tensor h = Tensor::uninitialized(t.shape);
    traffic_.downloaded += h.size() * static_cast<std::int64_t>(sizeof(Scalar));
    if (h.size() > 0) {
      check(cudaMemcpy(h.mutable_data(), dev(t), static_cast<std::size_t>(h.size()) * sizeof(Scalar), cudaMemcpyDeviceToHost), "download", "cudaMemcpy");
    }
    return h;
  }

  BackendTensor matmul(const BackendTensor& a, const BackendTensor& b) override {
    checks::matmul(kName, a, b);
    // Row-major C (m, n) = A (m, k) · B (k, n) is column-major Cᵀ = Bᵀ · Aᵀ: cuBLAS gets B first.
    const auto N = a.shape[0], m = a.shape[1], k = a.shape[2], n = b.shape.back();
    auto c = make({N, m, n}, "matmul");
    if (N * m * n == 0) return c;
    if (k == 0) {  // (cuBLAS leaves C alone when k = 0: a product over nothing is 0)
      check(cudaMemsetAsync(dev(c), 0, static_cast<std::size_t>(N * m * n) * sizeof(Scalar)), "matmul", "cudaMemsetAsync");
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
    k_add_bias<<<grid(total), kThreads>>>(dev(a), dev(bias), dev(out), total, bias.shape[0]);
    done("add_bias");
    return out;
  }

  BackendTensor rotate_pairs(const BackendTensor& a, const BackendTensor& cos, const BackendTensor& sin, std::int64_t first,
                             bool interleaved) override {
    checks::rotate_pairs(kName, a, cos, sin, first);
    auto out = make(a.shape, "rotate_pairs");
    const auto rows = a.shape[0] * a.shape[1], h = a.shape[2], pairs = cos.shape[1];
    const std::int64_t stride = interleaved ? 2 : 1, partner = interleaved ? 1 : pairs;
    k_rotate_pairs<<<grid(rows * h), kThreads>>>(dev(a), dev(cos), dev(sin), dev(out), rows, a.shape[1], h, pairs, first, stride, partner);
    done("rotate_pairs");
    return out;
  }

  BackendTensor soft_cap(const BackendTensor& a, Scalar cap) override {
    checks::soft_cap(kName, a, cap);
    auto out = make(a.shape, "soft_cap");
    k_soft_cap<<<grid(element_count(a.shape)), kThreads>>>(dev(a), dev(out), element_count(a.shape), cap);
    done("soft_cap");
    return out;
  }

  BackendTensor distance_bias(const BackendTensor& slopes, std::int64_t T, std::int64_t S, std::int64_t offset) override {
    checks::distance_bias(kName, slopes);
    const auto H = slopes.shape[0];
    auto out = make({H, T, S}, "distance_bias");
    k_distance_bias<<<grid(H * T * S), kThreads>>>(dev(slopes), dev(out), H, T, S, offset);
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
    k_append_rows<<<grid(element_count(shape)), kThreads>>>(L > 0 ? dev(a) : nullptr, dev(b), dev(out), N, L, M, h);
    done("append_rows");
    return out;
  }

  BackendTensor repeat_heads(const BackendTensor& a, std::int64_t n, bool tiled) override {
    checks::repeat_heads(kName, a, n);
    auto out = make({a.shape[0], a.shape[1] * n, a.shape[2], a.shape[3]}, "repeat_heads");
    k_repeat_heads<<<grid(element_count(out.shape)), kThreads>>>(dev(a), dev(out), a.shape[0], a.shape[1], n, a.shape[2] * a.shape[3], tiled);
    done("repeat_heads");
    return out;
  }

  BackendTensor transpose_last2(const BackendTensor& a) override {
    checks::transpose_last2(kName, a);
    auto out = make({a.shape[0], a.shape[2], a.shape[1]}, "transpose_last2");
    k_transpose_last2<<<grid(element_count(a.shape)), kThreads>>>(dev(a), dev(out), a.shape[0], a.shape[1], a.shape[2]);
    done("transpose_last2");
    return out;
  }

  BackendTensor swap_axes_1_2(const BackendTensor& a) override {
    checks::swap_axes_1_2(kName, a);
    auto out = make({a.shape[0], a.shape[2], a.shape[1], a.shape[3]}, "swap_axes_1_2");
    k_swap12<<<grid(element_count(a.shape)), kThreads>>>(dev(a), dev(out), a.shape[0], a.shape[1], a.shape[2], a.shape[3]);
    done("swap_axes_1_2");
    return out;
  }

  BackendTensor slice_columns(const BackendTensor& a, std::int64_t offset, std::int64_t width) override {
    checks::slice_columns(kName, a, offset, width);
    auto out = make({a.shape[0], width}, "slice_columns");
    k_slice_columns<<<grid(a.shape[0] * width), kThreads>>>(dev(a), dev(out), a.shape[0], a.shape[1], offset, width);
    done("slice_columns");
    return out;
  }

  BackendTensor scale(const BackendTensor& a, Scalar factor) override {
    auto out = make(a.shape, "scale");
    k_scale<<<grid(element_count(a.shape)), kThreads>>>(dev(a), dev(out), element_count(a.shape), factor);
    done("scale");
    return out;
  }

  BackendTensor masked_fill(const BackendTensor& scores, const BackendTensor& keep, Scalar fill) override {
    checks::masked_fill(kName, scores, keep);
    auto out = make(scores.shape, "masked_fill");
    const auto plane = scores.shape[2] * scores.shape[3];
    k_masked_fill<<<grid(element_count(scores.shape)), kThreads>>>(dev(scores), dev(keep), dev(out), scores.shape[0], scores.shape[1], plane, fill);
    done("masked_fill");
    return out;
  }

  BackendTensor softmax_rows(const BackendTensor& a, EmptyRow empty) override {
    checks::softmax_rows(kName, a);
    auto out = make(a.shape, "softmax_rows");
    const int policy = empty == EmptyRow::Zeros ? 1 : empty == EmptyRow::Uniform ? 2 : 0;
    const auto rows = a.shape[0];
    if (rows > 0) {
      k_softmax_rows<<<row_grid(rows), kThreads>>>(dev(a), dev(out), rows, a.shape[1], policy);
      done("softmax_rows");
    }
    return out;
  }

  BackendTensor row_sums(const BackendTensor& a) override {
    checks::row_sums(kName, a);
    const auto rows = a.shape[0];
    auto out = make({rows}, "row_sums");
    if (rows > 0) {
      k_row_sums<<<row_grid(rows), kThreads>>>(dev(a), dev(out), rows, a.shape[1]);
      done("row_sums");
    }
    return out;
  }

  BackendTensor mask_keep(std::int64_t B, std::int64_t T, std::int64_t S, bool causal, std::int64_t offset, std::int64_t window,
                          const std::vector<std::int64_t>& lengths, bool flipped) override {
    checks::mask_keep(kName, B, T, S, lengths);
    auto out = make({B, T, S}, "mask_keep");
    const std::int64_t* d_lengths = lengths.empty() ? nullptr : device_lengths(lengths);
    k_mask_keep<<<grid(B * T * S), kThreads>>>(dev(out), B, T, S, causal, offset, window, d_lengths, flipped);
    done("mask_keep");
    return out;
  }

  BackendTensor keep_and(const BackendTensor& keep, const BackendTensor& other) override {
    checks::keep_and(kName, keep, other);
    auto out = make(keep.shape, "keep_and");
    const auto total = element_count(keep.shape), plane = keep.shape[1] * keep.shape[2];
    k_keep_and<<<grid(total), kThreads>>>(dev(keep), dev(other), dev(out), total, plane, other.shape[0] == 1);
    done("keep_and");
    return out;
  }

  BackendTensor add_mask(const BackendTensor& scores, const BackendTensor& add) override {
    checks::add_mask(kName, scores, add);
    auto out = make(scores.shape, "add_mask");
    const auto total = element_count(scores.shape), plane = scores.shape[2] * scores.shape[3];
    k_add_mask<<<grid(total), kThreads>>>(dev(scores), dev(add), dev(out), total, scores.shape[1], plane, add.shape[0] == 1);
    done("add_mask");
    return out;
  }

 private:
  // After a primitive's launches: a launch that failed is reported now; with ATTN_CUDA_SYNC=1 its
  // work is also waited for, so that a fault in it is reported under its name.
  void done(const char* primitive) const {
    check(cudaGetLastError(), primitive, "launch");
    if (sync_) check(cudaDeviceSynchronize(), primitive, "its work (ATTN_CUDA_SYNC=1)");
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
    check(cudaMemcpyAsync(lengths_dev_.p, lengths_.data(), lengths_.size() * sizeof(std::int64_t), cudaMemcpyHostToDevice), "mask_keep",
          "cudaMemcpyAsync lengths");
    check(cudaEventRecord(lengths_copied_), "mask_keep", "cudaEventRecord");
    return lengths_dev_.p;
  }

  Traffic traffic() const override { return traffic_; }
  Traffic traffic_;
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
