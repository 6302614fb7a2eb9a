// The explanations of the attention itself, one per step id, from the scores to the output (the inputs'
// and projections': explain_inputs.cpp; the backward pass's: explain_backward.cpp). The ideas come from the seed documents (why Kᵀ, why 1/√d_k,
// what a row of weights means, why -inf, why heads are split and merged, what cross-attention
// means); the words are ours and the numbers are this run's.
#include "attn/tools/explain.hpp"
#include "attn/tools/explain_detail.hpp"

#include "attn/core/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <string_view>

namespace attn {

using explain_detail::backward_explainers;
using explain_detail::input_explainers;
using explain_detail::block_prefix;
using explain_detail::blocked_cell;
using explain_detail::mask_facts;
using explain_detail::MaskFacts;
using explain_detail::Explainer;
using explain_detail::pick_row;
using explain_detail::q;
using explain_detail::rotated;
using explain_detail::Row;
using explain_detail::rows_step;
using explain_detail::tok;

namespace {


// "In batch row 0, head 0, row" or "Row": how a sentence about one row of the block begins.
std::string row_words(const Step& s, const ExplainBlock& block) {
  const auto prefix = block_prefix(s, block);
  return prefix.empty() ? "Row" : prefix + "row";
}

// Key j as the tables name it ("the₂" when "the" occurs twice), in batch row b; "itself" for the query's own key.
std::string key_name(const TraceConfig& c, Dim key_dim, std::int64_t j, std::int64_t i, bool self_keys, std::int64_t b = 0) {
  if (self_keys && j == i) return "itself";
  return q(distinct_axis_label(c, key_dim, j, b));
}

// A share of attention as the sentences write it: two decimals, but never "1.00" or "0.00" for a
// weight that is not exactly 1 or 0 (0.9997 prints as 0.9997, not as all of it).
std::string share(double w) {
  for (int d = 2; d <= 6; ++d) {
    const std::string t = fmt::format("{:.{}f}", w, d);
    const double shown = std::stod(t);
    if ((shown != 0 || w == 0) && (shown != 1 || w == 1)) return t;
  }
  return fmt::format("{:.6g}", w);
}

// "0.64 of its attention on itself and 0.36 on "sat"": the largest entries of a weights row.
std::string attention_words(const TraceConfig& c, const Step& s, const Row& r) {
  const auto S = s.value.shape().back();
  const Dim key_dim = s.dims.back();
  const bool self_keys = key_dim == Dim::T;
  // NaN has no share to name and no order to sort by (a masked_row: nan row, or scores that overflowed)
  const auto nans = std::count_if(r.values, r.values + S, [](Scalar v) { return std::isnan(v); });
  // claim: weights-empty-row
  if (S > 0 && nans == S) return "NaN everywhere, so no share of attention to name (a fully blocked row under masked_row: nan, or scores that overflowed)";
  // claim: weights-nan
  if (nans > 0) return fmt::format("NaN on {} of its {} keys, so no share of attention to name", nans, S);
  if (S == 0) return "no key to attend to";
  std::vector<std::int64_t> order(static_cast<std::size_t>(S));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return r.values[a] > r.values[b]; });
  std::vector<std::string> parts;
  // keys of exactly the same weight are said together, as a tie: "0.40 each on "Le" and "mange""
  for (std::size_t k = 0; k < order.size() && parts.size() < 3;) {
    const auto j = order[k];
    if (r.values[j] < 0.005f) break;
    std::vector<std::string> tied;
    std::size_t e = k;
    for (; e < order.size() && r.values[order[e]] == r.values[j]; ++e) tied.push_back(key_name(c, key_dim, order[e], r.query, self_keys, r.batch));
    const std::string who = tied.size() == 1 ? tied[0] : fmt::format("{} and {}", fmt::join(tied.begin(), tied.end() - 1, ", "), tied.back());
    // claim: weights-tie
    parts.push_back(fmt::format("{} {}{}on {}", share(r.values[j]), parts.empty() ? "of its attention " : "", tied.size() > 1 ? "each " : "", who));
    k = e;
  }
  if (parts.empty()) {
    // a row with every key blocked, filled with zeros or NaN by the masked_row policy: no weight to name
    const bool zero = std::all_of(r.values, r.values + S, [](Scalar v) { return v == 0; });
    // claim: weights-empty-row
    if (zero) return "no weight on any key: every key is blocked";
    // claim: weights-spread-thin
    return fmt::format("its attention thinly over {} keys, none getting 0.005 or more (the most, {:.2g}, on {})", S, r.values[order[0]],
                       key_name(c, key_dim, order[0], r.query, self_keys, r.batch));
  }
  if (parts.size() == 1) return parts[0];
  const auto last = parts.back();
  parts.pop_back();
  return fmt::format("{} and {}", fmt::join(parts, ", "), last);
}

// Which keys of the row the mask blocks, in the masked step of the same shape; none without one.
// Blocked: −inf, or the finite mask_fill in place of the score (MaskFacts).
std::vector<bool> blocked_keys(const Trace& t, const Step& s, const Row& r) {
  const auto S = s.value.shape().back();
  std::vector<bool> out(static_cast<std::size_t>(S), false);
  const MaskFacts m = mask_facts(t);
  if (m.masked == nullptr || m.masked->value.shape() != s.value.shape() || m.masked->dims != s.dims) return out;
  const auto offset = r.values - s.value.data();
  for (std::int64_t j = 0; j < S; ++j) out[static_cast<std::size_t>(j)] = blocked_cell(m, offset + j);
  return out;
}


}  // namespace

namespace {
// A dot product is large when the vectors are long as well as aligned: q · k = |q| |k| cos θ.
// claim: dot-product
constexpr const char* kDotProduct = "Entry [i, j] is the dot product of query i and key j, |q_i| |k_j| cos θ: large when the two vectors "
                                    "point the same way and are long";

std::string explain_scores(const Trace& t, const Step& s, const ExplainBlock& b) {
  const auto& c = t.config;
  // claim: scores-given
  if (c.entry == Entry::Scores) return "The scores, given directly: entry [i, j] is how well query i matches key j.";
  Row r = pick_row(s, b);
  const auto S = s.value.shape().back(), T = s.value.shape()[s.value.shape().size() - 2];
  auto blocked = blocked_keys(t, s, r);
  // a row that may see more than one key makes the better example (a causal first row sees itself only)
  for (std::int64_t i = 0; std::count(blocked.begin(), blocked.end(), false) < 2 && i < T; ++i) {
    Row other = r;
    other.query = i;
    other.values = s.value.data() + explain_detail::block_offset(s, b) + i * S;
    const auto o = blocked_keys(t, s, other);
    if (std::count(o.begin(), o.end(), false) >= 2) r = other, blocked = o;
  }
  // the best key the query may see (the mask is about to block the others), and any tied with it
  std::int64_t best = -1;
  for (std::int64_t j = 0; j < S; ++j)
    if (!blocked[static_cast<std::size_t>(j)] && (best < 0 || r.values[j] > r.values[best])) best = j;
  if (best < 0) return std::string(kDotProduct) + ".";
  std::vector<std::string> tops;
  for (std::int64_t j = 0; j < S; ++j)
    if (!blocked[static_cast<std::size_t>(j)] && r.values[j] == r.values[best]) tops.push_back(key_name(c, s.dims.back(), j, r.query, s.dims.back() == Dim::T, r.batch));
  const auto seen = static_cast<std::size_t>(std::count(blocked.begin(), blocked.end(), false));
  const auto highest = tops.size() == 1    ? fmt::format("highest against {} ({:.2f})", tops[0], r.values[best])
                       // claim: scores-tie
                       : tops.size() == seen ? fmt::format("every key alike, {:.2f} each (a tie: no key is preferred)", r.values[best])
                                             : fmt::format("highest, {:.2f}, against {} alike (a tie)", r.values[best], fmt::join(tops, " and "));
  const bool some_blocked = std::find(blocked.begin(), blocked.end(), true) != blocked.end();
  Scalar blocked_most = 0;  // the largest weight a blocked key of this row keeps (0 with −inf, or where a finite fill underflowed)
  for (std::int64_t j = 0; j < S; ++j)
    if (blocked[static_cast<std::size_t>(j)]) blocked_most = std::max(blocked_most, r.values[j]);
  return fmt::format("{}. {} {} scores {}{}.", kDotProduct, row_words(s, b), tok(t, b, r.query), highest,
                     // claim: scores-blocked-next
                     some_blocked ? " among the keys it may see (a later step, the mask, blocks the others)" : "");
}

// This run's scaled scores as they are: their range, and how many query rows that see more than one
// key still put 0.995 or more of their weight on one.
std::string scaled_facts(const Trace& t, const Step& s) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (std::int64_t i = 0; i < s.value.size(); ++i)
    if (std::isfinite(s.value.at(i))) lo = std::min(lo, static_cast<double>(s.value.at(i))), hi = std::max(hi, static_cast<double>(s.value.at(i)));
  if (lo > hi) return "";
  std::string words = fmt::format(" here the scaled scores run from {} to {}", explain_detail::signed_num(lo, 2), explain_detail::signed_num(hi, 2));
  const Step* w = t.find("weights");
  const MaskFacts m = mask_facts(t);
  if (w != nullptr && w->value.shape() == s.value.shape()) {
    const auto S = w->value.shape().back();
    std::int64_t rows = 0, peaked = 0;
    for (std::int64_t r = 0; r * S < w->value.size(); ++r) {
      std::int64_t seen = 0;
      double top = 0;
      for (std::int64_t j = 0; j < S; ++j)
        if (m.masked == nullptr || m.masked->value.shape() != w->value.shape() || !blocked_cell(m, r * S + j))
          ++seen, top = std::max(top, static_cast<double>(w->value.at(r * S + j)));
      if (seen < 2) continue;
      ++rows;
      peaked += top >= 0.995 ? 1 : 0;
    }
    // claim: scaled-saturated
    if (peaked > 0) words += fmt::format(", and {} of the {} query rows that see more than one key still put 0.995 or more of their weight on one", peaked, rows);
  }
  return words + ".";
}

std::string explain_scaled(const Trace& t, const Step& s, const ExplainBlock&) {
  const auto& c = t.config;
  if (c.hs == 1 && c.scale.starts_with("1/√")) {
    // claim: scale-one
    return "Here hs = 1: the factor is 1/√1 = 1, so the scaling changes nothing and the scaled scores are the scores. (It matters for "
           "wider heads: a dot product of hs terms grows with hs.)";
  }
  if (c.hs > 0 && c.scale.starts_with("1/√")) {
    // d_k is one head's width: the header's dk is every head's together when H > 1
    const std::string dk = c.H == 1 ? fmt::format("d_k = {}", c.hs) : fmt::format("d_k = hs = {}", c.hs);
    // claim: variance-premises
    return fmt::format("Why divide by √d_k: if the entries of q and k are independent, with mean 0 and variance 1, q · k is a sum of {} "
                       "products, so its variance is {} (a spread of about ±{:.2f}). Multiplying by 1/√{} = {:.4f} brings the variance "
                       "back to 1, which keeps softmax's inputs moderate, so that it does not put nearly all the weight on the largest "
                       "score. That is the reason for the factor, not a promise about every input:{}",
                       dk, c.hs, std::sqrt(static_cast<double>(c.hs)), c.hs, c.scale_factor, scaled_facts(t, s));
  }
  if (!c.scale_source.empty()) {
    // claim: scale-config
    return fmt::format("The scores are multiplied by {} ({}), not by 1/√hs = 1/√{} = {:.4f}: the model's config sets the scale with a "
                       "number of its own rather than the head size (they agree when that number is hs). The aim is the same: keep "
                       "the scores' spread moderate, so that softmax does not put nearly all the weight on one key.{}",
                       c.scale_factor, c.scale_source, c.hs, 1.0 / std::sqrt(static_cast<double>(c.hs)), scaled_facts(t, s));
  }
  // claim: scale-given
  return fmt::format("The scores are multiplied by the given factor {}.{}", c.scale_factor, scaled_facts(t, s));
}

std::string explain_alibi(const Trace& t, const Step& s, const ExplainBlock& b) {
  const auto T = s.value.shape()[s.value.rank() - 2], S = s.value.shape().back();
  const auto n = [](double v) { return explain_detail::signed_num(v, 4); };
  std::string example;
  if (T > 2 && S > 2) {
    example = fmt::format(" Here head 0 (m = {}), query {}: its own key's bias is {}, the key 1 behind gets {} and the key 2 behind {}, "
                          "penalties that grow with distance.",
                          n(s.value.at(2 * S + 2) - s.value.at(2 * S + 1)), tok(t, b, 2), n(s.value.at(2 * S + 2)), n(s.value.at(2 * S + 1)),
                          n(s.value.at(2 * S + 0)));
  }
  // the entries above the diagonal: keys after the query, where −m · (i − j) is positive
  std::string future;
  if (T > 1 && S > 1 && s.value.at(1) > 0) {
    // claim: alibi-future-masked
    future = t.config.causal ? " The table's entries for keys after the query are positive (a bonus), but the causal mask blocks "
                               "those keys, so they never count."
                             // claim: alibi-future-unblocked
                             : " Keys after the query get a bonus that grows with their distance: nothing in this run blocks them "
                               "(ALiBi was made for causal models, whose mask does).";
  }
  // claim: alibi-slopes
  return "ALiBi (Attention with Linear Biases) adds no positions to x. It adds −m · d to each score, d being how far the key lies "
         "behind the query, with a different slope m per head: a steep head's weights fall off within a few tokens, a gentle one's "
         "reach far back." + example + future +
         // claim: alibi-extrapolation-empirical
         " Its authors found that models trained on short texts with this bias still do well on longer ones: an empirical finding, "
         "not a consequence of the formula.";
}

// The steps that read the biased scores, in order: "soft-capping, then the mask and the softmax read".
std::string readers_after_bias(const Trace& t) {
  const bool capped = t.find("capped") != nullptr, masked = t.find("masked") != nullptr;
  return fmt::format("{}{}", capped ? "soft-capping, then " : "", masked ? "the mask and the softmax read" : capped ? "the softmax read" : "the softmax reads");
}

std::string explain_biased(const Trace& t, const Step&, const ExplainBlock&) {
  const std::string scores = t.find("scaled") != nullptr ? "The scaled scores" : fmt::format("The scores, not scaled (scale {}),", t.config.scale);
  if (t.find("rel.bias") != nullptr) {
    // claim: biased-t5
    return fmt::format("{} plus T5's relative position bias: a learned number per head for each bucket of the distance from the query "
                       "to the key, in place of position embeddings. This is what {}.",
                       scores, readers_after_bias(t));
  }
  // claim: biased-alibi
  return fmt::format("{} plus the ALiBi bias: what {}.", scores, readers_after_bias(t));
}

std::string explain_capped(const Trace&, const Step&, const ExplainBlock&) {
  // claim: softcap
  return "Soft-capping (Gemma 2) squashes every score smoothly into (−c, c) with tanh: a score far beyond c cannot dominate the "
         "softmax, while a small one passes almost unchanged, since tanh x ≈ x near 0.";
}

// The sliding window read from the mask itself: the last row of batch row 0, its first and last
// visible keys, and the key just before the window (out of reach), when there is one.
std::string window_words(const Trace& t, const Step& s, const ExplainBlock& b) {
  const auto& c = t.config;
  const auto S = s.value.shape().back(), i = c.T - 1;
  const Dim kd = s.dims.empty() ? Dim::S : s.dims.back();
  const auto key = [&](std::int64_t j) { return q(distinct_axis_label(c, kd, j, b.batch)); };
  std::int64_t first = -1, last = -1;
  for (std::int64_t j = 0; j < S; ++j)
    if (s.value.at(i * S + j) != 0) last = j, first = first < 0 ? j : first;
  // claim: mask-window
  std::string words = fmt::format("A sliding-window causal mask (W = {}): each query sees its own key and the {} before it, never a later one, "
                                  "and nothing further back than its window.",
                                  c.window, c.window - 1);
  if (first >= 0) {
    words += fmt::format(" Row {} may look at {}{}.", tok(t, b, i), first == last ? key(first) : fmt::format("{} .. {}", key(first), key(last)),
                         first > 0 ? fmt::format(" but not at {}, out of its window", key(first - 1)) : "");
  }
  return words;
}

std::string explain_mask(const Trace& t, const Step& s, const ExplainBlock& b) {
  const auto& c = t.config;
  std::string words;
  if (c.causal && c.window > 0) {
    words = window_words(t, s, b);
  } else if (c.causal) {
    const auto i = std::min<std::int64_t>(1, c.T - 1);
    // claim: mask-causal
    words = fmt::format("A causal (look-ahead) mask: query i may attend to keys 0 .. i only, so no token sees the future. Row {} may "
                        "look at {}{}.",
                        tok(t, b, i), i == 0 ? "itself" : fmt::format("{} and itself", tok(t, b, 0)),
                        c.T > i + 1 ? fmt::format(" but not at {}", tok(t, b, i + 1)) : "");
  }
  if (!c.lengths.empty()) {
    if (!words.empty()) words += " ";
    // claim: mask-padding
    words += fmt::format("Padding: keys at or past a batch row's length (lengths {}) are padding, and nobody attends to them.",
                         fmt::format("[{}]", fmt::join(c.lengths, ", ")));
  }
  return words;
}

// A fill value as the input writes it: −1e6, not −1000000.
std::string fill_text(double v) {
  std::string g = fmt::format("{:g}", std::fabs(v));
  if (const auto e = g.find("e+"); e != std::string::npos) g = g.substr(0, e + 1) + std::to_string(std::stoi(g.substr(e + 2)));
  return (v < 0 ? "−" : "") + g;
}

// The largest weight the softmax gave a blocked key in a row that keeps some key (0 when exp underflowed everywhere).
double largest_blocked_weight(const Trace& t, const MaskFacts& m) {
  const Step* w = t.find("weights");
  if (w == nullptr || m.masked == nullptr || w->value.shape() != m.masked->value.shape()) return 0;
  const auto S = w->value.shape().back();
  double most = 0;
  for (std::int64_t r = 0; r * S < w->value.size(); ++r) {
    std::int64_t kept = 0;
    for (std::int64_t j = 0; j < S; ++j) kept += blocked_cell(m, r * S + j) ? 0 : 1;
    for (std::int64_t j = 0; j < S && kept > 0; ++j)
      if (blocked_cell(m, r * S + j)) most = std::max(most, static_cast<double>(w->value.at(r * S + j)));
  }
  return most;
}

// A row with every key blocked: what −inf and a finite fill each make of it, attn's own policy named
// as such, and what this run made of such a row when it has one.
std::string empty_row_words(const Trace& t, const MaskFacts& m) {
  std::string words = std::isinf(m.fill)
      // claim: empty-row-inf
      ? " A row with every key blocked is different: with −inf its softmax is 0/0, NaN (PyTorch's softmax returns NaN there), with a "
        "finite fill it is uniform. attn refuses such a row unless its own \"masked_row\" option says what to make of it (nan, zeros or uniform)."
      // claim: empty-row-finite
      : fmt::format(" A row with every key blocked differs: it holds {} everywhere, so its weights come out uniform, 1/S each, where −inf "
                    "would give 0/0, NaN.", fill_text(m.fill));
  const Step* w = t.find("weights");
  if (m.empty_row < 0 || w == nullptr || w->value.shape() != m.masked->value.shape()) return words;
  const auto S = w->value.shape().back(), T = w->value.shape()[w->value.rank() - 2];
  const Scalar x = w->value.at(m.empty_row * S);
  const auto& dims = w->dims;
  const std::int64_t b = !dims.empty() && dims[0] == Dim::B ? m.empty_row / (w->value.size() / S / w->value.shape()[0]) : 0;
  return words + fmt::format(" Here query {} has every key blocked, and its weights are {}.", tok(t, {b, 0}, m.empty_row % T),
                             std::isnan(x) ? "NaN" : x == 0 ? "all 0 (masked_row: zeros)" : fmt::format("uniform, {}", share(x)));
}

std::string explain_masked(const Trace& t, const Step&, const ExplainBlock&) {
  const MaskFacts m = mask_facts(t);
  // claim: masked-none
  if (m.blocked == 0) return "The mask blocks no score here: the masked scores are the scores the mask read.";
  const double leak = largest_blocked_weight(t, m);
  std::string words;
  if (std::isinf(m.fill)) {
    // claim: masked-inf
    words = "Blocked scores become −inf before softmax. exp(−inf) is exactly 0, so blocked keys get exactly zero weight and the "
            "other weights of the row still sum to 1. A large finite number such as −1e9 gives the same weights wherever a row keeps a key.";
  } else {
    const auto f = fill_text(m.fill);
    if (leak == 0) {
      // claim: masked-finite-fill
      words = fmt::format("Blocked scores become {} here (the input's mask_fill), not −inf. exp({} − the row's largest kept score) "
                          "underflows to exactly 0 in float32 in every row that keeps a key, so the kept weights still sum to 1: the "
                          "same weights −inf gives.", f, f);
    } else {
      // claim: masked-finite-fill-leaks
      words = fmt::format("Blocked scores become {} here (the input's mask_fill), not −inf. exp({} − the row's largest kept score) does "
                          "not underflow here: a blocked key keeps up to {:.3g} of its row's weight, so the kept keys get less than "
                          "−inf would give them, and the blocked tokens' values leak into the context.", f, f, leak);
    }
  }
  return words + empty_row_words(t, m);
}

std::string explain_weights(const Trace& t, const Step& s, const ExplainBlock& b) {
  const Row r = pick_row(s, b);
  // claim: softmax-distribution
  return fmt::format("Softmax turns each row of scores into a probability distribution over the keys: every weight is between "
                     "0 and 1 and each row sums to 1 (the row maximum is subtracted first, which changes nothing but keeps exp "
                     "from overflowing). {} {} puts {}.",
                     row_words(s, b), tok(t, b, r.query), attention_words(t.config, s, r));
}

std::string explain_context(const Trace& t, const Step&, const ExplainBlock& b) {
  const auto& c = t.config;
  if (c.fused) {
    // claim: context-fused
    return "The same context vectors as softmax(scores) · v, computed without ever holding the scores or the weights: the keys "
           "come a block at a time, and for each query row the pass keeps only the largest score so far, the sum of exp(score − "
           "largest) and the weighted sum of value rows. When a later block holds a larger score, what was summed is multiplied "
           "by exp(old largest − new largest), which is what it would have been had the new largest been known from the start. "
           "At the end the weighted sum divided by the sum is the context row (FlashAttention). Memory grows with T, not with "
           "T × S; run without --fused to see the scores and weights this pass never keeps.";
  }
  const Step* w = t.find("weights");
  if (w == nullptr) return "";
  const Row r = pick_row(*w, b);
  const auto S = w->value.shape().back();
  const auto blocked = blocked_keys(t, *w, r);
  std::vector<std::string> terms;
  bool more = false;  // a key of some weight not shown: beyond the four, or below 0.005 (the sum is not the whole row's)
  // the four largest weights (of 0.005 or more), written in key order, so the largest is never hidden in "…"
  std::vector<std::int64_t> shown;
  for (std::int64_t j = 0; j < S; ++j)
    if (r.values[j] >= 0.005f) shown.push_back(j);
  std::stable_sort(shown.begin(), shown.end(), [&](auto a, auto b) { return r.values[a] > r.values[b]; });
  if (shown.size() > 4) shown.resize(4);
  std::sort(shown.begin(), shown.end());
  for (std::int64_t j = 0; j < S; ++j)
    if (r.values[j] > 0 && !std::binary_search(shown.begin(), shown.end(), j)) more = true;
  for (const auto j : shown) terms.push_back(fmt::format("{} · v[{}]", share(r.values[j]), q(distinct_axis_label(c, w->dims.back(), j, r.batch))));
  const bool some_blocked = std::find(blocked.begin(), blocked.end(), true) != blocked.end();
  Scalar blocked_most = 0;  // the largest weight a blocked key of this row keeps (0 with −inf, or where a finite fill underflowed)
  for (std::int64_t j = 0; j < S; ++j)
    if (blocked[static_cast<std::size_t>(j)]) blocked_most = std::max(blocked_most, r.values[j]);
  // claim: context-average
  return fmt::format("Each row is a weighted average of the value rows, with that query's weights. {}context[{}] = {}{}.{}",
                     block_prefix(*w, b), tok(t, b, r.query), fmt::join(terms, " + "), more ? " + …" : "",
                     !some_blocked ? std::string()
                     // claim: context-masked-zero
                     : blocked_most == 0 ? std::string(" Masked keys add nothing: their weight is exactly 0.")
                     // claim: context-masked-leak
                     : fmt::format(" Masked keys still add a little here: the finite mask_fill leaves them up to {} of the weight.", share(blocked_most)));
}

// Where head h's w features land once the heads are merged: "head h's hs = 2 features land in columns
// h·2 .. h·2+1", or for heads of one feature "head h's one feature lands in column h".
std::string landing(const char* width, std::int64_t w) {
  if (w == 1) return fmt::format("head h's one feature ({} = 1) lands in column h", width);
  return fmt::format("head h's {} = {} features land in columns h·{} .. h·{}+{}", width, w, w, w, w - 1);
}

std::string explain_merged(const Trace& t, const Step&, const ExplainBlock&) {
  const auto& c = t.config;
  if (c.general) {
    // claim: merged
    return fmt::format("Transpose back to [.., T, H, hv] and read as [.., T, dv]: {}, so every head's findings sit side by side in "
                       "dv = {} columns{}.",
                       landing("hv", c.hv), c.dv, c.dv == c.C ? ", the input's width again" : "");
  }
  // claim: merged
  return fmt::format("Transpose back to [.., T, H, hs] and read as [.., T, C]: {}, so the result has the input's shape again, with "
                     "every head's findings side by side.",
                     landing("hs", c.hs));
}

std::string explain_output(const Trace& t, const Step&, const ExplainBlock&) {
  const auto& c = t.config;
  // the spec's notes say when W_o is the identity: then it mixes nothing
  if (std::find(c.notes.begin(), c.notes.end(), "weights.W_o: identity") != c.notes.end()) {
    const Step* in = t.find("merged") != nullptr ? t.find("merged") : t.find("context");
    const Step* out = t.find("output");
    const bool same = in != nullptr && out != nullptr && in->value.shape() == out->value.shape() &&
                      std::equal(in->value.data(), in->value.data() + in->value.size(), out->value.data());
    // claim: output-identity
    return fmt::format("Here W_o is the identity: the output is the {} rows {}. A learned W_o would mix the features (across the heads, "
                       "with several) and project them back into the model's space.",
                       in != nullptr ? in->id : "context", same ? "unchanged" : "plus the bias b_o");
  }
  // claim: output-mixes-heads
  if (c.H > 1) return "W_o mixes the concatenated heads' features, so what one head found can combine with what another found.";
  // claim: output-projects-co
  if (c.general && c.Co != c.C) return fmt::format("W_o projects the dv = {} wide context vectors to Co = {} features.", c.dv, c.Co);
  // claim: output-projects
  return "W_o projects the context vectors back into the model's space, ready for the next layer.";
}


// The table: step id -> its explanation, from the scores on (input_explainers() has the steps before;
// steps in neither, the KV cache's and a given additive mask, have none).
const std::map<std::string_view, Explainer>& explainers() {
  static const std::map<std::string_view, Explainer> kTable = {
      {"scores", explain_scores}, {"scaled", explain_scaled}, {"alibi", explain_alibi}, {"biased", explain_biased},
      {"capped", explain_capped}, {"mask", explain_mask}, {"masked", explain_masked}, {"weights", explain_weights},
      {"context", explain_context}, {"merged", explain_merged}, {"output", explain_output},
  };
  return kTable;
}

}  // namespace

std::vector<ExplainPart> explain_parts(const std::string& text) {
  std::vector<ExplainPart> parts;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    const bool pre = line.starts_with("  ");
    if (line.empty()) continue;
    if (!pre || parts.empty() || !parts.back().preformatted) parts.push_back({pre, {}});
    parts.back().lines.push_back(pre ? line.substr(2) : line);
  }
  return parts;
}

std::string explain_step(const Trace& t, const Step& s, ExplainBlock block) {
  for (const auto* table : {&input_explainers(), &explainers(), &backward_explainers()}) {
    const auto it = table->find(s.id);
    if (it != table->end()) return it->second(t, s, block);
  }
  return "";
}

}  // namespace attn
