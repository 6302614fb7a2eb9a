// The table of step code: each step as the PyTorch statement(s) that compute it from the problem's
// inputs (DIR/inputs/<name>.npy of --dump, in scope under <name>), the legend's integers (B, T, S, C,
// H, hs, Hkv, hv, dk, dv, Cs, Co) and the earlier steps, each named by its id with the dots turned
// into underscores (q.heads -> q_heads). The statements run in order in one Python scope with torch,
// numpy as np and math imported; tests/reference/step_code_check.py runs them against the trace.
// Shapes: the code keeps a batch axis of 1 from the head split on, where the trace leaves it out
// (an input without one); the values are the same.
#include "attn/pipeline/step_code.hpp"

#include <fmt/format.h>

#include <cmath>

namespace attn {
namespace {

// "q.heads" -> "q_heads": the step's Python name.
std::string var(std::string_view id) {
  std::string v(id);
  for (auto& c : v)
    if (c == '.') c = '_';
  return v;
}

// 0.125 -> "0.125", 1e-06 -> "1e-06": a Python literal that reads back as the same float32.
std::string literal(double v) {
  if (std::isinf(v)) return v < 0 ? "float(\"-inf\")" : "float(\"inf\")";
  return fmt::format("{}", static_cast<float>(v));
}

std::string load(std::string_view name) { return fmt::format("torch.from_numpy(np.load(\"inputs/{}.npy\"))", name); }

// The step given as an input: read from its file.
std::string given(std::string_view id) { return fmt::format("{} = {}", var(id), load(var(id))); }

// x @ W_q + b_q, or x @ W_q.T + b_q when W is written as nn.Linear's [out, in].
std::string product(const Spec& s, std::string_view in, std::string_view w, bool bias) {
  const std::string suffix(w.substr(2));  // "q" of "W_q"
  return fmt::format("{} @ {}{}{}", in, w, s.layout == Layout::Torch ? ".T" : "", bias ? fmt::format(" + b_{}", suffix) : "");
}

std::string x_in(const Spec& s) { return s.positions != Positions::None ? "x_pos" : "x"; }

// What q's (or k's) head split reads: OLMo 2 normalises the whole width first.
std::string flat(const Spec& s, const char* id) {
  return id[0] != 'v' && s.qk_norm && s.qk_norm->whole_width ? fmt::format("{}_norm", id) : std::string(id);
}

// The rows RoPE or the per-head norm read: the heads when there are several, else the flat rows.
std::string before_rope(const Spec& s, bool query) {
  const char* id = query ? "q" : "k";
  const bool per_head = s.qk_norm && !s.qk_norm->whole_width;
  if (per_head) return fmt::format("{}_norm", id);
  if ((query ? s.H : s.Hkv) > 1) return fmt::format("{}_heads", id);
  return flat(s, id);
}

std::string head_rows(const Spec& s, bool query) {
  const char* id = query ? "q" : "k";
  const bool per_head = s.qk_norm && !s.qk_norm->whole_width;
  if ((query ? s.H : s.Hkv) > 1) return fmt::format("{}_heads", id);
  return per_head ? std::string(id) : flat(s, id);
}

// The queries the scores read.
std::string q_rows(const Spec& s) { return s.rope ? "q_rope" : before_rope(s, true); }

// The keys or values per kv head: rotated keys, else the normalised or split ones, else the flat rows.
std::string kv_rows(const Spec& s, bool key) {
  if (key) return s.rope ? "k_rope" : before_rope(s, false);
  return s.Hkv > 1 ? "v_heads" : "v";
}

// What the product with the weights reads: the repeated heads, else the cache, else the rows.
std::string kv_used(const Spec& s, bool key) {
  if (s.grouped()) return key ? "k_repeat" : "v_repeat";
  if (s.cached) return key ? "k_cache" : "v_cache";
  return kv_rows(s, key);
}

// kv rows (B, Hkv, S, h), or (B, S, h) with one kv head, repeated to H heads as repeat_kv does.
std::string repeated(const Spec& s, bool key, const std::string& rows) {
  const std::string in = s.Hkv == 1 ? fmt::format("{}.reshape(B, 1, S, {})", rows, key ? "hs" : "hv") : rows;
  return fmt::format("{}.repeat_interleave(H // Hkv, dim=1)", in);
}

std::string scale_code(const Spec& s, const TraceConfig& c) {
  switch (s.scale_kind) {
    case ScaleKind::SqrtDk: return " / math.sqrt(hs)";
    case ScaleKind::Number: return fmt::format(" * {}", literal(c.scale_factor));
    case ScaleKind::None: return "";
  }
  return "";
}

std::string logits_var(const Spec& s) {
  if (s.softcap) return "capped";
  if (!s.alibi_slopes.shape().empty()) return "biased";
  return s.scale_kind != ScaleKind::None ? "scaled" : "scores";
}

// The keep pattern as an expression: (T, S), or (B, T, S) when it differs between batch rows.
std::string mask_expr(const Spec& s) {
  const bool per_batch = s.mask_per_batch();
  std::string e = per_batch ? "torch.ones(B, T, S)" : "torch.ones(T, S)";
  const auto off = s.causal_offset();
  if (s.causal) e += fmt::format(".tril({})", off);
  if (s.causal && s.window > 0) e += fmt::format(".triu({})", off - s.window + 1);
  if (!s.lengths.empty()) e += " * (torch.arange(S) < lengths[:, None, None])";
  if (!s.user_keep.shape().empty()) e += " * attn_mask_keep";
  return e;
}

// A (B, T, S) pattern lined up with (B, H, T, S) logits: one axis for the heads when there are several.
std::string per_head_axis(const Spec& s, bool per_batch) { return per_batch && s.H > 1 ? "[:, None]" : ""; }

// Rows a .. a + L − 1 of a RoPE table, doubled for the "half" style's (i, i + R/2) pairs.
std::string table_rows(const Spec& s, const char* table, std::int64_t a, std::int64_t L) {
  const auto& r = *s.rope;
  const std::int64_t P = r.cos.shape().empty() ? 0 : r.cos.dim(0);
  return a == 0 && L == P ? std::string(table) : fmt::format("{}[{}:{}]", table, a, a + L);
}

std::string rotate(const Spec& s, const std::string& in, std::int64_t a, std::int64_t L) {
  const auto& r = *s.rope;
  const auto R = r.dims, half = R / 2;
  const std::string cos = table_rows(s, "rope_cos", a, L), sin = table_rows(s, "rope_sin", a, L);
  const bool partial = R < s.hs();
  std::string turned;
  if (r.style == RopeStyle::Half) {
    const std::string x = partial ? fmt::format("{}[..., :{}]", in, R) : in;
    turned = fmt::format("{0} * torch.cat(({1}, {1}), -1) + torch.cat((-{3}[..., {4}:{5}], {3}[..., :{4}]), -1) * torch.cat(({2}, {2}), -1)", x, cos,
                         sin, in, half, R);
  } else {
    const std::string even = fmt::format("{}[..., 0:{}:2]", in, R), odd = fmt::format("{}[..., 1:{}:2]", in, R);
    turned = fmt::format("torch.stack(({0} * {2} - {1} * {3}, {1} * {2} + {0} * {3}), -1).flatten(-2)", even, odd, cos, sin);
  }
  return partial ? fmt::format("torch.cat(({}, {}[..., {}:]), -1)", turned, in, R) : turned;
}

std::string rope_table(const Spec& s, bool cos) {
  const auto& r = *s.rope;
  const auto& sc = r.scaling;
  const std::int64_t P = r.cos.dim(0);
  std::string rates = fmt::format("inv_freq = {} ** (-torch.arange(0, {}, 2, dtype=torch.float64) / {})", literal(r.theta), r.dims, r.dims);
  if (sc.kind == RopeScaling::Kind::Linear) rates += fmt::format(" / {}", literal(sc.factor));
  if (sc.kind == RopeScaling::Kind::Llama3) {
    // Llama 3.1's bands by wavelength (transformers' _compute_llama3_parameters)
    const auto lo = literal(sc.low_freq_factor), hi = literal(sc.high_freq_factor), orig = literal(sc.original), f = literal(sc.factor);
    rates += fmt::format(
        "; wavelen = 2 * math.pi / inv_freq; smooth = ({0} / wavelen - {1}) / ({2} - {1}); inv_freq = torch.where(wavelen < {0} / {2}, "
        "inv_freq, torch.where(wavelen > {0} / {1}, inv_freq / {3}, (1 - smooth) * inv_freq / {3} + smooth * inv_freq))",
        orig, lo, hi, f);
  }
  const std::string positions =
      r.table_first == 0 ? fmt::format("torch.arange({}, dtype=torch.float64)", P)
                         : fmt::format("torch.arange({}, {}, dtype=torch.float64)", r.table_first, r.table_first + P);
  return fmt::format("{}; rope_{} = torch.{}({}[:, None] * inv_freq).float()", rates, cos ? "cos" : "sin", cos ? "cos" : "sin", positions);
}

std::string projection_code(StepId step, const Spec& s) {
  const char* id = step == StepId::Q ? "q" : step == StepId::K ? "k" : "v";
  if (s.entry != Entry::Embeddings) return given(id);
  if (s.w.W_qkv) {
    const std::int64_t widths[] = {s.dk, s.dkv(), s.dvkv()};
    const int part = step == StepId::Q ? 0 : step == StepId::K ? 1 : 2;
    const auto from = part == 0 ? 0 : part == 1 ? s.dk : s.dk + s.dkv();
    return fmt::format("{} = qkv[..., {}:{}]", id, from, from + widths[part]);
  }
  const std::string in = step == StepId::Q || !s.cross() ? x_in(s) : "source";
  const auto& w = s.w;
  const bool bias = step == StepId::Q ? w.b_q.has_value() : step == StepId::K ? w.b_k.has_value() : w.b_v.has_value();
  return fmt::format("{} = {}", id, product(s, in, fmt::format("W_{}", id), bias));
}

std::string head_split_code(StepId step, const Spec& s) {
  const bool view = step == StepId::QView || step == StepId::KView || step == StepId::VView;
  const char* id = (step == StepId::QView || step == StepId::QHeads) ? "q" : (step == StepId::KView || step == StepId::KHeads) ? "k" : "v";
  const bool query = id[0] == 'q';
  const std::string shape = fmt::format("B, {}, {}, {}", query ? "T" : "S", query || !s.grouped() ? "H" : "Hkv", id[0] == 'v' ? "hv" : "hs");
  const std::string in = flat(s, id);
  return view ? fmt::format("{}_view = {}.view({})", id, in, shape) : fmt::format("{}_heads = {}.view({}).transpose(1, 2)", id, in, shape);
}

std::string norm_code(StepId step, const Spec& s) {
  const bool query = step == StepId::QNorm;
  const char* id = query ? "q" : "k";
  const auto& n = *s.qk_norm;
  const std::string in = n.whole_width ? std::string(id) : head_rows(s, query);
  const std::string weight = n.plus_one ? fmt::format("(1 + {}_norm_weight)", id) : fmt::format("{}_norm_weight", id);
  return fmt::format("{0}_norm = {1} * torch.rsqrt({1}.pow(2).mean(-1, keepdim=True) + {2}) * {3}", id, in, literal(n.eps), weight);
}

std::string rope_code(StepId step, const Spec& s) {
  if (step == StepId::RopeCos || step == StepId::RopeSin) return rope_table(s, step == StepId::RopeCos);
  const auto& r = *s.rope;
  const bool query = step == StepId::QRope;
  const std::int64_t a = (query ? r.offset : r.key_first) - r.table_first;
  return fmt::format("{}_rope = {}", query ? "q" : "k", rotate(s, before_rope(s, query), a, query ? s.T : s.S));
}

std::string cache_code(StepId step, const Spec& s) {
  const bool key = step == StepId::KPast || step == StepId::KCache;
  const char* id = key ? "k" : "v";
  if (step == StepId::KPast || step == StepId::VPast) {
    return fmt::format("{0}_past = {0}_cache  # the cache as the previous pass left it (after the prefill: its {1})", id,
                       kv_rows(s, key));
  }
  return fmt::format("{0}_cache = torch.cat(({0}_past, {1}), dim=-2)", id, kv_rows(s, key));
}

std::string mask_code(const Spec& s) { return fmt::format("mask = {}", mask_expr(s)); }

std::string masked_code(const Spec& s, const TextFacts& f) {
  std::string base = logits_var(s);
  if (!s.user_add.shape().empty()) {
    const bool shared = s.user_add.dim(0) == 1;
    base = fmt::format("({} + mask_add{})", base, per_head_axis(s, !shared));
  }
  if (!s.blocking()) return fmt::format("masked = {}", base);
  return fmt::format("masked = {}.masked_fill(mask{} == 0, {})", base, per_head_axis(s, s.mask_per_batch()), literal(f.fill));
}

// Rows with every key blocked: softmax gives NaN; the policy's value in its place.
std::string empty_rows(const Spec& s, const TextFacts& f) {
  if (f.empty_rows == 0) return "";
  if (s.masked_row == MaskedRow::Zeros) return ".nan_to_num(0.0)";
  if (s.masked_row == MaskedRow::Uniform) return ".nan_to_num(1 / S)";
  return "";
}

std::string weights_code(const Spec& s, const TextFacts& f) {
  const std::string in = s.masking() && !f.mask_after_softmax ? "masked" : logits_var(s);
  return fmt::format("weights = torch.softmax({}, dim=-1){}", in, empty_rows(s, f));
}

std::string fused_code(const Spec& s, const TraceConfig& c, const TextFacts& f) {
  std::string k = kv_rows(s, true), v = kv_rows(s, false);
  if (s.grouped()) k = repeated(s, true, k), v = repeated(s, false, v);
  std::string logits = fmt::format("{} @ {}.transpose(-2, -1){}", q_rows(s), k, scale_code(s, c));
  if (s.blocking()) logits = fmt::format("({}).masked_fill(({}){} == 0, float(\"-inf\"))", logits, mask_expr(s), per_head_axis(s, s.mask_per_batch()));
  return fmt::format("context = torch.softmax({}, dim=-1){} @ {}", logits, empty_rows(s, f), v);
}

std::string alibi_code(const Spec& s) {
  const auto off = s.causal_offset();
  return fmt::format("alibi = -alibi_slopes[:, None, None] * (torch.arange(T)[:, None]{} - torch.arange(S))",
                     off == 0 ? std::string() : fmt::format(" + {}", off));
}

std::string positions_code(const Spec& s) {
  if (s.positions == Positions::Learned) return given("positions");
  return "p = torch.arange(T, dtype=torch.float64)[:, None]; positions = torch.zeros(T, C); "
         "positions[:, 0::2] = torch.sin(p / 10000 ** (torch.arange(0, C, 2, dtype=torch.float64) / C)); "
         "positions[:, 1::2] = torch.cos(p / 10000 ** (torch.arange(0, C - 1, 2, dtype=torch.float64) / C))";
}

}  // namespace

std::string step_code(StepId step, const Spec& s, const TraceConfig& c, const TextFacts& f) {
  switch (step) {
    case StepId::X: return given("x");
    case StepId::Source: return given("source");
    case StepId::Positions: return positions_code(s);
    case StepId::XPos: return "x_pos = x + positions";
    case StepId::Qkv: return fmt::format("qkv = {}", product(s, x_in(s), "W_qkv", s.w.b_qkv.has_value()));
    case StepId::Q:
    case StepId::K:
    case StepId::V: return projection_code(step, s);
    case StepId::QView:
    case StepId::QHeads:
    case StepId::KView:
    case StepId::KHeads:
    case StepId::VView:
    case StepId::VHeads: return head_split_code(step, s);
    case StepId::QNorm:
    case StepId::KNorm: return norm_code(step, s);
    case StepId::RopeCos:
    case StepId::RopeSin:
    case StepId::QRope:
    case StepId::KRope: return rope_code(step, s);
    case StepId::KPast:
    case StepId::KCache:
    case StepId::VPast:
    case StepId::VCache: return cache_code(step, s);
    case StepId::KRepeat: return fmt::format("k_repeat = {}", repeated(s, true, s.cached ? "k_cache" : kv_rows(s, true)));
    case StepId::VRepeat: return fmt::format("v_repeat = {}", repeated(s, false, s.cached ? "v_cache" : kv_rows(s, false)));
    case StepId::KT: return fmt::format("k_T = {}.transpose(-2, -1)", kv_used(s, true));
    case StepId::Scores: return s.entry == Entry::Scores ? given("scores") : fmt::format("scores = {} @ k_T", q_rows(s));
    case StepId::Scaled: return fmt::format("scaled = scores{}", scale_code(s, c));
    case StepId::Alibi: return alibi_code(s);
    case StepId::Biased: return fmt::format("biased = {} + alibi", s.scale_kind != ScaleKind::None ? "scaled" : "scores");
    case StepId::Capped: {
      const std::string cap = literal(*s.softcap);
      const std::string in = !s.alibi_slopes.shape().empty() ? "biased" : s.scale_kind != ScaleKind::None ? "scaled" : "scores";
      return fmt::format("capped = {0} * torch.tanh({1} / {0})", cap, in);
    }
    case StepId::Mask: return mask_code(s);
    case StepId::MaskAdd: return given("mask.add");
    case StepId::Masked: return masked_code(s, f);
    case StepId::Weights: return weights_code(s, f);
    case StepId::Context:
      if (f.fused) return fused_code(s, c, f);
      return fmt::format("context = weights @ {}", s.entry == Entry::Scores ? (s.H > 1 ? "v_heads" : "v") : kv_used(s, false));
    case StepId::Merged: return fmt::format("merged = context.transpose(1, 2).reshape(B, T, {})", s.general() ? "dv" : "C");
    case StepId::Output: {
      const std::string in = s.H > 1 ? "merged" : "context";
      return fmt::format("output = {}", product(s, in, "W_o", s.w.b_o.has_value()));
    }
  }
  return "";
}

}  // namespace attn
