// The explanations, one per step id (the backward pass's: explain_backward.cpp). The ideas come from the seed documents (why Kᵀ, why 1/√d_k,
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


// "head h owns features h·2 .. h·2+1", or "head h owns feature h" for heads of one feature.
std::string owned_features(std::int64_t h) {
  if (h == 1) return "head h owns feature h";
  return fmt::format("head h owns features h·{} .. h·{}+{}", h, h, h - 1);
}

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
    if (std::isnan(r.values[0]) || zero) return std::isnan(r.values[0]) ? "NaN everywhere: every key is blocked" : "no weight on any key: every key is blocked";
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


// The relative-position property with this run's numbers: query row 0 and key row 0 of head 0 (before
// rotation), placed at positions (1, 0) and again at (2, 1), give the same score.
std::string rope_demonstration(const Trace& t) {
  const Step* cos = t.find("rope.cos");
  const Step* sin = t.find("rope.sin");
  const Step* qh = t.find("q.norm") != nullptr ? t.find("q.norm") : rows_step(t, "q.heads", "q");  // what RoPE turns
  const Step* kh = t.find("k.norm") != nullptr ? t.find("k.norm") : rows_step(t, "k.heads", "k");
  if (cos == nullptr || sin == nullptr || qh == nullptr || kh == nullptr || cos->value.shape()[0] < 3) return "";
  const bool interleaved = t.config.rope_interleaved;
  const auto h = qh->value.shape().back();
  const Scalar* x = qh->value.data();
  const Scalar* y = kh->value.data();
  auto score = [&](std::int64_t m, std::int64_t n) {
    const auto a = rotated(x, h, *cos, *sin, m, interleaved), b = rotated(y, h, *cos, *sin, n, interleaved);
    return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
  };
  const auto p0 = t.config.first_position;
  const auto f = [](double v) { return format_fixed(static_cast<Scalar>(v), 4); };
  // claim: rope-demonstration
  return fmt::format(" With this run's numbers: the first query and the first key (head 0, before rotation), placed at positions {} and {}, "
                     "score {}; the same two vectors at positions {} and {} score {}. Only the distance, 1, counts.",
                     p0 + 1, p0, f(score(1, 0)), p0 + 2, p0 + 1, f(score(2, 1)));
}

}  // namespace

namespace {

// The per-step explanations: one short function a step id (explainers() below is the table), each
// reading the trace, its step and the block a sentence about one row speaks of (--batch, --head).

bool cross(const Trace& t) { return t.config.mode == Mode::Cross; }
// Keys or values with fewer heads than the queries (grouped-query attention).
bool kv_group(const Trace& t, const Step& s) { return t.config.Hkv != t.config.H && (s.id.starts_with("k") || s.id.starts_with("v")); }

std::string explain_x(const Trace& t, const Step& s, const ExplainBlock&) {
  const auto& c = t.config;
  // in cross-attention the rows mixed are the source's, not the other target tokens'
  // claim: x-mixture-cross
  const char* mixture = cross(t) ? "Attention will replace each row by a mixture of the source's value rows, weighted by how relevant "
                                   "each source token is to it."
                                 // claim: x-mixture
                                 : "Attention will replace each row by a mixture of the value rows of the tokens it may see (itself "
                                   "included), weighted by how relevant each is to it.";
  // claim: x-layer-input
  if (!s.note.empty()) return fmt::format("Each row is one token's vector as it enters this layer's attention ({}): C = {} numbers. {}", s.note, c.C, mixture);
  // claim: x-embedding
  return fmt::format("Each row is one token's embedding: C = {} numbers that stand for that token. {}", c.C, mixture);
}

// Why positions are needed, true for this run: without a mask attention is blind to order; a causal
// mask or a window depends on order, but only through which keys it hides.
std::string order_words(const Trace& t) {
  const TraceConfig& c = t.config;
  if (!c.causal && c.lengths.empty() && mask_facts(t).blocked > 0) {
    // claim: order-given-mask
    return "Without positions, each score depends only on the two tokens' vectors, not on where they stand. This run's given mask "
           "does depend on where they stand (it blocks keys by their place), so shuffling the tokens would change which keys each "
           "query sees; among the keys a query sees, nothing says which came first.";
  }
  if (!c.causal && c.lengths.empty()) {
    // claim: order-no-mask
    return "Without positions, attention ignores order: each score depends only on the two tokens' vectors, so shuffling the tokens "
           "shuffles the output rows the same way and each token gets the same mixture.";
  }
  if (!c.causal) {
    // claim: order-padding
    return "Without positions, each score depends only on the two tokens' vectors, not on where they stand: shuffling the tokens "
           "(padding aside) shuffles the output rows the same way.";
  }
  // claim: order-causal
  return fmt::format("Without positions, each score depends only on the two tokens' vectors, not on where they stand. This run's {} "
                     "mask does depend on order (query i sees keys {} only), so shuffling the tokens would change the mixtures; but "
                     "among the keys a query sees, nothing says which came first.",
                     c.window > 0 ? "sliding-window causal" : "causal", c.window > 0 ? "i − W + 1 .. i" : "0 .. i");
}

std::string explain_positions(const Trace& t, const Step&, const ExplainBlock&) {
  const auto& c = t.config;
  if (c.learned_positions) {
    // claim: positions-learned
    return order_words(t) + " So a learned row per position is added to the embeddings, and the same token at another position "
           "becomes a different vector.";
  }
  // claim: positions-sinusoidal
  return fmt::format("{} The original Transformer adds these fixed waves to the embeddings: column pair i turns by 1/10000^(2i/C) "
                     "radians per position, so every position gets its own pattern, and position p + k is a fixed rotation of position p "
                     "(for every p), which a linear map can learn to read as \"k tokens later\". Here C = {}: {} pair{} of waves.",
                     order_words(t), c.C, (c.C + 1) / 2, (c.C + 1) / 2 == 1 ? "" : "s");
}

std::string explain_rope_tables(const Trace& t, const Step&, const ExplainBlock&) {
  const auto& c = t.config;
  std::string scaled;
  if (!c.rope_bands.empty()) {
    const auto n = [&](char b) { return std::count(c.rope_bands.begin(), c.rope_bands.end(), b); };
    // claim: rope-llama3-bands
    scaled = fmt::format(" Here the frequencies are scaled as Llama 3.1 does, {}: a model trained on short texts has seen the slow "
                         "pairs turn only part of a circle, so for longer texts those are slowed by the factor, while the fast pairs, "
                         "which have turned many times, keep theirs. {} pair{} {} (high band), {} {} smoothed between the two (middle "
                         "band), {} {} divided by the factor (low band).",
                         c.rope_scaling, n('h'), n('h') == 1 ? "" : "s", n('h') == 1 ? "keeps its frequency" : "keep their frequency", n('m'),
                         n('m') == 1 ? "is" : "are", n('l'), n('l') == 1 ? "is" : "are");
  } else if (!c.rope_scaling.empty()) {
    // claim: rope-scaled
    scaled = fmt::format(" Here the frequencies are scaled, {}: every pair turns that many times slower, as if the positions were "
                         "squeezed, so a longer text stays within the angles the model was trained on.",
                         c.rope_scaling);
  }
  // claim: rope-angles
  return "RoPE's angles: position p turns pair i by p · θ^(−2i/R). Early pairs spin fast (fine position), late pairs slowly (coarse "
         "position), like the hands of a clock. These tables are all the rotation needs: each is [positions, R/2]." + scaled;
}

std::string explain_qk_norm(const Trace& t, const Step& s, const ExplainBlock&) {
  const auto& n = t.config.qk_norm;
  const std::string who = n.family.empty() ? std::string("The model") : n.family;
  const char* what = s.id == "q.norm" ? "queries" : "keys";
  // claim: qk-norm-plus-one
  const std::string weight = n.plus_one ? "by 1 + a learned weight (Gemma stores the weight's difference from 1)" : "by a learned weight";
  if (n.whole_width) {
    // claim: qk-norm-whole-width
    return fmt::format("{0} normalises the {1} as they leave the projection, before they are split into heads: all of a token's "
                       "features, every head's together, are divided by their root mean square, then multiplied feature by feature {2}. "
                       "One large head can shrink the others this way; Qwen3 and Gemma 3 normalise each head on its own instead. Either "
                       "way the scores are bounded by the weights, not by how large a layer's activations grew.",
                       who, what, weight);
  }
  // claim: qk-norm-per-head
  return fmt::format("{0} normalises each head's {1} before rotating it: the features of one head are divided by their root mean "
                     "square (so the head's vector has length √hs), then multiplied feature by feature {2}. The dot "
                     "products that become the scores are then bounded by the weights, not by how large a layer's activations grew, "
                     "which keeps the softmax from saturating on one key.",
                     who, what, weight);
}

std::string explain_rope(const Trace& t, const Step& s, const ExplainBlock&) {
  if (s.id == "k.rope") {
    // claim: rope-keys
    return "The keys get the same rotation as the queries, each by its own position. A rotation keeps lengths, so only the angle "
           "between a query and a key changes: by the difference of their positions.";
  }
  // claim: rope-relative
  return "Rotary position embedding: instead of adding positions to x, each pair of a head's query features is rotated by an angle "
         "proportional to the query's position (keys likewise). The dot product of two rotated vectors depends on the difference of "
         "the angles, so q_m · k_n depends on where the tokens are only through m − n." +
         rope_demonstration(t);
}

std::string explain_x_pos(const Trace& t, const Step&, const ExplainBlock& b) {
  std::string same;  // two tokens with the same embedding (batch row 0), now told apart
  if (const Step* x = t.find("x"); x != nullptr && x->value.rank() >= 2) {
    const auto T = x->value.dim(-2), C = x->value.dim(-1);
    const Scalar* v = x->value.data();
    for (std::int64_t i = 0; i < T && same.empty(); ++i)
      for (std::int64_t j = i + 1; j < T && same.empty(); ++j)
        if (std::equal(v + i * C, v + (i + 1) * C, v + j * C)) {
          // claim: x-pos-same-embedding
          same = fmt::format(" Here {} (row {}) and {} (row {}) have the same embedding in x; their rows here differ, by their "
                             "positions' rows alone.",
                             tok(t, b, i), i, tok(t, b, j), j);
        }
  }
  // claim: x-pos
  return "The embeddings plus their positions: from here on the projections read these rows, so q, k and v carry where each "
         "token stands as well as what it is." + same;
}

std::string explain_source(const Trace& t, const Step&, const ExplainBlock&) {
  // claim: source-cross
  return fmt::format("Cross-attention: the queries come from the target sequence (x, T = {}), the keys and values from this source "
                     "sequence (S = {}). Each target token asks a question; the source tokens answer it.",
                     t.config.T, t.config.S);
}

std::string explain_qkv(const Trace& t, const Step&, const ExplainBlock&) {
  const auto& c = t.config;
  if (c.general) {
    // claim: qkv-fused
    return fmt::format("One matrix product computes q, k and v side by side: W_qkv is [C, 2dk + dv] = [{}, {}]. The next steps "
                       "split it into blocks of dk = {}, dk = {} and dv = {} columns: the same numbers as three separate "
                       "projections, one product instead of three.",
                       c.C, 2 * c.dk + c.dv, c.dk, c.dk, c.dv);
  }
  // claim: qkv-fused
  return fmt::format("One matrix product computes q, k and v side by side: W_qkv is [C, 3C] = [{}, {}]. The next steps split it "
                     "into three blocks of C = {} columns: the same numbers as three separate projections, one product instead of three.",
                     c.C, 3 * c.C, c.C);
}

std::string explain_q(const Trace& t, const Step&, const ExplainBlock&) {
  // claim: q-given
  if (t.config.entry == Entry::QKV) return "The queries, given directly: row i is what token i is looking for.";
  // claim: q-projection
  return std::string("Row i is token i's query: what it is looking for. It is ") + (t.find("x.pos") != nullptr ? "x.pos" : "x") + " times W_q" +
         (t.find("qkv") != nullptr ? " (here the first block of columns of the fused W_qkv)" : "") +
         ", a learned projection, so a token can look for something different from what it is." +
         // claim: q-cross
         (cross(t) ? " In cross-attention the queries come from the target sequence." : "");
}

std::string explain_k(const Trace& t, const Step&, const ExplainBlock&) {
  // claim: k-key
  return std::string("Row j is token j's key: what it offers to be found by. Comparing every query with every key decides who "
                     "attends to whom.") +
         // claim: k-cross
         (cross(t) ? " The keys come from the source sequence." : "");
}

std::string explain_v(const Trace&, const Step&, const ExplainBlock&) {
  // claim: v-value
  return "Row j is token j's value: what it passes on when attended to. Each output row will be a weighted average of these rows.";
}

// k.view, k.heads, v.view, v.heads with fewer kv heads than query heads.
std::string explain_kv_group(const Trace& t, const Step& s) {
  const auto& c = t.config;
  const bool value = s.id.starts_with("v");
  const auto h = value ? c.hv : c.hs;
  // claim: kv-group
  return fmt::format("Grouped-query attention: the {} have only Hkv = {} heads of {} = {}, not H = {}, so {} = {} features split into "
                     "Hkv heads{}. Each kv head will serve H / Hkv = {} query heads.",
                     value ? "values" : "keys", c.Hkv, value ? "hv" : "hs", h, c.H, value ? "Hkv·hv" : "Hkv·hs", c.Hkv * h,
                     s.id.ends_with(".view") ? " (a view: nothing moves)" : ", heads first", c.H / c.Hkv);
}

std::string explain_view(const Trace& t, const Step& s, const ExplainBlock&) {
  const auto& c = t.config;
  if (kv_group(t, s)) return explain_kv_group(t, s);
  if (c.general) {
    const bool value = s.id.starts_with("v");
    const auto width = value ? c.dv : c.dk, h = value ? c.hv : c.hs;
    const char* hn = value ? "hv" : "hs";
    // claim: view-no-move
    return fmt::format("Splitting {} = {} features into H = {} heads of {} = {} is only a view: the same numbers read as [.., H, {}]. "
                       "Nothing moves in memory; {}.",
                       value ? "dv" : "dk", width, c.H, hn, h, hn, owned_features(h));
  }
  // claim: view-no-move
  return fmt::format("Splitting C = {} features into H = {} heads of hs = {} is only a view: the same numbers read as [.., H, hs]. "
                     "Nothing moves in memory; {}.",
                     c.C, c.H, c.hs, owned_features(c.hs));
}

std::string explain_heads(const Trace& t, const Step& s, const ExplainBlock&) {
  const auto& c = t.config;
  if (kv_group(t, s)) return explain_kv_group(t, s);
  const bool value = s.id.starts_with("v") && c.general;
  // claim: heads-transpose
  return fmt::format("The transpose puts the head axis before the tokens, so each of the H = {} heads is its own [{}, {} = {}] "
                     "matrix and all heads run in one batched product. Each head has its own slice of q, k and v, so it can "
                     "attend to something different.",
                     c.H, s.id.starts_with("q") ? "T" : (cross(t) ? "S" : "T"), value ? "hv" : "hs", value ? c.hv : c.hs);
}

std::string explain_repeat(const Trace& t, const Step& s, const ExplainBlock&) {
  const auto& c = t.config;
  const std::int64_t n = c.H / c.Hkv;
  const auto per_token = c.Hkv * (c.hs + (c.hv > 0 ? c.hv : c.hs)) * 4, full = c.H * (c.hs + (c.hv > 0 ? c.hv : c.hs)) * 4;
  if (s.id == "v.repeat") {
    // claim: repeat-values
    return fmt::format("The values are lined up the same way: query head h mixes the values of kv head ⌊h / {}⌋, so heads of a "
                       "group attend differently but read the same value rows.",
                       n);
  }
  // claim: repeat-kv-cache
  return fmt::format("{}: k and v have only Hkv = {} heads, and each serves H / Hkv = {} query heads. repeat_kv copies kv head g "
                     "to query heads {}·g .. {}·g + {}, in a row (an interleave, not a tile), so head h's queries meet kv head ⌊h / {}⌋'s "
                     "keys. The copy is only for the product: a cache of past keys and values keeps the Hkv heads, {} bytes per token "
                     "instead of {} with H heads ({}× less memory to read per generated token).",
                     c.Hkv == 1 ? "Multi-query attention (one kv head)" : "Grouped-query attention", c.Hkv, n, n, n, n - 1, n, per_token,
                     full, n);
}

std::string explain_kt(const Trace&, const Step&, const ExplainBlock&) {
  // claim: kt-transpose
  return "Kᵀ turns each key into a column, so one matrix product q · kᵀ compares every query with every key: entry [i, j] is "
         "the dot product q_i · k_j. The context step needs no transpose: weights · v already sums rows of v.";
}

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
                     some_blocked ? " among the keys it may see (the mask blocks the others next)" : "");
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
  if (m.blocked == 0) return "The mask blocks no score in this run: the masked scores are the scores the mask read.";
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
  bool more = false;  // a key of some weight beyond the four shown
  for (std::int64_t j = 0; j < S; ++j) {
    if (r.values[j] < 0.005f) continue;
    if (terms.size() == 4) {
      more = true;
      break;
    }
    terms.push_back(fmt::format("{} · v[{}]", share(r.values[j]), q(distinct_axis_label(c, w->dims.back(), j, r.batch))));
  }
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

std::string explain_merged(const Trace& t, const Step&, const ExplainBlock&) {
  const auto& c = t.config;
  if (c.general) {
    // claim: merged
    return fmt::format("Transpose back to [.., T, H, hv] and read as [.., T, dv]: head h's hv = {} features land in columns h·{} .. "
                       "h·{}+{}, so every head's findings sit side by side in dv = {} columns{}.",
                       c.hv, c.hv, c.hv, c.hv - 1, c.dv, c.dv == c.C ? ", the input's width again" : "");
  }
  // claim: merged
  return fmt::format("Transpose back to [.., T, H, hs] and read as [.., T, C]: head h's hs = {} features land in columns h·{} .. "
                     "h·{}+{}, so the result has the input's shape again, with every head's findings side by side.",
                     c.hs, c.hs, c.hs, c.hs - 1);
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


// The table: step id -> its explanation. Steps not listed (the KV cache's, a given additive mask)
// have none.
const std::map<std::string_view, Explainer>& explainers() {
  static const std::map<std::string_view, Explainer> kTable = {
      {"x", explain_x},           {"positions", explain_positions}, {"rope.cos", explain_rope_tables}, {"rope.sin", explain_rope_tables},
      {"q.norm", explain_qk_norm}, {"k.norm", explain_qk_norm},     {"q.rope", explain_rope},          {"k.rope", explain_rope},
      {"x.pos", explain_x_pos},   {"source", explain_source},       {"qkv", explain_qkv},              {"q", explain_q},
      {"k", explain_k},           {"v", explain_v},                 {"q.view", explain_view},          {"k.view", explain_view},
      {"v.view", explain_view},   {"q.heads", explain_heads},       {"k.heads", explain_heads},        {"v.heads", explain_heads},
      {"k.repeat", explain_repeat}, {"v.repeat", explain_repeat},   {"k.T", explain_kt},               {"scores", explain_scores},
      {"scaled", explain_scaled}, {"alibi", explain_alibi},         {"biased", explain_biased},        {"capped", explain_capped},
      {"mask", explain_mask},     {"masked", explain_masked},       {"weights", explain_weights},      {"context", explain_context},
      {"merged", explain_merged}, {"output", explain_output},
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
  for (const auto* table : {&explainers(), &backward_explainers()}) {
    const auto it = table->find(s.id);
    if (it != table->end()) return it->second(t, s, block);
  }
  return "";
}

}  // namespace attn
