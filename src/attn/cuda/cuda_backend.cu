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
#include <limits>
#include <map>
#include <mutex>
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

// What every tensor of a backend shares, and outlives the backend while a tensor does: the streams,
// the pool the tensors come from, pinned staging for copies to the host, and the byte counts.
struct Context {
  cudaStream_t compute = nullptr;  // every primitive, in order
  cudaStream_t copy = nullptr;     // copies to the host, after the compute stream's event

  Context() {
    check(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), "the backend's setup", "cudaStreamCreate");
    check(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking), "the backend's setup", "cudaStreamCreate");
    // one pool for the run: what a freed tensor held is kept for the next, not returned to the driver
    cudaMemPool_t pool = nullptr;
    int device = 0;
    check(cudaGetDevice(&device), "the backend's setup", "cudaGetDevice");
    check(cudaDeviceGetDefaultMemPool(&pool, device), "the backend's setup", "cudaDeviceGetDefaultMemPool");
    std::uint64_t keep_all = UINT64_MAX;
    check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all), "the backend's setup", "cudaMemPoolSetAttribute");
  }
  ~Context() {
    cudaStreamSynchronize(compute);
    cudaStreamSynchronize(copy);
    for (auto& [p, n] : sizes_) cudaFreeHost(p);
    cudaStreamDestroy(copy);
    cudaStreamDestroy(compute);
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Pinned host memory for n bytes: the smallest block given back earlier that is large enough, or
  // a new one; null when none can be had (the caller then copies without staging).
  void* take_pinned(std::size_t n) {
    {
      std::lock_guard lock(mutex_);
      auto best = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it)
        if (sizes_[*it] >= n && (best == free_.end() || sizes_[*it] < sizes_[*best])) best = it;
      if (best != free_.end()) {
        void* p = *best;
        free_.erase(best);
        return p;
      }
    }
    void* p = nullptr;
    if (cudaMallocHost(&p, n) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    std::lock_guard lock(mutex_);
    sizes_[p] = n;
    return p;
  }
  void give_pinned(void* p) {
    std::lock_guard lock(mutex_);
    free_.push_back(p);
  }
  void count(std::int64_t up, std::int64_t down) {
    std::lock_guard lock(mutex_);
    traffic_.uploaded += up;
    traffic_.downloaded += down;
  }
  Backend::Traffic traffic() {
    std::lock_guard lock(mutex_);
    return traffic_;
  }

 private:
  std::mutex mutex_;  // the pinned blocks and the counts, from any host thread (renderers read in parallel)
  std::map<void*, std::size_t> sizes_;  // every pinned block and its size
  std::vector<void*> free_;             // the pinned blocks not in use
  Backend::Traffic traffic_;
};

// A tensor's device memory, from the pool, given back in stream order when the last view goes.
struct CudaBuffer final : BackendBuffer {
  CudaBuffer(std::shared_ptr<Context> c, std::size_t count, const char* primitive, const Shape& shape) : ctx(std::move(c)), n(count) {
    if (n == 0) return;
    const cudaError_t e = cudaMallocAsync(reinterpret_cast<void**>(&p), n * sizeof(Scalar), ctx->compute);
    if (e == cudaErrorMemoryAllocation) {
      p = nullptr;
      out_of_memory(primitive, "its result " + shape_string(shape) + " needs " + bytes_text(static_cast<double>(n * sizeof(Scalar))));
    }
    check(e, primitive, "cudaMallocAsync");
  }
  ~CudaBuffer() override {
    // after every queued reader on the compute stream; copies to the host wait for theirs (Fetched)
    if (p != nullptr) cudaFreeAsync(p, ctx->compute);
    if (flags != nullptr) cudaFreeAsync(flags, ctx->compute);
  }
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;
  std::shared_ptr<Context> ctx;
  Scalar* p = nullptr;
  std::size_t n = 0;
  // Set by the kernel that wrote the values, where it notes them (elementwise steps): flags[0] when
  // some value is NaN or +inf, flags[1] when some is -inf. Null: unknown, a scan finds out.
  unsigned* flags = nullptr;
};

Scalar* dev(const BackendTensor& t) {
  const auto* b = dynamic_cast<const CudaBuffer*>(t.buffer.get());
  if (b == nullptr) throw InternalError("cuda backend given a tensor from another backend");
  return b->p;
}

// A fetched tensor's way to the host: the device buffer (kept alive), the event after which its
// values are final, and, when copied at once, the pinned block and the event of that copy.
struct Fetched {
  std::shared_ptr<const BackendBuffer> keep;  // the device memory, alive while the host may read it
  std::shared_ptr<Context> ctx;
  const Scalar* p = nullptr;
  std::int64_t n = 0;
  cudaEvent_t ready = nullptr;   // recorded on the compute stream after the producer
  cudaEvent_t copied = nullptr;  // recorded on the copy stream after the pinned copy (staged only)
  Scalar* pinned = nullptr;      // staged copy, or null
  std::once_flag waited_once;
  unsigned* range = nullptr;     // pinned: the range flags (NaN or +inf; -inf), copied at fetch time
  cudaEvent_t ranged = nullptr;  // recorded after that copy

  ~Fetched() {
    if (copied != nullptr) cudaEventSynchronize(copied);  // the copy stream may still read p and write pinned
    if (ranged != nullptr) cudaEventSynchronize(ranged);
    if (pinned != nullptr) ctx->give_pinned(pinned);
    if (range != nullptr) ctx->give_pinned(range);
    if (copied != nullptr) cudaEventDestroy(copied);
    if (ranged != nullptr) cudaEventDestroy(ranged);
    if (ready != nullptr) cudaEventDestroy(ready);
  }
  // Whether some value is out of range (-inf allowed where asked), from the flags: no scan, no copy
  // of the values; true where the flags could not be had (the caller then searches).
  bool maybe_out_of_range(bool minus_inf_allowed) {
    if (range == nullptr) return true;
    check(cudaEventSynchronize(ranged), "fetch", "waiting for the range flags");
    return range[0] != 0 || (!minus_inf_allowed && range[1] != 0);
  }
  void wait_staged() {
    std::call_once(waited_once, [this] { check(cudaEventSynchronize(copied), "fetch", "waiting for the copy to the host"); });
  }
  // n values from flat index `first` into out, from the staged copy or straight from the device
  void read(std::int64_t first, std::int64_t count, Scalar* out) {
    if (count == 0) return;
    if (pinned != nullptr) {
      wait_staged();
      std::memcpy(out, pinned + first, static_cast<std::size_t>(count) * sizeof(Scalar));
      return;
    }
    check(cudaStreamWaitEvent(ctx->copy, ready, 0), "fetch", "cudaStreamWaitEvent");
    check(cudaMemcpyAsync(out, p + first, static_cast<std::size_t>(count) * sizeof(Scalar), cudaMemcpyDeviceToHost, ctx->copy), "fetch",
          "cudaMemcpyAsync");
    check(cudaStreamSynchronize(ctx->copy), "fetch", "cudaStreamSynchronize");
    ctx->count(0, count * static_cast<std::int64_t>(sizeof(Scalar)));
  }
};

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
// The same with the index type I: 32-bit where every index fits (a 64-bit division costs several
// times a 32-bit one, and the layout kernels divide per element).
#define GRID_STRIDE_T(I, i, n) for (I i = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x); i < static_cast<I>(n); \
                                    i += static_cast<I>(blockDim.x) * static_cast<I>(gridDim.x))
// Launches kernel<I> with I = 32 bits where `largest` (every index it forms) fits, 64 bits otherwise.
#define LAUNCH_INDEXED(kernel, largest, blocks, stream, ...)                                                     \
  do {                                                                                                         \
    if ((largest) < (std::int64_t{1} << 31)) kernel<std::uint32_t><<<(blocks), kThreads, 0, (stream)>>>(__VA_ARGS__); \
    else kernel<std::int64_t><<<(blocks), kThreads, 0, (stream)>>>(__VA_ARGS__);                                 \
  } while (0)

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
template <typename I>
__global__ void k_transpose_last2(const Scalar* a, Scalar* out, I N, I m, I n) {
  GRID_STRIDE_T(I, o, N * m * n) {
    const I r = o % m, c = (o / m) % n, i = o / (m * n);
    out[o] = a[(i * m + r) * n + c];
  }
}

// out (A, C, B, D) from a (A, B, C, D)
template <typename I>
__global__ void k_swap12(const Scalar* a, Scalar* out, I A, I B, I C, I D) {
  GRID_STRIDE_T(I, o, A * B * C * D) {
    const I d = o % D, b = (o / D) % B, c = (o / (D * B)) % C, x = o / (D * B * C);
    out[o] = a[((x * B + b) * C + c) * D + d];
  }
}

template <typename I>
__global__ void k_slice_columns(const Scalar* a, Scalar* out, I rows, I n, I offset, I width) {
  GRID_STRIDE_T(I, o, rows * width) out[o] = a[(o / width) * n + offset + o % width];
}

// Whether v is NaN or +inf (high), or -inf (low): what the range flags record.
__device__ inline void range_of(Scalar v, bool& high, bool& low) {
  high = high || isnan(v) || v == INFINITY;
  low = low || v == -INFINITY;
}

// Notes what a thread found (range_of over its values) in the flags of the buffer written: once per
// warp, and only while the flag is unset. Called by every thread at the end of its loop.
__device__ inline void note_flags(unsigned* flags, bool high, bool low) {
  if (flags == nullptr) return;
  const unsigned active = __activemask();
  const unsigned h = __ballot_sync(active, high), l = __ballot_sync(active, low);
  if ((h | l) == 0 || static_cast<int>(threadIdx.x % 32) != __ffs(active) - 1) return;
  volatile unsigned* f = flags;
  if (h != 0 && f[0] == 0) atomicOr(&flags[0], 1u);
  if (l != 0 && f[1] == 0) atomicOr(&flags[1], 1u);
}

// The same flags for values some other producer wrote (cuBLAS, an upload): one read of them all.
template <typename I>
__global__ void k_range_flags(const Scalar* a, I n, unsigned* flags) {
  bool high = false, low = false;
  GRID_STRIDE_T(I, i, n) range_of(a[i], high, low);
  note_flags(flags, high, low);
}

template <typename I>
__global__ void k_scale(const Scalar* a, Scalar* out, I n, Scalar f, unsigned* flags) {
  bool high = false, low = false;
  GRID_STRIDE_T(I, i, n) {
    out[i] = a[i] * f;
    range_of(out[i], high, low);
  }
  note_flags(flags, high, low);
}

// scores (B, G, T·S), keep (B, T·S)
// The same three, four values at a time (float4: every tensor starts a pool allocation, 256-byte
// aligned), where the sizes are multiples of 4: the loads and stores then run at the memory's rate.
__device__ inline void range_of4(const float4& v, bool& high, bool& low) {
  range_of(v.x, high, low), range_of(v.y, high, low), range_of(v.z, high, low), range_of(v.w, high, low);
}

template <typename I>
__global__ void k_range_flags4(const float4* a, I n4, unsigned* flags) {
  bool high = false, low = false;
  GRID_STRIDE_T(I, i, n4) range_of4(a[i], high, low);
  note_flags(flags, high, low);
}

template <typename I>
__global__ void k_scale4(const float4* a, float4* out, I n4, Scalar f, unsigned* flags) {
  bool high = false, low = false;
  GRID_STRIDE_T(I, i, n4) {
    float4 v = a[i];
    v.x *= f, v.y *= f, v.z *= f, v.w *= f;
    out[i] = v;
    range_of4(v, high, low);
  }
  note_flags(flags, high, low);
}

template <typename I>
__global__ void k_masked_fill4(const float4* s, const float4* keep, float4* out, I B, I G, I plane4, Scalar fill, unsigned* flags) {
  bool high = false, low = false;
  GRID_STRIDE_T(I, i, B * G * plane4) {
    const I b = i / (G * plane4);
    const float4 k = keep[b * plane4 + i % plane4];
    float4 v = s[i];
    v.x = k.x != 0 ? v.x : fill, v.y = k.y != 0 ? v.y : fill, v.z = k.z != 0 ? v.z : fill, v.w = k.w != 0 ? v.w : fill;
    out[i] = v;
    range_of4(v, high, low);
  }
  note_flags(flags, high, low);
}

template <typename I>
__global__ void k_masked_fill(const Scalar* s, const Scalar* keep, Scalar* out, I B, I G, I plane, Scalar fill, unsigned* flags) {
  bool high = false, low = false;
  GRID_STRIDE_T(I, i, B * G * plane) {
    const I b = i / (G * plane);
    out[i] = keep[b * plane + i % plane] != 0 ? s[i] : fill;
    range_of(out[i], high, low);
  }
  note_flags(flags, high, low);
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

// Rows of up to 32·kWarpCols entries: a warp per row, the row in registers (one read), reductions by
// shuffles. Also writes each row's sum of the weights it wrote (in double, as row_sums adds them),
// which row_sums then hands back instead of reading the weights again, and notes the range flags.
constexpr int kWarpCols = 32;
__global__ void k_softmax_warp(const Scalar* a, Scalar* out, Scalar* sums, std::int64_t rows, std::int64_t n, int empty, unsigned* flags) {
  const int lane = threadIdx.x % 32;
  bool high = false, low = false;
  const std::int64_t warps = gridDim.x * static_cast<std::int64_t>(blockDim.x) / 32;
  for (std::int64_t row = (blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x) / 32; row < rows; row += warps) {
    const Scalar* x = a + row * n;
    Scalar* y = out + row * n;
    float v[kWarpCols];
    float mx = -INFINITY;
    bool nan = false;
#pragma unroll
    for (int c = 0; c < kWarpCols; ++c) {
      const std::int64_t j = lane + 32 * c;
      v[c] = j < n ? x[j] : -INFINITY;
      mx = fmaxf(mx, v[c]);
      nan = nan || isnan(v[c]);
    }
    for (int o = 16; o > 0; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    if (__any_sync(0xffffffffu, nan)) mx = NAN;  // (fmaxf passes NaN by: a row holding one is NaN throughout)
    double sum = 0;
    if (mx == -INFINITY) {
      const Scalar fill = empty == 1 ? 0.0f : empty == 2 ? static_cast<Scalar>(1.0 / static_cast<double>(n)) : NAN;
#pragma unroll
      for (int c = 0; c < kWarpCols; ++c) v[c] = fill;
    } else {
#pragma unroll
      for (int c = 0; c < kWarpCols; ++c)
        if (lane + 32 * c < n) v[c] = expf(v[c] - mx), sum += v[c];
      for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
      const Scalar inv = static_cast<Scalar>(1.0 / sum);
#pragma unroll
      for (int c = 0; c < kWarpCols; ++c) v[c] *= inv;
    }
    double total = 0;
#pragma unroll
    for (int c = 0; c < kWarpCols; ++c) {
      const std::int64_t j = lane + 32 * c;
      if (j < n) {
        y[j] = v[c];
        total += v[c];
        range_of(v[c], high, low);
      }
    }
    for (int o = 16; o > 0; o /= 2) total += __shfl_xor_sync(0xffffffffu, total, o);
    if (lane == 0) sums[row] = static_cast<Scalar>(total);
  }
  note_flags(flags, high, low);
}

// RMSNorm, a warp per row: the mean of squares in double (shuffles), then x · (1/√(mean + eps)) · w,
// each product rounded on its own.
__global__ void k_rms_norm_rows(const Scalar* a, const Scalar* w, Scalar* out, std::int64_t rows, std::int64_t n, double eps) {
  const int lane = threadIdx.x % 32;
  const std::int64_t warps = gridDim.x * static_cast<std::int64_t>(blockDim.x) / 32;
  for (std::int64_t row = (blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x) / 32; row < rows; row += warps) {
    const Scalar* x = a + row * n;
    double sum = 0;
    for (std::int64_t j = lane; j < n; j += 32) sum += static_cast<double>(__fmul_rn(x[j], x[j]));
    for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    const Scalar inv = static_cast<Scalar>(1.0 / sqrt(sum / static_cast<double>(n) + eps));
    for (std::int64_t j = lane; j < n; j += 32) out[row * n + j] = __fmul_rn(w[j], __fmul_rn(x[j], inv));
  }
}

// A block per row, each block taking every gridDim.x-th row: pass 1 the row max, pass 2 the sum of
// exp(x - max) (in double, as the CPU), pass 3 the normalised values. A row of all -inf gets the
// empty-row policy's value. (Every thread of a block walks the same rows: the reductions' barriers
// are reached by all of them.)
__global__ void k_softmax_rows(const Scalar* a, Scalar* out, std::int64_t rows, std::int64_t n, int empty, unsigned* flags) {
  bool high = false, low = false;
  __shared__ Scalar smax[kThreads];
  __shared__ double ssum[kThreads];
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const Scalar* x = a + row * n;
    Scalar* y = out + row * n;
    Scalar mx = -INFINITY, nan = 0;  // (fmaxf passes NaN by: a row holding one is NaN throughout, not empty)
    for (std::int64_t j = threadIdx.x; j < n; j += kThreads) mx = fmaxf(mx, x[j]), nan = isnan(x[j]) ? 1.0f : nan;
    mx = block_reduce(mx, smax, [](Scalar l, Scalar r) { return fmaxf(l, r); });
    if (block_reduce(nan, smax, [](Scalar l, Scalar r) { return fmaxf(l, r); }) != 0) mx = NAN;
    if (mx == -INFINITY) {
      const Scalar fill = empty == 1 ? 0.0f : empty == 2 ? static_cast<Scalar>(1.0 / static_cast<double>(n)) : NAN;
      for (std::int64_t j = threadIdx.x; j < n; j += kThreads) y[j] = fill, range_of(fill, high, low);
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
    for (std::int64_t j = threadIdx.x; j < n; j += kThreads) y[j] *= inv, range_of(y[j], high, low);
  }
  note_flags(flags, high, low);
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

// The first flat index whose value is not finite (-inf allowed where asked): each thread reports
// the first of its own indices, the smallest of those wins.
__global__ void k_first_nonfinite(const Scalar* a, std::int64_t n, bool allow_minus_inf, unsigned long long* first) {
  GRID_STRIDE(i, n) {
    const Scalar v = a[i];
    if (!isfinite(v) && !(allow_minus_inf && v == -INFINITY)) {
      atomicMin(first, static_cast<unsigned long long>(i));
      return;
    }
  }
}

// A warp per row: a row is empty when every entry is -inf (most rows stop at their first 32).
__global__ void k_empty_rows(const Scalar* a, std::int64_t rows, std::int64_t n, unsigned long long* count, unsigned long long* first) {
  const int lane = threadIdx.x % 32;
  const std::int64_t warps = gridDim.x * static_cast<std::int64_t>(blockDim.x) / 32;
  for (std::int64_t r = (blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x) / 32; r < rows; r += warps) {
    bool all = true;
    for (std::int64_t j0 = 0; j0 < n && all; j0 += 32) {
      const std::int64_t j = j0 + lane;
      all = __all_sync(0xffffffffu, j >= n || a[r * n + j] == -INFINITY);
    }
    if (all && lane == 0) {
      atomicAdd(count, 1ULL);
      atomicMin(first, static_cast<unsigned long long>(r));
    }
  }
}

// The fused pass (FlashAttention's forward, Dao et al. 2022, in FP32 on the CUDA cores): a block of
// kFusedRows threads takes kFusedRows query rows of one (batch, head), a thread per row holding its
// query and its running output in registers. Keys and values come through shared memory BK at a
// time; per tile each thread scores its row against the BK keys, moves its running max m to the
// tile's, rescales what it has summed (l, o) by exp(m_old − m_new), and adds exp(s − m_new) · v.
// At the end o / l is the context row; a row that saw no key follows the empty-row policy as
// softmax_rows does (NaN, zeros, or the mean of all S value rows).
constexpr int kFusedRows = 128;

struct FusedArgs {
  const Scalar *q, *k, *v;
  Scalar* out;
  std::int64_t B, H, Hkv, T, S, hs, hv;
  Scalar scale;
  bool causal;
  std::int64_t offset, window;
  const std::int64_t* lengths;
  int empty;
};

__device__ inline bool fused_kept(const FusedArgs& a, std::int64_t i, std::int64_t j, std::int64_t len) {
  return j < len && !(a.causal && j > i + a.offset) && !(a.window > 0 && j <= i + a.offset - a.window);
}

// The keys a tile of rows [i0, last] may see: [lo, hi].
__device__ inline void fused_range(const FusedArgs& a, std::int64_t i0, std::int64_t last, std::int64_t len, std::int64_t& lo, std::int64_t& hi) {
  hi = a.causal ? min(len - 1, last + a.offset) : len - 1;
  lo = a.window > 0 ? max(std::int64_t{0}, i0 + a.offset - a.window + 1) : 0;
}

// A row that saw no key: the empty-row policy's weights (NaN, zeros, 1/S each) times all S value rows.
__device__ void fused_empty_row(const FusedArgs& a, const Scalar* vh, Scalar* y) {
  for (std::int64_t e = 0; e < a.hv; ++e) {
    Scalar fill = a.empty == 1 ? 0.0f : NAN;
    if (a.empty == 2) {
      const Scalar w = static_cast<Scalar>(1.0 / static_cast<double>(a.S));
      fill = 0;
      for (std::int64_t j = 0; j < a.S; ++j) fill = fmaf(w, vh[j * a.hv + e], fill);
    }
    y[e] = fill;
  }
}

template <int D, int BK>  // D: a multiple of 4, at least hs and hv
__global__ void __launch_bounds__(kFusedRows) k_fused_attention(FusedArgs a) {
  __shared__ float4 ks[BK][D / 4];
  __shared__ float4 vs[BK][D / 4];
  const std::int64_t per_head = (a.T + kFusedRows - 1) / kFusedRows, group = a.H / a.Hkv;
  for (std::int64_t tile = blockIdx.x; tile < a.B * a.H * per_head; tile += gridDim.x) {
    const std::int64_t bh = tile / per_head, b = bh / a.H, h = bh % a.H;
    const std::int64_t i0 = tile % per_head * kFusedRows, i = i0 + threadIdx.x, last = min(a.T, i0 + kFusedRows) - 1;
    const bool active = i < a.T;
    const std::int64_t len = a.lengths != nullptr ? min(a.lengths[b], a.S) : a.S;
    std::int64_t lo, hi;
    fused_range(a, i0, last, len, lo, hi);
    const Scalar* kh = a.k + (b * a.Hkv + h / group) * a.S * a.hs;
    const Scalar* vh = a.v + (b * a.Hkv + h / group) * a.S * a.hv;
    float q[D], o[D];
#pragma unroll
    for (int e = 0; e < D; ++e) {
      q[e] = active && e < a.hs ? a.q[(bh * a.T + i) * a.hs + e] : 0.0f;
      o[e] = 0.0f;
    }
    float m = -INFINITY, l = 0;
    bool nan = false;  // a kept score that is NaN makes the row NaN (as the softmax of such a row)
    for (std::int64_t j0 = lo; j0 <= hi; j0 += BK) {
      __syncthreads();  // the last tile's readers are done
      for (int x = threadIdx.x; x < BK * D; x += kFusedRows) {
        const int r = x / D, e = x % D;
        const std::int64_t j = j0 + r;
        reinterpret_cast<float*>(&ks[r][0])[e] = j <= hi && e < a.hs ? kh[j * a.hs + e] : 0.0f;
        reinterpret_cast<float*>(&vs[r][0])[e] = j <= hi && e < a.hv ? vh[j * a.hv + e] : 0.0f;
      }
      __syncthreads();
      if (!active) continue;
      float sc[BK];
      float tile_max = -INFINITY;
#pragma unroll
      for (int r = 0; r < BK; ++r) {
        float d0 = 0, d1 = 0, d2 = 0, d3 = 0;  // four independent chains
#pragma unroll
        for (int c = 0; c < D / 4; ++c) {
          const float4 kk = ks[r][c];
          d0 = fmaf(q[4 * c], kk.x, d0);
          d1 = fmaf(q[4 * c + 1], kk.y, d1);
          d2 = fmaf(q[4 * c + 2], kk.z, d2);
          d3 = fmaf(q[4 * c + 3], kk.w, d3);
        }
        const std::int64_t j = j0 + r;
        sc[r] = j <= hi && fused_kept(a, i, j, len) ? ((d0 + d1) + (d2 + d3)) * a.scale : -INFINITY;
        tile_max = fmaxf(tile_max, sc[r]);
        nan = nan || isnan(sc[r]);
      }
      if (tile_max == -INFINITY) continue;  // no key of this tile for this row
      const float m_new = fmaxf(m, tile_max), alpha = expf(m - m_new);
      l *= alpha;
#pragma unroll
      for (int e = 0; e < D; ++e) o[e] *= alpha;
#pragma unroll
      for (int r = 0; r < BK; ++r) {
        const float p = expf(sc[r] - m_new);
        l += p;
#pragma unroll
        for (int c = 0; c < D / 4; ++c) {
          const float4 vv = vs[r][c];
          o[4 * c] = fmaf(p, vv.x, o[4 * c]);
          o[4 * c + 1] = fmaf(p, vv.y, o[4 * c + 1]);
          o[4 * c + 2] = fmaf(p, vv.z, o[4 * c + 2]);
          o[4 * c + 3] = fmaf(p, vv.w, o[4 * c + 3]);
        }
      }
      m = m_new;
    }
    if (!active) continue;
    Scalar* y = a.out + (bh * a.T + i) * a.hv;
    if (nan) {
      for (std::int64_t e = 0; e < a.hv; ++e) y[e] = NAN;
    } else if (m == -INFINITY) {
      fused_empty_row(a, vh, y);
    } else {
#pragma unroll
      for (int e = 0; e < D; ++e)
        if (e < a.hv) y[e] = o[e] / l;
    }
  }
}

// Heads wider than 128: the same pass, a key at a time, the running output in `out` itself.
__global__ void k_fused_attention_wide(FusedArgs a) {
  const std::int64_t group = a.H / a.Hkv;
  GRID_STRIDE(row, a.B * a.H * a.T) {
    const std::int64_t i = row % a.T, bh = row / a.T, b = bh / a.H, h = bh % a.H;
    const std::int64_t len = a.lengths != nullptr ? min(a.lengths[b], a.S) : a.S;
    std::int64_t lo, hi;
    fused_range(a, i, i, len, lo, hi);
    const Scalar* qr = a.q + row * a.hs;
    const Scalar* kh = a.k + (b * a.Hkv + h / group) * a.S * a.hs;
    const Scalar* vh = a.v + (b * a.Hkv + h / group) * a.S * a.hv;
    Scalar* y = a.out + row * a.hv;
    for (std::int64_t e = 0; e < a.hv; ++e) y[e] = 0;
    float m = -INFINITY, l = 0;
    bool nan = false;
    for (std::int64_t j = lo; j <= hi; ++j) {
      if (!fused_kept(a, i, j, len)) continue;
      float d = 0;
      for (std::int64_t e = 0; e < a.hs; ++e) d = fmaf(qr[e], kh[j * a.hs + e], d);
      const float s = d * a.scale;
      nan = nan || isnan(s);
      if (s == -INFINITY || isnan(s)) continue;
      const float m_new = fmaxf(m, s), alpha = expf(m - m_new), p = expf(s - m_new);
      l = l * alpha + p;
      for (std::int64_t e = 0; e < a.hv; ++e) y[e] = fmaf(p, vh[j * a.hv + e], y[e] * alpha);
      m = m_new;
    }
    if (nan) {
      for (std::int64_t e = 0; e < a.hv; ++e) y[e] = NAN;
    } else if (m == -INFINITY) {
      fused_empty_row(a, vh, y);
    } else {
      for (std::int64_t e = 0; e < a.hv; ++e) y[e] /= l;
    }
  }
}

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
  // the primitives' work (copies to the host go on beside it)
  void synchronize() override { check(cudaStreamSynchronize(stream()), "synchronize", "cudaStreamSynchronize"); }
  Traffic traffic() const override { return ctx_->traffic(); }
  Memory memory() override {
    std::size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "memory", "cudaMemGetInfo");
    return {static_cast<std::int64_t>(free), static_cast<std::int64_t>(total)};
  }

  BackendTensor upload(const Tensor& t) override {
    auto d = make(t.shape(), "upload");
    const auto bytes = static_cast<std::size_t>(t.size()) * sizeof(Scalar);
    if (bytes > 0) check(cudaMemcpyAsync(dev(d), t.data(), bytes, cudaMemcpyHostToDevice, stream()), "upload", "cudaMemcpyAsync");
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
      if (flags == nullptr) {
        check(cudaMallocAsync(reinterpret_cast<void**>(&scratch), 2 * sizeof(unsigned), stream()), "fetch", "cudaMallocAsync");
        check(cudaMemsetAsync(scratch, 0, 2 * sizeof(unsigned), stream()), "fetch", "cudaMemsetAsync");
        if (f->n % 4 == 0) {
          LAUNCH_INDEXED(k_range_flags4, f->n, grid(f->n / 4), stream(), reinterpret_cast<const float4*>(f->p), f->n / 4, scratch);
        } else {
          LAUNCH_INDEXED(k_range_flags, f->n, grid(f->n), stream(), f->p, f->n, scratch);
        }
        done("fetch");
        flags = scratch;
      }
      check(cudaEventCreateWithFlags(&f->ranged, cudaEventDisableTiming), "fetch", "cudaEventCreate");
      check(cudaMemcpyAsync(f->range, flags, 2 * sizeof(unsigned), cudaMemcpyDeviceToHost, stream()), "fetch", "cudaMemcpyAsync");
      check(cudaEventRecord(f->ranged, stream()), "fetch", "cudaEventRecord");
      if (scratch != nullptr) check(cudaFreeAsync(scratch, stream()), "fetch", "cudaFreeAsync");
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

  BackendTensor soft_cap(const BackendTensor& a, Scalar cap) override {
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
    auto out = make({a.shape[0], a.shape[2], a.shape[1]}, "transpose_last2");
    LAUNCH_INDEXED(k_transpose_last2, element_count(a.shape), grid(element_count(a.shape)), stream(), dev(a), dev(out), a.shape[0], a.shape[1],
                   a.shape[2]);
    done("transpose_last2");
    return out;
  }

  BackendTensor swap_axes_1_2(const BackendTensor& a) override {
    checks::swap_axes_1_2(kName, a);
    auto out = make({a.shape[0], a.shape[2], a.shape[1], a.shape[3]}, "swap_axes_1_2");
    LAUNCH_INDEXED(k_swap12, element_count(a.shape), grid(element_count(a.shape)), stream(), dev(a), dev(out), a.shape[0], a.shape[1], a.shape[2],
                   a.shape[3]);
    done("swap_axes_1_2");
    return out;
  }

  BackendTensor slice_columns(const BackendTensor& a, std::int64_t offset, std::int64_t width) override {
    checks::slice_columns(kName, a, offset, width);
    auto out = make({a.shape[0], width}, "slice_columns");
    LAUNCH_INDEXED(k_slice_columns, element_count(a.shape), grid(a.shape[0] * width), stream(), dev(a), dev(out), a.shape[0], a.shape[1], offset,
                   width);
    done("slice_columns");
    return out;
  }

  BackendTensor scale(const BackendTensor& a, Scalar factor) override {
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

  BackendTensor masked_fill(const BackendTensor& scores, const BackendTensor& keep, Scalar fill) override {
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
    k_mask_keep<<<grid(B * T * S), kThreads, 0, stream()>>>(dev(out), B, T, S, causal, offset, window, d_lengths, flipped);
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

  EmptyRows empty_rows(const BackendTensor& a) override {
    checks::empty_rows(kName, a);
    const auto rows = a.shape[0], n = a.shape[1];
    if (rows == 0 || n == 0) return {};
    auto slots = make({4}, "empty_rows");  // (two 64-bit counters in four floats' room)
    auto* c = reinterpret_cast<unsigned long long*>(dev(slots));
    const unsigned long long init[2] = {0, ~0ULL};
    check(cudaMemcpyAsync(c, init, sizeof init, cudaMemcpyHostToDevice, stream()), "empty_rows", "cudaMemcpyAsync");
    k_empty_rows<<<grid(rows * 32), kThreads, 0, stream()>>>(dev(a), rows, n, c, c + 1);
    done("empty_rows");
    unsigned long long got[2];
    check(cudaMemcpyAsync(got, c, sizeof got, cudaMemcpyDeviceToHost, stream()), "empty_rows", "cudaMemcpyAsync");
    synchronize();
    return {static_cast<std::int64_t>(got[0]), got[0] == 0 ? -1 : static_cast<std::int64_t>(got[1])};
  }

  BackendTensor fused_attention(const BackendTensor& q, const BackendTensor& k, const BackendTensor& v, Scalar scale, const FusedMask& mask,
                                EmptyRow empty) override {
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
