// The CUDA backend's kernels: elementwise, layout, range checks, masks, softmax, reductions and the
// fused pass. Not a stand-alone header: cuda_backend.cu includes it inside its anonymous namespace,
// after kThreads, grid() and row_grid(), which the launch macros and kernels use.
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

// out (N, n, m)[i][c][r] = a (N, m, n)[i][r][c]
template <typename I>
__global__ void k_transpose_last2(const Scalar* a, Scalar* out, I N, I m, I n, unsigned* flags) {
  bool high = false, low = false;
  GRID_STRIDE_T(I, o, N * m * n) {
    const I r = o % m, c = (o / m) % n, i = o / (m * n);
    const Scalar v = a[(i * m + r) * n + c];
    out[o] = v;
    range_of(v, high, low);
  }
  note_flags(flags, high, low);
}

// out (A, C, B, D) from a (A, B, C, D)
template <typename I>
__global__ void k_swap12(const Scalar* a, Scalar* out, I A, I B, I C, I D, unsigned* flags) {
  bool high = false, low = false;
  GRID_STRIDE_T(I, o, A * B * C * D) {
    const I d = o % D, b = (o / D) % B, c = (o / (D * B)) % C, x = o / (D * B * C);
    const Scalar v = a[((x * B + b) * C + c) * D + d];
    out[o] = v;
    range_of(v, high, low);
  }
  note_flags(flags, high, low);
}

template <typename I>
__global__ void k_slice_columns(const Scalar* a, Scalar* out, I rows, I n, I offset, I width, unsigned* flags) {
  bool high = false, low = false;
  GRID_STRIDE_T(I, o, rows * width) {
    const Scalar v = a[(o / width) * n + offset + o % width];
    out[o] = v;
    range_of(v, high, low);
  }
  note_flags(flags, high, low);
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

template <typename I>
__global__ void k_mask_keep(Scalar* keep, I B, I T, I S, bool causal, std::int64_t offset, std::int64_t window, const std::int64_t* lengths,
                            bool flipped) {
  GRID_STRIDE_T(I, o, B * T * S) {
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

// The backward pass's elementwise pair: out = a + b (op 0) or a · b (op 1), each rounded once.
template <typename I>
__global__ void k_binary(const Scalar* a, const Scalar* b, Scalar* out, I n, int op, unsigned* flags) {
  bool high = false, low = false;
  GRID_STRIDE_T(I, i, n) {
    const Scalar v = op == 0 ? __fadd_rn(a[i], b[i]) : __fmul_rn(a[i], b[i]);
    out[i] = v;
    range_of(v, high, low);
  }
  note_flags(flags, high, low);
}

// The softmax's backward, a warp per row: d = Σ_j dw_j·w_j in double (shuffles), rounded to float32,
// then w ⊙ (dw − d), the difference and the product each rounded (as the CPU: no fused multiply-add).
__global__ void k_softmax_backward_rows(const Scalar* w, const Scalar* dw, Scalar* out, std::int64_t rows, std::int64_t n, unsigned* flags) {
  const int lane = threadIdx.x % 32;
  bool high = false, low = false;
  const std::int64_t warps = gridDim.x * static_cast<std::int64_t>(blockDim.x) / 32;
  for (std::int64_t row = (blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x) / 32; row < rows; row += warps) {
    const Scalar* pw = w + row * n;
    const Scalar* pd = dw + row * n;
    double dot = 0;
    for (std::int64_t j = lane; j < n; j += 32) dot += static_cast<double>(pd[j]) * static_cast<double>(pw[j]);
    for (int o = 16; o > 0; o /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, o);
    const Scalar d = static_cast<Scalar>(dot);
    for (std::int64_t j = lane; j < n; j += 32) {
      const Scalar v = __fmul_rn(pw[j], __fsub_rn(pd[j], d));
      out[row * n + j] = v;
      range_of(v, high, low);
    }
  }
  note_flags(flags, high, low);
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
// Held to 5 blocks of kThreads per SM (48 registers): at the 80 it takes freely, 3 blocks fit and
// the kernel waits on memory (at B = 8, T = 1024, H = 12 on an H100: 591 µs at 80 registers, 472 at
// 56, and the step faster again at 48; docs/cuda.md).
constexpr int kWarpCols = 32;
__global__ void __launch_bounds__(kThreads, 5) k_softmax_warp(const Scalar* a, Scalar* out, Scalar* sums, std::int64_t rows, std::int64_t n, int empty, unsigned* flags) {
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
