// The table of step words. Each entry says what its step is in the spec's terms; the forward pass
// never formats text, and this file never touches a tensor. The positions' words are in
// step_text_positions.cpp, the heads' layout's in step_text_heads.cpp, the backward's in backward_text.cpp.
#include "attn/pipeline/step_text.hpp"
#include "attn/pipeline/step_code.hpp"
#include "attn/pipeline/step_words.hpp"
#include "attn/numerics/position_tables.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <limits>

namespace attn {
namespace step_words {

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

}  // namespace step_words

using namespace step_words;

namespace {

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

// ", masked causally, window 4, padding" for the fused context's formula.
std::string fused_mask_words(const Spec& s) {
  std::string w = s.causal ? ", masked causally" : ", masked";
  if (s.window > 0) w += fmt::format(" with a window of {}", s.window);
  if (!s.lengths.empty()) w += " and the padding";
  return w;
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
  if (f.mistake == Mistake::MaskMissing) {
    return {"Mask", fmt::format("mask[{}] = 1 everywhere{}", per_batch ? "b, i, j" : "i, j", mistake_mark(f.mistake, "the mask left out")),
            "every query attends every key, the ones the mask should block too", per_batch ? Dims{Dim::B, Dim::T, Dim::S} : Dims{Dim::T, Dim::S},
            ValueKind::Mask};
  }
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
    // the words are made before the weights exist: whether exp underflowed is --explain's to say (it reads the weights)
    note = fmt::format("blocked scores are {} (mask_fill), not −inf: a blocked key keeps exp({} − row max) / Σ of the weight, 0 only "
                       "where that underflows (far below the row's largest kept score); a row with every key blocked gets uniform "
                       "weights instead of none",
                       compact_number(*s.mask_fill), compact_number(*s.mask_fill));
  }
  if (f.mistake == Mistake::MaskMissing) {
    return {"Masked scores", fmt::format("masked = {}{}", logits_name(s), mistake_mark(f.mistake, "nothing blocked, nothing added")),
            "the scores as they came: no key blocked" + std::string(add ? ", the additive mask not added" : ""), Dims{Dim::B, Dim::H, Dim::T, Dim::S}};
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

// x, source, x.pos: the inputs as given (a checkpoint layer's x, an encoder's output), or with positions added.
StepText input_text(StepId step, const Spec& s) {
  switch (step) {
    case StepId::X:
      if (!s.x_note.empty()) return {"Layer input", "x", s.x_note, Dims{Dim::B, Dim::T, Dim::C}};
      return {"Input embeddings", "x", "", Dims{Dim::B, Dim::T, Dim::C}};
    case StepId::Source:
      if (!s.source_note.empty()) return {"Encoder output", "source", s.source_note, Dims{Dim::B, Dim::S, Dim::Cs}};
      return {"Source embeddings", "source", "", Dims{Dim::B, Dim::S, Dim::Cs}};
    case StepId::XPos:
      return {"Embeddings plus positions", "x.pos = x + positions",
              std::string("the projections read x.pos: the same token at another position now gives other q, k and v") +
                  (s.cross() ? "; the source is taken as an encoder's output, which carries its positions already" : ""),
              Dims{Dim::B, Dim::T, Dim::C}};
    default: return {};
  }
}

// qkv: the fused projection, q, k and v side by side.
StepText qkv_text(const Spec& s, const TextFacts& f) {
  return {"Fused projection",
          fmt::format("qkv = {} · {}{}{}", x_name(s), weight_symbol(s, "W_qkv", f.mistake == Mistake::WTransposed), bias_term(s.w.b_qkv, "b_qkv"),
                      transposed_mark(f, false)),
          s.grouped() ? fmt::format("one matmul makes q, k and v side by side: H = {} query heads, Hkv = {} key and value heads", s.H, s.Hkv)
                      : std::string("one matmul makes q, k and v side by side"),
          Dims{Dim::B, Dim::T, s.grouped() ? Dim::DqkvG : Dim::Dqkv}};
}

// kᵀ, and the scores: given, q · kᵀ (rotated), or the keys against the queries under qk-swapped.
StepText keys_transposed_text(const Spec& s) {
  return {"Keys transposed",
          s.grouped() ? "kᵀ = k.repeat.transpose(-2, -1)" : s.cached ? "kᵀ = k.cache.transpose(-2, -1)" : s.rope ? "kᵀ = k.rope.transpose(-2, -1)" : "kᵀ = k.transpose(-2, -1)",
          "each column is one key: q · kᵀ then takes every query against every key", Dims{Dim::B, Dim::H, Dim::hs, Dim::S}};
}
StepText scores_text(const Spec& s, const TextFacts& f) {
  const Dims bhts{Dim::B, Dim::H, Dim::T, Dim::S};
  if (s.entry == Entry::Scores) return {"Attention scores (given)", "scores (given)", "taken as given: no projections, no d_k", bhts};
  if (f.mistake == Mistake::QKSwapped) return qk_swapped_text(s, f);
  if (s.rope) return {"Attention scores", "scores = q.rope · kᵀ", "scores[i, j] = q_i · k_j, both rotated: how well query i matches key j", bhts};
  return {"Attention scores", "scores = q · kᵀ", "scores[i, j] = q_i · k_j: how well query i matches key j", bhts};
}

// biased: the scores plus T5's relative bias or ALiBi's; capped: Gemma 2's soft-capping.
StepText biased_text(const Spec& s) {
  const Dims bhts{Dim::B, Dim::H, Dim::T, Dim::S};
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
}
StepText capped_text(const Spec& s) {
  return {"Soft-capped scores", fmt::format("capped = {0} · tanh({1} / {0})", compact_number(static_cast<Scalar>(*s.softcap)), biased_name(s)),
          fmt::format("Gemma 2's logit soft-capping: every score stays within (−{0}, {0}); small ones pass almost unchanged (tanh x ≈ x)",
                      compact_number(static_cast<Scalar>(*s.softcap))),
          Dims{Dim::B, Dim::H, Dim::T, Dim::S}};
}

// attn_mask.add: the given additive mask.
StepText mask_add_text(const Spec& s) {
  return {"Additive mask (given)", "attn_mask.add (given)",
          "added to the scores before softmax: 0 keeps a score, −inf blocks it, other values bias it",
          s.user_add.dim(0) == 1 ? Dims{Dim::T, Dim::S} : Dims{Dim::B, Dim::T, Dim::S}};
}

// A backward step: backward_text's words, titled by the registry where they set none.
StepText gradient_text(StepId step, const Spec& s, const TraceConfig& c, const TextFacts& f) {
  StepText t = backward_text(step, s, c, f.mistake);
  if (t.title.empty()) t.title = std::string(step_info(step).title);
  return t;
}

}  // namespace

StepText step_text(StepId step, const Spec& s, const TraceConfig& c, const TextFacts& f) {
  switch (step) {
    case StepId::X:
    case StepId::Source:
    case StepId::XPos: return input_text(step, s);
    case StepId::Positions: return positions_text(s);
    case StepId::Qkv: return qkv_text(s, f);
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
    case StepId::KT: return keys_transposed_text(s);
    case StepId::Scores: return scores_text(s, f);
    case StepId::Scaled: return scaled_text(s, c, f);
    case StepId::Alibi: return alibi_text(s, f);
    case StepId::RelBucket:
    case StepId::RelBias: return relative_bias_text(step, s);
    case StepId::Biased: return biased_text(s);
    case StepId::Capped: return capped_text(s);
    case StepId::Mask: return mask_text(s, f);
    case StepId::MaskAdd: return mask_add_text(s);
    case StepId::Masked: return masked_text(s, f);
    case StepId::Weights: return weights_text(s, f);
    case StepId::Context: return context_text(s, f);
    case StepId::Merged: return merged_text(s, f);
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
    case StepId::GradSource: return gradient_text(step, s, c, f);
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
