// The explanations of the steps before the scores, one per step id: the embeddings and positions,
// RoPE and the q/k norms, the projections, the head split and grouped-query repeat, Kᵀ. The table
// input_explainers() is read by explain_step (explain.cpp) before the attention's own.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string_view>

#include "attn/core/text.hpp"
#include "attn/tools/explain.hpp"
#include "attn/tools/explain_detail.hpp"

namespace attn::explain_detail {

namespace {

// "head h owns features h·2 .. h·2+1", or "head h owns feature h" for heads of one feature.
std::string owned_features(std::int64_t h) {
  if (h == 1) return "head h owns feature h";
  return fmt::format("head h owns features h·{} .. h·{}+{}", h, h, h - 1);
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
                                 : t.config.lengths.empty()
                                 // claim: x-mixture
                                 ? "Attention will replace each row by a mixture of the value rows of the tokens it may see (itself "
                                   "included), weighted by how relevant each is to it."
                                 // claim: x-mixture-padding
                                 : "Attention will replace each row by a mixture of the value rows of the tokens it may see, weighted "
                                   "by how relevant each is to it: a real token's row sees itself, a padding row only the real tokens.";
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
  const Step* cos = t.find("rope.cos");
  const bool one_pair = cos != nullptr && cos->value.rank() >= 1 && cos->value.dim(-1) == 1 && c.rope_scaling.empty();
  // claim: rope-one-pair
  if (one_pair) return "RoPE's angles: position p turns the head's one pair of features (R = 2) by p · θ⁰ = p radians: one hand of a "
                       "clock, going once round about every 6.28 positions. These tables are all the rotation needs: each is "
                       "[positions, 1]." + scaled;
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
    return "The keys get the same rotation as the queries, each by its own position. A rotation keeps lengths, and in each pair of "
           "features the angle between the query's and the key's turns by (m − n) · θ_i, so the score of a query at m and a key at n "
           "depends on where they stand only through m − n.";
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
  const auto& notes = t.config.notes;
  const char* input = t.find("x.pos") != nullptr ? "x.pos" : "x";
  if (std::find(notes.begin(), notes.end(), "weights.W_q: identity") != notes.end()) {
    // claim: q-identity
    return fmt::format("Row i is token i's query: what it is looking for. Here W_q is the identity, so q = {}: each token looks for "
                       "exactly what it is (a learned W_q would let it look for something else).{}",
                       input, cross(t) ? " In cross-attention the queries come from the target sequence." : "");
  }
  // the product as the step's formula writes it (x · W_qᵀ in the torch layout, + b_q with a bias)
  const Step* made = t.find("qkv") != nullptr ? t.find("qkv") : t.find("q");
  const std::string& formula = made != nullptr ? made->formula : std::string();
  const auto eq = formula.find(" = ");
  const bool fused = t.find("qkv") != nullptr;
  std::string product = eq != std::string::npos ? formula.substr(eq + 3) : std::string(input) + " · W_q";
  if (const auto mark = product.find("   ("); mark != std::string::npos) product.resize(mark);  // a --mistake's mark
  // claim: q-projection
  return std::string("Row i is token i's query: what it is looking for. It is ") + (fused ? "the first block of columns of " : "") + product +
         (product.find("+ b_") != std::string::npos ? ", a learned projection plus a learned bias" : ", a learned projection") +
         ", so a token can look for something different from what it is." +
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
                     "matrix and all heads run in one batched product. {}",
                     c.H, s.id.starts_with("q") ? "T" : (cross(t) ? "S" : "T"), value ? "hv" : "hs", value ? c.hv : c.hs,
                     c.Hkv == c.H ? "Each head has its own slice of q, k and v, so it can attend to something different."
                                  // claim: heads-transpose-grouped
                                  : fmt::format("Each query head has its own slice of q, so it can attend to something different; the "
                                                "keys and values have only Hkv = {} heads, each shared by a group of {} query heads, so "
                                                "the heads of a group read the same keys and values.",
                                                c.Hkv, c.H / c.Hkv));
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

}  // namespace

// The table of the steps before the scores: step id -> its explanation.
const std::map<std::string_view, Explainer>& input_explainers() {
  static const std::map<std::string_view, Explainer> kTable = {
      {"x", explain_x}, {"positions", explain_positions}, {"rope.cos", explain_rope_tables}, {"rope.sin", explain_rope_tables},
      {"q.norm", explain_qk_norm}, {"k.norm", explain_qk_norm}, {"q.rope", explain_rope}, {"k.rope", explain_rope},
      {"x.pos", explain_x_pos}, {"source", explain_source}, {"qkv", explain_qkv}, {"q", explain_q}, {"k", explain_k}, {"v", explain_v},
      {"q.view", explain_view}, {"k.view", explain_view}, {"v.view", explain_view}, {"q.heads", explain_heads}, {"k.heads", explain_heads},
      {"v.heads", explain_heads}, {"k.repeat", explain_repeat}, {"v.repeat", explain_repeat}, {"k.T", explain_kt},
  };
  return kTable;
}

}  // namespace attn::explain_detail
