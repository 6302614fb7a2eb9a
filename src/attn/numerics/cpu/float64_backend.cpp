// The float64 backend: every primitive of backend.hpp in double, one thread, plain loops in a fixed
// order (the same bits on every x86-64 machine: fixed_math.hpp's exp and tanh, built with
// -ffp-contract=off). It is attn check's judge: what a document that computed in float64 (NumPy's
// default) could have printed. Inputs are taken as exact as the spec knows them (Tensor::wide: each
// number as its JSON text wrote it); each fetched step holds its float64 values beside their float32
// rounding, and the size of the terms that made each value (how far float32's rounding can move it).
// Nothing is deferred and nothing is fast: documents' problems are small.
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <string_view>

#include "attn/numerics/backend.hpp"
#include "attn/numerics/backend_checks.hpp"
#include "attn/numerics/cpu/deferred.hpp"
#include "attn/core/error.hpp"
#include "attn/numerics/fixed_math.hpp"

namespace attn {
namespace {

namespace check = backend_checks;
constexpr std::string_view kName = "float64";
constexpr double kInf = std::numeric_limits<double>::infinity();

using Values = std::vector<double>;

// Each value, and the size of the terms that made it (see Tensor::wide_terms): the sum of |a|·|b|
// over a product's terms, carried through every primitive to first order, plus |value| for the
// primitive's own rounding.
struct WideBuffer final : BackendBuffer {
  WideBuffer(Values v, Values t) : values(std::move(v)), terms(std::move(t)) {}
  Values values, terms;
};

struct Wide {
  Values v, t;
};

// e^x for x ≤ 0 (a softmax's shifted scores): 0 where e^x is below double's normal range, and for -inf.
double exp_nonpositive(double x) { return x < -708 ? 0.0 : fixed::exp(x); }

// |x|, and 0 for what is not finite (a blocked score carries no rounding)
double size(double x) { return std::isfinite(x) ? std::fabs(x) : 0.0; }

class Float64Backend final : public Backend {
 public:
  std::string_view name() const override { return kName; }

  BackendTensor upload(const Tensor& t) override {
    Values v;
    if (const Tensor::Wide* w = t.wide()) {
      v = *w;
    } else {
      const Scalar* p = t.data();  // all at once (a generated tensor read value by value would seek each)
      v.assign(p, p + t.size());
    }
    // a float64 step uploaded again (the backward pass's saved forward steps) keeps its terms
    Values terms = t.wide_terms() != nullptr ? *t.wide_terms() : Values(v.size());
    if (t.wide_terms() == nullptr)
      for (std::size_t i = 0; i < v.size(); ++i) terms[i] = size(v[i]);
    return wrap(t.shape(), {std::move(v), std::move(terms)});
  }
  Tensor fetch(const BackendTensor& t, Fetch) override {
    const WideBuffer& b = buffer(t);
    Tensor out = Tensor::uninitialized(t.shape);
    for (std::size_t i = 0; i < b.values.size(); ++i) out.mutable_data()[i] = static_cast<Scalar>(b.values[i]);
    return out.with_wide(b.values, b.terms);
  }

  BackendTensor matmul(const BackendTensor& a, const BackendTensor& b) override {
    // a (N, m, k), b (N, k, n) or (k, n) -> (N, m, n): each element one sum over k in order
    check::matmul(kName, a, b);
    const auto N = a.shape[0], m = a.shape[1], k = a.shape[2], n = b.shape.back();
    const bool shared = b.shape.size() == 2;
    const WideBuffer& pa = buffer(a);
    const WideBuffer& pb = buffer(b);
    Wide out{Values(static_cast<std::size_t>(N * m * n), 0.0), Values(static_cast<std::size_t>(N * m * n), 0.0)};
    for (std::int64_t i = 0; i < N; ++i) {
      const auto bi = static_cast<std::size_t>(shared ? 0 : i * k * n);
      for (std::int64_t r = 0; r < m; ++r) {
        const auto row = static_cast<std::size_t>((i * m + r) * n);
        for (std::int64_t l = 0; l < k; ++l) {
          const auto at = static_cast<std::size_t>((i * m + r) * k + l);
          const double x = pa.values[at], tx = pa.terms[at];
          for (std::int64_t c = 0; c < n; ++c) {
            const auto bl = bi + static_cast<std::size_t>(l * n + c);
            out.v[row + static_cast<std::size_t>(c)] += x * pb.values[bl];
            out.t[row + static_cast<std::size_t>(c)] += tx * pb.terms[bl];
          }
        }
      }
    }
    return wrap({N, m, n}, std::move(out));
  }

  BackendTensor add_bias(const BackendTensor& a, const BackendTensor& bias) override {
    check::add_bias(kName, a, bias);
    const WideBuffer& pb = buffer(bias);
    const std::size_t n = pb.values.size();
    return map(a, [&](std::size_t i, double x, double t) { return sum(x, t, pb.values[i % n], pb.terms[i % n]); });
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
    return map(a, [factor](std::size_t, double x, double t) { return Term{x * factor, t * std::fabs(factor) + size(x * factor)}; });
  }

  BackendTensor masked_fill(const BackendTensor& scores, const BackendTensor& keep, double fill) override {
    // scores (B, G, T, S), keep (B, T, S)
    check::masked_fill(kName, scores, keep);
    const auto G = scores.shape[1], plane = scores.shape[2] * scores.shape[3];
    const Values& k = buffer(keep).values;
    return map(scores, [&](std::size_t i, double x, double t) {
      const auto f = static_cast<std::int64_t>(i);
      return k[static_cast<std::size_t>(f / (G * plane) * plane + f % plane)] != 0 ? Term{x, t} : Term{fill, 0.0};
    });
  }

  BackendTensor softmax_rows(const BackendTensor& a, EmptyRow empty) override {
    // w_j = e^(x_j − max) / Σ: an error δ in the x's moves w_j by w_j·(δ_j − Σ_i w_i δ_i)
    check::softmax_rows(kName, a);
    const auto rows = a.shape[0], n = a.shape[1];
    Wide out{buffer(a).values, buffer(a).terms};
    for (std::int64_t r = 0; r < rows; ++r) {
      double* y = out.v.data() + r * n;
      double* t = out.t.data() + r * n;
      double mx = -kInf;
      for (std::int64_t j = 0; j < n; ++j) mx = std::isnan(y[j]) || std::isnan(mx) ? std::numeric_limits<double>::quiet_NaN() : std::max(mx, y[j]);  // NaN spreads to the row, as on the CPU
      if (mx == -kInf) {
        const double fill = empty == EmptyRow::Zeros     ? 0.0
                            : empty == EmptyRow::Uniform ? 1.0 / static_cast<double>(n)
                                                         : std::numeric_limits<double>::quiet_NaN();
        std::fill(y, y + n, fill);
        std::fill(t, t + n, size(fill));
        continue;
      }
      double total = 0;
      for (std::int64_t j = 0; j < n; ++j) total += (y[j] = exp_nonpositive(y[j] - mx));
      double spread = 0;  // Σ_i w_i·terms_i
      for (std::int64_t j = 0; j < n; ++j) spread += (y[j] /= total) * t[j];
      for (std::int64_t j = 0; j < n; ++j) t[j] = y[j] * (t[j] + spread + 1);
    }
    return wrap(a.shape, std::move(out));
  }

  BackendTensor row_sums(const BackendTensor& a) override {
    check::row_sums(kName, a);
    const auto rows = a.shape[0], n = a.shape[1];
    const WideBuffer& x = buffer(a);
    Wide out{Values(static_cast<std::size_t>(rows), 0.0), Values(static_cast<std::size_t>(rows), 0.0)};
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t j = 0; j < n; ++j) {
        out.v[static_cast<std::size_t>(r)] += x.values[static_cast<std::size_t>(r * n + j)];
        out.t[static_cast<std::size_t>(r)] += x.terms[static_cast<std::size_t>(r * n + j)];
      }
    return wrap({rows}, std::move(out));
  }

  BackendTensor rms_norm_rows(const BackendTensor& a, const BackendTensor& w, double eps) override {
    // out_j = w_j·(x_j·inv), inv = 1/√(mean(x²) + eps): an error δ in the x's moves inv by
    // inv·Σ_k x_k δ_k / (n·(mean + eps))
    check::rms_norm_rows(kName, a, w);
    const auto rows = a.shape[0], n = a.shape[1];
    const WideBuffer& x = buffer(a);
    const WideBuffer& wt = buffer(w);
    Wide out{Values(x.values.size()), Values(x.values.size())};
    for (std::int64_t r = 0; r < rows; ++r) {
      const auto row = static_cast<std::size_t>(r * n);
      double sq = 0, moved = 0;
      for (std::size_t j = 0; j < static_cast<std::size_t>(n); ++j) {
        sq += x.values[row + j] * x.values[row + j];
        moved += size(x.values[row + j]) * x.terms[row + j];
      }
      const double mean = (n > 0 ? sq / static_cast<double>(n) : 0.0) + eps;
      const double inv = 1.0 / std::sqrt(mean);
      const double inv_rel = n > 0 ? moved / (static_cast<double>(n) * mean) + 1 : 1;  // inv's relative error, in rounding units
      for (std::size_t j = 0; j < static_cast<std::size_t>(n); ++j) {
        const double xj = x.values[row + j], wj = wt.values[j];
        out.v[row + j] = wj * (xj * inv);
        out.t[row + j] = std::fabs(wj) * inv * (x.terms[row + j] + size(xj) * inv_rel) + size(xj * inv) * wt.terms[j] + size(out.v[row + j]);
      }
    }
    return wrap(a.shape, std::move(out));
  }

  EmptyRows empty_rows(const BackendTensor& a) override {
    check::empty_rows(kName, a);
    const auto rows = a.shape[0], n = a.shape[1];
    const Values& x = buffer(a).values;
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
    const cpu::KeepRule rule{causal, offset, window, lengths, flipped};  // the CPU backend's rule
    Values out(static_cast<std::size_t>(B * T * S));
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t i = 0; i < T; ++i)
        for (std::int64_t j = 0; j < S; ++j) out[static_cast<std::size_t>((b * T + i) * S + j)] = rule.kept(b, i, j);
    return wrap({B, T, S}, {out, Values(out.size(), 0.0)});
  }

  BackendTensor keep_and(const BackendTensor& keep, const BackendTensor& other) override {
    check::keep_and(kName, keep, other);
    const auto plane = static_cast<std::size_t>(keep.shape[1] * keep.shape[2]);
    const bool shared = other.shape[0] == 1;
    const Values& o = buffer(other).values;
    return map(keep, [&](std::size_t i, double x, double) { return Term{x != 0 && o[shared ? i % plane : i] != 0 ? 1.0 : 0.0, 0.0}; });
  }

  BackendTensor add_mask(const BackendTensor& scores, const BackendTensor& add) override {
    check::add_mask(kName, scores, add);
    const auto groups = static_cast<std::size_t>(scores.shape[1]), plane = static_cast<std::size_t>(scores.shape[2] * scores.shape[3]);
    const bool shared = add.shape[0] == 1;
    const WideBuffer& m = buffer(add);
    return map(scores, [&](std::size_t i, double x, double t) {
      const std::size_t at = (shared ? 0 : i / (groups * plane)) * plane + i % plane;
      return sum(x, t, m.values[at], m.terms[at]);
    });
  }

  BackendTensor rotate_pairs(const BackendTensor& a, const BackendTensor& cos, const BackendTensor& sin, std::int64_t first,
                             bool interleaved) override {
    // a (N, L, h), cos and sin (P, R/2): pair i of row l turned by table row first + l
    check::rotate_pairs(kName, a, cos, sin, first);
    const auto N = a.shape[0], L = a.shape[1], h = a.shape[2], pairs = cos.shape[1];
    const WideBuffer& x = buffer(a);
    const WideBuffer& pc = buffer(cos);
    const WideBuffer& ps = buffer(sin);
    Wide out{x.values, x.terms};
    const std::int64_t stride = interleaved ? 2 : 1, partner = interleaved ? 1 : pairs;
    for (std::int64_t r = 0; r < N * L; ++r) {
      const auto row = static_cast<std::size_t>(r * h), at = static_cast<std::size_t>((first + r % L) * pairs);
      for (std::int64_t i = 0; i < pairs; ++i) {
        const auto u = row + static_cast<std::size_t>(i * stride), w = u + static_cast<std::size_t>(partner);
        const double c = pc.values[at + static_cast<std::size_t>(i)], s = ps.values[at + static_cast<std::size_t>(i)];
        const double tc = pc.terms[at + static_cast<std::size_t>(i)], ts = ps.terms[at + static_cast<std::size_t>(i)];
        const double xu = x.values[u], xw = x.values[w];
        out.v[u] = xu * c - xw * s;
        out.v[w] = xw * c + xu * s;
        // each output: two products (a feature and a table entry) and their sum's own rounding
        const auto product = [](double tx, double x, double tt, double t) { return tx * std::fabs(t) + size(x) * tt; };
        out.t[u] = product(x.terms[u], xu, tc, c) + product(x.terms[w], xw, ts, s) + size(out.v[u]);
        out.t[w] = product(x.terms[w], xw, tc, c) + product(x.terms[u], xu, ts, s) + size(out.v[w]);
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
    // row q of matrix i: a's row q while q < L, then b's
    return gather2(a, b, std::move(shape), [=](std::int64_t o) {
      const auto i = o / ((L + M) * h), q = o / h % (L + M), c = o % h;
      return q < L ? std::pair{0, (i * L + q) * h + c} : std::pair{1, (i * M + q - L) * h + c};
    });
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
    return map(a, [cap](std::size_t, double x, double t) {
      const double th = fixed::tanh(x / cap);
      return Term{cap * th, (1 - th * th) * t + size(cap * th)};
    });
  }

  BackendTensor distance_bias(const BackendTensor& slopes, std::int64_t T, std::int64_t S, std::int64_t offset) override {
    check::distance_bias(kName, slopes);
    const auto H = slopes.shape[0];
    const Values& m = buffer(slopes).values;
    Values out(static_cast<std::size_t>(H * T * S)), terms(out.size());
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < T; ++i)
        for (std::int64_t j = 0; j < S; ++j) {
          const auto at = static_cast<std::size_t>((h * T + i) * S + j);
          out[at] = -m[static_cast<std::size_t>(h)] * static_cast<double>(i + offset - j);
          terms[at] = size(out[at]);
        }
    return wrap({H, T, S}, {std::move(out), std::move(terms)});
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
    const WideBuffer& y = buffer(b);
    return map(a, [&](std::size_t i, double x, double t) { return sum(x, t, y.values[i], y.terms[i]); });
  }
  BackendTensor mul(const BackendTensor& a, const BackendTensor& b) override {
    same_shape(a, b, "mul");
    const WideBuffer& y = buffer(b);
    return map(a, [&](std::size_t i, double x, double t) {
      return Term{x * y.values[i], t * size(y.values[i]) + size(x) * y.terms[i] + size(x * y.values[i])};
    });
  }
  BackendTensor softmax_backward_rows(const BackendTensor& w, const BackendTensor& dw) override {
    // w ⊙ (dw − Σ_j dw_j·w_j) per row
    if (w.shape.size() != 2) throw InternalError(fmt::format("{} backend: softmax_backward_rows wants (N, n)", kName));
    same_shape(w, dw, "softmax_backward_rows");
    const auto rows = w.shape[0];
    const auto n = static_cast<std::size_t>(w.shape[1]);
    const WideBuffer& pw = buffer(w);
    const WideBuffer& pd = buffer(dw);
    Wide out{Values(pw.values.size()), Values(pw.values.size())};
    for (std::size_t row = 0; row < static_cast<std::size_t>(rows) * n; row += n) {
      double dot = 0, dot_terms = 0;
      for (std::size_t j = row; j < row + n; ++j) {
        dot += pd.values[j] * pw.values[j];
        dot_terms += pd.terms[j] * size(pw.values[j]) + size(pd.values[j]) * pw.terms[j];
      }
      for (std::size_t j = row; j < row + n; ++j) {
        out.v[j] = pw.values[j] * (pd.values[j] - dot);
        out.t[j] = pw.terms[j] * size(pd.values[j] - dot) + size(pw.values[j]) * (pd.terms[j] + dot_terms) + size(out.v[j]);
      }
    }
    return wrap(w.shape, std::move(out));
  }

 private:
  struct Term {
    double v, t;
  };
  // x + y, its terms both sides' and its own rounding's
  static Term sum(double x, double tx, double y, double ty) { return {x + y, tx + ty + size(x + y)}; }

  static const WideBuffer& buffer(const BackendTensor& t) {
    const auto* b = dynamic_cast<const WideBuffer*>(t.buffer.get());
    if (b == nullptr) throw InternalError("float64 backend: a tensor from another backend");
    return *b;
  }
  static BackendTensor wrap(Shape shape, Wide w) {
    return BackendTensor{std::move(shape), std::make_shared<const WideBuffer>(std::move(w.v), std::move(w.t))};
  }
  // f(i, value, terms) -> Term, element by element
  template <class F>
  static BackendTensor map(const BackendTensor& a, F f) {
    const WideBuffer& x = buffer(a);
    Wide out{Values(x.values.size()), Values(x.values.size())};
    for (std::size_t i = 0; i < out.v.size(); ++i) {
      const Term r = f(i, x.values[i], x.terms[i]);
      out.v[i] = r.v, out.t[i] = r.t;
    }
    return wrap(a.shape, std::move(out));
  }
  // out[o] = a[from(o)], values and terms moved alike
  template <class F>
  static BackendTensor gather(const BackendTensor& a, Shape shape, F from) {
    return gather2(a, a, std::move(shape), [&](std::int64_t o) { return std::pair{0, from(o)}; });
  }
  // out[o] = (a or b)[index], from(o) = {0 for a or 1 for b, index}
  template <class F>
  static BackendTensor gather2(const BackendTensor& a, const BackendTensor& b, Shape shape, F from) {
    const WideBuffer* src[] = {&buffer(a), &buffer(b)};
    Wide out{Values(static_cast<std::size_t>(element_count(shape))), Values(static_cast<std::size_t>(element_count(shape)))};
    for (std::size_t o = 0; o < out.v.size(); ++o) {
      const auto [which, at] = from(static_cast<std::int64_t>(o));
      out.v[o] = src[which]->values[static_cast<std::size_t>(at)];
      out.t[o] = src[which]->terms[static_cast<std::size_t>(at)];
    }
    return wrap(std::move(shape), std::move(out));
  }
  static void same_shape(const BackendTensor& a, const BackendTensor& b, std::string_view what) {
    if (a.shape != b.shape) throw InternalError(fmt::format("{} backend: {} wants two tensors of one shape", kName, what));
  }
};

}  // namespace

std::unique_ptr<Backend> make_float64_backend() { return std::make_unique<Float64Backend>(); }

}  // namespace attn
