// The words of the heads' layout: q, k and v split into heads, attn decode's KV cache before and
// after the append, grouped-query kv heads repeated to the query heads, and the heads merged back
// (with the mistakes that change a split or a merge). Prose only.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

#include "attn/pipeline/step_code.hpp"
#include "attn/pipeline/step_words.hpp"

namespace attn::step_words {
namespace {

// "merged = context.transpose(1, 2).reshape(B, T, C)", without B where the input has none.
std::string merged_formula(const Spec& s, const char* width) {
  return fmt::format("merged = context.transpose({}, {}).reshape({}T, {})", batch_axis(s, 1), batch_axis(s, 2), batch_lead(s), width);
}

// The key or value rows the cache and the repeat read: rotated keys, else the kv heads, else the flat rows.
std::string kv_rows_name(const Spec& s, bool key) {
  const bool per_head = s.qk_norm && !s.qk_norm->whole_width;
  if (key) return s.rope ? "k.rope" : per_head ? "k.norm" : s.Hkv > 1 ? "k.heads" : s.qk_norm ? "k.norm" : "k";
  return s.Hkv > 1 ? "v.heads" : "v";
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

}  // namespace

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

// merged: the heads side by side again, or what a merge mistake put back.
StepText merged_text(const Spec& s, const TextFacts& f) {
  if (f.mistake == Mistake::HeadsInterleaved || f.mistake == Mistake::MergeNoTranspose) return mistaken_merge(s, f);
  if (s.general()) {
    return {"Heads merged", merged_formula(s, "dv"),
            fmt::format("head h fills columns h·hv .. (h+1)·hv − 1 (hv = {})", s.hv()), Dims{Dim::B, Dim::T, Dim::dv}};
  }
  return {"Heads merged", merged_formula(s, "C"),
          fmt::format("head h fills columns h·hs .. (h+1)·hs − 1 (hs = {})", s.hs()), Dims{Dim::B, Dim::T, Dim::dv}};
}

}  // namespace attn::step_words
