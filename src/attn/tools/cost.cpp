// Cost estimates by dry run, the memory guard, and the attn cost report.
#include "attn/tools/cost.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <sstream>

#include "attn/numerics/backend.hpp"
#include "attn/core/error.hpp"
#include "attn/pipeline/pipeline.hpp"

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

namespace {

// A number read from a file (cgroup's memory files); -1 when missing or "max".
double number_in(const std::string& path) {
  std::ifstream f(path);
  std::string word;
  if (!(f >> word) || word == "max") return -1;
  try {
    return std::stod(word);
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace

std::int64_t machine_available_bytes() {
  double available = -1;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    if (!line.starts_with("MemAvailable:")) continue;
    std::istringstream in(line.substr(13));
    double kb = 0;
    if (in >> kb) available = kb * 1024;
  }
  // a cgroup's limit less what it uses, where lower (v2, then v1; a v1 "no limit" is a huge number)
  for (const auto& [limit, usage] : {std::pair{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
                                     std::pair{"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"}}) {
    const double l = number_in(limit), u = number_in(usage);
    if (l > 0 && u >= 0 && l < 1e18 && (available < 0 || l - u < available)) available = std::max(0.0, l - u);
  }
  return available < 0 ? 0 : static_cast<std::int64_t>(available);
}

void require_machine_fits(double bytes, const std::string& what, const std::string& detail) {
  const std::int64_t available = machine_available_bytes();
  if (available <= 0 || bytes <= static_cast<double>(available)) return;
  throw InputError(fmt::format("{} would need about {} of memory ({}), more than the {} this machine has available now (MemAvailable, "
                               "or the cgroup's limit); refused before running. Use a smaller T (attn cost shows how the size grows)",
                               what, human_bytes(bytes), detail, human_bytes(static_cast<double>(available))));
}

RunEstimate model_run_bytes(const ModelSizes& m, std::int64_t T, bool streamed, double extra) {
  SizeArgs a;
  a.T = a.S = T, a.C = m.C, a.H = m.H, a.Hkv = m.Hkv, a.dk = a.dv = m.H * m.hd;
  a.mode = m.encoder ? Mode::Self : Mode::Causal;
  RunEstimate e;
  e.attention = kept_bytes(plan_trace(spec_from_sizes(a), streamed)) + extra;  // streamed: the fused trace, no [H, T, S] step
  const std::int64_t rows = m.mlp_rows > 0 ? std::min(T, m.mlp_rows) : T;  // a block's (rows, I) activations, three of them
  e.mlp = 4.0 * (3.0 * static_cast<double>(rows) * static_cast<double>(m.I) + 4.0 * static_cast<double>(T) * static_cast<double>(m.C));
  e.total = e.attention + e.mlp;
  return e;
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

// A count as an integer with its thousands grouped: 1048576 -> "1,048,576".
std::string grouped(double count) {
  const std::string digits = fmt::format("{:.0f}", count);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

bool quadratic(const Step& s) {
  const auto n = s.dims.size();
  return n >= 2 && is_token_axis(s.dims[n - 1]) && is_token_axis(s.dims[n - 2]);
}

double elements(const Shape& shape) { return static_cast<double>(element_count(shape)); }

// A step's elements: "12", or "12 + 4" where it keeps row sums beside its values.
std::string elements_text(const Step& s) {
  const std::string values = grouped(elements(s.value.shape()));
  return s.row_sums ? fmt::format("{} + {}", values, grouped(elements(s.row_sums->shape()))) : values;
}

// Every step's shape, elements, FLOPs and the bytes the trace keeps of it, then the totals, and
// what a step with row sums keeps beyond its values.
void step_table(const Trace& plan, std::ostream& out) {
  std::size_t w_id = 5, w_shape = 5, w_elements = 8, w_flops = 5, w_bytes = 5;
  double flops = 0, kept = 0;
  for (const auto& s : plan.steps) {
    flops += s.flops;
    kept += step_bytes(s) / sizeof(Scalar);
    w_id = std::max(w_id, s.id.size());
    w_shape = std::max(w_shape, shape_string(s.value.shape()).size());
    w_elements = std::max(w_elements, elements_text(s).size());
    w_flops = std::max(w_flops, grouped(s.flops).size());
    w_bytes = std::max(w_bytes, human_bytes(step_bytes(s)).size());
  }
  w_elements = std::max(w_elements, grouped(kept).size());
  w_flops = std::max(w_flops, grouped(flops).size());
  w_bytes = std::max(w_bytes, human_bytes(kept_bytes(plan)).size());
  const auto row = [&](const std::string& id, const std::string& shape, const std::string& n, const std::string& f, const std::string& b) {
    return fmt::format("{:<{}}  {:<{}}  {:>{}}  {:>{}}  {:>{}}", id, w_id, shape, w_shape, n, w_elements, f, w_flops, b, w_bytes);
  };
  out << row("step", "shape", "elements", "FLOPs", "bytes") << "\n";
  for (const auto& s : plan.steps) {
    out << row(s.id, shape_string(s.value.shape()), elements_text(s), grouped(s.flops), s.view ? "(view)" : human_bytes(step_bytes(s)))
        << (quadratic(s) ? "  ← grows with T·S" : "") << "\n";
  }
  out << row("total", "", grouped(kept), grouped(flops), human_bytes(kept_bytes(plan))) << "\n";
  for (const auto& s : plan.steps) {
    if (!s.row_sums || s.view) continue;
    const double sums = elements(s.row_sums->shape());
    out << fmt::format("\n{}' {}: its {} values ({}) and its {} row sums ({}; {}, each row's sum: the \"sum\" column the walkthrough "
                       "shows beside the {})\n",
                       s.id, human_bytes(step_bytes(s)), grouped(elements(s.value.shape())), human_bytes(elements(s.value.shape()) * sizeof(Scalar)),
                       grouped(sums), human_bytes(sums * sizeof(Scalar)), shape_string(s.row_sums->shape()), s.id);
  }
}

// The same problem at T·2^k, six rows from T/4 where that is a whole number (S follows T unless
// cross-attention fixed it): FLOPs, bytes kept, one attention matrix.
void growth_table(const Spec& spec, const TraceConfig& c, std::ostream& out) {
  if (spec.cross()) {
    out << fmt::format("\nas T grows (S held at {}; each doubling of T: every step with a T axis × 2):\n", c.S);
  } else {
    out << "\nas T grows (S = T; each doubling of T: [T, C] steps × 2, [T, S] steps × 4):\n";
  }
  std::vector<std::int64_t> sizes;
  for (int k = -2; sizes.size() < 6; ++k) {
    if (k < 0 && c.T % (std::int64_t{1} << -k) != 0) continue;  // T / 2^-k only when whole
    sizes.push_back(k < 0 ? c.T >> -k : c.T << k);
  }
  std::vector<std::array<std::string, 4>> rows;
  for (const std::int64_t t : sizes) {
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
    rows.push_back({fmt::format("{}", t), grouped(pf), human_bytes(kept_bytes(p)), human_bytes(static_cast<double>(t) * static_cast<double>(g.S) * 4)});
  }
  std::array<std::size_t, 4> w = {10, 14, 12, 22};
  for (const auto& r : rows)
    for (std::size_t i = 0; i < 4; ++i) w[i] = std::max(w[i], r[i].size());
  out << fmt::format("{:>{}}  {:>{}}  {:>{}}  {:>{}}\n", "T", w[0], "FLOPs", w[1], "bytes kept", w[2], "one attention matrix", w[3]);
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const auto& r = rows[k];
    out << fmt::format("{:>{}}  {:>{}}  {:>{}}  {:>{}}{}\n", r[0], w[0], r[1], w[1], r[2], w[2], r[3], w[3],
                       sizes[k] == c.T ? "  ← this problem" : "");
  }
}

}  // namespace

void render_cost(const Spec& spec, std::ostream& out) {
  const Trace plan = plan_trace(spec);
  const auto& c = plan.config;
  out << fmt::format("attn cost · mode {} · B = {} · T = {} · S = {} · {}\n", mode_name(c.mode), c.B, c.T, c.S, widths_text(c, " · "));
  out << "bytes: what the trace keeps of each step, its elements × 4 (float32); a view shares the bytes of the step it views, and "
         "the weights keep each row's sum too\n"
      << "FLOPs: floating-point operations, a multiply and an add counting as two\n\n";
  step_table(plan, out);
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
  growth_table(spec, c, out);
}

void require_fits_on(Backend& backend, const Spec& spec, bool fused) {
  const Backend::Memory memory = backend.memory();
  if (memory.free < 0) return;
  const Trace plan = plan_trace(spec, fused);
  const double total = kept_bytes(plan);
  if (total <= static_cast<double>(memory.free)) return;
  const Step* largest = nullptr;
  for (const auto& s : plan.steps)
    if (largest == nullptr || step_bytes(s) > step_bytes(*largest)) largest = &s;
  throw DeviceError(fmt::format("--backend {}: this trace would keep up to {} of tensors on the device, more than its {} free (of {}); the "
                                "largest step is {} [{}] = {} = {}. Use a smaller T (attn cost shows how the size grows), or --backend cpu",
                                backend.name(), human_bytes(total), human_bytes(static_cast<double>(memory.free)),
                                human_bytes(static_cast<double>(memory.total)), largest->id, fmt::join(largest->dims, ", "),
                                shape_string(largest->value.shape()), human_bytes(step_bytes(*largest))));
}

}  // namespace attn
