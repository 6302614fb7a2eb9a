// attn heads: one head's summary (the only arithmetic of attn heads); render/heads_json.cpp writes a
// whole view's JSON.
//
// summarise_head reads one causal head, weights[i * T + j] for keys j ≤ i (what lies above the
// diagonal is never read), in double:
//   entropy           mean over all T queries of −Σ_{j≤i} w_ij log2 w_ij (bits; 0 · log 0 = 0)
//   max_entropy       mean over all T queries of log2(i + 1): uniform weights over the visible keys
//   max_off_diagonal  the largest w_ij with j < i, the first in row-major order on ties (query,
//                     then key); T = 1 has none: 0 at (0, 0)
//   the pattern, from three means over the queries i ≥ 1 (query 0 sees only key 0, so it says
//   nothing about the head):
//     previous = mean w_{i,i−1}, first = mean w_{i,0}, same = mean w_{i,i}
//   - PreviousToken / FirstToken / SameToken when its mean is ≥ 0.5 (kPositional). More than one can
//     pass only with shares that overlap (at i = 1 the previous token is the first token): the larger
//     mean wins, a tie goes to previous, then first, then same. pattern_share is that mean.
//   - else Broad when entropy ≥ 0.8 × max_entropy (kBroad; max_entropy > 0): pattern_share is
//     entropy / max_entropy.
//   - else Mixed: pattern_share is the largest of the three means.
//   T = 1: the one query can attend only to itself: SameToken with share w_00 (1 for a softmax row),
//   entropy and max_entropy 0.
#include "attn/model/tools/heads.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "attn/core/trace.hpp"

namespace attn::model {

namespace {
constexpr double kPositional = 0.5;  // mean weight on one relative position that names the pattern
constexpr double kBroad = 0.8;       // fraction of the uniform entropy that makes a head broad

// The pattern from the candidates' means (in order of precedence on ties): the largest at ≥ 0.5,
// else broad when the entropy is ≥ 0.8 of the uniform one, else mixed (with the largest mean).
template <std::size_t N>
void name_pattern(HeadSummary& s, const std::pair<HeadPattern, double> (&candidates)[N]) {
  const auto* best = &candidates[0];
  for (const auto& p : candidates)
    if (p.second > best->second) best = &p;
  if (best->second >= kPositional) {
    s.pattern = best->first;
    s.pattern_share = best->second;
  } else if (s.max_entropy > 0 && s.entropy >= kBroad * s.max_entropy) {
    s.pattern = HeadPattern::Broad;
    s.pattern_share = s.entropy / s.max_entropy;
  } else {
    s.pattern = HeadPattern::Mixed;
    s.pattern_share = best->second;
  }
}

// What an end-token head is "to": the end token as the tokens line and the grid's rows name it, so
// each of a pair's ends by its occurrence: "to [SEP]" once, "to [SEP]₁ + [SEP]₂" for [CLS] a [SEP] b
// [SEP] (the share is the weight on them all). The ends are every token of that spelling (the
// tokenizer's special), so the k-th end is the k-th of them that the labels number.
std::string end_label(const EncoderSpecials& sp) {
  if (sp.ends.size() < 2) return "to " + sp.end_name;
  std::vector<std::string> each;
  for (std::size_t k = 1; k <= sp.ends.size(); ++k) each.push_back(sp.end_name + subscript(static_cast<std::int64_t>(k)));
  return fmt::format("to {}", fmt::join(each, " + "));
}
}  // namespace

const char* pattern_name(HeadPattern p) {
  switch (p) {
    case HeadPattern::PreviousToken: return "previous token";
    case HeadPattern::FirstToken: return "first token";
    case HeadPattern::SameToken: return "same token";
    case HeadPattern::Broad: return "broad";
    case HeadPattern::Mixed: return "mixed";
    case HeadPattern::NextToken: return "next token";
    case HeadPattern::StartToken: return "start token";
    case HeadPattern::EndToken: return "end token";
    case HeadPattern::Induction: return "induction";
    case HeadPattern::Diagonal: return "diagonal";
    case HeadPattern::Local: return "local";
  }
  return "mixed";
}

std::string HeadsView::part_title() const {
  if (part == "encoder") return "encoder self-attention";
  if (part == "decoder") return "decoder self-attention";
  if (part == "cross") return "cross-attention";
  return part;
}

std::string HeadsView::masked_text() const {
  if (bidirectional) return "nothing masked (an encoder: every token sees every other, later ones too)";
  std::int64_t W = 0;
  std::vector<std::int64_t> sliding;
  for (std::int64_t l = 0; l < static_cast<std::int64_t>(windows.size()); ++l) {
    if (windows[static_cast<std::size_t>(l)] == 0) continue;
    W = windows[static_cast<std::size_t>(l)];
    sliding.push_back(l);
  }
  if (W == 0) return "masked (a query sees only itself and earlier tokens)";
  const std::string within = W == 1 ? std::string("only itself: sliding window 1")
                                    : fmt::format("itself and the {} before it: sliding window {}", W == 2 ? std::string("token") : fmt::format("{} tokens", W - 1), W);
  if (static_cast<std::int64_t>(sliding.size()) == layers || layers == 0) return fmt::format("masked (a query sees {})", within);
  return fmt::format("masked (a query sees itself and earlier tokens; on the sliding layers {}, {})", fmt::join(sliding, ", "), within);
}

namespace {
constexpr double kInduction = 0.4;  // mean weight on the token after the earlier occurrence that names an induction head
}  // namespace

namespace {
// The local label: most of the weight within the window, on inputs long enough that the window is
// a small part of what a query sees (at T < 4 · kLocalWindow every head would be local).
constexpr double kLocal = 0.8;
bool local_named(const HeadSummary& s) { return s.local >= kLocal; }
}  // namespace

CausalSummariser::CausalSummariser(std::int64_t T, std::int64_t window, const std::vector<std::int64_t>* ids)
    : T_(T), window_(window), ids_(ids != nullptr && static_cast<std::int64_t>(ids->size()) == T ? ids : nullptr) {
  if (ids_ == nullptr) return;
  earlier_.assign(static_cast<std::size_t>(T), -1);
  std::map<std::int64_t, std::int64_t> last;  // token id -> its latest position so far
  for (std::int64_t i = 0; i < T; ++i) {
    const auto id = (*ids_)[static_cast<std::size_t>(i)];
    if (const auto it = last.find(id); it != last.end()) earlier_[static_cast<std::size_t>(i)] = it->second;
    last[id] = i;
  }
}

void CausalSummariser::add_row(std::int64_t i, const float* row) {
  auto w = [&](std::int64_t j) { return static_cast<double>(row[j]); };
  double h = 0, near = 0;
  for (std::int64_t j = 0; j <= i; ++j) {
    const double x = w(j);
    if (x > 0) h -= x * std::log2(x);
    distance_ += x * static_cast<double>(i - j);
    if (j > i - kLocalWindow) near += x;
    if (j < i && (!have_off_ || x > s_.max_off_diagonal)) {
      s_.max_off_diagonal = x;
      s_.max_query = i;
      s_.max_key = j;
      have_off_ = true;
    }
  }
  entropy_ += h;
  max_entropy_ += std::log2(static_cast<double>(window_ > 0 ? std::min(i + 1, window_) : i + 1));
  if (i >= kLocalWindow) local_ += near, ++local_n_;
  if (i == 0) {
    w00_ = w(0);
    return;
  }
  s_.previous += w(i - 1);
  s_.first += w(0);
  s_.same += w(i);
  // an induction head's weight: on the key after the query token's most recent earlier occurrence
  if (ids_ != nullptr && earlier_[static_cast<std::size_t>(i)] >= 0) induction_ += w(earlier_[static_cast<std::size_t>(i)] + 1), ++induction_n_;
}

HeadSummary CausalSummariser::finish() const {
  HeadSummary s = s_;
  if (T_ <= 0) return HeadSummary{};
  s.entropy = entropy_ / static_cast<double>(T_);
  s.max_entropy = max_entropy_ / static_cast<double>(T_);
  s.distance = distance_ / static_cast<double>(T_);
  s.local = local_n_ > 0 && T_ >= 4 * kLocalWindow ? local_ / static_cast<double>(local_n_) : -1;
  if (T_ == 1) {
    s.pattern = HeadPattern::SameToken;
    s.pattern_share = w00_;
    return s;
  }
  const double n = static_cast<double>(T_ - 1);
  s.previous /= n, s.first /= n, s.same /= n;
  // in order of precedence on ties
  const std::pair<HeadPattern, double> positional[3] = {{HeadPattern::PreviousToken, s.previous}, {HeadPattern::FirstToken, s.first}, {HeadPattern::SameToken, s.same}};
  name_pattern(s, positional);
  const bool positional_named = s.pattern != HeadPattern::Broad && s.pattern != HeadPattern::Mixed;
  if (!positional_named && local_named(s)) s.pattern = HeadPattern::Local, s.pattern_share = s.local;
  if (ids_ != nullptr) {
    const double induction = induction_n_ >= 2 ? induction_ / static_cast<double>(induction_n_) : -1;
    s.induction = induction;
    const bool named = s.pattern != HeadPattern::Broad && s.pattern != HeadPattern::Mixed;
    if (induction >= kInduction && (!named || induction > s.pattern_share)) {
      s.pattern = HeadPattern::Induction;
      s.pattern_share = induction;
    }
  }
  return s;
}

HeadSummary summarise_head(const float* weights, std::int64_t T, std::int64_t window, const std::vector<std::int64_t>* ids) {
  CausalSummariser sum(T, window, ids);
  for (std::int64_t i = 0; i < T; ++i) sum.add_row(i, weights + i * T);
  return sum.finish();
}

// An encoder's head (see heads.hpp). Over every query i: previous = mean w_{i,i−1} (i ≥ 1), next =
// mean w_{i,i+1} (i ≤ T − 2), same = mean w_{i,i}, start = mean w_{i,start}, end = mean Σ_{e in ends}
// w_{i,e}; the largest at ≥ 0.5 names the pattern (ties in that order), else broad when the entropy
// is ≥ 0.8 of log2 T, else mixed. The largest off-diagonal weight is over every j ≠ i.
void EncoderSummariser::add_row(std::int64_t i, const float* row) {
  auto w = [&](std::int64_t j) { return static_cast<double>(row[j]); };
  for (std::int64_t j = 0; j < T_; ++j) {
    const double x = w(j);
    if (x > 0) entropy_ -= x * std::log2(x);
    if (j != i && (!have_off_ || x > s_.max_off_diagonal)) s_.max_off_diagonal = x, s_.max_query = i, s_.max_key = j, have_off_ = true;
    const std::int64_t d = i > j ? i - j : j - i;
    distance_ += x * static_cast<double>(d);
    if (d < kLocalWindow) local_ += x;
  }
  ++local_n_;
  if (i >= 1) s_.previous += w(i - 1);
  if (i + 1 < T_) next_ += w(i + 1);
  s_.same += w(i);
  s_.first += w(0);
  if (sp_.start >= 0) start_ += w(sp_.start);
  for (const auto e : sp_.ends) end_ += w(e);
}

HeadSummary EncoderSummariser::finish() const {
  if (T_ <= 0) return HeadSummary{};
  HeadSummary s = s_;
  const double n = static_cast<double>(T_);
  s.entropy = entropy_ / n;
  s.max_entropy = std::log2(n);
  const double pairs = T_ > 1 ? static_cast<double>(T_ - 1) : 1.0;
  s.previous = T_ > 1 ? s_.previous / pairs : 0;
  s.same = s_.same / n, s.first = s_.first / n, s.distance = distance_ / n;
  s.next = T_ > 1 ? next_ / pairs : 0;
  s.local = local_n_ > 0 && T_ >= 4 * kLocalWindow ? local_ / static_cast<double>(local_n_) : -1;
  const std::pair<HeadPattern, double> named[5] = {{HeadPattern::PreviousToken, s.previous},
                                                   {HeadPattern::NextToken, s.next},
                                                   {HeadPattern::StartToken, sp_.start >= 0 ? start_ / n : 0},
                                                   {HeadPattern::EndToken, sp_.ends.empty() ? 0 : end_ / n},
                                                   {HeadPattern::SameToken, s.same}};
  name_pattern(s, named);
  if (s.pattern == HeadPattern::StartToken) s.label = "to " + sp_.start_name;
  if (s.pattern == HeadPattern::EndToken) s.label = end_label(sp_);
  if ((s.pattern == HeadPattern::Broad || s.pattern == HeadPattern::Mixed) && local_named(s)) s.pattern = HeadPattern::Local, s.pattern_share = s.local;
  return s;
}

// An encoder's head (see heads.hpp), a row at a time.
HeadSummary summarise_encoder_head(const float* weights, std::int64_t T, const EncoderSpecials& sp) {
  EncoderSummariser sum(T, sp);
  for (std::int64_t i = 0; i < T; ++i) sum.add_row(i, weights + i * T);
  return sum.finish();
}

// A cross-attention head (see heads.hpp). Over every query i: diagonal = mean w_{i,d(i)} with d(i) =
// round(i · (S − 1) / (T − 1)) (the source position as far through the source as i is through the
// decoder's tokens; 0 for T = 1), start = mean w_{i,start} (or the first source token's), end = mean
// Σ_{e in ends} w_{i,e}; the largest at ≥ 0.5 names the pattern (ties in that order), else broad when
// the entropy is ≥ 0.8 of log2 S, else mixed. max_off_diagonal is the largest weight of all.
HeadSummary summarise_cross_head(const float* weights, std::int64_t T, std::int64_t S, const EncoderSpecials& sp) {
  HeadSummary s;
  if (T <= 0 || S <= 0) return s;
  auto w = [&](std::int64_t i, std::int64_t j) { return static_cast<double>(weights[i * S + j]); };
  double entropy = 0, diagonal = 0, start = 0, end = 0;
  bool have = false;
  for (std::int64_t i = 0; i < T; ++i) {
    for (std::int64_t j = 0; j < S; ++j) {
      const double x = w(i, j);
      if (x > 0) entropy -= x * std::log2(x);
      if (!have || x > s.max_off_diagonal) s.max_off_diagonal = x, s.max_query = i, s.max_key = j, have = true;
    }
    const std::int64_t d = T > 1 ? static_cast<std::int64_t>(std::llround(static_cast<double>(i * (S - 1)) / static_cast<double>(T - 1))) : 0;
    diagonal += w(i, d);
    start += w(i, sp.start >= 0 ? sp.start : 0);
    for (const auto e : sp.ends) end += w(i, e);
  }
  const double n = static_cast<double>(T);
  s.entropy = entropy / n;
  s.max_entropy = std::log2(static_cast<double>(S));
  const std::pair<HeadPattern, double> named[3] = {{HeadPattern::Diagonal, diagonal / n},
                                                   {sp.start >= 0 ? HeadPattern::StartToken : HeadPattern::FirstToken, start / n},
                                                   {HeadPattern::EndToken, sp.ends.empty() ? 0 : end / n}};
  name_pattern(s, named);
  if (s.pattern == HeadPattern::StartToken) s.label = "to " + sp.start_name;
  if (s.pattern == HeadPattern::EndToken) s.label = end_label(sp);
  if (s.pattern == HeadPattern::FirstToken) s.label = "first source token";
  return s;
}

}  // namespace attn::model

namespace attn::model {

LayerMeans layer_means(const HeadSummary* heads, std::int64_t count) {
  LayerMeans m;
  if (count <= 0) return m;
  double local = 0;
  std::int64_t locals = 0;
  for (std::int64_t h = 0; h < count; ++h) {
    const HeadSummary& s = heads[h];
    m.entropy += s.entropy, m.max_entropy += s.max_entropy, m.first += s.first, m.previous += s.previous, m.same += s.same, m.distance += s.distance;
    if (s.local >= 0) local += s.local, ++locals;
  }
  const double n = static_cast<double>(count);
  m.entropy /= n, m.max_entropy /= n, m.first /= n, m.previous /= n, m.same /= n, m.distance /= n;
  m.local = locals > 0 ? local / static_cast<double>(locals) : -1;
  return m;
}

}  // namespace attn::model
