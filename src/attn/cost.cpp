// Cost estimates by dry run, the memory guard, and the attn cost report.
#include "attn/cost.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attn/backend.hpp"
#include "attn/error.hpp"
#include "attn/pipeline.hpp"

namespace attn {

Trace plan_trace(const Spec& spec, bool fused) {
  auto backend = make_shape_backend();
  PipelineOptions options;
  options.fused = fused;
  return run_pipeline(spec, *backend, options);
}

double step_bytes(const Step& s) {
  double b = s.view ? 0 : static_cast<double>(element_count(s.value.shape())) * sizeof(Scalar);
  if (s.row_sums) b += static_cast<double>(element_count(s.row_sums->shape())) * sizeof(Scalar);
  return b;
}

double kept_bytes(const Trace& t) {
  double total = 0;
  for (const auto& s : t.steps) total += step_bytes(s);
  return total;
}

void require_fits(const Trace& plan, std::int64_t max_bytes, const std::string& why_limit) {
  const double total = kept_bytes(plan);
  if (total <= static_cast<double>(max_bytes)) return;
  const Step* largest = nullptr;
  for (const auto& s : plan.steps)
    if (largest == nullptr || step_bytes(s) > step_bytes(*largest)) largest = &s;
  throw InputError(fmt::format("this trace would keep {} of tensors, more than --max-memory {} ({}); the largest step is {} "
                               "[{}] = {} = {}. Use a smaller T (attn cost shows how the size grows), or raise --max-memory",
                               human_bytes(total), human_bytes(static_cast<double>(max_bytes)), why_limit, largest->id,
                               fmt::join(largest->dims, ", "), shape_string(largest->value.shape()), human_bytes(step_bytes(*largest))));
}

Spec spec_from_sizes(const SizeArgs& a) {
  auto positive = [](std::int64_t v, const char* name) {
    if (v <= 0) throw InputError(fmt::format("--{}: expected a positive size, got {}", name, v));
  };
  positive(a.B, "B"), positive(a.T, "T"), positive(a.C, "C"), positive(a.H, "H");
  for (auto [v, name] : {std::pair{a.Cs, "Cs"}, std::pair{a.dk, "dk"}, std::pair{a.dv, "dv"}, std::pair{a.Co, "Co"}}) {
    if (v < 0) throw InputError(fmt::format("--{}: expected a positive size, got {}", name, v));
  }
  if (a.Cs > 0 && a.mode != Mode::Cross) throw InputError("--Cs: the width of a cross-attention source: give --mode cross");
  if (a.Co > 0 && !a.output_projection) throw InputError("--Co: W_o's output width, but --no-output-projection leaves W_o out");
  if (a.fused && a.mode == Mode::Cross && a.Cs > 0 && a.Cs != a.C) {
    throw InputError(fmt::format("--fused: one fused weight projects x and the source alike, but --Cs {} differs from --C {}", a.Cs, a.C));
  }
  Spec s;
  s.mode = a.mode;
  s.causal = a.mode == Mode::Causal;
  s.H = a.H;
  if (a.Hkv < 0 || (a.Hkv > 0 && a.H % a.Hkv != 0)) {
    throw InputError(fmt::format("--kv-heads: expected a divisor of H = {} (each key/value head serves H / kv_heads query heads), got {}", a.H, a.Hkv));
  }
  s.Hkv = a.Hkv > 0 ? a.Hkv : a.H;
  s.B = a.B, s.T = a.T, s.C = a.C;
  s.S = a.mode == Mode::Cross ? (a.S > 0 ? a.S : a.T) : a.T;
  s.Cs = a.mode == Mode::Cross && a.Cs > 0 ? a.Cs : a.C;
  s.dk = a.dk > 0 ? a.dk : a.C;
  s.dv = a.dv > 0 ? a.dv : s.dk;
  s.Co = a.output_projection ? (a.Co > 0 ? a.Co : a.C) : s.dv;
  if (s.dk % s.H != 0) {
    throw InputError(a.dk == 0 ? fmt::format("--H: H = {} does not divide C = {}", a.H, a.C)
                               : fmt::format("--H: H = {} does not divide dk = {}", a.H, s.dk));
  }
  if (s.dv % s.H != 0) throw InputError(fmt::format("--H: H = {} does not divide dv = {}", a.H, s.dv));
  s.batched = a.batched || a.B > 1;
  s.x = Tensor::shape_only({s.B, s.T, s.C});
  if (s.cross()) s.source = Tensor::shape_only({s.B, s.S, s.Cs});
  if (a.fused && !s.cross()) {
    s.w.W_qkv = Tensor::shape_only({s.C, s.dk + s.dkv() + s.dvkv()});
  } else {
    s.w.W_q = Tensor::shape_only({s.C, s.dk});
    s.w.W_k = Tensor::shape_only({s.Cs, s.dkv()});
    s.w.W_v = Tensor::shape_only({s.Cs, s.dvkv()});
  }
  if (a.output_projection) s.w.W_o = Tensor::shape_only({s.dv, s.Co});
  s.tokens = {{}};
  s.source_tokens = {{}};
  return s;
}

namespace {

std::string human_flops(double f) {
  const char* units[] = {"", "k", "M", "G", "T", "P", "E"};
  int u = 0;
  while (f >= 1000 && u < 6) f /= 1000, ++u;
  return fmt::format("{:.1f} {}FLOP", f, units[u]);
}

bool quadratic(const Step& s) {
  const auto n = s.dims.size();
  return n >= 2 && is_token_axis(s.dims[n - 1]) && is_token_axis(s.dims[n - 2]);
}

}  // namespace

void render_cost(const Spec& spec, std::ostream& out) {
  const Trace plan = plan_trace(spec);
  const auto& c = plan.config;
  out << fmt::format("attn cost · mode {} · B = {} · T = {} · S = {} · {}\n", mode_name(c.mode), c.B, c.T, c.S, widths_text(c, " · "));
  out << "(every intermediate kept, float32; FLOPs count multiply and add as two)\n\n";
  std::size_t w_id = 4, w_shape = 5;
  for (const auto& s : plan.steps) {
    w_id = std::max(w_id, s.id.size());
    w_shape = std::max(w_shape, shape_string(s.value.shape()).size());
  }
  out << fmt::format("{:<{}}  {:<{}}  {:>12}  {:>10}\n", "step", w_id, "shape", w_shape, "FLOPs", "bytes");
  double flops = 0;
  for (const auto& s : plan.steps) {
    flops += s.flops;
    const std::string bytes = s.view ? "(view)" : human_bytes(step_bytes(s));
    out << fmt::format("{:<{}}  {:<{}}  {:>12}  {:>10}{}\n", s.id, w_id, shape_string(s.value.shape()), w_shape, human_flops(s.flops), bytes,
                       quadratic(s) ? "  ← grows with T·S" : "");
  }
  out << fmt::format("{:<{}}  {:<{}}  {:>12}  {:>10}\n", "total", w_id, "", w_shape, human_flops(flops), human_bytes(kept_bytes(plan)));
  out << fmt::format("\none [T, S] attention matrix: {} × {} × 4 bytes = {}\n", c.T, c.S,
                     human_bytes(static_cast<double>(c.T) * static_cast<double>(c.S) * 4));
  if (spec.entry != Entry::Scores && spec.hs() > 0) {
    // generation keeps every earlier token's k and v (attn decode): this layer's share per token
    const std::int64_t per_token = spec.Hkv * (spec.hs() + spec.hv()) * static_cast<std::int64_t>(sizeof(Scalar));
    out << fmt::format("KV cache: Hkv · (hs + hv) × 4 bytes = {} · ({} + {}) × 4 = {} per token per batch row{}; {} for S = {} keys{}\n",
                       spec.Hkv, spec.hs(), spec.hv(), human_bytes(static_cast<double>(per_token)),
                       spec.grouped() ? fmt::format(" ({}× less than H = {} kv heads would keep)", spec.H / spec.Hkv, spec.H) : "",
                       human_bytes(static_cast<double>(per_token * c.S * c.B)), c.S, c.B > 1 ? fmt::format(" × B = {}", c.B) : "");
  }

  // Growth: the same problem at T·2^k, six rows from T/4 where that is a whole number (S follows T
  // unless cross-attention fixed it).
  if (spec.cross()) {
    out << fmt::format("\nas T grows (S held at {}; each doubling of T: every step with a T axis × 2):\n", c.S);
  } else {
    out << "\nas T grows (S = T; each doubling of T: [T, C] steps × 2, [T, S] steps × 4):\n";
  }
  out << fmt::format("{:>10}  {:>14}  {:>12}  {:>22}\n", "T", "FLOPs", "bytes kept", "one attention matrix");
  std::vector<std::int64_t> sizes;
  for (int k = -2; sizes.size() < 6; ++k) {
    if (k < 0 && c.T % (std::int64_t{1} << -k) != 0) continue;  // T / 2^-k only when whole
    sizes.push_back(k < 0 ? c.T >> -k : c.T << k);
  }
  for (const std::int64_t t : sizes) {
    const bool here = t == c.T;
    Spec g = spec;
    g.T = t;
    if (!g.cross()) g.S = t;
    g.x = Tensor::shape_only({g.B, t, g.C});
    if (g.positions != Positions::None) g.position_table = Tensor::shape_only({t, g.C});
    if (g.rope) g.rope->cos = g.rope->sin = Tensor::shape_only({g.rope->place(t, g.S, g.cross()), g.rope->dims / 2});
    if (g.entry == Entry::QKV) g.q = Tensor::shape_only({g.B, t, g.dk}), g.k = Tensor::shape_only({g.B, g.S, g.dkv()}),
                               g.v = g.v.shape().empty() ? g.v : Tensor::shape_only({g.B, g.S, g.dvkv()});
    if (g.entry == Entry::Scores) {
      g.scores = Tensor::shape_only({g.B, g.H, t, g.S});
      if (!g.v.shape().empty()) g.v = Tensor::shape_only({g.B, g.S, g.dv});
    }
    g.lengths.clear();
    g.tokens = {{}};
    g.source_tokens = {{}};
    const Trace p = plan_trace(g);
    double pf = 0;
    for (const auto& s : p.steps) pf += s.flops;
    out << fmt::format("{:>10}  {:>14}  {:>12}  {:>22}{}\n", t, human_flops(pf), human_bytes(kept_bytes(p)),
                       human_bytes(static_cast<double>(t) * static_cast<double>(g.S) * 4), here ? "  ← this problem" : "");
  }
}

}  // namespace attn
