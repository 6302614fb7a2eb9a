// The table of step words. Each entry says what its step is in the spec's terms; the forward pass
// never formats text, and this file never touches a tensor.
#include "attn/pipeline/step_text.hpp"
#include "attn/pipeline/step_code.hpp"
#include "attn/numerics/position_tables.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <tuple>

#include <cmath>
#include <limits>

namespace attn {
namespace {

// 0.125, 0.5774: at most four decimals, no trailing zeros.
std::string short_number(double v) {
  std::string s = fmt::format("{:.4f}", v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

// -1e9, 0.5, 1e-05 -> "-1e9", "0.5", "1e-5": how a person writes a fill value.
std::string compact_number(double v) {
  std::string s = fmt::format("{:g}", v);
  for (const auto& [from, to] : {std::pair{"e+0", "e"}, std::pair{"e+", "e"}, std::pair{"e-0", "e-"}}) {
    if (auto p = s.find(from); p != std::string::npos) s.replace(p, std::string_view(from).size(), to);
  }
  return s;
}

std::string bias_term(const std::optional<Tensor>& b, std::string_view name) { return b ? fmt::format(" + {}", name) : ""; }

// flipped: a mistake read the weight in the other layout (w-transposed, output-transposed).
std::string weight_symbol(const Spec& s, std::string_view name, bool flipped = false) {
  return (s.layout == Layout::Torch) != flipped ? fmt::format("{}ᵀ", name) : std::string(name);
}

// A projection's formula ends so under w-transposed (every weight) or output-transposed (W_o only).
std::string transposed_mark(const TextFacts& f, bool output) {
  if (f.mistake == Mistake::WTransposed) return mistake_mark(f.mistake, "Wᵀ, the weights read in the other layout");
  if (f.mistake == Mistake::OutputTransposed && output) return mistake_mark(f.mistake, "W_oᵀ, read in the other layout");
  return "";
}

// What the projections read: the embeddings, or the embeddings plus positions.
std::string x_name(const Spec& s) { return s.positions != Positions::None ? "x.pos" : "x"; }

std::string scaled_name(const Spec& s) { return s.scale_kind != ScaleKind::None ? "scaled" : "scores"; }

// The scores with the ALiBi bias when there is one: what soft-capping reads.
std::string biased_name(const Spec& s) { return s.alibi_slopes.shape().empty() && !s.relative_bias ? scaled_name(s) : "biased"; }

// The logits the mask and the softmax read: capped, else biased, else scaled (or the scores).
std::string logits_name(const Spec& s) { return s.softcap ? "capped" : biased_name(s); }

// q, k, v: a part of the fused projection, given, or projected on their own.
StepText projection(StepId step, const Spec& s, const TextFacts& f) {
  const auto& info = step_info(step);
  const int part = step == StepId::Q ? 0 : step == StepId::K ? 1 : 2;
  const char* id = part == 0 ? "q" : part == 1 ? "k" : "v";
  const bool g = s.grouped();
  const Dim width = part == 0 ? Dim::dk : part == 1 ? (g ? Dim::dkv : Dim::dk) : (g ? Dim::dvkv : Dim::dv);
  const Dims dims{Dim::B, part == 0 ? Dim::T : Dim::S, width};
  if (s.entry != Entry::Embeddings) return {fmt::format("{} (given)", info.title), fmt::format("{} (given)", id), "", dims};
  if (s.w.W_qkv) {
    const std::int64_t widths[] = {s.dk, s.dkv(), s.dvkv()};
    const auto from = part == 0 ? 0 : part == 1 ? s.dk : s.dk + s.dkv(), to = from + widths[part];
    const auto split = g ? fmt::format("[dk, Hkv·hs, Hkv·hv] = [{}, {}, {}]", s.dk, s.dkv(), s.dvkv())
                         : s.general() ? std::string("[dk, dk, dv]") : std::string("C");
    return {std::string(info.title), fmt::format("{} = qkv[..., {}:{}]", id, from, to),
            fmt::format("qkv.split({}, dim=-1), part {} of 3", split, part + 1), Dims{Dim::B, Dim::T, width}};
  }
  const std::string input = part == 0 || !s.cross() ? x_name(s) : "source";
  const auto& w = s.w;
  const std::optional<Tensor>& bias = part == 0 ? w.b_q : part == 1 ? w.b_k : w.b_v;
  const std::string wname = fmt::format("W_{}", id), bname = fmt::format("b_{}", id);
  const bool flipped = f.mistake == Mistake::WTransposed;
  return {std::string(info.title),
          fmt::format("{} = {} · {}{}{}", id, input, weight_symbol(s, wname, flipped), bias_term(bias, bname), transposed_mark(f, false)), "", dims};
}

// "merged = context.transpose(1, 2).reshape(B, T, C)", without B where the input has none.
std::string merged_formula(const Spec& s, const char* width) {
  return fmt::format("merged = context.transpose({}, {}).reshape({}T, {})", batch_axis(s, 1), batch_axis(s, 2), batch_lead(s), width);
}

// q.view / q.heads and the same for k and v (Hkv heads of them when grouped).
StepText head_split(StepId step, const Spec& s, const TextFacts& f) {
  const bool view = step == StepId::QView || step == StepId::KView || step == StepId::VView;
  const char* id = (step == StepId::QView || step == StepId::QHeads) ? "q" : (step == StepId::KView || step == StepId::KHeads) ? "k" : "v";
  const bool query = id[0] == 'q', value = id[0] == 'v';
  // what is split: OLMo 2's q and k are normalised first
  const std::string in = !value && s.qk_norm && s.qk_norm->whole_width ? fmt::format("{}.norm", id) : std::string(id);
  const Dim L = query ? Dim::T : Dim::S;
  const char* l = query || s.keys_are_queries() ? "T" : "S";  // as the shape is written
  const auto title = std::string(step_info(step).title);
  // classic widths say C and hs; general ones dk and hs for q and k, dv and hv for v
  const Dim h = value ? Dim::hv : Dim::hs;
  const char* hn = value && s.general() ? "hv" : "hs";
  const bool kv_group = !query && s.grouped();
  const std::string wn = kv_group ? fmt::format("Hkv·{}", hn) : !s.general() ? "C" : value ? "dv" : "dk";
  const auto width = kv_group ? (value ? s.dvkv() : s.dkv()) : value ? s.dv : s.dk, head = value ? s.hv() : s.hs();
  const Dim heads = kv_group ? Dim::Hkv : Dim::H;
  const char* hname = kv_group ? "Hkv" : "H";
  const auto count = kv_group ? s.Hkv : s.H;
  if (f.mistake == Mistake::HeadsInterleaved) {
    // view(…, hs, H) then the last two axes swapped: a copy whose head h holds columns h, h + H, …
    const std::string split = fmt::format("{}.view({}{}, {}, {}).transpose(-2, -1)", in, batch_lead(s), l, hn, hname);
    return {title,
            (view ? split : fmt::format("{}.transpose({}, {})", split, batch_axis(s, 1), batch_axis(s, 2))) +
                mistake_mark(f.mistake, fmt::format("view(…, {}, {}), not view(…, {}, {})", hn, hname, hname, hn)),
            fmt::format("a copy: head h takes the interleaved columns h, h + {0}, h + 2·{0}, … of the {1} = {2} features, not a block of {3} = {4}",
                        hname, wn, width, hn, head),
            view ? Dims{Dim::B, L, heads, h} : Dims{Dim::B, heads, L, h}};
  }
  if (view) {
    return {title, fmt::format("{}.view({}{}, {}, {})", in, batch_lead(s), l, hname, hn),
            fmt::format("a view, no copy: the {} = {} features read as {} = {} heads of {} = {}", wn, width, hname, count, hn, head),
            Dims{Dim::B, L, heads, h}};
  }
  return {title, fmt::format("{}.view({}{}, {}, {}).transpose({}, {})", in, batch_lead(s), l, hname, hn, batch_axis(s, 1), batch_axis(s, 2)),
          kv_group ? fmt::format("each of the Hkv = {} key/value heads holds its own [{}, {}] matrix", s.Hkv, l, hn)
                   : fmt::format("each head now holds its own [{}, {}] matrix", l, hn),
          Dims{Dim::B, heads, L, h}};
}

// The key or value rows the cache and the repeat read: rotated keys, else the kv heads, else the flat rows.
std::string kv_rows_name(const Spec& s, bool key) {
  const bool per_head = s.qk_norm && !s.qk_norm->whole_width;
  if (key) return s.rope ? "k.rope" : per_head ? "k.norm" : s.Hkv > 1 ? "k.heads" : s.qk_norm ? "k.norm" : "k";
  return s.Hkv > 1 ? "v.heads" : "v";
}

// k.past, k.cache, v.past, v.cache: attn decode's KV cache, before and after the new token's append.
StepText cache_text(StepId step, const Spec& s) {
  const bool key = step == StepId::KPast || step == StepId::KCache, past = step == StepId::KPast || step == StepId::VPast;
  const char* id = key ? "k" : "v";
  const Dims dims{Dim::B, s.grouped() ? Dim::Hkv : Dim::H, Dim::S, key ? Dim::hs : Dim::hv};
  const std::string heads = s.grouped() ? fmt::format("Hkv = {}", s.Hkv) : fmt::format("H = {}", s.H);
  const auto t = s.S - 1;  // the new token's position among the keys
  if (past) {
    return {step == StepId::KPast ? "Key cache before the append" : "Value cache before the append",
            fmt::format("{}.past = the cache: {} of positions 0 .. {}", id, key ? "keys (rotated)" : "values", t - 1),
            fmt::format("kept from earlier steps, never recomputed: {} heads × {} positions", heads, t), dims};
  }
  const std::string row = kv_rows_name(s, key);
  return {step == StepId::KCache ? "Key cache after the append" : "Value cache after the append",
          fmt::format("{}.cache = cat({}.past, {}, dim=-2)", id, id, row),
          fmt::format("the new token's row appended at position {}: {} heads × {} positions; {} bytes per token for k and v together", t, heads,
                      s.S, s.Hkv * (s.hs() + s.hv()) * static_cast<std::int64_t>(sizeof(Scalar))),
          dims};
}

// k.repeat, v.repeat: grouped-query attention lines the kv heads up with the query heads.
StepText repeat_text(StepId step, const Spec& s, const TextFacts& f) {
  const bool key = step == StepId::KRepeat;
  const auto n = s.H / s.Hkv;
  const std::string in = s.cached ? (key ? "k.cache" : "v.cache") : kv_rows_name(s, key);
  if (f.mistake == Mistake::KvTiled) {
    std::vector<std::string> heads;
    for (std::int64_t h = 0; h < s.H && h < 4; ++h) heads.push_back(fmt::format("h{} ← kv{}", h, h % s.Hkv));
    if (s.H > 4) heads.push_back("…");
    return {key ? "Key heads repeated" : "Value heads repeated",
            fmt::format("{}.repeat = {}.repeat({}H / Hkv = {}, 1, 1){}", key ? "k" : "v", in, s.batched ? "1, " : "", n,
                        mistake_mark(f.mistake, "tiled, not repeat_kv's interleave")),
            fmt::format("query head h reads kv head h mod {}: {}; the whole stack of kv heads copied {} times, as torch.tile", s.Hkv, fmt::join(heads, "; "), n),
            Dims{Dim::B, Dim::H, Dim::S, key ? Dim::hs : Dim::hv}};
  }
  std::vector<std::string> groups;
  for (std::int64_t g = 0; g < s.Hkv && g < 4; ++g) {
    groups.push_back(n == 1 ? fmt::format("h{} ← kv{}", g, g)
                     : n == 2 ? fmt::format("h{}, h{} ← kv{}", g * n, g * n + 1, g)
                              : fmt::format("h{} .. h{} ← kv{}", g * n, g * n + n - 1, g));
  }
  if (s.Hkv > 4) groups.push_back("…");
  return {key ? "Key heads repeated" : "Value heads repeated", fmt::format("{}.repeat = repeat_kv({}, H / Hkv = {})", key ? "k" : "v", in, n),
          fmt::format("query head h reads kv head ⌊h / {}⌋: {}; a copy for the product, as Llama's repeat_kv (expand, then reshape){}",
                      n, fmt::join(groups, "; "), key ? fmt::format("; a cache holds only the Hkv = {} heads", s.Hkv) : ""),
          Dims{Dim::B, Dim::H, Dim::S, key ? Dim::hs : Dim::hv}};
}

// ", masked causally, window 4, padding" for the fused context's formula.
std::string fused_mask_words(const Spec& s) {
  std::string w = s.causal ? ", masked causally" : ", masked";
  if (s.window > 0) w += fmt::format(" with a window of {}", s.window);
  if (!s.lengths.empty()) w += " and the padding";
  return w;
}

// q.rope, k.rope under rope-before-split: the flat rows turned as one head of G·R features, then split again.
StepText rope_before_split_text(const Spec& s, const TextFacts& f, bool query) {
  const auto& r = *s.rope;
  const char* id = query ? "q" : "k";
  const auto G = query ? s.H : s.Hkv;
  const char* g = query || !s.grouped() ? "H" : "Hkv";
  const char* l = query || s.keys_are_queries() ? "T" : "S";
  return {query ? "Queries rotated" : "Keys rotated",
          fmt::format("{0}.rope = rope({0}.view({1}{2}, {3}·hs), R = {3}·{4} = {5}).view({1}{2}, {3}, hs).transpose({6}, {7}){8}", id, batch_lead(s),
                      l, g, r.dims, G * r.dims, batch_axis(s, 1), batch_axis(s, 2), mistake_mark(f.mistake, "RoPE before the head split")),
          fmt::format("the {} heads side by side turned as one head of {} rotated features: the pairs and the angles {}^(−2i/{}) run across the heads, "
                      "not within each",
                      G, G * r.dims, compact_number(r.theta), G * r.dims),
          Dims{Dim::B, query ? Dim::H : s.grouped() ? Dim::Hkv : Dim::H, query ? Dim::T : Dim::S, Dim::hs}};
}

// rope.cos, rope.sin, q.rope, k.rope.
StepText rope_text(StepId step, const Spec& s, const TextFacts& f) {
  const auto& r = *s.rope;
  const std::string theta = compact_number(r.theta);
  const bool partial = r.dims < s.hs();
  // rope-wrong-style turns the pairs of the other style
  const bool half_style = (r.style == RopeStyle::Half) != (f.mistake == Mistake::RopeWrongStyle);
  const char* half = half_style ? "half" : "interleaved";
  if ((step == StepId::RopeCos || step == StepId::RopeSin) && r.scaling.kind != RopeScaling::Kind::None) {
    const bool cos = step == StepId::RopeCos;
    const char* f = cos ? "cos" : "sin";
    const std::string rows = r.table_first == 0 ? std::string("row p is position p") : fmt::format("row r is position r + {}", r.table_first);
    const auto& sc = r.scaling;
    std::string note;
    if (sc.kind == RopeScaling::Kind::Linear) {
      note = fmt::format("θ_i = {}^(−2i/{}) / {} (linear scaling: every pair turns {} times slower); {}", theta, r.dims, compact_number(sc.factor),
                         compact_number(sc.factor), rows);
    } else {
      // the three bands as ranges of pairs (by wavelength 2π/θ_i, in positions)
      std::vector<std::string> parts;
      const auto pairs = r.dims / 2;
      for (const auto& [band, one, many] :
           {std::tuple{RopeBand::High, "keeps it", "keep it"}, std::tuple{RopeBand::Middle, "is smoothed", "are smoothed"},
            std::tuple{RopeBand::Low, "gets", "get"}}) {
        std::int64_t lo = -1, hi = -1;
        for (std::int64_t i = 0; i < pairs; ++i)
          if (rope_band(i, r.dims, r.theta, sc) == band) hi = i, lo = lo < 0 ? i : lo;
        if (lo < 0) continue;
        const std::string range = lo == hi ? fmt::format("pair {} {}", lo, one) : fmt::format("pairs {} .. {} {}", lo, hi, many);
        const char* what = band == RopeBand::High     ? " (wavelength under {0} / {1} = {2} positions)"
                           : band == RopeBand::Middle ? " between θ_i and θ_i / {5}"
                                                      : " θ_i / {5} (wavelength over {0} / {3} = {4})";
        parts.push_back(range + fmt::format(fmt::runtime(what), compact_number(sc.original), compact_number(sc.high_freq_factor),
                                                  compact_number(sc.original / sc.high_freq_factor), compact_number(sc.low_freq_factor),
                                                  compact_number(sc.original / sc.low_freq_factor), compact_number(sc.factor)));
      }
      note = fmt::format("θ_i = {}^(−2i/{}) with Llama 3's scaling: {}; {}", theta, r.dims, fmt::join(parts, ", "), rows);
    }
    return {cos ? "Rotary cosines (scaled)" : "Rotary sines (scaled)",
            r.table_first == 0 ? fmt::format("rope.{0}[p, i] = {0}(p · θ_i)", f) : fmt::format("rope.{0}[r, i] = {0}((r + {1}) · θ_i)", f, r.table_first),
            note, Dims{Dim::P, Dim::R2}};
  }
  if (step == StepId::RopeCos || step == StepId::RopeSin) {
    const bool cos = step == StepId::RopeCos;
    const double slowest = std::pow(r.theta, -static_cast<double>(r.dims - 2) / static_cast<double>(r.dims));
    return {cos ? "Rotary cosines" : "Rotary sines",
            r.table_first == 0 ? fmt::format("rope.{0}[p, i] = {0}(p · {1}^(−2i/{2}))", cos ? "cos" : "sin", theta, r.dims)
                               : fmt::format("rope.{0}[r, i] = {0}((r + {3}) · {1}^(−2i/{2}))", cos ? "cos" : "sin", theta, r.dims, r.table_first),
            fmt::format("{}; {}", r.table_first == 0 ? std::string("row p is position p") : fmt::format("row r is position r + {}", r.table_first),
                        r.dims == 2 ? std::string("the one pair turns by 1 radian per position")
                                    : fmt::format("pair i turns by {}^(−2i/R) radians per position, from 1 (pair 0) down to {} (pair {})",
                                                  theta, short_number(slowest), r.dims / 2 - 1)),
            Dims{Dim::P, Dim::R2}};
  }
  const bool query = step == StepId::QRope;
  const char* id = query ? "q" : "k";
  const bool per_head = s.qk_norm && !s.qk_norm->whole_width;
  const std::string in = per_head                       ? fmt::format("{}.norm", id)
                         : (query ? s.H : s.Hkv) > 1    ? fmt::format("{}.heads", id)
                         : s.qk_norm                    ? fmt::format("{}.norm", id)
                                                        : std::string(id);
  if (f.mistake == Mistake::RopeBeforeSplit) return rope_before_split_text(s, f, query);
  const std::string rotate = half_style ? "rotate_half" : "rotate_every_two";
  const std::int64_t first = query ? r.offset : r.key_first;
  std::string note = fmt::format("the pairs {} (\"{}\" style) of each head turn by their position's angles, (x, y) → (x·cos − y·sin, y·cos + "
                                 "x·sin); {} {} is at position {}",
                                 half_style ? fmt::format("(i, i + {})", r.dims / 2) : std::string("(2i, 2i + 1)"), half,
                                 query ? "query" : "key", query ? "i" : "j",
                                 first == 0 ? std::string(query ? "i" : "j") : fmt::format("{} + {}", first, query ? "i" : "j"));
  if (partial) note += fmt::format("; features {} .. {} pass unchanged (partial rotary, R = {} of hs = {})", r.dims, s.hs() - 1, r.dims, s.hs());
  return {query ? "Queries rotated" : "Keys rotated",
          fmt::format("{0}.rope = {1} · cos + {2}({1}) · sin{3}", id, in, rotate,
                      f.mistake == Mistake::RopeWrongStyle ? mistake_mark(f.mistake, fmt::format("{}, the other style", rotate)) : ""),
          note,
          Dims{Dim::B, query ? Dim::H : s.grouped() ? Dim::Hkv : Dim::H, query ? Dim::T : Dim::S, Dim::hs}};
}

// The mask's own rules (causal, window, padding): what mask-flipped inverts, and window-off-by-one widens.
std::vector<std::string> built_in_rules(const Spec& s, const TextFacts& f) {
  std::vector<std::string> rules;
  if (s.causal) {
    const auto off = s.causal_offset();
    const std::string diag = off == 0 ? "i" : fmt::format("i + {}", off);
    if (s.window > 0 && f.mistake == Mistake::WindowOffByOne) rules.push_back(fmt::format("{} − {} ≤ j ≤ {}", diag, s.window, diag));
    else if (s.window > 0) rules.push_back(fmt::format("{} − {} < j ≤ {}", diag, s.window, diag));
    else rules.push_back(off == 0 ? "j ≤ i" : fmt::format("j ≤ i + {} (bottom-right: S − T = {})", off, off));
  }
  if (!s.lengths.empty()) rules.push_back("j < length[b]");
  return rules;
}

// The formula and note mask-flipped and window-off-by-one give the mask step.
StepText mistaken_mask(const Spec& s, const TextFacts& f, std::vector<std::string> rules, std::string_view at) {
  const Dims dims = s.mask_per_batch() ? Dims{Dim::B, Dim::T, Dim::S} : Dims{Dim::T, Dim::S};
  const std::string user = s.user_mask == UserMask::Block  ? " and attn_mask.block[i, j] is false"
                           : s.user_mask == UserMask::Keep ? " and attn_mask.keep[i, j] is true"
                                                           : "";
  if (f.mistake == Mistake::WindowOffByOne) {
    return {"Mask", fmt::format("mask[{}] = 1 if {}{}, else 0{}", at, fmt::join(rules, " and "), user, mistake_mark(f.mistake, "≤, not <")),
            fmt::format("the window keeps W + 1 = {} keys, the query's own included, one more than W = {}", s.window + 1, s.window), dims,
            ValueKind::Mask};
  }
  const std::string formula = rules.empty() ? fmt::format("mask[{}] = 0 everywhere", at)
                                            : fmt::format("mask[{}] = 1 if not ({}){}, else 0", at, fmt::join(rules, " and "), user);
  return {"Mask", formula + mistake_mark(f.mistake, "the polarity flipped"),
          "the keys the mask should keep are blocked and the ones it should block are kept", dims, ValueKind::Mask};
}

StepText mask_text(const Spec& s, const TextFacts& f) {
  std::vector<std::string> rules = built_in_rules(s, f);
  const bool per_batch = s.mask_per_batch();
  if (f.mistake == Mistake::MaskFlipped || f.mistake == Mistake::WindowOffByOne) return mistaken_mask(s, f, rules, per_batch ? "b, i, j" : "i, j");
  if (s.user_mask == UserMask::Block) rules.push_back("attn_mask.block[i, j] is false");
  if (s.user_mask == UserMask::Keep) rules.push_back("attn_mask.keep[i, j] is true");
  std::string formula = fmt::format("mask[{}] = 1 if {}, else 0", per_batch ? "b, i, j" : "i, j", fmt::join(rules, " and "));
  if (s.causal && rules.size() == 1 && s.causal_offset() == 0 && s.window == 0) formula += " (tril)";
  std::string note;
  if (s.causal && rules.size() == 1) note = "a query sees itself and earlier positions, never later ones";
  if (s.window > 0) {
    note = s.window == 1 ? std::string("a sliding window of W = 1 key (as Mistral and Gemma count it): a query sees only itself")
                         : fmt::format("a sliding window of W = {} keys, the query's own included (as Mistral and Gemma count it): a query sees itself and the {} "
                                       "before it, never later ones; older keys are out of reach (stacked layers pass their information on)",
                                       s.window, s.window - 1);
  }
  if (!s.lengths.empty()) note = fmt::format("lengths = [{}]: keys at or past a row's length are padding", fmt::join(s.lengths, ", "));
  return {"Mask", formula, note, per_batch ? Dims{Dim::B, Dim::T, Dim::S} : Dims{Dim::T, Dim::S}, ValueKind::Mask};
}

StepText masked_text(const Spec& s, const TextFacts& f) {
  const bool add = !s.user_add.shape().empty();
  const std::string base = logits_name(s) + (add ? " + mask.add" : "");
  if (!s.blocking()) return {"Masked scores", fmt::format("masked = {}", base), "", Dims{Dim::B, Dim::H, Dim::T, Dim::S}};
  std::string note = "−inf, not a large negative number: exp(−inf) = 0 exactly, so blocked keys get exactly 0 weight";
  if (s.mask_fill) {
    note = fmt::format("blocked scores are {} (mask_fill), not −inf: exp({} − row max) underflows to 0 wherever the row keeps a "
                       "key, the same weights; a row with every key blocked gets uniform weights instead of none",
                       compact_number(*s.mask_fill), compact_number(*s.mask_fill));
  }
  if (f.mistake == Mistake::Fill1e9) {
    return {"Masked scores", fmt::format("masked = {} where mask = 1, −1e9 where mask = 0{}", base, mistake_mark(f.mistake, "−1e9, not −inf")),
            "exp(−1e9 − row max) underflows to 0 wherever the row keeps a key, the same weights; a row with every key blocked gets uniform "
            "weights instead of none",
            Dims{Dim::B, Dim::H, Dim::T, Dim::S}};
  }
  return {"Masked scores",
          fmt::format("masked = {} where mask = 1, {} where mask = 0", base, s.mask_fill ? compact_number(f.fill) : "−inf"), note,
          Dims{Dim::B, Dim::H, Dim::T, Dim::S}};
}

StepText weights_text(const Spec& s, const TextFacts& f) {
  const std::string input = s.masking() && !f.mask_after_softmax ? "masked" : logits_name(s);
  std::string note = "row i: how query i spreads its attention over the keys; each row sums to 1 (row max subtracted before exp)";
  if (f.empty_rows > 0) {
    static constexpr const char* kPolicy[] = {"", "0 (masked_row \"zeros\", as PyTorch's scaled_dot_product_attention)",
                                              "NaN (masked_row \"nan\", as nn.MultiheadAttention with need_weights)",
                                              "uniform, 1/S (masked_row \"uniform\", what a −1e9 fill gives)"};
    note += fmt::format("; {} row{} with every key masked: weights {}", f.empty_rows, f.empty_rows == 1 ? "" : "s",
                        kPolicy[static_cast<int>(s.masked_row)]);
  }
  if (f.mistake == Mistake::SoftmaxWrongAxis) {
    return {"Attention weights", fmt::format("weights = softmax({}, dim=-2){}", input, mistake_mark(f.mistake, "over the queries, not the keys")),
            "column j: how key j's attention spreads over the queries; each column sums to 1, the rows do not",
            Dims{Dim::B, Dim::H, Dim::T, Dim::S}};
  }
  if (f.mask_after_softmax) {
    return {"Attention weights",
            fmt::format("weights = softmax({}, dim=-1) where mask = 1, 0 where mask = 0{}", input, mistake_mark(f.mistake, "masked after softmax")),
            "softmax over every key, blocked ones included, then the blocked weights zeroed: a row with a blocked key sums to less than 1",
            Dims{Dim::B, Dim::H, Dim::T, Dim::S}};
  }
  return {"Attention weights", fmt::format("weights = softmax({}, dim=-1)", input), note, Dims{Dim::B, Dim::H, Dim::T, Dim::S}};
}

// positions: a learned table, or the original Transformer's sinusoids.
StepText positions_text(const Spec& s) {
  if (s.positions == Positions::Learned) {
    return {"Positional encodings (given)", "positions (given, learned)", "one learned row per position, as GPT-2's wpe",
            Dims{Dim::T, Dim::C}};
  }
  if (s.C <= 2) {
    return {"Positional encodings", "positions[p, 0] = sin(p), positions[p, 1] = cos(p)",
            "row p is position p; with C = 2 there is one pair of columns, turning 1 radian per position", Dims{Dim::T, Dim::C}};
  }
  return {"Positional encodings", "positions[p, 2i] = sin(p / 10000^(2i/C)), positions[p, 2i+1] = cos(p / 10000^(2i/C))",
          fmt::format("row p is position p; each pair of columns turns at its own rate, from 1 radian per position (pair 0) "
                      "down to 1/10000^({}/{}) = {} (pair {})",
                      2 * ((s.C - 1) / 2), s.C, compact_number(1.0 / std::pow(10000.0, 2.0 * static_cast<double>((s.C - 1) / 2) / static_cast<double>(s.C))),
                      (s.C - 1) / 2),
          Dims{Dim::T, Dim::C}};
}

// q.norm, k.norm: per head (Qwen3, Gemma 3) or over the whole width (OLMo 2).
StepText qk_norm_text(StepId step, const Spec& s) {
  const bool query = step == StepId::QNorm;
  const char* id = query ? "q" : "k";
  const auto& n = *s.qk_norm;
  const std::string weight = n.plus_one ? fmt::format("(1 + {}_norm.weight)", id) : fmt::format("{}_norm.weight", id);
  if (n.whole_width) {
    return {query ? "Queries normalised" : "Keys normalised",
            fmt::format("{0}.norm = {0} · rsqrt(mean({0}², -1) + {1}) · {2}", id, compact_number(n.eps), weight),
            fmt::format("all {} = {} {} features of a token at once, every head together, scaled to a root mean square of 1 and then by a "
                        "learned weight per feature ({}'s {}_norm, before the head split and RoPE)",
                        query ? (s.general() ? "dk" : "C") : s.grouped() ? "Hkv·hs" : (s.general() ? "dk" : "C"), query ? s.dk : s.dkv(),
                        query ? "query" : "key", n.family, id),
            query ? Dims{Dim::B, Dim::T, s.general() ? Dim::dk : Dim::C} : Dims{Dim::B, Dim::S, s.grouped() ? Dim::dkv : s.general() ? Dim::dk : Dim::C}};
  }
  const std::string in = (query ? s.H : s.Hkv) > 1 ? fmt::format("{}.heads", id) : std::string(id);
  return {query ? "Queries normalised per head" : "Keys normalised per head",
          fmt::format("{0}.norm = {1} · rsqrt(mean({1}², -1) + {2}) · {3}", id, in, compact_number(n.eps), weight),
          fmt::format("each head's {} features scaled to a root mean square of 1, then by a learned weight per feature ({}'s "
                      "{}_norm, before RoPE{}): no head's {} can grow large enough to make its softmax one-hot",
                      query ? "query" : "key", n.family, id, n.plus_one ? "; Gemma's norms multiply by 1 + the stored weight" : "",
                      query ? "query" : "key"),
          Dims{Dim::B, query ? Dim::H : s.grouped() ? Dim::Hkv : Dim::H, query ? Dim::T : Dim::S, Dim::hs}};
}

// alibi: the bias by distance, with each head's slope.
StepText alibi_text(const Spec& s, const TextFacts& f) {
  std::vector<std::string> m;
  for (std::int64_t h = 0; h < s.H; ++h) m.push_back(short_number(s.alibi_slopes.data()[h]));
  const auto off = s.causal_offset();
  if (f.mistake == Mistake::AlibiSignFlipped) {
    return {"ALiBi bias",
            fmt::format("alibi[h, i, j] = +m_h · ({} − j){}", off == 0 ? std::string("i") : fmt::format("i + {}", off),
                        mistake_mark(f.mistake, "+m, not −m")),
            fmt::format("slope{} m = {}; a key d positions behind the query gains m·d: the further back, the higher its score", s.H > 1 ? "s" : "",
                        fmt::join(m, ", ")),
            Dims{Dim::H, Dim::T, Dim::S}};
  }
  return {"ALiBi bias", off == 0 ? "alibi[h, i, j] = −m_h · (i − j)" : fmt::format("alibi[h, i, j] = −m_h · (i + {} − j)", off),
          fmt::format("slope{} m = {}{}; a key d positions behind the query loses m·d{}", s.H > 1 ? "s" : "", fmt::join(m, ", "),
                      !s.alibi_default                 ? " (given)"
                      : (s.H & (s.H - 1)) == 0         ? fmt::format(" (2^(−8(h+1)/{}), Press et al.)", s.H)
                                                       : " (Press et al.'s interpolation between the powers of two around H)",
                      s.causal ? "" : ", and one d positions after it gains m·d (no causal mask hides those)"),
          Dims{Dim::H, Dim::T, Dim::S}};
}

// rel.bucket, rel.bias: T5's relative position bias, looked up by bucket.
StepText relative_bias_text(StepId step, const Spec& s) {
  const auto& r = *s.relative_bias;
  const std::int64_t NB = r.table.dim(0), half = r.bidirectional ? NB / 2 : NB, exact = half / 2;
  const auto off = s.causal_offset();
  const std::string n = off == 0 ? "j − i" : fmt::format("j − (i + {})", off);
  if (step == StepId::RelBucket) {
    // where each logarithmic bucket begins: the distances at which the bucket changes
    std::vector<std::int64_t> starts;
    for (std::int64_t d = exact, last = -1; d <= r.max_distance; ++d) {
      const std::int64_t b = t5_bucket(-d, false, half, r.max_distance);
      if (b != last) starts.push_back(d), last = b;
    }
    return {"Relative position buckets", fmt::format("rel.bucket[i, j] = bucket({})", n),
            fmt::format("{}a distance d below {} has a bucket of its own; from {} on the buckets widen logarithmically, {} + ⌊ln(d/{}) / "
                        "ln({}/{}) · {}⌋: they begin at d = {}, and every distance from {} on shares the last ({} buckets in all)",
                        r.bidirectional ? fmt::format("keys before the query use buckets 0–{}, keys after it {}–{} (an encoder sees both sides); ",
                                                      half - 1, half, NB - 1)
                                        : "causal: only keys at or before the query, d = i − j; ",
                        exact, exact, exact, exact, r.max_distance, exact, half - exact, fmt::join(starts, ", "), starts.back(), NB),
            Dims{Dim::T, Dim::S}, ValueKind::Index};
  }
  return {"Relative position bias", "rel.bias[h, i, j] = table[rel.bucket[i, j], h]",
          fmt::format("one learned number per bucket and head ({} × {}, {}); T5 computes it in block 0 and every block of the stack reuses it",
                      NB, s.H, r.source.empty() ? std::string("given") : r.source),
          Dims{Dim::H, Dim::T, Dim::S}};
}

// context: weights · v, or the fused pass's.
StepText context_text(const Spec& s, const TextFacts& f) {
  if (f.fused) {
    return {"Context vectors (fused)",
            fmt::format("context = softmax({}{} · {}ᵀ{}) · v", s.scale_kind == ScaleKind::None ? "" : "scale · ", s.rope ? "q.rope" : "q",
                        s.rope ? "k.rope" : "k", s.masking() ? fused_mask_words(s) : ""),
            std::string("one pass over the keys with a running row max and sum (FlashAttention); no [T, S] scores or weights are kept") +
                (s.grouped() ? "; query head h reads kv head h / (H / Hkv)" : ""),
            Dims{Dim::B, Dim::H, Dim::T, Dim::hv}};
  }
  if (f.mistake == Mistake::RopeOnV) {
    return {"Context vectors", fmt::format("context = weights · rope({}){}", s.grouped() ? "v.repeat" : "v", mistake_mark(f.mistake, "v rotated too")),
            "row i: the average of the value rows, each first turned by its position's angles as the keys are, weighted by row i of the weights",
            Dims{Dim::B, Dim::H, Dim::T, Dim::hv}};
  }
  return {"Context vectors", s.grouped() ? "context = weights · v.repeat" : s.cached ? "context = weights · v.cache" : "context = weights · v", "row i: the average of the value rows, weighted by row i of the weights",
          Dims{Dim::B, Dim::H, Dim::T, Dim::hv}};
}

// scores under qk-swapped: the keys against the queries.
StepText qk_swapped_text(const Spec& s, const TextFacts& f) {
  const char* q = s.rope ? "q.rope" : "q";
  const char* k = s.grouped() ? "k.repeat" : s.cached ? "k.cache" : s.rope ? "k.rope" : "k";
  return {"Attention scores", fmt::format("scores = {} · {}ᵀ{}", k, q, mistake_mark(f.mistake, "k · qᵀ, not q · kᵀ")),
          "scores[i, j] = k_i · q_j: the transpose of q · kᵀ, so row i holds key i against every query",
          Dims{Dim::B, Dim::H, Dim::T, Dim::S}};
}

// merged under heads-interleaved (heads put back interleaved) or merge-no-transpose (no transpose back).
StepText mistaken_merge(const Spec& s, const TextFacts& f) {
  const char* width = s.general() ? "dv" : "C";
  const char* hn = s.general() ? "hv" : "hs";
  if (f.mistake == Mistake::MergeNoTranspose) {
    return {"Heads merged",
            fmt::format("merged = context.reshape({}T, {}){}", batch_lead(s), width, mistake_mark(f.mistake, "no transpose back to [T, H, " + std::string(hn) + "] first")),
            fmt::format("the [H, T, {0}] context read in its own order: row i of merged holds H consecutive [{0}] rows of the heads stacked head by head, not "
                        "position i of every head", hn),
            Dims{Dim::B, Dim::T, Dim::dv}};
  }
  return {"Heads merged",
          fmt::format("merged = context.transpose({}, {}).transpose(-2, -1).reshape({}T, {}){}", batch_axis(s, 1), batch_axis(s, 2), batch_lead(s),
                      width, mistake_mark(f.mistake, "the heads put back interleaved")),
          fmt::format("head h fills the interleaved columns h, h + H, h + 2·H, … ({} = {})", hn, s.general() ? s.hv() : s.hs()),
          Dims{Dim::B, Dim::T, Dim::dv}};
}

// output: merged · W_o, or what output-missing and the transposed-weight mistakes computed.
StepText output_text(const Spec& s, const TextFacts& f) {
  const char* in = s.H > 1 ? "merged" : "context";
  const Dims dims{Dim::B, Dim::T, Dim::Co};
  if (f.mistake == Mistake::OutputMissing) {
    return {"Output projection", fmt::format("output = {}{}", in, mistake_mark(f.mistake, "no W_o")),
            fmt::format("the output projection was skipped: output is {} itself", in), dims};
  }
  const bool flipped = f.mistake == Mistake::WTransposed || f.mistake == Mistake::OutputTransposed;
  return {"Output projection",
          fmt::format("output = {} · {}{}{}", in, weight_symbol(s, "W_o", flipped), bias_term(s.w.b_o, "b_o"), transposed_mark(f, true)), "", dims};
}

// scaled: the scores times 1/√d_k (or the given scale), or the factor a scale mistake used instead.
StepText scaled_text(const Spec& s, const TraceConfig& c, const TextFacts& f) {
  const Dims bhts{Dim::B, Dim::H, Dim::T, Dim::S};
  const char* dk_name = s.H > 1 ? "hs" : s.general() ? "dk" : "C";
  const auto factor = [](double v) { return short_number(static_cast<Scalar>(v)); };
  switch (f.mistake) {
    case Mistake::ScaleMissing:
      return {"Scaled scores", "scaled = scores" + mistake_mark(f.mistake, "no 1/√d_k"), "factor 1: the scores pass unscaled", bhts};
    case Mistake::ScaleSqrtC:
      return {"Scaled scores", "scaled = scores / √C" + mistake_mark(f.mistake, "√C, the model width, not √d_k"),
              fmt::format("C = {}: factor 1/√{} = {}", s.C, s.C, factor(1.0 / std::sqrt(static_cast<double>(s.C)))), bhts};
    case Mistake::ScaleDk:
      return {"Scaled scores", "scaled = scores / d_k" + mistake_mark(f.mistake, "d_k, not √d_k"),
              fmt::format("d_k = {} = {}: factor 1/{} = {}", dk_name, s.hs(), s.hs(), factor(1.0 / static_cast<double>(s.hs()))), bhts};
    default: break;
  }
  if (s.scale_kind == ScaleKind::SqrtDk) return {"Scaled scores", "scaled = scores / √d_k", fmt::format("d_k = {} = {}: factor {}", dk_name, s.hs(), c.scale), bhts};
  return {"Scaled scores", fmt::format("scaled = scores × {}", c.scale), fmt::format("factor {}", c.scale), bhts};
}

}  // namespace

StepText step_text(StepId step, const Spec& s, const TraceConfig& c, const TextFacts& f) {
  const Dims bhts{Dim::B, Dim::H, Dim::T, Dim::S};
  switch (step) {
    case StepId::X:
      if (!s.x_note.empty()) return {"Layer input", "x", s.x_note, Dims{Dim::B, Dim::T, Dim::C}};
      return {"Input embeddings", "x", "", Dims{Dim::B, Dim::T, Dim::C}};
    case StepId::Source:
      if (!s.source_note.empty()) return {"Encoder output", "source", s.source_note, Dims{Dim::B, Dim::S, Dim::Cs}};
      return {"Source embeddings", "source", "", Dims{Dim::B, Dim::S, Dim::Cs}};
    case StepId::Positions: return positions_text(s);
    case StepId::XPos:
      return {"Embeddings plus positions", "x.pos = x + positions",
              std::string("the projections read x.pos: the same token at another position now gives other q, k and v") +
                  (s.cross() ? "; the source is taken as an encoder's output, which carries its positions already" : ""),
              Dims{Dim::B, Dim::T, Dim::C}};
    case StepId::Qkv:
      return {"Fused projection",
              fmt::format("qkv = {} · {}{}{}", x_name(s), weight_symbol(s, "W_qkv", f.mistake == Mistake::WTransposed), bias_term(s.w.b_qkv, "b_qkv"),
                          transposed_mark(f, false)),
              s.grouped() ? fmt::format("one matmul makes q, k and v side by side: H = {} query heads, Hkv = {} key and value heads", s.H, s.Hkv)
                          : std::string("one matmul makes q, k and v side by side"),
              Dims{Dim::B, Dim::T, s.grouped() ? Dim::DqkvG : Dim::Dqkv}};
    case StepId::Q:
    case StepId::K:
    case StepId::V: return projection(step, s, f);
    case StepId::QView:
    case StepId::QHeads:
    case StepId::KView:
    case StepId::KHeads:
    case StepId::VView:
    case StepId::VHeads: return head_split(step, s, f);
    case StepId::RopeCos:
    case StepId::RopeSin:
    case StepId::QRope:
    case StepId::KRope: return rope_text(step, s, f);
    case StepId::QNorm:
    case StepId::KNorm: return qk_norm_text(step, s);
    case StepId::KPast:
    case StepId::KCache:
    case StepId::VPast:
    case StepId::VCache: return cache_text(step, s);
    case StepId::KRepeat:
    case StepId::VRepeat: return repeat_text(step, s, f);
    case StepId::KT:
      return {"Keys transposed",
              s.grouped() ? "kᵀ = k.repeat.transpose(-2, -1)" : s.cached ? "kᵀ = k.cache.transpose(-2, -1)" : s.rope ? "kᵀ = k.rope.transpose(-2, -1)" : "kᵀ = k.transpose(-2, -1)",
              "each column is one key: q · kᵀ then takes every query against every key", Dims{Dim::B, Dim::H, Dim::hs, Dim::S}};
    case StepId::Scores:
      if (s.entry == Entry::Scores) return {"Attention scores (given)", "scores (given)", "taken as given: no projections, no d_k", bhts};
      if (f.mistake == Mistake::QKSwapped) return qk_swapped_text(s, f);
      if (s.rope) return {"Attention scores", "scores = q.rope · kᵀ", "scores[i, j] = q_i · k_j, both rotated: how well query i matches key j", bhts};
      return {"Attention scores", "scores = q · kᵀ", "scores[i, j] = q_i · k_j: how well query i matches key j", bhts};
    case StepId::Scaled: return scaled_text(s, c, f);
    case StepId::Alibi: return alibi_text(s, f);
    case StepId::RelBucket:
    case StepId::RelBias: return relative_bias_text(step, s);
    case StepId::Biased:
      if (s.relative_bias) {
        return {"Scores with the relative position bias", fmt::format("biased = {} + rel.bias", scaled_name(s)),
                fmt::format("no positions are added to x: each head learns how much a key {} positions away should gain or lose{}",
                            s.relative_bias->bidirectional ? "before or after the query and so many" : "so many",
                            s.scale_kind == ScaleKind::None ? "; T5 does not divide the scores by √d_k (its initialisation of W_q absorbs it)" : ""),
                bhts};
      }
      return {"Scores with the ALiBi bias", fmt::format("biased = {} + alibi", scaled_name(s)),
              s.causal ? "no positions are added to x: the further a key lies behind the query, the lower its score"
                       : "no positions are added to x: a key's score moves by its distance from the query, down behind it, up after it",
              bhts};
    case StepId::Capped:
      return {"Soft-capped scores", fmt::format("capped = {0} · tanh({1} / {0})", compact_number(static_cast<Scalar>(*s.softcap)), biased_name(s)),
              fmt::format("Gemma 2's logit soft-capping: every score stays within (−{0}, {0}); small ones pass almost unchanged (tanh x ≈ x)",
                          compact_number(static_cast<Scalar>(*s.softcap))),
              bhts};
    case StepId::Mask: return mask_text(s, f);
    case StepId::MaskAdd:
      return {"Additive mask (given)", "attn_mask.add (given)",
              "added to the scores before softmax: 0 keeps a score, −inf blocks it, other values bias it",
              s.user_add.dim(0) == 1 ? Dims{Dim::T, Dim::S} : Dims{Dim::B, Dim::T, Dim::S}};
    case StepId::Masked: return masked_text(s, f);
    case StepId::Weights: return weights_text(s, f);
    case StepId::Context: return context_text(s, f);
    case StepId::Merged:
      if (f.mistake == Mistake::HeadsInterleaved || f.mistake == Mistake::MergeNoTranspose) return mistaken_merge(s, f);
      if (s.general()) {
        return {"Heads merged", merged_formula(s, "dv"),
                fmt::format("head h fills columns h·hv .. (h+1)·hv − 1 (hv = {})", s.hv()), Dims{Dim::B, Dim::T, Dim::dv}};
      }
      return {"Heads merged", merged_formula(s, "C"),
              fmt::format("head h fills columns h·hs .. (h+1)·hs − 1 (hs = {})", s.hs()), Dims{Dim::B, Dim::T, Dim::dv}};
    case StepId::Output: return output_text(s, f);
    case StepId::Loss:
    case StepId::GradOutput:
    case StepId::GradWo:
    case StepId::GradBo:
    case StepId::GradMerged:
    case StepId::GradContext:
    case StepId::GradWeights:
    case StepId::GradVRepeat:
    case StepId::GradVHeads:
    case StepId::GradMasked:
    case StepId::GradCapped:
    case StepId::GradBiased:
    case StepId::GradScaled:
    case StepId::GradScores:
    case StepId::GradQRope:
    case StepId::GradKRepeat:
    case StepId::GradKRope:
    case StepId::GradQkv:
    case StepId::GradWqkv:
    case StepId::GradBqkv:
    case StepId::GradQHeads:
    case StepId::GradKHeads:
    case StepId::GradQ:
    case StepId::GradK:
    case StepId::GradV:
    case StepId::GradWq:
    case StepId::GradBq:
    case StepId::GradWk:
    case StepId::GradBk:
    case StepId::GradWv:
    case StepId::GradBv:
    case StepId::GradX:
    case StepId::GradSource: {
      StepText t = backward_text(step, s, c, f.mistake);
      if (t.title.empty()) t.title = std::string(step_info(step).title);
      return t;
    }
  }
  return {};
}

TraceConfig make_config(const Spec& s) {
  TraceConfig c;
  c.title = s.title;
  c.mode = s.mode;
  c.batched = s.batched;
  c.B = s.B, c.T = s.T, c.S = s.S, c.C = s.C, c.H = s.H, c.hs = s.hs();
  c.Hkv = s.Hkv;
  c.Cs = s.Cs, c.dk = s.dk, c.dv = s.dv, c.Co = s.Co, c.hv = s.hv();
  c.general = s.general();
  c.layout = s.layout;
  c.entry = s.entry;
  c.causal = s.causal;
  c.lengths = s.lengths;
  c.window = s.window;
  c.learned_positions = s.positions == Positions::Learned;
  c.softcap = static_cast<Scalar>(s.softcap.value_or(0));
  c.scale_source = s.scale_source;
  if (!s.x_note.empty()) c.starts_from = "a checkpoint layer's input x";
  if (s.qk_norm) c.qk_norm = {s.qk_norm->family, s.qk_norm->whole_width, s.qk_norm->plus_one};
  if (s.rope) {
    c.first_position = s.rope->table_first;
    c.query_first_position = s.rope->offset;
    c.key_first_position = s.rope->key_first;
    c.rope_interleaved = s.rope->style == RopeStyle::Interleaved;
    if (s.rope->scaling.kind != RopeScaling::Kind::None) c.rope_scaling = s.rope->scaling.describe();
    if (s.rope->scaling.kind == RopeScaling::Kind::Llama3) {
      for (std::int64_t i = 0; i < s.rope->dims / 2; ++i) {
        const RopeBand b = rope_band(i, s.rope->dims, s.rope->theta, s.rope->scaling);
        c.rope_bands += b == RopeBand::High ? 'h' : b == RopeBand::Middle ? 'm' : 'l';
      }
    }
  }
  c.tokens = s.tokens;
  c.source_tokens = s.source_tokens;
  c.token_pieces = s.token_pieces;
  c.notes = s.notes;
  switch (s.scale_kind) {
    case ScaleKind::SqrtDk:
      c.scale_exact = 1.0 / std::sqrt(static_cast<double>(s.hs()));
      c.scale_factor = static_cast<Scalar>(c.scale_exact);
      c.scale = fmt::format("1/√{} = {}", s.hs(), short_number(c.scale_factor));
      break;
    case ScaleKind::None:
      c.scale_factor = 1;
      c.scale = s.entry == Entry::Scores && !s.scale_given ? "none (given scores are taken as already scaled)" : "none";
      break;
    case ScaleKind::Number:
      c.scale_exact = s.scale_number;
      c.scale_factor = static_cast<Scalar>(s.scale_number);
      c.scale = fmt::format("{} ({})", c.scale_factor, s.scale_source.empty() ? "given" : s.scale_source);
      break;
  }
  return c;
}

}  // namespace attn
