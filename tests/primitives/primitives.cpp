// Every primitive of attn::Backend (backend.hpp), case by case, on every backend, in the manner of
// ggml's test-backend-ops: the result of each backend against a reference written here, in plain
// double-precision loops straight from the formula in backend.hpp's comment (never the CPU backend).
//
// Columns: cpu (make_cpu_backend), shapes (make_shape_backend: shapes only, it holds no values) and
// cuda (make_backend("cuda"): SKIPPED (no device), with the reason, where this build has no CUDA or
// the machine no device; cpu and shapes still run and decide). One line per primitive × case ×
// backend: ok, FAIL (with the first mismatches), not supported, or SKIPPED. Exit 0 when nothing
// failed, 1 on any FAIL.
//
// One comparison for every value: |ref − got| <= atol + rtol·|ref|, non-finite values only exactly
// (NaN with NaN, +inf with +inf, -inf with -inf). Copies (transpose, slice, masks, repeat, append)
// have tolerance 0.
//
// Shape legend: B batch, T query length, S key length, H heads, Hkv key/value heads, hs and hv the
// widths of a query/key head and a value head, N a leading (batch) axis, n a row's width.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "attn/numerics/backend.hpp"
#include "attn/tools/compare.hpp"  // attn::Tolerance
#include "attn/core/error.hpp"
#include "attn/core/tensor.hpp"

namespace {

using attn::Backend;
using attn::BackendTensor;
using attn::Shape;
using attn::Tensor;
using attn::Tolerance;
using Fetch = Backend::Fetch;
using EmptyRow = Backend::EmptyRow;
using i64 = std::int64_t;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr float kInfF = std::numeric_limits<float>::infinity();
constexpr float kNaNF = std::numeric_limits<float>::quiet_NaN();

// ---- the one comparison -------------------------------------------------------------------------

bool same(double ref, double got, const Tolerance& tol) {
  if (std::isnan(ref) || std::isnan(got)) return std::isnan(ref) && std::isnan(got);
  if (std::isinf(ref) || std::isinf(got)) return ref == got;
  return std::fabs(ref - got) <= tol.atol + tol.rtol * std::fabs(ref);
}

constexpr Tolerance kExact{0, 0};               // copies and 0/1 patterns
constexpr Tolerance kOneRounding{1e-30, 1e-7};  // one float32 rounding of an exact value (a sum or product of two floats)
constexpr Tolerance kRotate{1e-6, 1e-6};        // four rounded products, two rounded sums
constexpr Tolerance kSoftmax{1e-6, 1e-5};
constexpr Tolerance kSoftCap{1e-6, 2e-6};
constexpr Tolerance kFused{1e-5, 1e-4};  // as the CPU/CUDA parity test
// a dot product of k float terms of magnitude about 1
Tolerance product_tol(i64 k) { return {1e-6 * static_cast<double>(std::max<i64>(k, 1)) + 1e-6, 1e-5}; }
// a sum of n entries of magnitude about 1 (a device may add in float32)
Tolerance sum_tol(i64 n) { return {1e-7 * static_cast<double>(std::max<i64>(n, 1)) + 1e-6, 1e-5}; }

// ---- deterministic inputs: xorshift64*, the same floats with every compiler and standard library ----

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull) {}
  std::uint64_t next() {
    s_ ^= s_ >> 12;
    s_ ^= s_ << 25;
    s_ ^= s_ >> 27;
    return s_ * 0x2545F4914F6CDD1Dull;
  }
  // uniform in [-scale, scale): 24 random bits, k·2⁻²³ − 1 is exact, one rounding by the product
  float uniform(float scale) { return scale * (static_cast<float>(next() >> 40) * 0x1p-23f - 1.0f); }
  bool chance(double p) { return static_cast<double>(next() >> 11) * 0x1p-53 < p; }

 private:
  std::uint64_t s_;
};

using Scalar = attn::Scalar;

template <typename F>
Tensor make(Shape shape, F f) {
  Tensor t(std::move(shape));
  Scalar* p = t.mutable_data();
  for (i64 i = 0; i < t.size(); ++i) p[i] = f(i);
  return t;
}

Tensor rand(Shape shape, std::uint64_t seed, float scale = 1.0f) {
  Rng r(seed);
  return make(std::move(shape), [&](i64) { return r.uniform(scale); });
}
// 1 (keep) with probability p, else 0
Tensor keep01(Shape shape, std::uint64_t seed, double p) {
  Rng r(seed);
  return make(std::move(shape), [&](i64) { return r.chance(p) ? 1.0f : 0.0f; });
}
Tensor constant(Shape shape, float v) {
  return make(std::move(shape), [v](i64) { return v; });
}
// t with some entries replaced (flat index, value)
Tensor with(const Tensor& t, const std::vector<std::pair<i64, float>>& entries) {
  Tensor out = make(t.shape(), [&](i64 i) { return t.data()[i]; });
  for (const auto& [i, v] : entries) out.mutable_data()[i] = v;
  return out;
}
// rows given value by value
Tensor rows(Shape shape, const std::vector<float>& values) { return Tensor(std::move(shape), values); }

// cos and sin tables (P, R/2) of rotary position embedding angles p · 10000^(−2i/R)
std::pair<Tensor, Tensor> rotary_tables(i64 P, i64 R) {
  const i64 half = R / 2;
  auto angle = [&](i64 f) { return static_cast<double>(f / half) * std::pow(10000.0, -2.0 * static_cast<double>(f % half) / static_cast<double>(R)); };
  return {make({P, half}, [&](i64 f) { return static_cast<float>(std::cos(angle(f))); }),
          make({P, half}, [&](i64 f) { return static_cast<float>(std::sin(angle(f))); })};
}

// ---- the references: double precision, plain loops, from backend.hpp's comments ------------------

i64 count(const Shape& s) {
  i64 n = 1;
  for (i64 d : s) n *= d;
  return n;
}

struct Arr {
  Shape shape;
  std::vector<double> v;
  Arr() = default;
  explicit Arr(Shape s, double fill = 0) : shape(std::move(s)), v(static_cast<std::size_t>(count(shape)), fill) {}
  double operator[](i64 i) const { return v[static_cast<std::size_t>(i)]; }
  double& operator[](i64 i) { return v[static_cast<std::size_t>(i)]; }
};

Arr arr(const Tensor& t) {
  Arr a(t.shape());
  for (i64 i = 0; i < t.size(); ++i) a[i] = t.data()[i];
  return a;
}
Arr reshape(Arr a, Shape s) {
  a.shape = std::move(s);
  return a;
}

// a (N, m, k) · b (N, k, n) -> (N, m, n); b may also be (k, n), shared by all N
Arr ref_matmul(const Arr& a, const Arr& b) {
  const i64 N = a.shape[0], m = a.shape[1], k = a.shape[2], n = b.shape.back();
  const bool shared = b.shape.size() == 2;
  Arr c({N, m, n});
  for (i64 i = 0; i < N; ++i)
    for (i64 r = 0; r < m; ++r)
      for (i64 j = 0; j < n; ++j) {
        double s = 0;
        for (i64 kk = 0; kk < k; ++kk) s += a[(i * m + r) * k + kk] * b[(shared ? 0 : i * k * n) + kk * n + j];
        c[(i * m + r) * n + j] = s;
      }
  return c;
}

// a (..., n) + bias (n)
Arr ref_add_bias(const Arr& a, const Arr& bias) {
  Arr c(a.shape);
  const i64 n = bias.shape[0];
  for (i64 i = 0; i < count(a.shape); ++i) c[i] = a[i] + bias[i % n];
  return c;
}

// a (N, m, n) -> (N, n, m)
Arr ref_transpose(const Arr& a) {
  const i64 N = a.shape[0], m = a.shape[1], n = a.shape[2];
  Arr c({N, n, m});
  for (i64 i = 0; i < N; ++i)
    for (i64 r = 0; r < m; ++r)
      for (i64 j = 0; j < n; ++j) c[(i * n + j) * m + r] = a[(i * m + r) * n + j];
  return c;
}

// a (A, B, C, D) -> (A, C, B, D)
Arr ref_swap12(const Arr& a) {
  const i64 A = a.shape[0], B = a.shape[1], C = a.shape[2], D = a.shape[3];
  Arr c({A, C, B, D});
  for (i64 i = 0; i < A; ++i)
    for (i64 j = 0; j < B; ++j)
      for (i64 l = 0; l < C; ++l)
        for (i64 d = 0; d < D; ++d) c[((i * C + l) * B + j) * D + d] = a[((i * B + j) * C + l) * D + d];
  return c;
}

// a (N, n) -> (N, width): columns [offset, offset + width)
Arr ref_slice(const Arr& a, i64 offset, i64 width) {
  const i64 N = a.shape[0], n = a.shape[1];
  Arr c({N, width});
  for (i64 r = 0; r < N; ++r)
    for (i64 j = 0; j < width; ++j) c[r * width + j] = a[r * n + offset + j];
  return c;
}

// a (...) * factor
Arr ref_scale(const Arr& a, double factor) {
  Arr c(a.shape);
  for (i64 i = 0; i < count(a.shape); ++i) c[i] = a[i] * factor;
  return c;
}

// scores (B, G, T, S), keep (B, T, S): blocked (0) entries set to fill
Arr ref_masked_fill(const Arr& s, const Arr& keep, double fill) {
  const i64 B = s.shape[0], G = s.shape[1], plane = s.shape[2] * s.shape[3];
  Arr c(s.shape);
  for (i64 b = 0; b < B; ++b)
    for (i64 g = 0; g < G; ++g)
      for (i64 p = 0; p < plane; ++p) c[(b * G + g) * plane + p] = keep[b * plane + p] != 0 ? s[(b * G + g) * plane + p] : fill;
  return c;
}

// One row's softmax, the row max subtracted first; a row whose entries are all -inf gets the policy's
// row (NaN, zeros, or 1/n). A NaN or +inf anywhere makes the whole row NaN (exp(NaN), inf − inf).
void softmax_row(const double* x, double* y, i64 n, EmptyRow empty) {
  if (n == 0) return;
  if (std::all_of(x, x + n, [](double e) { return e == -kInf; })) {
    const double fill = empty == EmptyRow::Zeros ? 0.0 : empty == EmptyRow::Uniform ? 1.0 / static_cast<double>(n) : kNaN;
    std::fill(y, y + n, fill);
    return;
  }
  double mx = -kInf;
  for (i64 j = 0; j < n; ++j) mx = x[j] > mx ? x[j] : mx;
  double sum = 0;
  for (i64 j = 0; j < n; ++j) sum += (y[j] = std::exp(x[j] - mx));
  for (i64 j = 0; j < n; ++j) y[j] /= sum;
}

// a (N, n) -> softmax along n
Arr ref_softmax(const Arr& a, EmptyRow empty) {
  const i64 N = a.shape[0], n = a.shape[1];
  Arr c(a.shape);
  for (i64 r = 0; r < N; ++r) softmax_row(a.v.data() + r * n, c.v.data() + r * n, n, empty);
  return c;
}

// a (N, n) -> (N): each row's sum
Arr ref_row_sums(const Arr& a) {
  const i64 N = a.shape[0], n = a.shape[1];
  Arr c({N});
  for (i64 r = 0; r < N; ++r)
    for (i64 j = 0; j < n; ++j) c[r] += a[r * n + j];
  return c;
}

// a (N, n), w (n) -> x · w / √(mean(x²) + eps) per row
Arr ref_rms_norm(const Arr& a, const Arr& w, double eps) {
  const i64 N = a.shape[0], n = a.shape[1];
  Arr c(a.shape);
  for (i64 r = 0; r < N; ++r) {
    double ss = 0;
    for (i64 j = 0; j < n; ++j) ss += a[r * n + j] * a[r * n + j];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(std::max<i64>(n, 1)) + eps);
    for (i64 j = 0; j < n; ++j) c[r * n + j] = a[r * n + j] * inv * w[j];
  }
  return c;
}

// a (N, n) -> {how many rows are -inf in every entry, the first of them or -1}; n = 0 counts none
// a (...) + b (...) and a (...) · b (...)
Arr ref_binary(const Arr& a, const Arr& b, bool product) {
  Arr c(a.shape);
  for (i64 i = 0; i < count(a.shape); ++i) c[i] = product ? a[i] * b[i] : a[i] + b[i];
  return c;
}

// w (N, n), dw (N, n) -> w ⊙ (dw − Σ_j dw_j·w_j) per row
Arr ref_softmax_backward(const Arr& w, const Arr& dw) {
  const i64 N = w.shape[0], n = w.shape[1];
  Arr c(w.shape);
  for (i64 r = 0; r < N; ++r) {
    double dot = 0;
    for (i64 j = 0; j < n; ++j) dot += dw[r * n + j] * w[r * n + j];
    for (i64 j = 0; j < n; ++j) c[r * n + j] = w[r * n + j] * (dw[r * n + j] - dot);
  }
  return c;
}

Arr ref_empty_rows(const Arr& a) {
  const i64 N = a.shape[0], n = a.shape[1];
  double found = 0, first = -1;
  for (i64 r = 0; r < N && n > 0; ++r) {
    bool empty = true;
    for (i64 j = 0; j < n; ++j) empty = empty && a[r * n + j] == -kInf;
    if (empty && found++ == 0) first = static_cast<double>(r);
  }
  Arr c({2});
  c.v = {found, first};
  return c;
}

// Query i may attend key j: j <= i + offset when causal, and j > i + offset − window as well with a
// sliding window (window > 0), j < lengths[b] when lengths are given.
bool may_attend(bool causal, i64 offset, i64 window, const std::vector<i64>& lengths, i64 b, i64 i, i64 j) {
  bool keep = true;
  if (causal && j > i + offset) keep = false;
  if (window > 0 && j <= i + offset - window) keep = false;
  if (!lengths.empty() && j >= lengths[static_cast<std::size_t>(b)]) keep = false;
  return keep;
}

// the keep pattern (B, T, S) of 1 / 0; flipped inverts it
Arr ref_mask_keep(i64 B, i64 T, i64 S, bool causal, i64 offset, i64 window, const std::vector<i64>& lengths, bool flipped) {
  Arr c({B, T, S});
  for (i64 b = 0; b < B; ++b)
    for (i64 i = 0; i < T; ++i)
      for (i64 j = 0; j < S; ++j) c[(b * T + i) * S + j] = may_attend(causal, offset, window, lengths, b, i, j) != flipped ? 1 : 0;
  return c;
}

// keep (B, T, S) and other (1 or B, T, S) -> 1 where both are 1
Arr ref_keep_and(const Arr& keep, const Arr& other) {
  const i64 plane = keep.shape[1] * keep.shape[2];
  const bool shared = other.shape[0] == 1;
  Arr c(keep.shape);
  for (i64 i = 0; i < count(keep.shape); ++i) c[i] = keep[i] != 0 && other[shared ? i % plane : i] != 0 ? 1 : 0;
  return c;
}

// scores (B, G, T, S) + add (1 or B, T, S), the same add for every group
Arr ref_add_mask(const Arr& s, const Arr& add) {
  const i64 B = s.shape[0], G = s.shape[1], plane = s.shape[2] * s.shape[3];
  const bool shared = add.shape[0] == 1;
  Arr c(s.shape);
  for (i64 b = 0; b < B; ++b)
    for (i64 g = 0; g < G; ++g)
      for (i64 p = 0; p < plane; ++p) c[(b * G + g) * plane + p] = s[(b * G + g) * plane + p] + add[(shared ? 0 : b) * plane + p];
  return c;
}

// a (N, L, h): row l at table row first + l of cos and sin (P, R/2); each pair of the first R
// features turns: (x, y) -> (x·cos − y·sin, y·cos + x·sin). Pairs (i, i + R/2), or (2i, 2i + 1)
// interleaved; features from R on unchanged.
Arr ref_rotate(const Arr& a, const Arr& cos, const Arr& sin, i64 first, bool interleaved) {
  const i64 N = a.shape[0], L = a.shape[1], h = a.shape[2], half = cos.shape[1];
  Arr c = a;
  for (i64 n = 0; n < N; ++n)
    for (i64 l = 0; l < L; ++l) {
      const i64 row = (n * L + l) * h;
      for (i64 i = 0; i < half; ++i) {
        const i64 u = interleaved ? 2 * i : i, w = interleaved ? 2 * i + 1 : i + half;
        const double co = cos[(first + l) * half + i], si = sin[(first + l) * half + i];
        const double x = a[row + u], y = a[row + w];
        c[row + u] = x * co - y * si;
        c[row + w] = y * co + x * si;
      }
    }
  return c;
}

// a (..., L, h), b (..., M, h) -> (..., L + M, h): b's rows after a's
Arr ref_append(const Arr& a, const Arr& b) {
  const std::size_t r = b.shape.size();
  const i64 h = b.shape[r - 1], L = a.shape[r - 2], M = b.shape[r - 2], n = count(b.shape) / (M * h);
  Shape s = b.shape;
  s[r - 2] = L + M;
  Arr c(s);
  for (i64 i = 0; i < n; ++i)
    for (i64 l = 0; l < L + M; ++l)
      for (i64 f = 0; f < h; ++f) c[(i * (L + M) + l) * h + f] = l < L ? a[(i * L + l) * h + f] : b[(i * M + l - L) * h + f];
  return c;
}

// a (B, G, L, h) -> (B, G·n, L, h): head g·n + r is a's head g; tiled: head t·G + g is a's head g
Arr ref_repeat(const Arr& a, i64 n, bool tiled) {
  const i64 B = a.shape[0], G = a.shape[1], plane = a.shape[2] * a.shape[3];
  Arr c({B, G * n, a.shape[2], a.shape[3]});
  for (i64 b = 0; b < B; ++b)
    for (i64 hh = 0; hh < G * n; ++hh) {
      const i64 g = tiled ? hh % G : hh / n;
      for (i64 p = 0; p < plane; ++p) c[(b * G * n + hh) * plane + p] = a[(b * G + g) * plane + p];
    }
  return c;
}

// cap · tanh(a / cap)
Arr ref_soft_cap(const Arr& a, double cap) {
  Arr c(a.shape);
  for (i64 i = 0; i < count(a.shape); ++i) c[i] = cap * std::tanh(a[i] / cap);
  return c;
}

// slopes (H) -> (H, T, S): −slopes[h] · (i + offset − j)
Arr ref_distance_bias(const Arr& slopes, i64 T, i64 S, i64 offset) {
  const i64 H = slopes.shape[0];
  Arr c({H, T, S});
  for (i64 h = 0; h < H; ++h)
    for (i64 i = 0; i < T; ++i)
      for (i64 j = 0; j < S; ++j) c[(h * T + i) * S + j] = -slopes[h] * static_cast<double>(i + offset - j);
  return c;
}

// q (B, H, T, hs), k (B, Hkv, S, hs), v (B, Hkv, S, hv) -> (B, H, T, hv):
// softmax_rows(masked_fill(scale · q·kᵀ, keep, -inf), empty) · v, query head h reading kv head h / (H / Hkv)
Arr ref_fused(const Arr& q, const Arr& k, const Arr& v, double scale, const Backend::FusedMask& m, EmptyRow empty) {
  const i64 B = q.shape[0], H = q.shape[1], T = q.shape[2], hs = q.shape[3], Hkv = k.shape[1], S = k.shape[2], hv = v.shape[3];
  Arr c({B, H, T, hv});
  std::vector<double> s(static_cast<std::size_t>(S)), w(static_cast<std::size_t>(S));
  for (i64 b = 0; b < B; ++b)
    for (i64 h = 0; h < H; ++h) {
      const i64 g = h / (H / Hkv);
      for (i64 i = 0; i < T; ++i) {
        for (i64 j = 0; j < S; ++j) {
          double dot = 0;
          for (i64 f = 0; f < hs; ++f) dot += q[((b * H + h) * T + i) * hs + f] * k[((b * Hkv + g) * S + j) * hs + f];
          s[static_cast<std::size_t>(j)] = may_attend(m.causal, m.offset, m.window, m.lengths, b, i, j) ? scale * dot : -kInf;
        }
        softmax_row(s.data(), w.data(), S, empty);
        for (i64 e = 0; e < hv; ++e) {
          double sum = 0;
          for (i64 j = 0; j < S; ++j) sum += w[static_cast<std::size_t>(j)] * v[((b * Hkv + g) * S + j) * hv + e];
          c[((b * H + h) * T + i) * hv + e] = sum;
        }
      }
    }
  return c;
}

// ---- the cases ----------------------------------------------------------------------------------

using In = std::vector<BackendTensor>;                       // the inputs, uploaded to the backend under test
using Refs = std::vector<Arr>;                               // the same inputs, in double
using Got = std::variant<BackendTensor, Backend::EmptyRows>;  // a primitive's result

struct Case {
  std::string primitive, name;
  Tolerance tol;
  std::vector<Tensor> inputs;
  std::function<Got(Backend&, const In&)> run;  // calls the primitive on a backend
  std::function<Arr(const Refs&)> ref;          // the reference result
  Fetch fetch = Fetch::Soon;
};

const char* policy_name(EmptyRow e) { return e == EmptyRow::Nan ? "Nan" : e == EmptyRow::Zeros ? "Zeros" : "Uniform"; }
constexpr EmptyRow kPolicies[] = {EmptyRow::Nan, EmptyRow::Zeros, EmptyRow::Uniform};

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  auto add = [&](Case c) { cases.push_back(std::move(c)); };

  // ---- matmul: a (N, m, k) · b (N, k, n), or b (k, n) shared by all N ----------------------------
  auto matmul = [&](std::string name, Tensor a, Tensor b) {
    const i64 k = a.shape()[2];
    add({"matmul", std::move(name), product_tol(k), {std::move(a), std::move(b)},
         [](Backend& be, const In& x) -> Got { return be.matmul(x[0], x[1]); }, [](const Refs& x) { return ref_matmul(x[0], x[1]); }});
  };
  matmul("batched (3, 5, 7)·(3, 7, 13)", rand({3, 5, 7}, 1), rand({3, 7, 13}, 2));
  matmul("batched T = 1: (4, 1, 16)·(4, 16, 9)", rand({4, 1, 16}, 3), rand({4, 16, 9}, 4));
  matmul("batched, rows > 32: (3, 40, 33)·(3, 33, 7)", rand({3, 40, 33}, 5), rand({3, 33, 7}, 6));
  matmul("batched, past a block: (2, 257, 33)·(2, 33, 129)", rand({2, 257, 33}, 7), rand({2, 33, 129}, 8));
  matmul("batched, large output (cpu: deferred): (2, 257, 16)·(2, 16, 257)", rand({2, 257, 16}, 9), rand({2, 16, 257}, 10));
  matmul("shared b, few rows: (1, 3, 13)·(13, 257)", rand({1, 3, 13}, 11), rand({13, 257}, 12));
  matmul("shared b: (2, 33, 13)·(13, 7)", rand({2, 33, 13}, 13), rand({13, 7}, 14));
  matmul("shared b, many rows: (3, 700, 64)·(64, 33)", rand({3, 700, 64}, 15), rand({64, 33}, 16));
  matmul("k = 0, batched: (2, 3, 0)·(2, 0, 4) is zeros", Tensor({2, 3, 0}), Tensor({2, 0, 4}));
  matmul("k = 0, shared b: (2, 3, 0)·(0, 4) is zeros", Tensor({2, 3, 0}), Tensor({0, 4}));
  matmul("N = 0: (0, 3, 4)·(0, 4, 5)", Tensor({0, 3, 4}), Tensor({0, 4, 5}));
  matmul("+inf and NaN in a, b > 0: (1, 3, 4)·(1, 4, 2)", with(rand({1, 3, 4}, 17), {{1, kInfF}, {4, -kInfF}, {10, kNaNF}}),
         make({1, 4, 2}, [](i64 i) { return 0.25f + 0.125f * static_cast<float>(i); }));
  matmul("+inf times 0 is NaN: (1, 2, 2)·(1, 2, 2)", rows({1, 2, 2}, {kInfF, 1, 2, 3}), rows({1, 2, 2}, {0, 1, 1, 1}));

  // ---- add_bias: a (..., n) + bias (n) -------------------------------------------------------------
  auto add_bias = [&](std::string name, Tensor a, Tensor bias) {
    add({"add_bias", std::move(name), kOneRounding, {std::move(a), std::move(bias)},
         [](Backend& be, const In& x) -> Got { return be.add_bias(x[0], x[1]); }, [](const Refs& x) { return ref_add_bias(x[0], x[1]); }});
  };
  add_bias("(2, 3, 7) + (7)", rand({2, 3, 7}, 20), rand({7}, 21));
  add_bias("T = 1: (1, 1, 13) + (13)", rand({1, 1, 13}, 22), rand({13}, 23));
  add_bias("(4, 257) + (257)", rand({4, 257}, 24), rand({257}, 25));
  add_bias("rows > 65535: (70000, 3) + (3)", rand({70000, 3}, 26), rand({3}, 27));
  add_bias("NaN, ±inf: (2, 4) + (4)", with(rand({2, 4}, 28), {{0, kNaNF}, {1, kInfF}, {6, -kInfF}}), rows({4}, {1, 2, -kInfF, kInfF}));
  add_bias("no rows: (0, 5) + (5)", Tensor({0, 5}), rand({5}, 29));

  // ---- transpose_last2: a (N, m, n) -> (N, n, m) -----------------------------------------------------
  auto transpose = [&](std::string name, Tensor a) {
    add({"transpose_last2", std::move(name), kExact, {std::move(a)}, [](Backend& be, const In& x) -> Got { return be.transpose_last2(x[0]); },
         [](const Refs& x) { return ref_transpose(x[0]); }});
  };
  transpose("(3, 7, 13)", rand({3, 7, 13}, 30));
  transpose("(1, 1, 257)", rand({1, 1, 257}, 31));
  transpose("(2, 300, 129) (cpu: deferred)", rand({2, 300, 129}, 32));
  transpose("NaN, ±inf: (2, 3, 4)", with(rand({2, 3, 4}, 33), {{0, kNaNF}, {5, kInfF}, {23, -kInfF}}));
  transpose("m = 0: (2, 0, 5)", Tensor({2, 0, 5}));

  // ---- swap_axes_1_2: a (A, B, C, D) -> (A, C, B, D) ------------------------------------------------
  auto swap = [&](std::string name, Tensor a) {
    add({"swap_axes_1_2", std::move(name), kExact, {std::move(a)}, [](Backend& be, const In& x) -> Got { return be.swap_axes_1_2(x[0]); },
         [](const Refs& x) { return ref_swap12(x[0]); }});
  };
  swap("(2, 3, 5, 7)", rand({2, 3, 5, 7}, 40));
  swap("T = 1: (2, 1, 1, 13)", rand({2, 1, 1, 13}, 41));
  swap("(B, H, T, hs) = (35000, 2, 2, 3), B·H = 70000", rand({35000, 2, 2, 3}, 42));
  swap("(B, T, H, hs) = (10, 7000, 3, 2), B·T = 70000", rand({10, 7000, 3, 2}, 43));
  swap("(B, H, T, hs) = (1, 70000, 1, 2), B·H = 70000", rand({1, 70000, 1, 2}, 44));
  swap("C = 0: (1, 3, 0, 4)", Tensor({1, 3, 0, 4}));

  // ---- slice_columns: a (N, n) -> (N, width), columns [offset, offset + width) -------------------
  auto slice = [&](std::string name, Tensor a, i64 offset, i64 width) {
    add({"slice_columns", std::move(name), kExact, {std::move(a)},
         [=](Backend& be, const In& x) -> Got { return be.slice_columns(x[0], offset, width); },
         [=](const Refs& x) { return ref_slice(x[0], offset, width); }});
  };
  slice("(5, 13) columns [3, 10)", rand({5, 13}, 50), 3, 7);
  slice("(1, 257) the last column", rand({1, 257}, 51), 256, 1);
  slice("(4, 33) all columns", rand({4, 33}, 52), 0, 33);
  slice("(4, 33) width 0", rand({4, 33}, 53), 5, 0);
  slice("rows > 65535: (70000, 3) columns [1, 3) (cpu: deferred)", rand({70000, 3}, 54), 1, 2);

  // ---- scale: a (...) * factor --------------------------------------------------------------------
  auto scale = [&](std::string name, Tensor a, float factor) {
    add({"scale", std::move(name), kOneRounding, {std::move(a)}, [=](Backend& be, const In& x) -> Got { return be.scale(x[0], factor); },
         [=](const Refs& x) { return ref_scale(x[0], factor); }});
  };
  scale("(3, 7, 13) × 0.125", rand({3, 7, 13}, 60), 0.125f);
  scale("(2, 5, 7) × 1/√7", rand({2, 5, 7}, 61), static_cast<float>(1 / std::sqrt(7.0)));
  scale("NaN, ±inf, 0 × −2.5", with(rand({2, 4}, 62), {{0, kNaNF}, {1, kInfF}, {2, -kInfF}, {3, 0}}), -2.5f);
  scale("(70000, 3) × 0.5 (cpu: deferred)", rand({70000, 3}, 63), 0.5f);
  scale("(70000, 3) × 3", rand({70000, 3}, 64), 3.0f);
  scale("no elements: (0, 4)", Tensor({0, 4}), 2.0f);

  // ---- masked_fill: scores (B, G, T, S), keep (B, T, S) of 1 / 0 -> blocked entries set to fill ----
  auto masked_fill = [&](std::string name, Tensor scores, Tensor keep, float fill) {
    add({"masked_fill", std::move(name), kExact, {std::move(scores), std::move(keep)},
         [=](Backend& be, const In& x) -> Got { return be.masked_fill(x[0], x[1], fill); },
         [=](const Refs& x) { return ref_masked_fill(x[0], x[1], fill); }});
  };
  masked_fill("(2, 3, 5, 7), fill -inf", rand({2, 3, 5, 7}, 70), keep01({2, 5, 7}, 71, 0.6), -kInfF);
  masked_fill("S ≠ T: (2, 2, 3, 9), fill −1e9", rand({2, 2, 3, 9}, 72), keep01({2, 3, 9}, 73, 0.5), -1e9f);
  masked_fill("T = 1: (2, 4, 1, 13), fill 0", rand({2, 4, 1, 13}, 74), keep01({2, 1, 13}, 75, 0.5), 0.0f);
  masked_fill("keep all zeros: (2, 2, 4, 4)", rand({2, 2, 4, 4}, 76), Tensor({2, 4, 4}), -kInfF);
  masked_fill("NaN, ±inf in scores, kept and blocked", with(rand({1, 2, 2, 3}, 77), {{0, kNaNF}, {1, kInfF}, {3, -kInfF}, {6, kNaNF}, {10, kInfF}}),
              rows({1, 2, 3}, {1, 0, 1, 1, 0, 0}), -kInfF);
  masked_fill("B·G > 65535: (2, 35000, 2, 3) (cpu: deferred)", rand({2, 35000, 2, 3}, 78), keep01({2, 2, 3}, 79, 0.5), -kInfF);
  masked_fill("B > 65535: (70000, 1, 1, 3)", rand({70000, 1, 1, 3}, 80), keep01({70000, 1, 3}, 81, 0.5), -kInfF);
  masked_fill("S = 0: (2, 2, 3, 0)", Tensor({2, 2, 3, 0}), Tensor({2, 3, 0}), -kInfF);

  // ---- softmax_rows: a (N, n) -> softmax along n; all--inf rows by the policy -----------------------
  auto softmax = [&](std::string name, Tensor a, EmptyRow e, Fetch f = Fetch::Soon) {
    add({"softmax_rows", name + ", " + policy_name(e), kSoftmax, {std::move(a)},
         [=](Backend& be, const In& x) -> Got { return be.softmax_rows(x[0], e); }, [=](const Refs& x) { return ref_softmax(x[0], e); }, f});
  };
  // rows of 5: ordinary; a NaN; all -inf; a +inf; partly -inf; NaN among -inf; logits past exp's range; one finite
  const Tensor specials = rows({8, 5}, {0.1f, -0.3f, 0.7f, 0.2f, -1.0f,                        //
                                        0.5f, kNaNF, 1.0f, -2.0f, 0.0f,                        //
                                        -kInfF, -kInfF, -kInfF, -kInfF, -kInfF,                //
                                        kInfF, 1.0f, 2.0f, 3.0f, 4.0f,                         //
                                        -kInfF, -kInfF, 2.0f, -kInfF, 1.0f,                    //
                                        kNaNF, -kInfF, -kInfF, -kInfF, -kInfF,                 //
                                        80.0f, 90.0f, -100.0f, 88.5f, 89.0f,                   //
                                        -kInfF, -kInfF, -kInfF, -kInfF, -1e30f});
  // rows of 1000 (past 256 threads): ordinary; all -inf; only the last entry finite; a NaN at 700
  std::vector<std::pair<i64, float>> long_rows;
  for (i64 j = 0; j < 1000; ++j) long_rows.push_back({1000 + j, -kInfF});
  for (i64 j = 0; j < 999; ++j) long_rows.push_back({2000 + j, -kInfF});
  long_rows.push_back({3700, kNaNF});
  const Tensor long_specials = with(rand({4, 1000}, 90, 4.0f), long_rows);
  // (70000, 3): rows 65536 and 69999 all -inf, row 65537 partly
  const Tensor many_rows = with(rand({70000, 3}, 91, 3.0f), {{3 * 65536, -kInfF}, {3 * 65536 + 1, -kInfF}, {3 * 65536 + 2, -kInfF},
                                                             {3 * 65537, -kInfF}, {3 * 69999, -kInfF}, {3 * 69999 + 1, -kInfF},
                                                             {3 * 69999 + 2, -kInfF}});
  for (EmptyRow e : kPolicies) softmax("NaN, +inf, all -inf, large logits: (8, 5)", specials, e);
  for (EmptyRow e : kPolicies) softmax("rows of 1000 > 256 threads, all -inf, NaN: (4, 1000)", long_specials, e);
  for (EmptyRow e : kPolicies) softmax("rows > 65535, all -inf rows: (70000, 3)", many_rows, e);
  softmax("(5, 7)", rand({5, 7}, 92, 3.0f), EmptyRow::Nan);
  softmax("(3, 13)", rand({3, 13}, 93, 3.0f), EmptyRow::Nan);
  softmax("(4, 33)", rand({4, 33}, 94, 3.0f), EmptyRow::Nan);
  softmax("(2, 257)", rand({2, 257}, 95, 3.0f), EmptyRow::Nan);
  softmax("T = 1: (1, 1)", rand({1, 1}, 96), EmptyRow::Nan);
  softmax("(B·H·T, S) = (140000, 3), B·H = 70000", rand({140000, 3}, 97, 3.0f), EmptyRow::Nan, Fetch::OnRead);
  softmax("N = 0: (0, 5)", Tensor({0, 5}), EmptyRow::Uniform);
  softmax("n = 0: (3, 0)", Tensor({3, 0}), EmptyRow::Uniform);

  // ---- row_sums: a (N, n) -> (N) ---------------------------------------------------------------------
  auto row_sums = [&](std::string name, Tensor a) {
    const i64 n = a.shape()[1];
    add({"row_sums", std::move(name), sum_tol(n), {std::move(a)}, [](Backend& be, const In& x) -> Got { return be.row_sums(x[0]); },
         [](const Refs& x) { return ref_row_sums(x[0]); }});
  };
  row_sums("(5, 7)", rand({5, 7}, 100));
  row_sums("(3, 257)", rand({3, 257}, 101));
  row_sums("rows of 1000: (2, 1000)", rand({2, 1000}, 102));
  row_sums("rows > 65535: (70000, 3)", rand({70000, 3}, 103));
  row_sums("NaN, +inf, −inf, +inf with −inf: (4, 3)", rows({4, 3}, {1, kNaNF, 2, kInfF, 1, 2, -kInfF, -kInfF, 1, kInfF, 0, -kInfF}));
  row_sums("n = 0 is zeros: (3, 0)", Tensor({3, 0}));
  row_sums("N = 0: (0, 3)", Tensor({0, 3}));

  // ---- add, mul: the backward pass's elementwise pair, a (...) op b (...) --------------------------------
  auto binary = [&](std::string name, Tensor a, Tensor b, bool product) {
    add({product ? "mul" : "add", std::move(name), kOneRounding, {std::move(a), std::move(b)},
         [product](Backend& be, const In& x) -> Got { return product ? be.mul(x[0], x[1]) : be.add(x[0], x[1]); },
         [product](const Refs& x) { return ref_binary(x[0], x[1], product); }});
  };
  for (const bool product : {false, true}) {
    binary("(2, 3, 7)", rand({2, 3, 7}, 150), rand({2, 3, 7}, 151), product);
    binary("one value: (1)", rand({1}, 152), rand({1}, 153), product);
    binary("odd size past a block: (3, 257)", rand({3, 257}, 154), rand({3, 257}, 155), product);
    binary("(70000, 3), past 65535 blocks' worth of rows", rand({70000, 3}, 156), rand({70000, 3}, 157), product);
    binary("NaN, ±inf, 0: (2, 4)", with(rand({2, 4}, 158), {{0, kNaNF}, {1, kInfF}, {2, -kInfF}, {3, 0}}),
           rows({2, 4}, {1, 2, kInfF, kInfF, 0.5f, -0.25f, 3, -1}), product);
    binary("no elements: (0, 4)", Tensor({0, 4}), Tensor({0, 4}), product);
  }

  // ---- softmax_backward_rows: w (N, n) a softmax's rows, dw (N, n) -> w ⊙ (dw − Σ_j dw_j·w_j) -----------------
  auto softmax_backward = [&](std::string name, Tensor w, Tensor dw) {
    const i64 n = w.shape().empty() ? 0 : w.shape().back();
    add({"softmax_backward_rows", std::move(name), sum_tol(n), {std::move(w), std::move(dw)},
         [](Backend& be, const In& x) -> Got { return be.softmax_backward_rows(x[0], x[1]); },
         [](const Refs& x) { return ref_softmax_backward(x[0], x[1]); }});
  };
  // weights: a softmax's rows (every row sums to 1), from the reference softmax of random scores
  auto weights = [](Shape shape, std::uint64_t seed) {
    const Arr w = ref_softmax(arr(rand(shape, seed, 3.0f)), EmptyRow::Nan);
    return make(std::move(shape), [&](i64 i) { return static_cast<Scalar>(w[i]); });
  };
  softmax_backward("(6, 5)", weights({6, 5}, 160), rand({6, 5}, 161));
  softmax_backward("T = 1: (1, 13)", weights({1, 13}, 162), rand({1, 13}, 163));
  softmax_backward("rows wider than a warp: (7, 1000)", weights({7, 1000}, 164), rand({7, 1000}, 165));
  softmax_backward("B·H·T past 65535 rows: (70000, 3)", weights({70000, 3}, 166), rand({70000, 3}, 167));
  softmax_backward("masked entries (weight 0): (2, 4)", rows({2, 4}, {0.25f, 0.75f, 0, 0, 1, 0, 0, 0}), rand({2, 4}, 168));
  softmax_backward("NaN in a row's gradient makes that row NaN: (2, 3)", weights({2, 3}, 169), with(rand({2, 3}, 170), {{1, kNaNF}}));
  softmax_backward("no rows: (0, 4)", Tensor({0, 4}), Tensor({0, 4}));

  // ---- rms_norm_rows: a (N, n), w (n) -> (N, n) (Qwen3's per-head q/k norm) -------------------------------
  auto rms_norm = [&](std::string name, Tensor a, Tensor w, double eps) {
    add({"rms_norm_rows", std::move(name), kSoftmax, {std::move(a), std::move(w)},
         [eps](Backend& be, const In& x) -> Got { return be.rms_norm_rows(x[0], x[1], eps); },
         [eps](const Refs& x) { return ref_rms_norm(x[0], x[1], eps); }});
  };
  rms_norm("heads of 16: (6, 16), eps 1e-6", rand({6, 16}, 140), rand({16}, 141), 1e-6);
  rms_norm("odd width, tiny rows: (5, 13), eps 1e-5", rows({5, 13}, std::vector<float>(65, 1e-4f)), rand({13}, 142), 1e-5);
  rms_norm("rows > 65535: (70000, 3)", rand({70000, 3}, 143), rand({3}, 144), 1e-6);
  rms_norm("wide rows: (2, 300)", rand({2, 300}, 145), rand({300}, 146), 1e-6);
  rms_norm("zeros give zeros: (2, 8)", Tensor({2, 8}), rand({8}, 147), 1e-6);
  rms_norm("N = 0: (0, 4)", Tensor({0, 4}), rand({4}, 148), 1e-6);

  // ---- empty_rows: a (N, n) -> {count of rows -inf everywhere, the first or −1} ----------------------
  auto empty_rows = [&](std::string name, Tensor a) {
    add({"empty_rows", std::move(name), kExact, {std::move(a)}, [](Backend& be, const In& x) -> Got { return be.empty_rows(x[0]); },
         [](const Refs& x) { return ref_empty_rows(x[0]); }});
  };
  empty_rows("NaN, +inf, all -inf, NaN among -inf: (8, 5)", specials);
  empty_rows("rows > 65535, the first at 65536: (70000, 3)", with(many_rows, {{3 * 70, kNaNF}, {3 * 70 + 1, -kInfF}, {3 * 70 + 2, -kInfF}}));
  empty_rows("rows of 1000: (4, 1000)", long_specials);
  empty_rows("none: (5, 7)", rand({5, 7}, 110));
  empty_rows("all: (3, 4)", constant({3, 4}, -kInfF));
  empty_rows("n = 0 counts none: (3, 0)", Tensor({3, 0}));
  empty_rows("N = 0: (0, 4)", Tensor({0, 4}));

  // ---- mask_keep: (B, T, S) of 1 where query i may attend key j --------------------------------------
  auto mask_keep = [&](std::string name, i64 B, i64 T, i64 S, bool causal, i64 offset, i64 window, std::vector<i64> lengths, bool flipped) {
    add({"mask_keep", std::move(name), kExact, {},
         [=](Backend& be, const In&) -> Got { return be.mask_keep(B, T, S, causal, offset, window, lengths, flipped); },
         [=](const Refs&) { return ref_mask_keep(B, T, S, causal, offset, window, lengths, flipped); }});
  };
  mask_keep("causal (2, 5, 5)", 2, 5, 5, true, 0, 0, {}, false);
  mask_keep("causal, S ≠ T, offset S − T: (2, 3, 7)", 2, 3, 7, true, 4, 0, {}, false);
  mask_keep("causal, window 3: (2, 6, 6)", 2, 6, 6, true, 0, 3, {}, false);
  mask_keep("causal, offset 5, window 3: (1, 4, 9)", 1, 4, 9, true, 5, 3, {}, false);
  mask_keep("causal, offset −2 (rows with no key): (1, 4, 4)", 1, 4, 4, true, -2, 0, {}, false);
  mask_keep("lengths {7, 0} (a row of no keys): (2, 5, 7)", 2, 5, 7, false, 0, 0, {7, 0}, false);
  mask_keep("causal and lengths {3, 5}: (2, 5, 5)", 2, 5, 5, true, 0, 0, {3, 5}, false);
  mask_keep("flipped causal: (2, 5, 5)", 2, 5, 5, true, 0, 0, {}, true);
  mask_keep("flipped lengths {7, 0}: (2, 3, 7)", 2, 3, 7, false, 0, 0, {7, 0}, true);
  mask_keep("no rule, all kept: (2, 3, 4)", 2, 3, 4, false, 0, 0, {}, false);
  mask_keep("T = 1, offset 8, window 4: (2, 1, 9)", 2, 1, 9, true, 8, 4, {}, false);
  mask_keep("(2, 300, 300) causal, window 37, lengths {300, 123} (cpu: a rule)", 2, 300, 300, true, 0, 37, {300, 123}, false);
  {
    std::vector<i64> lengths(70000);
    for (std::size_t b = 0; b < lengths.size(); ++b) lengths[b] = static_cast<i64>(b % 4);
    mask_keep("B > 65535, lengths 0 to 3: (70000, 1, 3)", 70000, 1, 3, false, 0, 0, lengths, false);
  }
  mask_keep("T = 0: (2, 0, 5)", 2, 0, 5, true, 0, 0, {}, false);
  mask_keep("S = 0: (2, 3, 0)", 2, 3, 0, true, 0, 0, {0, 0}, false);
  mask_keep("B = 0: (0, 3, 3)", 0, 3, 3, true, 0, 0, {}, false);

  // ---- keep_and: keep (B, T, S) and other (1 or B, T, S) -> 1 where both are 1 ------------------------
  auto keep_and = [&](std::string name, Tensor keep, Tensor other) {
    add({"keep_and", std::move(name), kExact, {std::move(keep), std::move(other)},
         [](Backend& be, const In& x) -> Got { return be.keep_and(x[0], x[1]); }, [](const Refs& x) { return ref_keep_and(x[0], x[1]); }});
  };
  keep_and("per batch row: (2, 5, 7) and (2, 5, 7)", keep01({2, 5, 7}, 120, 0.6), keep01({2, 5, 7}, 121, 0.6));
  keep_and("shared: (3, 5, 7) and (1, 5, 7)", keep01({3, 5, 7}, 122, 0.6), keep01({1, 5, 7}, 123, 0.6));
  keep_and("other all zeros: (2, 4, 4) and (1, 4, 4)", keep01({2, 4, 4}, 124, 0.6), Tensor({1, 4, 4}));
  keep_and("(2, 300, 300) and shared (1, 300, 300)", keep01({2, 300, 300}, 125, 0.7), keep01({1, 300, 300}, 126, 0.7));
  add({"keep_and", "keep from mask_keep (cpu: a rule) and per batch row (2, 300, 300)", kExact, {keep01({2, 300, 300}, 127, 0.7)},
       [](Backend& be, const In& x) -> Got { return be.keep_and(be.mask_keep(2, 300, 300, true, 0, 0, {300, 77}, false), x[0]); },
       [](const Refs& x) { return ref_keep_and(ref_mask_keep(2, 300, 300, true, 0, 0, {300, 77}, false), x[0]); }});

  // ---- add_mask: scores (B, G, T, S) + add (1 or B, T, S) -----------------------------------------------
  auto add_mask = [&](std::string name, Tensor scores, Tensor addend) {
    add({"add_mask", std::move(name), kOneRounding, {std::move(scores), std::move(addend)},
         [](Backend& be, const In& x) -> Got { return be.add_mask(x[0], x[1]); }, [](const Refs& x) { return ref_add_mask(x[0], x[1]); }});
  };
  add_mask("shared: (2, 3, 5, 7) + (1, 5, 7)", rand({2, 3, 5, 7}, 130), rand({1, 5, 7}, 131));
  add_mask("per batch row: (2, 3, 5, 7) + (2, 5, 7)", rand({2, 3, 5, 7}, 132), rand({2, 5, 7}, 133));
  add_mask("T = 1: (2, 4, 1, 9) + (2, 1, 9)", rand({2, 4, 1, 9}, 134), rand({2, 1, 9}, 135));
  add_mask("-inf in add, NaN and +inf in scores", with(rand({1, 2, 2, 2}, 136), {{0, kNaNF}, {1, kInfF}, {5, kInfF}}),
           rows({1, 2, 2}, {0, -kInfF, -kInfF, 1}));
  add_mask("B·G > 65535, shared: (2, 35000, 2, 3) + (1, 2, 3)", rand({2, 35000, 2, 3}, 137), rand({1, 2, 3}, 138));
  add_mask("B > 65535, per batch row: (70000, 2, 1, 3) + (70000, 1, 3)", rand({70000, 2, 1, 3}, 139), rand({70000, 1, 3}, 140));
  add_mask("S = 0: (2, 2, 3, 0) + (1, 3, 0)", Tensor({2, 2, 3, 0}), Tensor({1, 3, 0}));

  // ---- rotate_pairs: a (N, L, h), cos and sin (P, R/2), rows from `first` --------------------------------
  auto rotate = [&](std::string name, Tensor a, i64 P, i64 R, i64 first, bool interleaved) {
    const auto tables = rotary_tables(P, R);  // (not a structured binding: clang 14 cannot capture one)
    const Tensor c = tables.first, s = tables.second;
    add({"rotate_pairs", name + (interleaved ? ", interleaved" : ", half"), kRotate, {std::move(a), c, s},
         [=](Backend& be, const In& x) -> Got { return be.rotate_pairs(x[0], x[1], x[2], first, interleaved); },
         [=](const Refs& x) { return ref_rotate(x[0], x[1], x[2], first, interleaved); }});
  };
  for (bool il : {false, true}) {
    rotate("R = h = 8: a (3, 5, 8), tables (5, 4)", rand({3, 5, 8}, 150), 5, 8, 0, il);
    rotate("partial R = 6 < h = 13, first 3: a (2, 4, 13), tables (9, 3)", rand({2, 4, 13}, 151), 9, 6, 3, il);
    rotate("partial R = 4 < h = 7, first 5: a (2, 3, 7), tables (8, 2)", rand({2, 3, 7}, 152), 8, 4, 5, il);
    rotate("T = 1, first 9: a (4, 1, 16), tables (10, 8)", rand({4, 1, 16}, 153), 10, 16, 9, il);
    rotate("a (8, 300, 64), tables (310, 32), first 10", rand({8, 300, 64}, 154), 310, 64, 10, il);
    rotate("N > 65535, first 2: a (70000, 1, 4), tables (3, 2)", rand({70000, 1, 4}, 155), 3, 4, 2, il);
  }

  // ---- append_rows: a (N, L, h), b (N, M, h) -> (N, L + M, h) ---------------------------------------------
  auto append = [&](std::string name, Tensor a, Tensor b) {
    add({"append_rows", std::move(name), kExact, {std::move(a), std::move(b)},
         [](Backend& be, const In& x) -> Got { return be.append_rows(x[0], x[1]); }, [](const Refs& x) { return ref_append(x[0], x[1]); }});
  };
  append("L = 0: (2, 0, 5) + (2, 3, 5)", Tensor({2, 0, 5}), rand({2, 3, 5}, 160));
  append("L > 0: (2, 4, 5) + (2, 3, 5)", rand({2, 4, 5}, 161), rand({2, 3, 5}, 162));
  append("a decode step, M = 1: (3, 7, 13) + (3, 1, 13)", rand({3, 7, 13}, 163), rand({3, 1, 13}, 164));
  append("a KV cache (B, Hkv, S, hs): (1, 2, 3, 4) + (1, 2, 1, 4)", rand({1, 2, 3, 4}, 165), rand({1, 2, 1, 4}, 166));
  append("N > 65535: (70000, 1, 2) + (70000, 1, 2)", rand({70000, 1, 2}, 167), rand({70000, 1, 2}, 168));

  // ---- repeat_heads: a (B, G, L, h) -> (B, G·n, L, h) --------------------------------------------------
  auto repeat = [&](std::string name, Tensor a, i64 n, bool tiled) {
    add({"repeat_heads", name + (tiled ? ", tiled" : ", repeat_kv order"), kExact, {std::move(a)},
         [=](Backend& be, const In& x) -> Got { return be.repeat_heads(x[0], n, tiled); }, [=](const Refs& x) { return ref_repeat(x[0], n, tiled); }});
  };
  for (bool tiled : {false, true}) {
    repeat("n = 2: (2, 3, 5, 4)", rand({2, 3, 5, 4}, 170), 2, tiled);
    repeat("n = 4, T = 1: (1, 2, 1, 7)", rand({1, 2, 1, 7}, 171), 4, tiled);
    repeat("B·H > 65535, n = 2: (1, 35000, 1, 3)", rand({1, 35000, 1, 3}, 172), 2, tiled);
    repeat("B > 65535, n = 2: (70000, 1, 1, 2)", rand({70000, 1, 1, 2}, 173), 2, tiled);
  }
  repeat("n = 1: (2, 3, 5, 4)", rand({2, 3, 5, 4}, 174), 1, false);

  // ---- soft_cap: cap · tanh(a / cap) ----------------------------------------------------------------------
  auto soft_cap = [&](std::string name, Tensor a, float cap) {
    add({"soft_cap", std::move(name), kSoftCap, {std::move(a)}, [=](Backend& be, const In& x) -> Got { return be.soft_cap(x[0], cap); },
         [=](const Refs& x) { return ref_soft_cap(x[0], cap); }});
  };
  soft_cap("(3, 7, 13), cap 5, values ±20", rand({3, 7, 13}, 180, 20.0f), 5.0f);
  soft_cap("NaN, ±inf, 0, cap 50", rows({1, 5}, {kNaNF, kInfF, -kInfF, 0, 123.0f}), 50.0f);
  soft_cap("(70000, 3), cap 30, values ±100", rand({70000, 3}, 181, 100.0f), 30.0f);

  // ---- distance_bias: slopes (H) -> (H, T, S), −slopes[h] · (i + offset − j) --------------------------
  auto distance = [&](std::string name, Tensor slopes, i64 T, i64 S, i64 offset) {
    add({"distance_bias", std::move(name), kOneRounding, {std::move(slopes)},
         [=](Backend& be, const In& x) -> Got { return be.distance_bias(x[0], T, S, offset); },
         [=](const Refs& x) { return ref_distance_bias(x[0], T, S, offset); }});
  };
  const Tensor slopes8 = make({8}, [](i64 h) { return static_cast<float>(std::pow(2.0, -static_cast<double>(h + 1))); });
  distance("H = 4, T = S = 5", rand({4}, 190), 5, 5, 0);
  distance("S ≠ T, offset S − T: H = 4, T = 3, S = 7", rand({4}, 191), 3, 7, 4);
  distance("T = 1, offset 8: H = 6, S = 9", rand({6}, 192), 1, 9, 8);
  distance("ALiBi slopes 2^−(h+1): H = 8, T = 65, S = 257", slopes8, 65, 257, 0);
  distance("T = 0: H = 2, S = 3", rand({2}, 193), 0, 3, 0);

  // ---- fused_attention: q (B, H, T, hs), k (B, Hkv, S, hs), v (B, Hkv, S, hv) -> (B, H, T, hv) --------
  auto fused = [&](std::string name, Shape q, Shape k, i64 hv, Backend::FusedMask m, EmptyRow e, float range = 1.0f, std::uint64_t seed = 200) {
    const float sc = static_cast<float>(1 / std::sqrt(static_cast<double>(q[3])));
    Tensor tq = rand(q, seed, range), tk = rand(k, seed + 1, range), tv = rand({k[0], k[1], k[2], hv}, seed + 2);
    add({"fused_attention", name + ", " + policy_name(e), kFused, {tq, tk, tv},
         [=](Backend& be, const In& x) -> Got { return be.fused_attention(x[0], x[1], x[2], sc, m, e); },
         [=](const Refs& x) { return ref_fused(x[0], x[1], x[2], sc, m, e); }});
  };
  fused("no mask, S ≠ T: q (2, 4, 5, 8), k (2, 4, 7, 8), hv 6", {2, 4, 5, 8}, {2, 4, 7, 8}, 6, {}, EmptyRow::Nan);
  fused("causal T = S = 9", {2, 2, 9, 8}, {2, 2, 9, 8}, 8, {true, 0, 0, {}}, EmptyRow::Nan);
  fused("causal, S ≠ T, offset S − T: T = 3, S = 11", {2, 2, 3, 8}, {2, 2, 11, 8}, 4, {true, 8, 0, {}}, EmptyRow::Nan);
  fused("causal, window 4: T = S = 12", {1, 2, 12, 8}, {1, 2, 12, 8}, 8, {true, 0, 4, {}}, EmptyRow::Nan);
  for (EmptyRow e : kPolicies) {
    fused("lengths {7, 0} (a batch row of no keys): T = 5, S = 7", {2, 2, 5, 8}, {2, 2, 7, 8}, 6, {false, 0, 0, {7, 0}}, e);
    fused("causal, offset −2 (first rows empty): T = S = 6", {1, 2, 6, 8}, {1, 2, 6, 8}, 5, {true, -2, 0, {}}, e);
  }
  fused("grouped, Hkv = 2 of H = 8, causal", {2, 8, 7, 8}, {2, 2, 7, 8}, 8, {true, 0, 0, {}}, EmptyRow::Nan);
  fused("multi-query, Hkv = 1 of H = 4, lengths {4, 9}", {2, 4, 9, 8}, {2, 1, 9, 8}, 8, {false, 0, 0, {4, 9}}, EmptyRow::Zeros);
  fused("decode T = 1, S = 300 > 256, offset 299, window 64", {2, 4, 1, 16}, {2, 2, 300, 16}, 16, {true, 299, 64, {}}, EmptyRow::Nan);
  fused("odd widths hs 13, hv 7, T = 33, S = 257, causal offset 224", {1, 3, 33, 13}, {1, 3, 257, 13}, 7, {true, 224, 0, {}}, EmptyRow::Nan);
  fused("T = S = 300 causal, window 100, lengths {300, 250}", {2, 2, 300, 16}, {2, 2, 300, 16}, 16, {true, 0, 100, {300, 250}}, EmptyRow::Zeros);
  fused("large logits (|q·k|/√hs up to ~200)", {1, 2, 6, 8}, {1, 2, 9, 8}, 4, {}, EmptyRow::Nan, 10.0f);
  {
    // a NaN in one query row: its scores are NaN, so its context is NaN (not the policy's row)
    Tensor q = with(rand({1, 2, 4, 8}, 220), {{8 + 3, kNaNF}}), k = rand({1, 2, 5, 8}, 221), v = rand({1, 2, 5, 4}, 222);
    const Backend::FusedMask none{};
    for (EmptyRow e : {EmptyRow::Nan, EmptyRow::Zeros}) {
      add({"fused_attention", std::string("a NaN in query row 1, S = 5, ") + policy_name(e), kFused, {q, k, v},
           [=](Backend& be, const In& x) -> Got { return be.fused_attention(x[0], x[1], x[2], 0.5f, none, e); },
           [=](const Refs& x) { return ref_fused(x[0], x[1], x[2], 0.5, none, e); }});
    }
  }
  fused("B·H > 65535: q (2, 35000, 1, 2), k (2, 35000, 3, 2)", {2, 35000, 1, 2}, {2, 35000, 3, 2}, 2, {}, EmptyRow::Nan);
  fused("T = 0", {2, 2, 0, 8}, {2, 2, 5, 8}, 4, {true, 0, 0, {}}, EmptyRow::Nan);
  for (EmptyRow e : kPolicies) fused("S = 0 (no keys: a sum of no terms)", {1, 2, 3, 8}, {1, 2, 0, 8}, 4, {}, e);

  // ---- upload / fetch: the host's view of a backend's tensor, Fetch::Soon and Fetch::OnRead --------------
  // (every case's result is also read with at() before all of it, and checked with deferred_nonfinite
  // where the fetched tensor finds_nonfinite())
  auto round_trip = [&](std::string name, Tensor a, Fetch f) {
    add({"upload/fetch", name + (f == Fetch::Soon ? ", Fetch::Soon" : ", Fetch::OnRead"), kExact, {std::move(a)},
         [](Backend&, const In& x) -> Got { return x[0]; }, [](const Refs& x) { return x[0]; }, f});
  };
  const Tensor odd = with(rand({7, 13}, 210), {{3, kNaNF}, {50, kInfF}, {90, -kInfF}});
  for (Fetch f : {Fetch::Soon, Fetch::OnRead}) {
    round_trip("(7, 13) with NaN and ±inf", odd, f);
    round_trip("no elements (0, 5)", Tensor({0, 5}), f);
    round_trip("(70000, 3)", rand({70000, 3}, 211), f);
    add({"upload/fetch", std::string("a computed (3, 7, 13) result, at() before reading") + (f == Fetch::Soon ? ", Fetch::Soon" : ", Fetch::OnRead"),
         kOneRounding, {rand({3, 7, 13}, 212)}, [](Backend& be, const In& x) -> Got { return be.scale(x[0], 3.0f); },
         [](const Refs& x) { return ref_scale(x[0], 3.0); }, f});
    // a product the cpu defers (it finds_nonfinite()): row 3 is -inf, row 7 NaN (b > 0)
    add({"upload/fetch",
         std::string("deferred_nonfinite(false / true) of a product with a -inf row and a NaN row: (1, 256, 2)·(1, 2, 256)") +
             (f == Fetch::Soon ? ", Fetch::Soon" : ", Fetch::OnRead"),
         product_tol(2),
         {with(make({1, 256, 2}, [](i64 i) { return 0.5f + static_cast<float>(i % 5) * 0.25f; }), {{6, -kInfF}, {15, kNaNF}}),
          make({1, 2, 256}, [](i64 i) { return 0.25f + static_cast<float>(i % 7) * 0.125f; })},
         [](Backend& be, const In& x) -> Got { return be.matmul(x[0], x[1]); }, [](const Refs& x) { return ref_matmul(x[0], x[1]); }, f});
    add({"upload/fetch", std::string("deferred_nonfinite of a finite product: (2, 257, 16)·(2, 16, 257)") + (f == Fetch::Soon ? ", Fetch::Soon" : ", Fetch::OnRead"),
         product_tol(16), {rand({2, 257, 16}, 213), rand({2, 16, 257}, 214)},
         [](Backend& be, const In& x) -> Got { return be.matmul(x[0], x[1]); }, [](const Refs& x) { return ref_matmul(x[0], x[1]); }, f});
  }

  // ---- chains: a primitive over another's result (the cpu backend reads deferred steps in place) ----------
  {
    // attention on (B·H, T, hs) heads: scores q·kᵀ, scaled, masked (causal, lengths {T, 0}: batch row 1
    // has no keys), softmax, weights · v
    constexpr i64 B = 2, H = 4, T = 520, hs = 16, hv = 8;
    const std::vector<i64> lengths{T, 0};
    const Tensor q = rand({B * H, T, hs}, 300), k = rand({B * H, T, hs}, 301), v = rand({B * H, T, hv}, 302);
    auto scores = [](Backend& be, const In& x) { return be.matmul(x[0], be.transpose_last2(x[1])); };
    auto scores_ref = [](const Refs& x) { return ref_matmul(x[0], ref_transpose(x[1])); };
    auto masked = [=](Backend& be, const In& x) {
      return be.masked_fill(be.scale(scores(be, x), 0.25f).view({B, H, T, T}), be.mask_keep(B, T, T, true, 0, 0, lengths, false), -kInfF);
    };
    auto masked_ref = [=](const Refs& x) {
      return ref_masked_fill(reshape(ref_scale(scores_ref(x), 0.25), {B, H, T, T}), ref_mask_keep(B, T, T, true, 0, 0, lengths, false), -kInf);
    };
    auto weights = [=](Backend& be, const In& x, EmptyRow e) { return be.softmax_rows(masked(be, x).view({B * H * T, T}), e); };
    auto weights_ref = [=](const Refs& x, EmptyRow e) { return ref_softmax(reshape(masked_ref(x), {B * H * T, T}), e); };
    const std::string dims = "(B·H, T, S, hs) = (8, 520, 520, 16)";
    add({"matmul", "q · transpose_last2(k) " + dims + " (cpu: deferred, kᵀ read in place)", product_tol(hs), {q, k},
         [=](Backend& be, const In& x) -> Got { return scores(be, x); }, scores_ref});
    add({"scale", "of q·kᵀ " + dims + " × 0.25 (cpu: deferred)", product_tol(hs), {q, k},
         [=](Backend& be, const In& x) -> Got { return be.scale(scores(be, x), 0.25f); }, [=](const Refs& x) { return ref_scale(scores_ref(x), 0.25); }});
    add({"masked_fill", "of scaled q·kᵀ by mask_keep (causal, lengths {520, 0}) (cpu: deferred)", product_tol(hs), {q, k},
         [=](Backend& be, const In& x) -> Got { return masked(be, x); }, masked_ref});
    add({"empty_rows", "of masked scaled q·kᵀ, (4160, 520): rows 2080 on (cpu: deferred)", kExact, {q, k},
         [=](Backend& be, const In& x) -> Got { return be.empty_rows(masked(be, x).view({B * H * T, T})); },
         [=](const Refs& x) { return ref_empty_rows(reshape(masked_ref(x), {B * H * T, T})); }});
    for (EmptyRow e : kPolicies) {
      add({"softmax_rows", std::string("of masked scaled q·kᵀ (4160, 520) (cpu: deferred), ") + policy_name(e), kSoftmax, {q, k},
           [=](Backend& be, const In& x) -> Got { return weights(be, x, e); }, [=](const Refs& x) { return weights_ref(x, e); }});
    }
    for (EmptyRow e : {EmptyRow::Zeros, EmptyRow::Uniform}) {
      add({"row_sums", std::string("of softmax weights (4160, 520) (cpu: the softmax's own sums), ") + policy_name(e), sum_tol(T), {q, k},
           [=](Backend& be, const In& x) -> Got { return be.row_sums(weights(be, x, e)); }, [=](const Refs& x) { return ref_row_sums(weights_ref(x, e)); }});
    }
    for (EmptyRow e : kPolicies) {
      add({"matmul", std::string("softmax weights · v (8, 520, 520)·(8, 520, 8) (cpu: weights never held), ") + policy_name(e), kFused, {q, k, v},
           [=](Backend& be, const In& x) -> Got { return be.matmul(weights(be, x, e).view({B * H, T, T}), x[2]); },
           [=](const Refs& x) { return ref_matmul(reshape(weights_ref(x, e), {B * H, T, T}), x[2]); }});
    }
  }
  {
    // heads from a fused projection qkv (B·T, 3C): column slices, viewed (B, T, H, hs), axes 1 and 2
    // swapped; then attention on them and the heads merged back
    constexpr i64 B = 2, T = 300, H = 4, hs = 32, C = H * hs;
    const Tensor qkv = rand({B * T, 3 * C}, 310);
    auto heads = [=](Backend& be, const BackendTensor& x, i64 part) { return be.swap_axes_1_2(be.slice_columns(x, part * C, C).view({B, T, H, hs})); };
    auto heads_ref = [=](const Arr& x, i64 part) { return ref_swap12(reshape(ref_slice(x, part * C, C), {B, T, H, hs})); };
    const float sc = static_cast<float>(1 / std::sqrt(static_cast<double>(hs)));
    auto context = [=](Backend& be, const In& x) {
      auto s = be.scale(be.matmul(heads(be, x[0], 0).view({B * H, T, hs}), be.transpose_last2(heads(be, x[0], 1).view({B * H, T, hs}))), sc);
      return be.matmul(be.softmax_rows(s.view({B * H * T, T})).view({B * H, T, T}), heads(be, x[0], 2).view({B * H, T, hs}));
    };
    auto context_ref = [=](const Refs& x) {
      auto s = ref_scale(ref_matmul(reshape(heads_ref(x[0], 0), {B * H, T, hs}), ref_transpose(reshape(heads_ref(x[0], 1), {B * H, T, hs}))), sc);
      return ref_matmul(reshape(ref_softmax(reshape(s, {B * H * T, T}), EmptyRow::Nan), {B * H, T, T}), reshape(heads_ref(x[0], 2), {B * H, T, hs}));
    };
    add({"swap_axes_1_2", "k heads of qkv (600, 384): slice, view (2, 300, 4, 32), swap (cpu: read in place)", kExact, {qkv},
         [=](Backend& be, const In& x) -> Got { return heads(be, x[0], 1); }, [=](const Refs& x) { return heads_ref(x[0], 1); }});
    add({"matmul", "q heads · k headsᵀ, both read from qkv (8, 300, 32)·(8, 32, 300)", product_tol(hs), {qkv},
         [=](Backend& be, const In& x) -> Got {
           return be.matmul(heads(be, x[0], 0).view({B * H, T, hs}), be.transpose_last2(heads(be, x[0], 1).view({B * H, T, hs})));
         },
         [=](const Refs& x) { return ref_matmul(reshape(heads_ref(x[0], 0), {B * H, T, hs}), ref_transpose(reshape(heads_ref(x[0], 1), {B * H, T, hs}))); }});
    add({"matmul", "softmax(q·kᵀ/√hs) · v heads of qkv (cpu: written in the merged order)", kFused, {qkv},
         [=](Backend& be, const In& x) -> Got { return context(be, x); }, context_ref});
    add({"swap_axes_1_2", "merge: that context (2, 4, 300, 32) -> (2, 300, 4, 32)", kFused, {qkv},
         [=](Backend& be, const In& x) -> Got { return be.swap_axes_1_2(context(be, x).view({B, H, T, hs})); },
         [=](const Refs& x) { return ref_swap12(reshape(context_ref(x), {B, H, T, hs})); }});
  }
  return cases;
}

// ---- running a case on a backend ------------------------------------------------------------------

enum class Outcome { Ok, Fail, NotSupported, Skipped };

struct Result {
  Outcome outcome = Outcome::Ok;
  std::string note;                  // after "ok" / "FAIL" on the line
  std::vector<std::string> details;  // the first mismatches
};

std::string position(const Shape& shape, i64 flat) {
  std::vector<i64> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] > 0 ? flat % shape[d] : 0;
    flat = shape[d] > 0 ? flat / shape[d] : 0;
  }
  return fmt::format("({})", fmt::join(idx, ", "));
}

std::string text(double v) { return std::isnan(v) ? "nan" : fmt::format("{:.9g}", v); }

// the first entry that is not finite (-inf counted as finite when minus_inf_allowed), or −1
i64 first_nonfinite(const Arr& a, bool minus_inf_allowed) {
  for (i64 i = 0; i < count(a.shape); ++i)
    if (std::isnan(a[i]) || a[i] == kInf || (a[i] == -kInf && !minus_inf_allowed)) return i;
  return -1;
}

// Compares every entry of got against ref; the first few mismatches go to details.
Result compare_all(const Arr& ref, const std::function<double(i64)>& got, const Tolerance& tol) {
  Result r;
  i64 bad = 0;
  double worst = 0;
  for (i64 i = 0; i < count(ref.shape); ++i) {
    const double g = got(i);
    if (std::isfinite(ref[i]) && std::isfinite(g)) worst = std::max(worst, std::fabs(ref[i] - g));
    if (same(ref[i], g, tol)) continue;
    if (++bad <= 5) r.details.push_back(fmt::format("flat {} at {}: ref {} got {}", i, position(ref.shape, i), text(ref[i]), text(g)));
  }
  if (bad > 0) {
    r.outcome = Outcome::Fail;
    r.note = fmt::format("{} of {} entries differ, atol {} rtol {}", bad, count(ref.shape), tol.atol, tol.rtol);
  } else {
    r.note = fmt::format("max |ref − got| {:.1e}", worst);
  }
  return r;
}

Result fail(std::string why) { return {Outcome::Fail, std::move(why), {}}; }

// values: whether the backend holds values (not the shapes backend, whose results are shapes only)
Result run_case(const Case& c, const Arr& ref, Backend& be, bool values) {
  In in;
  for (const auto& t : c.inputs) in.push_back(be.upload(t));
  const Got got = c.run(be, in);

  if (const auto* e = std::get_if<Backend::EmptyRows>(&got)) {
    Arr expected = ref;
    if (!values) expected.v = {0, -1};  // a dry run has no empty rows
    Arr g({2});
    g.v = {static_cast<double>(e->count), static_cast<double>(e->first)};
    Result r = compare_all(expected, [&](i64 i) { return g[i]; }, c.tol);
    r.note = fmt::format("count {} first {}", e->count, e->first) + (r.outcome == Outcome::Fail ? fmt::format(" (want {} {})", expected[0], expected[1]) : "");
    return r;
  }
  const BackendTensor& t = std::get<BackendTensor>(got);
  if (t.shape != ref.shape) return fail(fmt::format("shape {}, want {}", attn::shape_string(t.shape), attn::shape_string(ref.shape)));
  const Tensor host = be.fetch(t, c.fetch);
  if (host.shape() != ref.shape) return fail(fmt::format("fetched shape {}, want {}", attn::shape_string(host.shape()), attn::shape_string(ref.shape)));
  if (!values) return {Outcome::Ok, "shape " + attn::shape_string(t.shape), {}};

  const i64 n = count(ref.shape);
  if (host.size() != n) return fail(fmt::format("fetched {} values, want {}", host.size(), n));
  std::vector<std::string> probe_failures;
  // a few entries with at() before anything reads all of them (a deferred or a device's tensor gives just those)
  std::vector<i64> probes;
  if (n > 0) probes = {0, n - 1, n / 2, n * 7 / 13, first_nonfinite(ref, false), first_nonfinite(ref, true)};
  std::sort(probes.begin(), probes.end());
  probes.erase(std::unique(probes.begin(), probes.end()), probes.end());
  for (i64 i : probes) {
    if (i < 0) continue;
    const double g = host.at(i);
    if (!same(ref[i], g, c.tol)) probe_failures.push_back(fmt::format("at({}) {}: ref {} got {}", i, position(ref.shape, i), text(ref[i]), text(g)));
  }
  // where the fetched tensor can say where its first non-finite entry is without being filled
  const bool finds = host.finds_nonfinite();
  if (finds) {
    for (bool minus_inf_allowed : {false, true}) {
      const i64 want = first_nonfinite(ref, minus_inf_allowed), have = host.deferred_nonfinite(minus_inf_allowed);
      if (want != have)
        probe_failures.push_back(fmt::format("deferred_nonfinite({}) = {}, want {}", minus_inf_allowed, have, want) +
                                 (want >= 0 ? " " + position(ref.shape, want) : ""));
    }
  }
  const auto all = host.values();
  if (static_cast<i64>(all.size()) != n) return fail(fmt::format("values() holds {} values, want {}", all.size(), n));
  Result r = compare_all(ref, [&](i64 i) { return static_cast<double>(all[static_cast<std::size_t>(i)]); }, c.tol);
  if (!probe_failures.empty()) {
    r.outcome = Outcome::Fail;
    r.note += fmt::format("; {} check(s) before reading all failed", probe_failures.size());
    r.details.insert(r.details.begin(), probe_failures.begin(), probe_failures.end());
  }
  if (finds) r.note += "; deferred_nonfinite checked";
  return r;
}

// "not supported": attn has no NotSupported exception; a backend says so with an InternalError
bool says_not_supported(const std::exception& e) { return std::string(e.what()).find("not supported") != std::string::npos; }

struct Column {
  std::string name;
  std::unique_ptr<Backend> backend;
  bool values = true;
  std::string skipped;  // why the column cannot run
  int ok = 0, failed = 0, unsupported = 0, skips = 0;
};

}  // namespace

int main() {
  std::vector<Column> columns;
  columns.push_back({"cpu", attn::make_cpu_backend(), true, ""});
  columns.push_back({"shapes", attn::make_shape_backend(), false, ""});
  Column cuda{"cuda", nullptr, true, ""};
  try {
    cuda.backend = attn::make_backend("cuda");
  } catch (const attn::InputError& e) {  // no CUDA in this build, or no device
    cuda.skipped = e.what();
  }
  columns.push_back(std::move(cuda));

  std::cout << "backend primitives against double-precision references: |ref − got| <= atol + rtol·|ref|, non-finite values exactly\n";
  for (const auto& col : columns)
    if (!col.skipped.empty()) std::cout << fmt::format("{}: SKIPPED (no device): {}\n", col.name, col.skipped);

  const std::vector<Case> cases = all_cases();
  for (const auto& c : cases) {
    std::vector<Arr> refs;
    for (const auto& t : c.inputs) refs.push_back(arr(t));
    const Arr ref = c.ref(refs);
    for (auto& col : columns) {
      const std::string head = fmt::format("{:<6} {:<15} {}:", col.name, c.primitive, c.name);
      if (!col.skipped.empty()) {
        ++col.skips;
        std::cout << head << " SKIPPED (no device)\n";
        continue;
      }
      Result r;
      try {
        r = run_case(c, ref, *col.backend, col.values);
      } catch (const attn::DeviceError& e) {  // the device's limits (busy, out of memory), not a wrong value
        r = {Outcome::Skipped, std::string("device: ") + e.what(), {}};
      } catch (const attn::InternalError& e) {
        r = says_not_supported(e) ? Result{Outcome::NotSupported, e.what(), {}} : fail(std::string("threw InternalError: ") + e.what());
      } catch (const std::exception& e) {
        r = fail(std::string("threw: ") + e.what());
      }
      const char* word = "ok";
      switch (r.outcome) {
        case Outcome::Ok: ++col.ok; break;
        case Outcome::Fail: ++col.failed, word = "FAIL"; break;
        case Outcome::NotSupported: ++col.unsupported, word = "not supported"; break;
        case Outcome::Skipped: ++col.skips, word = "SKIPPED"; break;
      }
      std::cout << head << " " << word << (r.note.empty() ? "" : " (" + r.note + ")") << "\n";
      for (const auto& d : r.details) std::cout << "      " << d << "\n";
    }
  }

  int failed = 0;
  std::vector<std::string> parts;
  for (const auto& col : columns) {
    failed += col.failed;
    if (!col.skipped.empty()) {
      parts.push_back(fmt::format("{} SKIPPED (no device)", col.name));
      continue;
    }
    std::string p = fmt::format("{} {} ok, {} FAIL", col.name, col.ok, col.failed);
    if (col.unsupported > 0) p += fmt::format(", {} not supported", col.unsupported);
    if (col.skips > 0) p += fmt::format(", {} skipped", col.skips);
    parts.push_back(p);
  }
  std::cout << fmt::format("summary: {} cases × {} backends: {}\n", cases.size(), columns.size(), fmt::join(parts, "; "));
  std::cout << (failed == 0 ? "backend primitives: ok\n" : fmt::format("backend primitives: {} FAIL\n", failed));
  return failed == 0 ? 0 : 1;
}
