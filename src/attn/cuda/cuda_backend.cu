// The CUDA backend. Row-major tensors in device memory; products through cuBLAS (strided-batched,
// FP32 without TF32, so the numbers stay comparable with the CPU's); everything else in small
// kernels with grid-stride loops. Only the backend interface and tensor headers are included:
// no Eigen, fmt or JSON under nvcc.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <limits>
#include <string>

#include "attn/cuda/cuda_backend.hpp"
#include "attn/error.hpp"

namespace attn {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw InternalError(std::string("cuda: ") + what + ": " + cudaGetErrorString(e));
}

void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw InternalError(std::string("cublas: ") + what + " failed (status " + std::to_string(static_cast<int>(s)) + ")");
}

void launched(const char* kernel) { check(cudaGetLastError(), kernel); }

struct CudaBuffer final : BackendBuffer {
  explicit CudaBuffer(std::size_t count) : n(count) {
    if (n > 0) check(cudaMalloc(&p, n * sizeof(Scalar)), "cudaMalloc");
  }
  ~CudaBuffer() override {
    if (p != nullptr) cudaFree(p);
  }
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;
  Scalar* p = nullptr;
  std::size_t n;
};

Scalar* dev(const BackendTensor& t) {
  const auto* b = dynamic_cast<const CudaBuffer*>(t.buffer.get());
  if (b == nullptr) throw InternalError("cuda backend given a tensor from another backend");
  return b->p;
}

BackendTensor make(Shape shape) {
  const auto n = static_cast<std::size_t>(element_count(shape));
  return BackendTensor{std::move(shape), std::make_shared<CudaBuffer>(n)};
}

constexpr int kThreads = 256;
unsigned grid(std::int64_t n) {
  const std::int64_t g = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(g < 65535 ? (g > 0 ? g : 1) : 65535);  // grid-stride loops cover the rest
}

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

// One block per row: pass 1 the row max, pass 2 the sum of exp(x - max) (in double, as the CPU),
// pass 3 the normalised values. A row of all -inf gets the empty-row policy's value.
__global__ void k_softmax_rows(const Scalar* a, Scalar* out, std::int64_t n, int empty) {
  __shared__ Scalar smax[kThreads];
  __shared__ double ssum[kThreads];
  const Scalar* x = a + blockIdx.x * n;
  Scalar* y = out + blockIdx.x * n;
  Scalar mx = -INFINITY;
  for (std::int64_t j = threadIdx.x; j < n; j += kThreads) mx = fmaxf(mx, x[j]);
  mx = block_reduce(mx, smax, [](Scalar l, Scalar r) { return fmaxf(l, r); });
  if (mx == -INFINITY) {
    const Scalar fill = empty == 1 ? 0.0f : empty == 2 ? static_cast<Scalar>(1.0 / static_cast<double>(n)) : NAN;
    for (std::int64_t j = threadIdx.x; j < n; j += kThreads) y[j] = fill;
    return;
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

__global__ void k_row_sums(const Scalar* a, Scalar* out, std::int64_t n) {
  __shared__ double ssum[kThreads];
  double sum = 0;
  for (std::int64_t j = threadIdx.x; j < n; j += kThreads) sum += a[blockIdx.x * n + j];
  sum = block_reduce(sum, ssum, [](double l, double r) { return l + r; });
  if (threadIdx.x == 0) out[blockIdx.x] = static_cast<Scalar>(sum);
}

int as_int(std::int64_t v, const char* what) {
  if (v > std::numeric_limits<int>::max()) throw InputError(std::string("--backend cuda: ") + what + " exceeds cuBLAS's int range");
  return static_cast<int>(v);
}

class CudaBackend final : public Backend {
 public:
  CudaBackend() {
    check(cublasCreate(&handle_), "cublasCreate");
    // Plain FP32 products: no TF32 tensor-core shortcut, whose 10-bit mantissa would not match the CPU.
    check(cublasSetMathMode(handle_, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
  }
  ~CudaBackend() override { cublasDestroy(handle_); }

  std::string_view name() const override { return "cuda"; }
  void synchronize() override { check(cudaDeviceSynchronize(), "synchronize"); }

  BackendTensor upload(const Tensor& t) override {
    auto d = make(t.shape());
    if (t.size() > 0) check(cudaMemcpy(dev(d), t.data(), static_cast<std::size_t>(t.size()) * sizeof(Scalar), cudaMemcpyHostToDevice), "upload");
    return d;
  }

  Tensor download(const BackendTensor& t) override {
    Tensor h = Tensor::uninitialized(t.shape);
    if (h.size() > 0) {
      check(cudaMemcpy(h.mutable_data(), dev(t), static_cast<std::size_t>(h.size()) * sizeof(Scalar), cudaMemcpyDeviceToHost), "download");
    }
    return h;
  }

  BackendTensor matmul(const BackendTensor& a, const BackendTensor& b) override {
    // Row-major C (m, n) = A (m, k) · B (k, n) is column-major Cᵀ = Bᵀ · Aᵀ: cuBLAS gets B first.
    const auto N = a.shape[0], m = a.shape[1], k = a.shape[2], n = b.shape.back();
    auto c = make({N, m, n});
    const Scalar one = 1, zero = 0;
    if (b.shape.size() == 2) {
      check(cublasSgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, as_int(n, "n"), as_int(N * m, "rows"), as_int(k, "k"), &one, dev(b), as_int(n, "n"),
                        dev(a), as_int(k, "k"), &zero, dev(c), as_int(n, "n")),
            "sgemm");
    } else {
      check(cublasSgemmStridedBatched(handle_, CUBLAS_OP_N, CUBLAS_OP_N, as_int(n, "n"), as_int(m, "m"), as_int(k, "k"), &one, dev(b),
                                      as_int(n, "n"), k * n, dev(a), as_int(k, "k"), m * k, &zero, dev(c), as_int(n, "n"), m * n,
                                      as_int(N, "batch")),
            "sgemm strided batched");
    }
    return c;
  }

  BackendTensor add_bias(const BackendTensor& a, const BackendTensor& bias) override {
    auto out = make(a.shape);
    const auto total = element_count(a.shape);
    k_add_bias<<<grid(total), kThreads>>>(dev(a), dev(bias), dev(out), total, bias.shape[0]);
    launched("add_bias");
    return out;
  }

  BackendTensor rotate_pairs(const BackendTensor& a, const BackendTensor& cos, const BackendTensor& sin, std::int64_t first,
                             bool interleaved) override {
    auto out = make(a.shape);
    const auto rows = a.shape[0] * a.shape[1], h = a.shape[2], pairs = cos.shape[1];
    const std::int64_t stride = interleaved ? 2 : 1, partner = interleaved ? 1 : pairs;
    k_rotate_pairs<<<grid(rows * h), kThreads>>>(dev(a), dev(cos), dev(sin), dev(out), rows, a.shape[1], h, pairs, first, stride, partner);
    launched("rotate_pairs");
    return out;
  }

  BackendTensor soft_cap(const BackendTensor& a, Scalar cap) override {
    auto out = make(a.shape);
    k_soft_cap<<<grid(element_count(a.shape)), kThreads>>>(dev(a), dev(out), element_count(a.shape), cap);
    launched("soft_cap");
    return out;
  }

  BackendTensor distance_bias(const BackendTensor& slopes, std::int64_t T, std::int64_t S, std::int64_t offset) override {
    const auto H = slopes.shape[0];
    auto out = make({H, T, S});
    k_distance_bias<<<grid(H * T * S), kThreads>>>(dev(slopes), dev(out), H, T, S, offset);
    launched("distance_bias");
    return out;
  }

  BackendTensor append_rows(const BackendTensor& a, const BackendTensor& b) override {
    const auto r = b.shape.size();
    const auto h = b.shape[r - 1], L = a.shape[r - 2], M = b.shape[r - 2];
    Shape shape = b.shape;
    shape[r - 2] = L + M;
    auto out = make(shape);
    const auto N = element_count(b.shape) / (M * h);
    k_append_rows<<<grid(element_count(shape)), kThreads>>>(L > 0 ? dev(a) : nullptr, dev(b), dev(out), N, L, M, h);
    launched("append_rows");
    return out;
  }

  BackendTensor repeat_heads(const BackendTensor& a, std::int64_t n, bool tiled) override {
    auto out = make({a.shape[0], a.shape[1] * n, a.shape[2], a.shape[3]});
    k_repeat_heads<<<grid(element_count(out.shape)), kThreads>>>(dev(a), dev(out), a.shape[0], a.shape[1], n, a.shape[2] * a.shape[3], tiled);
    launched("repeat_heads");
    return out;
  }

  BackendTensor transpose_last2(const BackendTensor& a) override {
    auto out = make({a.shape[0], a.shape[2], a.shape[1]});
    k_transpose_last2<<<grid(element_count(a.shape)), kThreads>>>(dev(a), dev(out), a.shape[0], a.shape[1], a.shape[2]);
    launched("transpose_last2");
    return out;
  }

  BackendTensor swap_axes_1_2(const BackendTensor& a) override {
    auto out = make({a.shape[0], a.shape[2], a.shape[1], a.shape[3]});
    k_swap12<<<grid(element_count(a.shape)), kThreads>>>(dev(a), dev(out), a.shape[0], a.shape[1], a.shape[2], a.shape[3]);
    launched("swap_axes_1_2");
    return out;
  }

  BackendTensor slice_columns(const BackendTensor& a, std::int64_t offset, std::int64_t width) override {
    auto out = make({a.shape[0], width});
    k_slice_columns<<<grid(a.shape[0] * width), kThreads>>>(dev(a), dev(out), a.shape[0], a.shape[1], offset, width);
    launched("slice_columns");
    return out;
  }

  BackendTensor scale(const BackendTensor& a, Scalar factor) override {
    auto out = make(a.shape);
    k_scale<<<grid(element_count(a.shape)), kThreads>>>(dev(a), dev(out), element_count(a.shape), factor);
    launched("scale");
    return out;
  }

  BackendTensor masked_fill(const BackendTensor& scores, const BackendTensor& keep, Scalar fill) override {
    auto out = make(scores.shape);
    const auto plane = scores.shape[2] * scores.shape[3];
    k_masked_fill<<<grid(element_count(scores.shape)), kThreads>>>(dev(scores), dev(keep), dev(out), scores.shape[0], scores.shape[1], plane, fill);
    launched("masked_fill");
    return out;
  }

  BackendTensor softmax_rows(const BackendTensor& a, EmptyRow empty) override {
    auto out = make(a.shape);
    const int policy = empty == EmptyRow::Zeros ? 1 : empty == EmptyRow::Uniform ? 2 : 0;
    if (a.shape[0] > 0) k_softmax_rows<<<static_cast<unsigned>(a.shape[0]), kThreads>>>(dev(a), dev(out), a.shape[1], policy);
    launched("softmax_rows");
    return out;
  }

  BackendTensor row_sums(const BackendTensor& a) override {
    auto out = make({a.shape[0]});
    if (a.shape[0] > 0) k_row_sums<<<static_cast<unsigned>(a.shape[0]), kThreads>>>(dev(a), dev(out), a.shape[1]);
    launched("row_sums");
    return out;
  }

  BackendTensor mask_keep(std::int64_t B, std::int64_t T, std::int64_t S, bool causal, std::int64_t offset, std::int64_t window,
                          const std::vector<std::int64_t>& lengths, bool flipped) override {
    auto out = make({B, T, S});
    std::int64_t* d_lengths = nullptr;
    if (!lengths.empty()) {
      check(cudaMalloc(&d_lengths, lengths.size() * sizeof(std::int64_t)), "cudaMalloc lengths");
      check(cudaMemcpy(d_lengths, lengths.data(), lengths.size() * sizeof(std::int64_t), cudaMemcpyHostToDevice), "upload lengths");
    }
    k_mask_keep<<<grid(B * T * S), kThreads>>>(dev(out), B, T, S, causal, offset, window, d_lengths, flipped);
    const auto e = cudaGetLastError();
    if (d_lengths != nullptr) cudaFree(d_lengths);
    check(e, "mask_keep");
    return out;
  }

  BackendTensor keep_and(const BackendTensor& keep, const BackendTensor& other) override {
    auto out = make(keep.shape);
    const auto total = element_count(keep.shape), plane = keep.shape[1] * keep.shape[2];
    k_keep_and<<<grid(total), kThreads>>>(dev(keep), dev(other), dev(out), total, plane, other.shape[0] == 1);
    launched("keep_and");
    return out;
  }

  BackendTensor add_mask(const BackendTensor& scores, const BackendTensor& add) override {
    auto out = make(scores.shape);
    const auto total = element_count(scores.shape), plane = scores.shape[2] * scores.shape[3];
    k_add_mask<<<grid(total), kThreads>>>(dev(scores), dev(add), dev(out), total, scores.shape[1], plane, add.shape[0] == 1);
    launched("add_mask");
    return out;
  }

 private:
  cublasHandle_t handle_ = nullptr;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    throw InputError(std::string("--backend cuda: no usable CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(e) + ")");
  }
  if (count == 0) throw InputError("--backend cuda: no CUDA device on this machine");
  return std::make_unique<CudaBackend>();
}

}  // namespace attn

extern "C" attn::Backend* attn_make_cuda_backend() { return attn::make_cuda_backend().release(); }
