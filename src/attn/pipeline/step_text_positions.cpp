// The words of the position steps: absolute positions added to x, RoPE's cos and sin tables and the
// rotated q and k, ALiBi's bias by distance, T5's relative position buckets and bias. Prose only:
// the tables' numbers are position_tables.cpp's.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <tuple>

#include "attn/numerics/position_tables.hpp"
#include "attn/pipeline/step_code.hpp"
#include "attn/pipeline/step_words.hpp"

namespace attn::step_words {
namespace {

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

}  // namespace

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
  // "half" style pairs feature i with i + R/2, whatever R is: with R = 2 that is (0, 1), which alone would read as neighbours
  std::string note = fmt::format("the pairs {} (\"{}\" style{}) of each head turn by their position's angles, (x, y) → (x·cos − y·sin, y·cos + "
                                 "x·sin); {} {} is at position {}",
                                 half_style ? fmt::format("(i, i + R/2) = (i, i + {}), i < {}", r.dims / 2, r.dims / 2) : std::string("(2i, 2i + 1)"), half,
                                 half_style ? ": each feature of the first half with its partner in the second" : ": neighbours",
                                 query ? "query" : "key", query ? "i" : "j",
                                 first == 0 ? std::string(query ? "i" : "j") : fmt::format("{} + {}", first, query ? "i" : "j"));
  if (partial) note += fmt::format("; features {} .. {} pass unchanged (partial rotary, R = {} of hs = {})", r.dims, s.hs() - 1, r.dims, s.hs());
  return {query ? "Queries rotated" : "Keys rotated",
          fmt::format("{0}.rope = {1} · cos + {2}({1}) · sin{3}", id, in, rotate,
                      f.mistake == Mistake::RopeWrongStyle ? mistake_mark(f.mistake, fmt::format("{}, the other style", rotate)) : ""),
          note,
          Dims{Dim::B, query ? Dim::H : s.grouped() ? Dim::Hkv : Dim::H, query ? Dim::T : Dim::S, Dim::hs}};
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
                        // as the bucket code computes it: distance 0 is bucket 0, and bucket `half` (after, by 0) never occurs
                        r.bidirectional ? fmt::format("the query's own key is bucket 0, keys before it use buckets 1–{}, keys after it {}–{} "
                                                      "(bucket {} never occurs; an encoder sees both sides); ",
                                                      half - 1, half + 1, NB - 1, half)
                                        : "causal: only keys at or before the query, d = i − j; ",
                        exact, exact, exact, exact, r.max_distance, exact, half - exact, fmt::join(starts, ", "), starts.back(), NB),
            Dims{Dim::T, Dim::S}, ValueKind::Index};
  }
  return {"Relative position bias", "rel.bias[h, i, j] = table[rel.bucket[i, j], h]",
          fmt::format("one learned number per bucket and head ({} × {}, {}); T5 computes it in block 0 and every block of the stack reuses it",
                      NB, s.H, r.source.empty() ? std::string("given") : r.source),
          Dims{Dim::H, Dim::T, Dim::S}};
}

}  // namespace attn::step_words
