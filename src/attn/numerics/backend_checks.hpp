// The shape checks of backend.hpp's primitives, one function per primitive, shared by every backend
// that computes (cpu, cuda) and the shape-only one. A failed check is a bug in the pipeline, not in
// the user's input: InternalError "<backend> backend: <what the primitive wants>, got <shape>".
// Header-only: the CUDA module (built by nvcc, loaded with dlopen) includes it too.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attn/numerics/backend.hpp"
#include "attn/core/error.hpp"
#include "attn/core/tensor.hpp"

namespace attn::backend_checks {

inline void require(bool ok, std::string_view backend, const char* what, const BackendTensor& t) {
  if (!ok) throw InternalError(std::string(backend) + " backend: " + what + ", got " + shape_string(t.shape));
}

// a (N, m, k), b (N, k, n) or (k, n)
inline void matmul(std::string_view be, const BackendTensor& a, const BackendTensor& b) {
  require(a.shape.size() == 3, be, "matmul wants a (N, m, k)", a);
  const bool shared_b = b.shape.size() == 2;
  require(shared_b ? b.shape[0] == a.shape[2] : (b.shape.size() == 3 && b.shape[0] == a.shape[0] && b.shape[1] == a.shape[2]), be,
          "matmul wants b (k, n) or (N, k, n)", b);
}

// a (..., n), bias (n)
inline void add_bias(std::string_view be, const BackendTensor& a, const BackendTensor& bias) {
  require(bias.shape.size() == 1 && !a.shape.empty() && a.shape.back() == bias.shape[0], be, "add_bias wants (n)", bias);
}

// a (N, L, h), cos and sin (P, R/2) with a row for each of a's L positions from `first`
inline void rotate_pairs(std::string_view be, const BackendTensor& a, const BackendTensor& cos, const BackendTensor& sin, std::int64_t first) {
  require(a.shape.size() == 3, be, "rotate_pairs wants a (N, L, h)", a);
  require(cos.shape.size() == 2 && sin.shape == cos.shape && 2 * cos.shape[1] <= a.shape[2] && first >= 0 && first + a.shape[1] <= cos.shape[0], be,
          "rotate_pairs wants cos and sin (P, R/2) with R ≤ h and a row for every position", cos);
}

inline void soft_cap(std::string_view be, const BackendTensor& a, double cap) { require(cap > 0, be, "soft_cap wants a positive cap", a); }

inline void distance_bias(std::string_view be, const BackendTensor& slopes) {
  require(slopes.shape.size() == 1, be, "distance_bias wants slopes (H)", slopes);
}

// (..., L, h) and (..., M, h), M > 0
inline void append_rows(std::string_view be, const BackendTensor& a, const BackendTensor& b) {
  const auto r = a.shape.size();
  require(r >= 2 && b.shape.size() == r && a.shape.back() == b.shape.back() && b.shape[r - 2] > 0, be, "append_rows wants (N, L, h) and (N, M, h)", a);
}

inline void repeat_heads(std::string_view be, const BackendTensor& a, std::int64_t n) {
  require(a.shape.size() == 4 && n >= 1, be, "repeat_heads wants (B, G, L, h) and n >= 1", a);
}

inline void transpose_last2(std::string_view be, const BackendTensor& a) { require(a.shape.size() == 3, be, "transpose_last2 wants (N, m, n)", a); }

inline void swap_axes_1_2(std::string_view be, const BackendTensor& a) { require(a.shape.size() == 4, be, "swap_axes_1_2 wants (A, B, C, D)", a); }

inline void slice_columns(std::string_view be, const BackendTensor& a, std::int64_t offset, std::int64_t width) {
  require(a.shape.size() == 2 && offset >= 0 && width >= 0 && offset + width <= a.shape[1], be, "slice_columns out of range", a);
}

// scores (B, G, T, S), keep (B, T, S)
inline void masked_fill(std::string_view be, const BackendTensor& scores, const BackendTensor& keep) {
  require(scores.shape.size() == 4, be, "masked_fill wants scores (B, G, T, S)", scores);
  require(keep.shape.size() == 3 && keep.shape[0] == scores.shape[0] && keep.shape[1] == scores.shape[2] && keep.shape[2] == scores.shape[3], be,
          "masked_fill wants keep (B, T, S)", keep);
}

inline void softmax_rows(std::string_view be, const BackendTensor& a) { require(a.shape.size() == 2, be, "softmax_rows wants (N, n)", a); }

inline void row_sums(std::string_view be, const BackendTensor& a) { require(a.shape.size() == 2, be, "row_sums wants (N, n)", a); }

// sizes not negative, and a length per batch row when lengths are given
inline void mask_keep(std::string_view be, std::int64_t B, std::int64_t T, std::int64_t S, const std::vector<std::int64_t>& lengths) {
  if (B < 0 || T < 0 || S < 0 || (!lengths.empty() && static_cast<std::int64_t>(lengths.size()) != B)) {
    throw InternalError(std::string(be) + " backend: mask_keep wants B, T, S ≥ 0 and a length per batch row, got B " + std::to_string(B) + ", T " +
                        std::to_string(T) + ", S " + std::to_string(S) + " and " + std::to_string(lengths.size()) + " lengths");
  }
}

// keep (B, T, S), other (1 or B, T, S)
inline void keep_and(std::string_view be, const BackendTensor& keep, const BackendTensor& other) {
  require(keep.shape.size() == 3 && other.shape.size() == 3 && other.shape[1] == keep.shape[1] && other.shape[2] == keep.shape[2] &&
              (other.shape[0] == 1 || other.shape[0] == keep.shape[0]),
          be, "keep_and wants (B, T, S) and (1 or B, T, S)", other);
}

// scores (B, G, T, S), add (1 or B, T, S)
inline void add_mask(std::string_view be, const BackendTensor& scores, const BackendTensor& add) {
  require(scores.shape.size() == 4 && add.shape.size() == 3 && add.shape[1] == scores.shape[2] && add.shape[2] == scores.shape[3] &&
              (add.shape[0] == 1 || add.shape[0] == scores.shape[0]),
          be, "add_mask wants (B, G, T, S) and (1 or B, T, S)", add);
}

// a (N, n)
inline void empty_rows(std::string_view be, const BackendTensor& a) { require(a.shape.size() == 2, be, "empty_rows wants (N, n)", a); }

// q (B, H, T, hs), k (B, Hkv, S, hs), v (B, Hkv, S, hv), Hkv dividing H, lengths none or B of them
inline void fused_attention(std::string_view be, const BackendTensor& q, const BackendTensor& k, const BackendTensor& v,
                            const Backend::FusedMask& mask) {
  require(q.shape.size() == 4, be, "fused_attention wants q (B, H, T, hs)", q);
  require(k.shape.size() == 4 && k.shape[0] == q.shape[0] && k.shape[1] > 0 && q.shape[1] % k.shape[1] == 0 && k.shape[3] == q.shape[3], be,
          "fused_attention wants k (B, Hkv, S, hs) with Hkv dividing H", k);
  require(v.shape.size() == 4 && v.shape[0] == k.shape[0] && v.shape[1] == k.shape[1] && v.shape[2] == k.shape[2], be,
          "fused_attention wants v (B, Hkv, S, hv)", v);
  require(mask.lengths.empty() || static_cast<std::int64_t>(mask.lengths.size()) == q.shape[0], be, "fused_attention wants B lengths", q);
}

// a (N, n), w (n)
inline void rms_norm_rows(std::string_view be, const BackendTensor& a, const BackendTensor& w) {
  require(a.shape.size() == 2, be, "rms_norm_rows wants a (N, n)", a);
  require(w.shape.size() == 1 && w.shape[0] == a.shape[1], be, "rms_norm_rows wants w (n)", w);
}

// a (...), b (...): add and mul, the backward pass's elementwise pair
inline void same_shape(std::string_view be, const char* primitive, const BackendTensor& a, const BackendTensor& b) {
  require(a.shape == b.shape, be, (std::string(primitive) + " wants two tensors of one shape, a " + shape_string(a.shape) + " and b").c_str(), b);
}

// w (N, n) a softmax's rows, dw (N, n)
inline void softmax_backward_rows(std::string_view be, const BackendTensor& w, const BackendTensor& dw) {
  require(w.shape.size() == 2, be, "softmax_backward_rows wants w (N, n)", w);
  require(dw.shape == w.shape, be, "softmax_backward_rows wants dw (N, n) as w", dw);
}

}  // namespace attn::backend_checks
