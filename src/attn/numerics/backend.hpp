// The numeric primitives a backend provides, on tensors it holds (host memory, or a device's).
// No step order, no names, no formatting: the pipeline decides what to compute and in which order.
#pragma once

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "attn/core/error.hpp"
#include "attn/core/door.hpp"
#include "attn/core/tensor.hpp"

namespace attn {

struct Spec;

// The device cannot do the run: it is busy or unusable, or out of memory. Not the input's fault
// and not a bug in attn either, but reported as bad usage (exit 2, with what to change): another
// backend, a smaller problem, or another time. Tests that need the device skip on it.
class DeviceError : public InputError {
 public:
  using InputError::InputError;
};

// Storage owned by one backend; opaque to everyone else.
struct BackendBuffer {
  virtual ~BackendBuffer() = default;
};

// A tensor living in a backend. Reshaping is a view: same buffer, new shape.
struct BackendTensor {
  Shape shape;
  std::shared_ptr<const BackendBuffer> buffer;

  BackendTensor view(Shape new_shape) const {
    if (element_count(new_shape) != element_count(shape)) throw_bad_view(shape, new_shape);
    return BackendTensor{std::move(new_shape), buffer};
  }
  // (inline: the CUDA module, which does not link backend.cpp, makes views too)
  [[noreturn]] static void throw_bad_view(const Shape& from, const Shape& to) {
    throw InternalError("backend view " + shape_string(from) + " -> " + shape_string(to) + " changes the size");
  }
};

// Scalars (a factor, a cap, a fill) come in float64, as exact as the input gave them; a float32
// backend rounds them to float32 first, a float64 one (attn check's judge) uses them as they are.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;

  virtual BackendTensor upload(const Tensor& host) = 0;
  // When a device's tensor is copied to the host. Soon: the copy starts now (pinned, asynchronous,
  // beside the primitives that follow) and a reader waits for it; OnRead: nothing moves until the
  // values are first read (a step the run does not show stays on the device).
  enum class Fetch { Soon, OnRead };
  // The host's view of t: the same values, shape t.shape. A host backend returns its own tensor.
  virtual Tensor fetch(const BackendTensor& t, Fetch when) = 0;
  Tensor download(const BackendTensor& t) { return fetch(t, Fetch::Soon); }

  // a (N, m, k) · b (N, k, n) -> (N, m, n); b may also be (k, n), shared by all N.
  virtual BackendTensor matmul(const BackendTensor& a, const BackendTensor& b) = 0;
  // a (..., n) + bias (n) -> (..., n)
  virtual BackendTensor add_bias(const BackendTensor& a, const BackendTensor& bias) = 0;
  // a (N, m, n) -> (N, n, m)
  virtual BackendTensor transpose_last2(const BackendTensor& a) = 0;
  // a (A, B, C, D) -> (A, C, B, D): the head split's and the merge's transpose
  virtual BackendTensor swap_axes_1_2(const BackendTensor& a) = 0;
  // a (N, n) -> (N, width): columns [offset, offset + width)
  virtual BackendTensor slice_columns(const BackendTensor& a, std::int64_t offset, std::int64_t width) = 0;
  // a (...) * factor
  virtual BackendTensor scale(const BackendTensor& a, double factor) = 0;
  // scores (B, G, T, S), keep (B, T, S) of 1 (keep) / 0 (block) -> blocked entries set to fill
  virtual BackendTensor masked_fill(const BackendTensor& scores, const BackendTensor& keep, double fill) = 0;
  // What softmax gives a row whose entries are all -inf (it has no distribution).
  enum class EmptyRow { Nan, Zeros, Uniform };
  // a (N, n) -> softmax along n, row max subtracted first
  virtual BackendTensor softmax_rows(const BackendTensor& a, EmptyRow empty = EmptyRow::Nan) = 0;
  // a (N, n) -> (N): each row's sum
  virtual BackendTensor row_sums(const BackendTensor& a) = 0;
  // a (N, n), w (n) -> (N, n): x · (1/√(mean(x²) + eps)) · w per row, the mean in double, then two
  // float32 products (RMSNorm as the model hub's code writes it: normalise, then the weight)
  virtual BackendTensor rms_norm_rows(const BackendTensor& a, const BackendTensor& w, double eps) = 0;
  // a (N, n) -> how many rows hold -inf in every entry (a query with every key masked), and the
  // first of them (-1 when none). n = 0 counts no row. A dry run (the shape backend) has none.
  struct EmptyRows {
    std::int64_t count = 0, first = -1;
  };
  virtual EmptyRows empty_rows(const BackendTensor& a) = 0;
  // The same count, given when the returned function is called: a device counts in its queue's order
  // and the caller goes on queueing work until it needs the answer (the host waits only then).
  virtual std::function<EmptyRows()> empty_rows_later(const BackendTensor& a) {
    return [r = empty_rows(a)] { return r; };
  }
  // The keep pattern (B, T, S): 1 where query i may attend key j: j <= i + offset when causal, and
  // j > i + offset − window as well with a sliding window (window > 0), j < lengths[b] when lengths
  // are given; flipped inverts it (the mask-flipped mistake).
  virtual BackendTensor mask_keep(std::int64_t B, std::int64_t T, std::int64_t S, bool causal, std::int64_t offset, std::int64_t window,
                                  const std::vector<std::int64_t>& lengths, bool flipped) = 0;
  // keep (B, T, S) and other (1 or B, T, S) -> 1 where both are 1
  virtual BackendTensor keep_and(const BackendTensor& keep, const BackendTensor& other) = 0;
  // scores (B, G, T, S) + add (1 or B, T, S), the same add for every group (head)
  virtual BackendTensor add_mask(const BackendTensor& scores, const BackendTensor& add) = 0;

  // a (N, L, h) -> (N, L, h): row l at table row first + l of cos and sin (P, R/2). Each pair of the
  // row's first R features turns by that row's angle: (x, y) -> (x·cos − y·sin, y·cos + x·sin), in
  // float32, unfused. Pairs (i, i + R/2), or (2i, 2i + 1) when interleaved; features from R on pass
  // unchanged (partial rotary).
  virtual BackendTensor rotate_pairs(const BackendTensor& a, const BackendTensor& cos, const BackendTensor& sin, std::int64_t first,
                                     bool interleaved) = 0;

  // a (N, L, h), b (N, M, h) -> (N, L + M, h): b's rows after a's (a KV cache's append; L may be 0)
  virtual BackendTensor append_rows(const BackendTensor& a, const BackendTensor& b) = 0;
  // a (B, G, L, h) -> (B, G·n, L, h): each head repeated n times. Head g·n + r is a's head g, as HF
  // Llama's repeat_kv (grouped-query attention); tiled puts a's head g at g, G + g, 2G + g, … instead.
  virtual BackendTensor repeat_heads(const BackendTensor& a, std::int64_t n, bool tiled) = 0;

  // a (...) -> cap · tanh(a / cap), the division and the product in float32 (logit soft-capping)
  virtual BackendTensor soft_cap(const BackendTensor& a, double cap) = 0;
  // slopes (H) -> (H, T, S): −slopes[h] · (i + offset − j), ALiBi's bias (one product, rounded once)
  virtual BackendTensor distance_bias(const BackendTensor& slopes, std::int64_t T, std::int64_t S, std::int64_t offset) = 0;

  // q (B, H, T, hs), k (B, Hkv, S, hs), v (B, Hkv, S, hv) -> the context (B, H, T, hv), as
  // softmax_rows(masked_fill(scale(q·kᵀ), mask_keep(...), -inf), empty) · v, without holding any
  // [T, S] matrix: FlashAttention's pass over the keys with a running row max and sum (Dao et al.
  // 2022). Query head h reads kv head h / (H / Hkv) (grouped-query; Hkv divides H). Key j is kept for
  // query i as mask_keep's rule (causal with offset, the window, j < lengths[b]; no flip).
  struct FusedMask {
    bool causal = false;
    std::int64_t offset = 0, window = 0;
    std::vector<std::int64_t> lengths;
  };
  virtual BackendTensor fused_attention(const BackendTensor& q, const BackendTensor& k, const BackendTensor& v, double scale,
                                        const FusedMask& mask, EmptyRow empty) = 0;

  // ---- the backward pass's primitives (attn backward). A backend that lacks them refuses (exit 2).
  // a (...) + b (...), the same shape
  virtual BackendTensor add(const BackendTensor& a, const BackendTensor& b) { return lacks_backward("add", a, b); }
  // a (...) ⊙ b (...), the same shape
  virtual BackendTensor mul(const BackendTensor& a, const BackendTensor& b) { return lacks_backward("mul", a, b); }
  // w (N, n) a softmax's rows, dw (N, n) the gradient of its output -> the gradient of its input,
  // w ⊙ (dw − Σ_j dw_j·w_j) per row (the row's sum in double, then float32 products)
  virtual BackendTensor softmax_backward_rows(const BackendTensor& w, const BackendTensor& dw) { return lacks_backward("softmax_backward_rows", w, dw); }

  // (optional) Floating-point operations done since the last call; 0 when the backend does not count.
  virtual double take_flops() { return 0; }
  // (optional) Waits until all queued work is done, so a host clock can time it (a GPU queues work).
  virtual void synchronize() {}
  // (optional) Memory the backend's tensors can still take, in bytes, and its total: a device's.
  // Both -1 where the backend does not say (host memory: --max-memory guards that).
  struct Memory {
    std::int64_t free = -1, total = -1;
  };
  virtual Memory memory() { return {}; }
  // (optional) Bytes copied to and from the backend's memory so far (a device's: over PCIe); 0 for
  // a backend whose tensors are the host's.
  struct Traffic {
    std::int64_t uploaded = 0, downloaded = 0;
  };
  virtual Traffic traffic() const { return {}; }

 private:
  [[noreturn]] BackendTensor lacks_backward(std::string_view what, const BackendTensor&, const BackendTensor&) {
    throw InputError(std::string("the ") + std::string(name()) + " backend has no backward primitives yet (" + std::string(what) +
                     "): attn backward runs on --backend cpu");
  }
};

// A backend that computes nothing: shapes only, and the floating-point operations each primitive
// would do. The pipeline run on it is a dry run: every step's shape and cost, no allocation.
std::unique_ptr<Backend> make_shape_backend();

// "cpu" or "cuda". Throws InputError naming the reason when the backend cannot be had: a build
// without CUDA, or no device (the option spelled as door does).
std::unique_ptr<Backend> make_backend(std::string_view name, Door door = Door::Cli);

std::unique_ptr<Backend> make_cpu_backend();
// Every primitive in float64, from the inputs as exact as the spec knows them (Tensor::wide); its
// steps hold their float64 values beside their float32 rounding. attn check's judge (check.hpp).
std::unique_ptr<Backend> make_float64_backend();

}  // namespace attn
