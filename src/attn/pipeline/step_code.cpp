// The table of step code: each step as the PyTorch statement(s) that compute it from the problem's
// inputs (DIR/inputs/<name>.npy of --dump, in scope under <name>), the legend's integers (B, T, S, C,
// H, hs, hv, dk, dv, Cs, Co, and kv_heads: the trace JSON's name for Hkv) and the earlier steps, each
// named by its id with the dots turned into underscores (q.heads -> q_heads). The statements run in
// order in one Python scope with torch, numpy as np and math imported;
// tests/reference/step_code_check.py runs them against the trace. Shapes: the code's are the printed
// ones, with no batch axis where the input has none. Under --mistake the code is the student's: the
// statement that gives the mistaken values (the words of step_text stay the correct ones).
#include "attn/pipeline/step_code.hpp"

#include <fmt/format.h>

#include <cmath>

namespace attn {

std::string batch_lead(const Spec& s) { return s.batched ? "B, " : ""; }
int batch_axis(const Spec& s, int a) { return s.batched ? a : a - 1; }

namespace {

// A pattern that differs between batch rows, (B, T, S): only where the input has a batch axis (one
// sequence's padding is a (T, S) pattern like any other).
bool batch_mask(const Spec& s) { return s.batched && s.mask_per_batch(); }

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

// x @ W_q + b_q, or x @ W_q.T + b_q when W is written as nn.Linear's [out, in] (or read in the
// other layout by mistake).
std::string product(const Spec& s, const TextFacts& f, std::string_view in, std::string_view w, bool bias) {
  const std::string suffix(w.substr(2));  // "q" of "W_q"
  const bool flipped = f.mistake == Mistake::WTransposed || (f.mistake == Mistake::OutputTransposed && suffix == "o");
  const bool t = (s.layout == Layout::Torch) != flipped;
  return fmt::format("{} @ {}{}{}", in, w, t ? ".T" : "", bias ? fmt::format(" + b_{}", suffix) : "");
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

std::string rotate(const Spec& s, const TextFacts& f, const std::string& in, std::int64_t a, std::int64_t L, std::int64_t width,
                   const char* cos_table = "rope_cos", const char* sin_table = "rope_sin");

// The keys or values per kv head: rotated keys, else the normalised or split ones, else the flat rows
// (values rotated too, by the rope-on-v mistake).
std::string kv_rows(const Spec& s, const TextFacts& f, bool key) {
  if (key) return s.rope ? "k_rope" : before_rope(s, false);
  const std::string v = s.Hkv > 1 ? "v_heads" : "v";
  if (f.mistake != Mistake::RopeOnV) return v;
  return fmt::format("({})", rotate(s, f, v, s.rope->key_first - s.rope->table_first, s.S, s.hv()));
}

// What the product with the weights reads: the repeated heads, else the cache, else the rows.
std::string kv_used(const Spec& s, const TextFacts& f, bool key) {
  if (s.grouped()) return key ? "k_repeat" : "v_repeat";
  if (s.cached) return key ? "k_cache" : "v_cache";
  return kv_rows(s, f, key);
}

// kv rows (B, Hkv, S, h), or (B, S, h) with one kv head, repeated to H heads as repeat_kv does (or
// tiled, by the kv-tiled mistake); B only where the input has it.
std::string repeated(const Spec& s, const TextFacts& f, bool key, const std::string& rows) {
  const std::string in = s.Hkv == 1 ? fmt::format("{}.reshape({}1, S, {})", rows, batch_lead(s), key ? "hs" : "hv") : rows;
  if (f.mistake == Mistake::KvTiled) return fmt::format("{}.repeat({}H // kv_heads, 1, 1)", in, s.batched ? "1, " : "");
  return fmt::format("{}.repeat_interleave(H // kv_heads, dim={})", in, batch_axis(s, 1));
}

std::string scale_code(const Spec& s, const TraceConfig& c, const TextFacts& f) {
  if (f.mistake == Mistake::ScaleMissing) return "";
  if (f.mistake == Mistake::ScaleSqrtC) return " / math.sqrt(C)";
  if (f.mistake == Mistake::ScaleDk) return s.H > 1 ? " / hs" : s.general() ? " / dk" : " / C";  // d_k itself, not its root
  switch (s.scale_kind) {
    case ScaleKind::SqrtDk: return s.H > 1 ? " / math.sqrt(hs)" : s.general() ? " / math.sqrt(dk)" : " / math.sqrt(C)";  // as the note names d_k
    case ScaleKind::Number: return fmt::format(" * {}", literal(c.scale_factor));
    case ScaleKind::None: return "";
  }
  return "";
}

std::string logits_var(const Spec& s) {
  if (s.softcap) return "capped";
  if (!s.alibi_slopes.shape().empty() || s.relative_bias) return "biased";
  return s.scale_kind != ScaleKind::None ? "scaled" : "scores";
}

// The keep pattern as an expression: (T, S), or (B, T, S) when it differs between batch rows. The
// mistakes: the built-in pattern flipped (mask-flipped), one key more in the window (window-off-by-one).
std::string mask_expr(const Spec& s, const TextFacts& f) {
  const bool per_batch = batch_mask(s);
  std::string e = per_batch ? "torch.ones(B, T, S)" : "torch.ones(T, S)";
  if (f.mistake == Mistake::MaskMissing) return e;  // the mask left out: every key kept
  const auto off = s.causal_offset();
  const auto window = s.window + (f.mistake == Mistake::WindowOffByOne ? 1 : 0);
  if (s.causal) e += fmt::format(".tril({})", off);
  if (s.causal && s.window > 0) e += fmt::format(".triu({})", off - window + 1);
  if (!s.lengths.empty()) e += per_batch ? " * (torch.arange(S) < lengths[:, None, None])" : " * (torch.arange(S) < lengths)";
  if (f.mistake == Mistake::MaskFlipped) e = fmt::format("(1 - {})", e);
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

// `in`'s first R of `width` features turned by the rows a .. a + L − 1 of the tables, in RoPE's style
// (the other one, by the rope-wrong-style mistake).
std::string rotate(const Spec& s, const TextFacts& f, const std::string& in, std::int64_t a, std::int64_t L, std::int64_t width,
                   const char* cos_table, const char* sin_table) {
  const auto& r = *s.rope;
  const auto R = r.dims, half = R / 2;
  const std::string cos = table_rows(s, cos_table, a, L), sin = table_rows(s, sin_table, a, L);
  const bool partial = R < width;
  const bool half_style = (r.style == RopeStyle::Half) != (f.mistake == Mistake::RopeWrongStyle);
  std::string turned;
  if (half_style) {
    const std::string x = partial ? fmt::format("{}[..., :{}]", in, R) : in;
    turned = fmt::format("{0} * torch.cat(({1}, {1}), -1) + torch.cat((-{3}[..., {4}:{5}], {3}[..., :{4}]), -1) * torch.cat(({2}, {2}), -1)", x, cos,
                         sin, in, half, R);
  } else {
    const std::string even = fmt::format("{}[..., 0:{}:2]", in, R), odd = fmt::format("{}[..., 1:{}:2]", in, R);
    turned = fmt::format("torch.stack(({0} * {2} - {1} * {3}, {1} * {2} + {0} * {3}), -1).flatten(-2)", even, odd, cos, sin);
  }
  return partial ? fmt::format("torch.cat(({}, {}[..., {}:]), -1)", turned, in, R) : turned;
}

}  // namespace

std::string rotate_code(const Spec& s, const std::string& in, std::int64_t first, std::int64_t L, std::int64_t width, const char* cos_table,
                        const char* sin_table) {
  return rotate(s, TextFacts{}, in, first, L, width, cos_table, sin_table);
}

namespace {

// inv_freq for R rotated features: theta^(−2i/R), scaled as the spec says (Llama 3.1's bands by
// wavelength, transformers' _compute_llama3_parameters).
std::string rope_rates(const Spec& s, std::int64_t R) {
  const auto& r = *s.rope;
  const auto& sc = r.scaling;
  std::string rates = fmt::format("inv_freq = {} ** (-torch.arange(0, {}, 2, dtype=torch.float64) / {})", literal(r.theta), R, R);
  if (sc.kind == RopeScaling::Kind::Linear) rates += fmt::format(" / {}", literal(sc.factor));
  if (sc.kind == RopeScaling::Kind::Llama3) {
    const auto lo = literal(sc.low_freq_factor), hi = literal(sc.high_freq_factor), orig = literal(sc.original), f = literal(sc.factor);
    rates += fmt::format(
        "; wavelen = 2 * math.pi / inv_freq; smooth = ({0} / wavelen - {1}) / ({2} - {1}); inv_freq = torch.where(wavelen < {0} / {2}, "
        "inv_freq, torch.where(wavelen > {0} / {1}, inv_freq / {3}, (1 - smooth) * inv_freq / {3} + smooth * inv_freq))",
        orig, lo, hi, f);
  }
  return rates;
}

// The table's positions, one a row: table_first .. table_first + P − 1.
std::string table_positions(const Spec& s) {
  const auto& r = *s.rope;
  const std::int64_t P = r.cos.dim(0);
  return r.table_first == 0 ? fmt::format("torch.arange({}, dtype=torch.float64)", P)
                            : fmt::format("torch.arange({}, {}, dtype=torch.float64)", r.table_first, r.table_first + P);
}

std::string rope_table(const Spec& s, bool cos) {
  const char* f = cos ? "cos" : "sin";
  return fmt::format("{}; rope_{} = torch.{}({}[:, None] * inv_freq).float()", rope_rates(s, s.rope->dims), f, f, table_positions(s));
}

std::string projection_code(StepId step, const Spec& s, const TextFacts& f) {
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
  return fmt::format("{} = {}", id, product(s, f, in, fmt::format("W_{}", id), bias));
}

// The head split; the heads-interleaved mistake reads view(B, L, h, G) and brings it to (B, L, G, h).
std::string head_split_code(StepId step, const Spec& s, const TextFacts& f) {
  const bool view = step == StepId::QView || step == StepId::KView || step == StepId::VView;
  const char* id = (step == StepId::QView || step == StepId::QHeads) ? "q" : (step == StepId::KView || step == StepId::KHeads) ? "k" : "v";
  const bool query = id[0] == 'q';
  const char *L = query ? "T" : "S", *G = query || !s.grouped() ? "H" : "kv_heads", *h = id[0] == 'v' ? "hv" : "hs";
  const std::string b = batch_lead(s);
  std::string split = fmt::format("{}.view({}{}, {}, {})", flat(s, id), b, L, G, h);
  if (f.mistake == Mistake::HeadsInterleaved) {
    split = fmt::format("{}.view({}{}, {}, {}).transpose({}, {})", flat(s, id), b, L, h, G, batch_axis(s, 2), batch_axis(s, 3));
  }
  return view ? fmt::format("{}_view = {}", id, split)
              : fmt::format("{}_heads = {}.transpose({}, {})", id, split, batch_axis(s, 1), batch_axis(s, 2));
}

std::string norm_code(StepId step, const Spec& s) {
  const bool query = step == StepId::QNorm;
  const char* id = query ? "q" : "k";
  const auto& n = *s.qk_norm;
  const std::string in = n.whole_width ? std::string(id) : head_rows(s, query);
  const std::string weight = n.plus_one ? fmt::format("(1 + {}_norm_weight)", id) : fmt::format("{}_norm_weight", id);
  return fmt::format("{0}_norm = {1} * torch.rsqrt({1}.pow(2).mean(-1, keepdim=True) + {2}) * {3}", id, in, literal(n.eps), weight);
}

std::string rope_code(StepId step, const Spec& s, const TextFacts& f) {
  if (step == StepId::RopeCos || step == StepId::RopeSin) return rope_table(s, step == StepId::RopeCos);
  const auto& r = *s.rope;
  const bool query = step == StepId::QRope;
  const std::int64_t a = (query ? r.offset : r.key_first) - r.table_first;
  const char* id = query ? "q" : "k";
  const std::string in = before_rope(s, query);
  const auto L = query ? s.T : s.S, G = query ? s.H : s.Hkv;
  if (f.mistake == Mistake::RopeBeforeSplit && G > 1) {
    // the G heads side by side, (B, L, G·hs), turned as one head of G·R features with tables for G·R, split again
    const auto R = G * r.dims, width = G * s.hs();
    Spec wide = s;
    wide.rope->dims = R;
    wide.rope->cos = Tensor::shape_only({r.cos.dim(0), R / 2});
    const std::string turned = rotate(wide, f, "flat", a, L, width, "cos", "sin");
    const auto a1 = batch_axis(s, 1), a2 = batch_axis(s, 2);
    return fmt::format("flat = {0}.transpose({1}, {2}).reshape({3}{4}, {5}); {6}; cos = torch.cos({7}[:, None] * inv_freq).float(); sin = "
                       "torch.sin({7}[:, None] * inv_freq).float(); {8}_rope = ({9}).view({3}{4}, {10}, hs).transpose({1}, {2})",
                       in, a1, a2, batch_lead(s), query ? "T" : "S", width, rope_rates(s, R), table_positions(s), id, turned,
                       query ? "H" : "kv_heads");
  }
  return fmt::format("{}_rope = {}", id, rotate(s, f, in, a, L, s.hs()));
}

std::string cache_code(StepId step, const Spec& s, const TextFacts& f) {
  const bool key = step == StepId::KPast || step == StepId::KCache;
  const char* id = key ? "k" : "v";
  if (step == StepId::KPast || step == StepId::VPast) {
    return fmt::format("{0}_past = {0}_cache  # the cache as the previous pass left it (after the prefill: its {1})", id,
                       kv_rows(s, f, key));
  }
  return fmt::format("{0}_cache = torch.cat(({0}_past, {1}), dim=-2)", id, kv_rows(s, f, key));
}

std::string masked_code(const Spec& s, const TextFacts& f) {
  std::string base = logits_var(s);
  if (f.mistake == Mistake::MaskMissing) return fmt::format("masked = {}", base);
  if (!s.user_add.shape().empty()) {
    const bool shared = s.user_add.dim(0) == 1;
    base = fmt::format("({} + mask_add{})", base, per_head_axis(s, !shared));
  }
  if (!s.blocking()) return fmt::format("masked = {}", base);
  return fmt::format("masked = {}.masked_fill(mask{} == 0, {})", base, per_head_axis(s, batch_mask(s)), literal(f.fill));
}

// Rows with every key blocked: softmax gives NaN; the policy's value in its place.
std::string empty_rows(const Spec& s, const TextFacts& f) {
  if (f.empty_rows == 0) return "";
  if (s.masked_row == MaskedRow::Zeros) return ".nan_to_num(0.0)";
  if (s.masked_row == MaskedRow::Uniform) return ".nan_to_num(1 / S)";
  return "";
}

// The softmax over the keys; the mistakes: over the queries (dim=-2), or first, blocked weights zeroed after.
std::string weights_code(const Spec& s, const TextFacts& f) {
  if (f.mask_after_softmax) {
    return fmt::format("weights = torch.softmax({}, dim=-1).masked_fill(mask{} == 0, 0)", logits_var(s), per_head_axis(s, batch_mask(s)));
  }
  const std::string in = s.masking() ? "masked" : logits_var(s);
  if (f.mistake == Mistake::SoftmaxWrongAxis) return fmt::format("weights = torch.softmax({}, dim=-2)", in);
  return fmt::format("weights = torch.softmax({}, dim=-1){}", in, empty_rows(s, f));
}

std::string scores_code(const Spec& s, const TextFacts& f) {
  if (s.entry == Entry::Scores) return given("scores");
  if (f.mistake == Mistake::QKSwapped) return fmt::format("scores = {} @ {}.transpose(-2, -1)", kv_used(s, f, true), q_rows(s));
  return fmt::format("scores = {} @ k_T", q_rows(s));
}

// The heads side by side again; the mistakes: without the transpose back, or interleaved as split.
std::string merged_code(const Spec& s, const TextFacts& f) {
  const char* width = s.general() ? "dv" : "C";
  const std::string b = batch_lead(s);
  const auto a1 = batch_axis(s, 1), a2 = batch_axis(s, 2), a3 = batch_axis(s, 3);
  if (f.mistake == Mistake::MergeNoTranspose) return fmt::format("merged = context.reshape({}T, {})", b, width);
  if (f.mistake == Mistake::HeadsInterleaved) {
    return fmt::format("merged = context.transpose({}, {}).transpose({}, {}).reshape({}T, {})", a1, a2, a2, a3, b, width);
  }
  return fmt::format("merged = context.transpose({}, {}).reshape({}T, {})", a1, a2, b, width);
}

std::string fused_code(const Spec& s, const TraceConfig& c, const TextFacts& f) {
  std::string k = kv_rows(s, f, true), v = kv_rows(s, f, false);
  if (s.grouped()) k = repeated(s, f, true, k), v = repeated(s, f, false, v);
  std::string logits = fmt::format("{} @ {}.transpose(-2, -1){}", q_rows(s), k, scale_code(s, c, f));
  if (s.blocking()) {
    logits = fmt::format("({}).masked_fill(({}){} == 0, float(\"-inf\"))", logits, mask_expr(s, f), per_head_axis(s, batch_mask(s)));
  }
  return fmt::format("context = torch.softmax({}, dim=-1){} @ {}", logits, empty_rows(s, f), v);
}

std::string alibi_code(const Spec& s, const TextFacts& f) {
  const auto off = s.causal_offset();
  return fmt::format("alibi = {}alibi_slopes[:, None, None] * (torch.arange(T)[:, None]{} - torch.arange(S))",
                     f.mistake == Mistake::AlibiSignFlipped ? "" : "-", off == 0 ? std::string() : fmt::format(" + {}", off));
}

// T5's _relative_position_bucket, written out: n = j − i, then the exact and the logarithmic buckets.
std::string rel_bucket_code(const Spec& s) {
  const auto& r = *s.relative_bias;
  const std::int64_t NB = r.table.dim(0), half = r.bidirectional ? NB / 2 : NB, exact = half / 2;
  const auto off = s.causal_offset();
  return fmt::format("n = torch.arange(S)[None, :] - torch.arange(T)[:, None]{}; {}"
                     "large = {} + (torch.log(n.float() / {}) / math.log({} / {}) * {}).long(); "
                     "rel_bucket = ({}torch.where(n < {}, n, large.clamp(max={}))).float()",
                     off == 0 ? std::string() : fmt::format(" - {}", off),
                     r.bidirectional ? fmt::format("side = (n > 0).long() * {}; n = n.abs(); ", half) : "n = (-n).clamp(min=0); ", exact, exact,
                     r.max_distance, exact, half - exact, r.bidirectional ? "side + " : "", exact, half - 1);
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
    case StepId::Qkv: return fmt::format("qkv = {}", product(s, f, x_in(s), "W_qkv", s.w.b_qkv.has_value()));
    case StepId::Q:
    case StepId::K:
    case StepId::V: return projection_code(step, s, f);
    case StepId::QView:
    case StepId::QHeads:
    case StepId::KView:
    case StepId::KHeads:
    case StepId::VView:
    case StepId::VHeads: return head_split_code(step, s, f);
    case StepId::QNorm:
    case StepId::KNorm: return norm_code(step, s);
    case StepId::RopeCos:
    case StepId::RopeSin:
    case StepId::QRope:
    case StepId::KRope: return rope_code(step, s, f);
    case StepId::KPast:
    case StepId::KCache:
    case StepId::VPast:
    case StepId::VCache: return cache_code(step, s, f);
    case StepId::KRepeat: return fmt::format("k_repeat = {}", repeated(s, f, true, s.cached ? "k_cache" : kv_rows(s, f, true)));
    case StepId::VRepeat: return fmt::format("v_repeat = {}", repeated(s, f, false, s.cached ? "v_cache" : kv_rows(s, f, false)));
    case StepId::KT: return fmt::format("k_T = {}.transpose(-2, -1)", kv_used(s, f, true));
    case StepId::Scores: return scores_code(s, f);
    case StepId::Scaled: return fmt::format("scaled = scores{}", scale_code(s, c, f));
    case StepId::Alibi: return alibi_code(s, f);
    case StepId::RelBucket: return rel_bucket_code(s);
    case StepId::RelBias: return "rel_bias = rel_table[rel_bucket.long()].permute(2, 0, 1)";
    case StepId::Biased:
      return fmt::format("biased = {} + {}", s.scale_kind != ScaleKind::None ? "scaled" : "scores", s.relative_bias ? "rel_bias" : "alibi");
    case StepId::Capped: {
      const std::string cap = literal(static_cast<Scalar>(*s.softcap));
      const std::string in = !s.alibi_slopes.shape().empty() || s.relative_bias ? "biased" : s.scale_kind != ScaleKind::None ? "scaled" : "scores";
      return fmt::format("capped = {0} * torch.tanh({1} / {0})", cap, in);
    }
    case StepId::Mask: return fmt::format("mask = {}", mask_expr(s, f));
    case StepId::MaskAdd: return given("mask.add");
    case StepId::Masked: return masked_code(s, f);
    case StepId::Weights: return weights_code(s, f);
    case StepId::Context:
      if (f.fused) return fused_code(s, c, f);
      return fmt::format("context = weights @ {}", s.entry == Entry::Scores ? (s.H > 1 ? "v_heads" : "v") : kv_used(s, f, false));
    case StepId::Merged: return merged_code(s, f);
    case StepId::Output: {
      const std::string in = s.H > 1 ? "merged" : "context";
      if (f.mistake == Mistake::OutputMissing) return fmt::format("output = {}", in);
      return fmt::format("output = {}", product(s, f, in, "W_o", s.w.b_o.has_value()));
    }
    default: return backward_code(step, s, c);  // the backward steps
  }
  return "";
}

}  // namespace attn
