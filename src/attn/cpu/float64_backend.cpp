// The float64 backend: every primitive of backend.hpp in double, one thread, plain loops in a fixed
// order (the same bits on every x86-64 machine: fixed_math.hpp's exp and tanh, built with
// -ffp-contract=off). It is attn check's judge: what a document that computed in float64 (NumPy's
// default) could have printed. Inputs are taken as exact as the spec knows them (Tensor::wide: each
// number as its JSON text wrote it); each fetched step holds its float64 values beside their float32
// rounding. Nothing is deferred and nothing is fast: documents' problems are small.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <string_view>

#include "attn/backend.hpp"
#include "attn/backend_checks.hpp"
#include "attn/error.hpp"
#include "attn/fixed_math.hpp"

namespace attn {
namespace {

namespace check = backend_checks;
constexpr std::string_view kName = "float64";
constexpr double kInf = std::numeric_limits<double>::infinity();

using Values = std::vector<double>;

struct WideBuffer final : BackendBuffer {
  explicit WideBuffer(Values v) : values(std::move(v)) {}
  Values values;
};

// e^x for x ≤ 0 (a softmax's shifted scores): 0 where e^x is below double's normal range, and for -inf.
double exp_nonpositive(double x) { return x < -708 ? 0.0 : fixed::exp(x); }

class Float64Backend final : public Backend {
 public:
  std::string_view name() const override { return kName; }

  BackendTensor upload(const Tensor& t) override {
    if (const Tensor::Wide* w = t.wide()) return wrap(t.shape(), *w);
    const Scalar* p = t.data();  // all at once (a generated tensor read value by value would seek each)
    return wrap(t.shape(), Values(p, p + t.size()));
  }
  Tensor fetch(const BackendTensor& t, Fetch) override {
    const Values& v = values(t);
    Tensor out = Tensor::uninitialized(t.shape);
    for (std::size_t i = 0; i < v.size(); ++i) out.mutable_data()[i] = static_cast<Scalar>(v[i]);
    return out.with_wide(v);
  }

  BackendTensor matmul(const BackendTensor& a, const BackendTensor& b) override {
    // a (N, m, k), b (N, k, n) or (k, n) -> (N, m, n): each element one sum over k in order
    check::matmul(kName, a, b);
    const auto N = a.shape[0], m = a.shape[1], k = a.shape[2], n = b.shape.back();
    const bool shared = b.shape.size() == 2;
    const Values& pa = values(a);
    const Values& pb = values(b);
    Values out(static_cast<std::size_t>(N * m * n), 0.0);
    for (std::int64_t i = 0; i < N; ++i) {
      const double* bi = pb.data() + (shared ? 0 : i * k * n);
      for (std::int64_t r = 0; r < m; ++r) {
        double* row = out.data() + (i * m + r) * n;
        for (std::int64_t l = 0; l < k; ++l) {
          const double x = pa[static_cast<std::size_t>((i * m + r) * k + l)];
          for (std::int64_t c = 0; c < n; ++c) row[c] += x * bi[l * n + c];
        }
      }
    }
    return wrap({N, m, n}, std::move(out));
  }

  BackendTensor add_bias(const BackendTensor& a, const BackendTensor& bias) override {
    check::add_bias(kName, a, bias);
    const Values& pb = values(bias);
    return map(a, [&](std::size_t i, double x) { return x + pb[i % pb.size()]; });
  }

  BackendTensor transpose_last2(const BackendTensor& a) override {
    check::transpose_last2(kName, a);
    const auto N = a.shape[0], m = a.shape[1], n = a.shape[2];
    return gather(a, {N, n, m}, [=](std::int64_t o) {
      const auto i = o / (m * n), r = o % (m * n);  // out (i, r / m, r % m) = a (i, r % m, r / m)
      return (i * m + r % m) * n + r / m;
    });
  }

  BackendTensor swap_axes_1_2(const BackendTensor& a) override {
    check::swap_axes_1_2(kName, a);
    const auto d0 = a.shape[0], d1 = a.shape[1], d2 = a.shape[2], d3 = a.shape[3];
    return gather(a, {d0, d2, d1, d3}, [=](std::int64_t o) {
      const auto i = o / (d2 * d1 * d3), l = o / (d1 * d3) % d2, j = o / d3 % d1, c = o % d3;
      return ((i * d1 + j) * d2 + l) * d3 + c;
    });
  }

  BackendTensor slice_columns(const BackendTensor& a, std::int64_t offset, std::int64_t width) override {
    check::slice_columns(kName, a, offset, width);
    const auto n = a.shape[1];
    return gather(a, {a.shape[0], width}, [=](std::int64_t o) { return o / width * n + offset + o % width; });
  }

  BackendTensor scale(const BackendTensor& a, double factor) override {
    return map(a, [factor](std::size_t, double x) { return x * factor; });
  }

  BackendTensor masked_fill(const BackendTensor& scores, const BackendTensor& keep, double fill) override {
    // scores (B, G, T, S), keep (B, T, S)
    check::masked_fill(kName, scores, keep);
    const auto G = scores.shape[1], plane = scores.shape[2] * scores.shape[3];
    const Values& k = values(keep);
    return map(scores, [&](std::size_t i, double x) {
      const auto f = static_cast<std::int64_t>(i);
      return k[static_cast<std::size_t>(f / (G * plane) * plane + f % plane)] != 0 ? x : fill;
    });
  }

  BackendTensor softmax_rows(const BackendTensor& a, EmptyRow empty) override {
    check::softmax_rows(kName, a);
    const auto rows = a.shape[0], n = a.shape[1];
    Values out = values(a);
    for (std::int64_t r = 0; r < rows; ++r) {
      double* y = out.data() + r * n;
      double mx = -kInf;
      for (std::int64_t j = 0; j < n; ++j) mx = std::max(mx, y[j]);
      if (mx == -kInf) {
        const double fill = empty == EmptyRow::Zeros     ? 0.0
                            : empty == EmptyRow::Uniform ? 1.0 / static_cast<double>(n)
                                                         : std::numeric_limits<double>::quiet_NaN();
        std::fill(y, y + n, fill);
        continue;
      }
      double sum = 0;
      for (std::int64_t j = 0; j < n; ++j) sum += (y[j] = exp_nonpositive(y[j] - mx));
      for (std::int64_t j = 0; j < n; ++j) y[j] /= sum;
    }
    return wrap(a.shape, std::move(out));
  }

  BackendTensor row_sums(const BackendTensor& a) override {
    check::row_sums(kName, a);
    const auto rows = a.shape[0], n = a.shape[1];
    const Values& x = values(a);
    Values out(static_cast<std::size_t>(rows), 0.0);
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t j = 0; j < n; ++j) out[static_cast<std::size_t>(r)] += x[static_cast<std::size_t>(r * n + j)];
    return wrap({rows}, std::move(out));
  }

  BackendTensor rms_norm_rows(const BackendTensor& a, const BackendTensor& w, double eps) override {
    check::rms_norm_rows(kName, a, w);
    const auto rows = a.shape[0], n = a.shape[1];
    const Values& x = values(a);
    const Values& wt = values(w);
    Values out(x.size());
    for (std::int64_t r = 0; r < rows; ++r) {
      double sq = 0;
      for (std::int64_t j = 0; j < n; ++j) sq += x[static_cast<std::size_t>(r * n + j)] * x[static_cast<std::size_t>(r * n + j)];
      const double inv = 1.0 / std::sqrt((n > 0 ? sq / static_cast<double>(n) : 0.0) + eps);
      for (std::int64_t j = 0; j < n; ++j) {
        const auto f = static_cast<std::size_t>(r * n + j);
        out[f] = wt[static_cast<std::size_t>(j)] * (x[f] * inv);
      }
    }
    return wrap(a.shape, std::move(out));
  }

  EmptyRows empty_rows(const BackendTensor& a) override {
    check::empty_rows(kName, a);
    const auto rows = a.shape[0], n = a.shape[1];
    const Values& x = values(a);
    EmptyRows e;
    for (std::int64_t r = 0; r < rows && n > 0; ++r) {
      std::int64_t j = 0;
      while (j < n && x[static_cast<std::size_t>(r * n + j)] == -kInf) ++j;
      if (j < n) continue;
      if (e.count++ == 0) e.first = r;
    }
    return e;
  }

  BackendTensor mask_keep(std::int64_t B, std::int64_t T, std::int64_t S, bool causal, std::int64_t offset, std::int64_t window,
                          const std::vector<std::int64_t>& lengths, bool flipped) override {
    check::mask_keep(kName, B, T, S, lengths);
    Values out(static_cast<std::size_t>(B * T * S));
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t i = 0; i < T; ++i)
        for (std::int64_t j = 0; j < S; ++j) out[static_cast<std::size_t>((b * T + i) * S + j)] = kept(causal, offset, window, lengths, b, i, j) != flipped;
    return wrap({B, T, S}, std::move(out));
  }

  BackendTensor keep_and(const BackendTensor& keep, const BackendTensor& other) override {
    check::keep_and(kName, keep, other);
    const auto plane = static_cast<std::size_t>(keep.shape[1] * keep.shape[2]);
    const bool shared = other.shape[0] == 1;
    const Values& o = values(other);
    return map(keep, [&](std::size_t i, double x) { return x != 0 && o[shared ? i % plane : i] != 0 ? 1.0 : 0.0; });
  }

  BackendTensor add_mask(const BackendTensor& scores, const BackendTensor& add) override {
    check::add_mask(kName, scores, add);
    const auto groups = static_cast<std::size_t>(scores.shape[1]), plane = static_cast<std::size_t>(scores.shape[2] * scores.shape[3]);
    const bool shared = add.shape[0] == 1;
    const Values& m = values(add);
    return map(scores, [&](std::size_t i, double x) { return x + m[(shared ? 0 : i / (groups * plane)) * plane + i % plane]; });
  }

  BackendTensor rotate_pairs(const BackendTensor& a, const BackendTensor& cos, const BackendTensor& sin, std::int64_t first,
                             bool interleaved) override {
    // a (N, L, h), cos and sin (P, R/2): pair i of row l turned by table row first + l
    check::rotate_pairs(kName, a, cos, sin, first);
    const auto N = a.shape[0], L = a.shape[1], h = a.shape[2], pairs = cos.shape[1];
    const Values& x = values(a);
    const Values& pc = values(cos);
    const Values& ps = values(sin);
    Values out = x;
    const std::int64_t stride = interleaved ? 2 : 1, partner = interleaved ? 1 : pairs;
    for (std::int64_t r = 0; r < N * L; ++r) {
      const auto row = static_cast<std::size_t>(r * h), t = static_cast<std::size_t>((first + r % L) * pairs);
      for (std::int64_t i = 0; i < pairs; ++i) {
        const auto u = row + static_cast<std::size_t>(i * stride), w = u + static_cast<std::size_t>(partner);
        const double c = pc[t + static_cast<std::size_t>(i)], s = ps[t + static_cast<std::size_t>(i)];
        out[u] = x[u] * c - x[w] * s;
        out[w] = x[w] * c + x[u] * s;
      }
    }
    return wrap(a.shape, std::move(out));
  }

  BackendTensor append_rows(const BackendTensor& a, const BackendTensor& b) override {
    check::append_rows(kName, a, b);
    const auto r = a.shape.size();
    const auto h = a.shape.back(), L = a.shape[r - 2], M = b.shape[r - 2];
    Shape shape = b.shape;
    shape[r - 2] = L + M;
    const Values& pa = values(a);
    const Values& pb = values(b);
    const std::int64_t n = element_count(b.shape) / (M * h);
    Values out;
    out.reserve(static_cast<std::size_t>(n * (L + M) * h));
    for (std::int64_t i = 0; i < n; ++i) {
      if (L > 0) out.insert(out.end(), pa.begin() + i * L * h, pa.begin() + (i + 1) * L * h);
      out.insert(out.end(), pb.begin() + i * M * h, pb.begin() + (i + 1) * M * h);
    }
    return wrap(std::move(shape), std::move(out));
  }

  BackendTensor repeat_heads(const BackendTensor& a, std::int64_t n, bool tiled) override {
    check::repeat_heads(kName, a, n);
    const auto B = a.shape[0], G = a.shape[1], plane = a.shape[2] * a.shape[3];
    return gather(a, {B, G * n, a.shape[2], a.shape[3]}, [=](std::int64_t o) {
      const auto b = o / (G * n * plane), h = o / plane % (G * n), g = tiled ? h % G : h / n;
      return (b * G + g) * plane + o % plane;
    });
  }

  BackendTensor soft_cap(const BackendTensor& a, double cap) override {
    check::soft_cap(kName, a, cap);
    return map(a, [cap](std::size_t, double x) { return cap * fixed::tanh(x / cap); });
  }

  BackendTensor distance_bias(const BackendTensor& slopes, std::int64_t T, std::int64_t S, std::int64_t offset) override {
    check::distance_bias(kName, slopes);
    const auto H = slopes.shape[0];
    const Values& m = values(slopes);
    Values out(static_cast<std::size_t>(H * T * S));
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < T; ++i)
        for (std::int64_t j = 0; j < S; ++j)
          out[static_cast<std::size_t>((h * T + i) * S + j)] = -m[static_cast<std::size_t>(h)] * static_cast<double>(i + offset - j);
    return wrap({H, T, S}, std::move(out));
  }

  BackendTensor fused_attention(const BackendTensor& q, const BackendTensor& k, const BackendTensor& v, double scale, const FusedMask& mask,
                                EmptyRow empty) override {
    // The materialised steps composed: query head h reads kv head h / (H / Hkv).
    check::fused_attention(kName, q, k, v, mask);
    const auto B = q.shape[0], H = q.shape[1], T = q.shape[2], Hkv = k.shape[1];
    BackendTensor keys = Hkv == H ? k : repeat_heads(k, H / Hkv, false), vals = Hkv == H ? v : repeat_heads(v, H / Hkv, false);
    const auto S = keys.shape[2], hs = keys.shape[3], hv = vals.shape[3];
    BackendTensor scores = this->scale(matmul(q.view({B * H, T, hs}), transpose_last2(keys.view({B * H, S, hs}))), scale);
    scores = masked_fill(scores.view({B, H, T, S}), mask_keep(B, T, S, mask.causal, mask.offset, mask.window, mask.lengths, false), -kInf);
    const BackendTensor weights = softmax_rows(scores.view({B * H * T, S}), empty);
    return matmul(weights.view({B * H, T, S}), vals.view({B * H, S, hv})).view({B, H, T, hv});
  }

  BackendTensor add(const BackendTensor& a, const BackendTensor& b) override {
    same_shape(a, b, "add");
    const Values& y = values(b);
    return map(a, [&](std::size_t i, double x) { return x + y[i]; });
  }
  BackendTensor mul(const BackendTensor& a, const BackendTensor& b) override {
    same_shape(a, b, "mul");
    const Values& y = values(b);
    return map(a, [&](std::size_t i, double x) { return x * y[i]; });
  }
  BackendTensor softmax_backward_rows(const BackendTensor& w, const BackendTensor& dw) override {
    if (w.shape.size() != 2) throw InternalError(fmt::format("{} backend: softmax_backward_rows wants (N, n)", kName));
    same_shape(w, dw, "softmax_backward_rows");
    const auto rows = w.shape[0], n = w.shape[1];
    const Values& pw = values(w);
    const Values& pd = values(dw);
    Values out(pw.size());
    for (std::int64_t r = 0; r < rows; ++r) {
      double dot = 0;
      for (std::int64_t j = 0; j < n; ++j) dot += pd[static_cast<std::size_t>(r * n + j)] * pw[static_cast<std::size_t>(r * n + j)];
      for (std::int64_t j = 0; j < n; ++j) {
        const auto f = static_cast<std::size_t>(r * n + j);
        out[f] = pw[f] * (pd[f] - dot);
      }
    }
    return wrap(w.shape, std::move(out));
  }

 private:
  static const Values& values(const BackendTensor& t) {
    const auto* b = dynamic_cast<const WideBuffer*>(t.buffer.get());
    if (b == nullptr) throw InternalError("float64 backend: a tensor from another backend");
    return b->values;
  }
  static BackendTensor wrap(Shape shape, Values v) { return BackendTensor{std::move(shape), std::make_shared<const WideBuffer>(std::move(v))}; }
  template <class F>
  static BackendTensor map(const BackendTensor& a, F f) {
    Values out = values(a);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = f(i, out[i]);
    return wrap(a.shape, std::move(out));
  }
  template <class F>
  static BackendTensor gather(const BackendTensor& a, Shape shape, F from) {
    const Values& x = values(a);
    Values out(static_cast<std::size_t>(element_count(shape)));
    for (std::size_t o = 0; o < out.size(); ++o) out[o] = x[static_cast<std::size_t>(from(static_cast<std::int64_t>(o)))];
    return wrap(std::move(shape), std::move(out));
  }
  static void same_shape(const BackendTensor& a, const BackendTensor& b, std::string_view what) {
    if (a.shape != b.shape) throw InternalError(fmt::format("{} backend: {} wants two tensors of one shape", kName, what));
  }
  // mask_keep's rule (backend.hpp)
  static bool kept(bool causal, std::int64_t offset, std::int64_t window, const std::vector<std::int64_t>& lengths, std::int64_t b, std::int64_t i,
                   std::int64_t j) {
    return !(causal && j > i + offset) && !(window > 0 && j <= i + offset - window) && !(!lengths.empty() && j >= lengths[static_cast<std::size_t>(b)]);
  }
};

}  // namespace

std::unique_ptr<Backend> make_float64_backend() { return std::make_unique<Float64Backend>(); }

}  // namespace attn
