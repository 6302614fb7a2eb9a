// The explanations, one per step id. The ideas come from the seed documents (why Kᵀ, why 1/√d_k,
// what a row of weights means, why -inf, why heads are split and merged, what cross-attention
// means); the words are ours and the numbers are this run's.
#include "attn/explain.hpp"

#include "attn/render/layout.hpp"
#include "attn/render/render.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attn {
namespace {

std::string q(const std::string& s) { return fmt::format("\"{}\"", s); }

// "head h owns features h·2 .. h·2+1", or "head h owns feature h" for heads of one feature.
std::string owned_features(std::int64_t h) {
  if (h == 1) return "head h owns feature h";
  return fmt::format("head h owns features h·{} .. h·{}+{}", h, h, h - 1);
}

struct Row {
  std::int64_t batch = 0, head = 0, query = 0;
  const Scalar* values = nullptr;  // S entries
};

// The block explanations speak of (set by explain_step for the call: --batch, --head).
thread_local ExplainBlock g_block;

// Where block (batch, head) of a [.., T, S] step starts, in its values: other leading axes at 0.
std::int64_t block_offset(const Step& s, const ExplainBlock& b) {
  const auto& shape = s.value.shape();
  std::int64_t offset = 0, stride = 1;
  for (std::size_t ax = shape.size(); ax-- > 0;) {
    if (ax + 2 < shape.size() && ax < s.dims.size()) {
      const Dim d = s.dims[ax];
      const std::int64_t i = d == Dim::B ? b.batch : d == Dim::H ? b.head : 0;
      offset += std::min(i, shape[ax] - 1) * stride;
    }
    stride *= shape[ax];
  }
  return offset;
}

// The row of a [.., T, S] step to talk about: the first query of the chosen block whose largest
// entry is below 1 (a row that actually spreads its attention), else query 0.
Row pick_row(const Step& s) {
  const auto& shape = s.value.shape();
  const auto S = shape.back(), T = shape[shape.size() - 2];
  Row r;
  const std::int64_t base = block_offset(s, g_block);
  r.batch = g_block.batch, r.head = g_block.head;
  r.values = s.value.data() + base;
  for (std::int64_t i = 0; i < T; ++i) {
    const Scalar* row = s.value.data() + base + i * S;
    if (*std::max_element(row, row + S) < 0.999f) {
      r.query = i;
      r.values = row;
      break;
    }
  }
  return r;
}

// "In batch row 0, head 2, " or "": which block a sentence about one block speaks of.
std::string block_prefix(const Step& s) {
  std::vector<std::string> parts;
  for (const auto& d : s.dims) {
    if (d == Dim::B) parts.push_back(fmt::format("batch row {}", g_block.batch));
    if (d == Dim::H) parts.push_back(fmt::format("head {}", g_block.head));
  }
  return parts.empty() ? "" : fmt::format("In {}, ", fmt::join(parts, ", "));
}

// "In batch row 0, head 0, row" or "Row": how a sentence about one row of the block begins.
std::string row_words(const Step& s) {
  const auto prefix = block_prefix(s);
  return prefix.empty() ? "Row" : prefix + "row";
}

std::string key_name(const TraceConfig& c, Dim key_dim, std::int64_t j, std::int64_t i, bool self_keys) {
  if (self_keys && j == i) return "itself";
  return q(axis_label(c, key_dim, j, 0));
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
  for (std::size_t k = 0; k < order.size() && k < 3; ++k) {
    const auto j = order[k];
    if (r.values[j] < 0.005f) break;
    parts.push_back(fmt::format("{:.2f} {}on {}", r.values[j], k == 0 ? "of its attention " : "", key_name(c, key_dim, j, r.query, self_keys)));
  }
  if (parts.size() == 1) return parts[0];
  const auto last = parts.back();
  parts.pop_back();
  return fmt::format("{} and {}", fmt::join(parts, ", "), last);
}

// Which keys of the row the mask blocks (-inf in the masked step of the same shape); none without one.
std::vector<bool> blocked_keys(const Trace& t, const Step& s, const Row& r) {
  const auto S = s.value.shape().back();
  std::vector<bool> out(static_cast<std::size_t>(S), false);
  const Step* masked = blocking_step(t, s);
  if (masked == nullptr) return out;
  const auto offset = r.values - s.value.data();
  for (std::int64_t j = 0; j < S; ++j) out[static_cast<std::size_t>(j)] = blocked(masked, offset + j);
  return out;
}

// The step holding the heads-first rows of q or k ("q.heads"), or the flat one when H = 1.
const Step* rows_step(const Trace& t, const char* heads, const char* flat) {
  const Step* s = t.find(heads);
  return s != nullptr ? s : t.find(flat);
}

// One head row x (h features) turned by table row p of rope.cos and rope.sin, in double: what
// q.rope and k.rope do, for showing the same vectors at other positions.
std::vector<double> rotated(const Scalar* x, std::int64_t h, const Step& cos, const Step& sin, std::int64_t p, bool interleaved) {
  const auto pairs = cos.value.shape().back();
  std::vector<double> out(x, x + h);
  for (std::int64_t i = 0; i < pairs; ++i) {
    const std::int64_t u = interleaved ? 2 * i : i, w = interleaved ? u + 1 : i + pairs;
    const double c = cos.value.at(p * pairs + i), s = sin.value.at(p * pairs + i);
    out[static_cast<std::size_t>(u)] = x[u] * c - x[w] * s;
    out[static_cast<std::size_t>(w)] = x[w] * c + x[u] * s;
  }
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
  return fmt::format(" With this run's numbers: the first query and the first key (head 0, before rotation), placed at positions {} and {}, "
                     "score {}; the same two vectors at positions {} and {} score {}. Only the distance, 1, counts.",
                     p0 + 1, p0, f(score(1, 0)), p0 + 2, p0 + 1, f(score(2, 1)));
}

}  // namespace

namespace {

std::string explain_step_in_block(const Trace& t, const Step& s) {
  const auto& c = t.config;
  const bool cross = c.mode == Mode::Cross;
  const auto tok = [&](std::int64_t i) { return q(axis_label(c, Dim::T, i, g_block.batch)); };
  const auto& id = s.id;
  if (id == "x" && !s.note.empty()) {
    return fmt::format("Each row is one token's vector as it enters this layer's attention ({}): C = {} numbers. Attention will replace "
                       "each row by a mixture of rows, weighted by how relevant the other tokens are.",
                       s.note, c.C);
  }
  if (id == "x") {
    return fmt::format("Each row is one token's embedding: C = {} numbers that stand for that token. Attention will replace each row "
                       "by a mixture of rows, weighted by how relevant the other tokens are.",
                       c.C);
  }
  if (id == "positions") {
    if (c.learned_positions) {
      return "Attention itself ignores order: shuffle the tokens and each one gets the same mixture. So a learned row per position "
             "is added to the embeddings, and the same token at another position becomes a different vector.";
    }
    return fmt::format("Attention itself ignores order: shuffle the tokens and each one gets the same mixture. The original "
                       "Transformer adds these fixed waves to the embeddings: column pair i turns by 1/10000^(2i/C) radians per "
                       "position, so every position gets its own pattern, and position p + k is a fixed rotation of position p "
                       "(for every p), which a linear map can learn to read as \"k tokens later\". Here C = {}: {} pair{} of waves.",
                       c.C, (c.C + 1) / 2, (c.C + 1) / 2 == 1 ? "" : "s");
  }
  if (id == "rope.cos" || id == "rope.sin") {
    std::string scaled;
    if (!c.rope_bands.empty()) {
      const auto n = [&](char b) { return std::count(c.rope_bands.begin(), c.rope_bands.end(), b); };
      scaled = fmt::format(" Here the frequencies are scaled as Llama 3.1 does, {}: a model trained on short texts has seen the slow "
                           "pairs turn only part of a circle, so for longer texts those are slowed by the factor, while the fast pairs, "
                           "which have turned many times, keep theirs. {} pair{} {} (high band), {} {} smoothed between the two (middle "
                           "band), {} {} divided by the factor (low band).",
                           c.rope_scaling, n('h'), n('h') == 1 ? "" : "s", n('h') == 1 ? "keeps its frequency" : "keep their frequency", n('m'),
                           n('m') == 1 ? "is" : "are", n('l'), n('l') == 1 ? "is" : "are");
    } else if (!c.rope_scaling.empty()) {
      scaled = fmt::format(" Here the frequencies are scaled, {}: every pair turns that many times slower, as if the positions were "
                           "squeezed, so a longer text stays within the angles the model was trained on.",
                           c.rope_scaling);
    }
    return "RoPE's angles: position p turns pair i by p · θ^(−2i/R). Early pairs spin fast (fine position), late pairs slowly (coarse "
           "position), like the hands of a clock. These tables are all the rotation needs: each is [positions, R/2]." + scaled;
  }
  if (id == "q.norm" || id == "k.norm") {
    const auto& n = c.qk_norm;
    const std::string who = n.family.empty() ? std::string("The model") : n.family;
    const char* what = id == "q.norm" ? "queries" : "keys";
    const std::string weight = n.plus_one ? "by 1 + a learned weight (Gemma stores the weight's difference from 1)" : "by a learned weight";
    if (n.whole_width) {
      return fmt::format("{0} normalises the {1} as they leave the projection, before they are split into heads: all of a token's "
                         "features, every head's together, are divided by their root mean square, then multiplied feature by feature {2}. "
                         "One large head can shrink the others this way; Qwen3 and Gemma 3 normalise each head on its own instead. Either "
                         "way the scores are bounded by the weights, not by how large a layer's activations grew.",
                         who, what, weight);
    }
    return fmt::format("{0} normalises each head's {1} before rotating it: the features of one head are divided by their root mean "
                       "square (so the head's vector has length √hs), then multiplied feature by feature {2}. The dot "
                       "products that become the scores are then bounded by the weights, not by how large a layer's activations grew, "
                       "which keeps the softmax from saturating on one key.",
                       who, what, weight);
  }
  if (id == "q.rope" || id == "k.rope") {
    if (id == "k.rope") {
      return "The keys get the same rotation as the queries, each by its own position. A rotation keeps lengths, so only the angle "
             "between a query and a key changes: by the difference of their positions.";
    }
    return "Rotary position embedding: instead of adding positions to x, each pair of a head's query features is rotated by an angle "
           "proportional to the query's position (keys likewise). The dot product of two rotated vectors depends on the difference of "
           "the angles, so q_m · k_n depends on where the tokens are only through m − n." +
           rope_demonstration(t);
  }
  if (id == "x.pos") {
    std::string same;  // two tokens with the same embedding (batch row 0), now told apart
    if (const Step* x = t.find("x"); x != nullptr && x->value.rank() >= 2) {
      const auto T = x->value.dim(-2), C = x->value.dim(-1);
      const Scalar* v = x->value.data();
      for (std::int64_t i = 0; i < T && same.empty(); ++i)
        for (std::int64_t j = i + 1; j < T && same.empty(); ++j)
          if (std::equal(v + i * C, v + (i + 1) * C, v + j * C)) {
            same = fmt::format(" Here {} (row {}) and {} (row {}) have the same embedding in x; their rows here differ, by their "
                               "positions' rows alone.",
                               tok(i), i, tok(j), j);
          }
    }
    return "The embeddings plus their positions: from here on the projections read these rows, so q, k and v carry where each "
           "token stands as well as what it is." + same;
  }
  if (id == "source") {
    return fmt::format("Cross-attention: the queries come from the target sequence (x, T = {}), the keys and values from this source "
                       "sequence (S = {}). Each target token asks a question; the source tokens answer it.",
                       c.T, c.S);
  }
  if (id == "qkv") {
    if (c.general) {
      return fmt::format("One matrix product computes q, k and v side by side: W_qkv is [C, 2dk + dv] = [{}, {}]. The next steps "
                         "split it into blocks of dk = {}, dk = {} and dv = {} columns: the same numbers as three separate "
                         "projections, one product instead of three.",
                         c.C, 2 * c.dk + c.dv, c.dk, c.dk, c.dv);
    }
    return fmt::format("One matrix product computes q, k and v side by side: W_qkv is [C, 3C] = [{}, {}]. The next steps split it "
                       "into three blocks of C = {} columns: the same numbers as three separate projections, one product instead of three.",
                       c.C, 3 * c.C, c.C);
  }
  if (id == "q") {
    if (c.entry == Entry::QKV) return "The queries, given directly: row i is what token i is looking for.";
    return std::string("Row i is token i's query: what it is looking for. It is ") + (t.find("x.pos") != nullptr ? "x.pos" : "x") + " times W_q" +
           (t.find("qkv") != nullptr ? " (here the first block of columns of the fused W_qkv)" : "") +
           ", a learned projection, so a token can look for something different from what it is." +
           (cross ? " In cross-attention the queries come from the target sequence." : "");
  }
  if (id == "k") {
    return std::string("Row j is token j's key: what it offers to be found by. Comparing every query with every key decides who "
                       "attends to whom.") +
           (cross ? " The keys come from the source sequence." : "");
  }
  if (id == "v") {
    return "Row j is token j's value: what it passes on when attended to. Each output row will be a weighted average of these rows.";
  }
  const bool kv_group = c.Hkv != c.H && (id.starts_with("k") || id.starts_with("v"));
  if (kv_group && (id.ends_with(".view") || id.ends_with(".heads"))) {
    const bool value = id.starts_with("v");
    const auto h = value ? c.hv : c.hs;
    return fmt::format("Grouped-query attention: the {} have only Hkv = {} heads of {} = {}, not H = {}, so {} = {} features split into "
                       "Hkv heads{}. Each kv head will serve H / Hkv = {} query heads.",
                       value ? "values" : "keys", c.Hkv, value ? "hv" : "hs", h, c.H, value ? "Hkv·hv" : "Hkv·hs", c.Hkv * h,
                       id.ends_with(".view") ? " (a view: nothing moves)" : ", heads first", c.H / c.Hkv);
  }
  if (id == "k.repeat" || id == "v.repeat") {
    const std::int64_t n = c.H / c.Hkv;
    const bool key = id == "k.repeat";
    const auto per_token = c.Hkv * (c.hs + (c.hv > 0 ? c.hv : c.hs)) * 4, full = c.H * (c.hs + (c.hv > 0 ? c.hv : c.hs)) * 4;
    if (!key) {
      return fmt::format("The values are lined up the same way: query head h mixes the values of kv head ⌊h / {}⌋, so heads of a "
                         "group attend differently but read the same value rows.",
                         n);
    }
    return fmt::format("{}: k and v have only Hkv = {} heads, and each serves H / Hkv = {} query heads. repeat_kv copies kv head g "
                       "to query heads {}·g .. {}·g + {}, in a row (an interleave, not a tile), so head h's queries meet kv head ⌊h / {}⌋'s "
                       "keys. The copy is only for the product: a cache of past keys and values keeps the Hkv heads, {} bytes per token "
                       "instead of {} with H heads ({}× less memory to read per generated token).",
                       c.Hkv == 1 ? "Multi-query attention (one kv head)" : "Grouped-query attention", c.Hkv, n, n, n, n - 1, n, per_token,
                       full, n);
  }
  if (id.ends_with(".view") && c.general) {
    const bool value = id.starts_with("v");
    const auto width = value ? c.dv : c.dk, h = value ? c.hv : c.hs;
    const char* hn = value ? "hv" : "hs";
    return fmt::format("Splitting {} = {} features into H = {} heads of {} = {} is only a view: the same numbers read as [.., H, {}]. "
                       "Nothing moves in memory; {}.",
                       value ? "dv" : "dk", width, c.H, hn, h, hn, owned_features(h));
  }
  if (id.ends_with(".view")) {
    return fmt::format("Splitting C = {} features into H = {} heads of hs = {} is only a view: the same numbers read as [.., H, hs]. "
                       "Nothing moves in memory; {}.",
                       c.C, c.H, c.hs, owned_features(c.hs));
  }
  if (id.ends_with(".heads")) {
    const bool value = id.starts_with("v") && c.general;
    return fmt::format("The transpose puts the head axis before the tokens, so each of the H = {} heads is its own [{}, {} = {}] "
                       "matrix and all heads run in one batched product. Each head has its own slice of q, k and v, so it can "
                       "attend to something different.",
                       c.H, id.starts_with("q") ? "T" : (cross ? "S" : "T"), value ? "hv" : "hs", value ? c.hv : c.hs);
  }
  if (id == "k.T") {
    return "Kᵀ turns each key into a column, so one matrix product q · kᵀ compares every query with every key: entry [i, j] is "
           "the dot product q_i · k_j. The context step needs no transpose: weights · v already sums rows of v.";
  }
  if (id == "scores") {
    if (c.entry == Entry::Scores) return "The scores, given directly: entry [i, j] is how well query i matches key j.";
    Row r = pick_row(s);
    const auto S = s.value.shape().back(), T = s.value.shape()[s.value.shape().size() - 2];
    auto blocked = blocked_keys(t, s, r);
    // a row that may see more than one key makes the better example (a causal first row sees itself only)
    for (std::int64_t i = 0; std::count(blocked.begin(), blocked.end(), false) < 2 && i < T; ++i) {
      Row other = r;
      other.query = i;
      other.values = s.value.data() + i * S;
      const auto b = blocked_keys(t, s, other);
      if (std::count(b.begin(), b.end(), false) >= 2) r = other, blocked = b;
    }
    // the best key the query may see (the mask is about to block the others), and any tied with it
    std::int64_t best = -1;
    for (std::int64_t j = 0; j < S; ++j)
      if (!blocked[static_cast<std::size_t>(j)] && (best < 0 || r.values[j] > r.values[best])) best = j;
    if (best < 0) return "Entry [i, j] is the dot product of query i and key j: large when they point the same way.";
    std::vector<std::string> tops;
    for (std::int64_t j = 0; j < S; ++j)
      if (!blocked[static_cast<std::size_t>(j)] && r.values[j] == r.values[best]) tops.push_back(key_name(c, s.dims.back(), j, r.query, s.dims.back() == Dim::T));
    const auto highest = tops.size() == 1 ? fmt::format("highest against {} ({:.2f})", tops[0], r.values[best])
                                          : fmt::format("highest, {:.2f}, against {} alike", r.values[best], fmt::join(tops, " and "));
    const bool some_blocked = std::find(blocked.begin(), blocked.end(), true) != blocked.end();
    return fmt::format("Entry [i, j] is the dot product of query i and key j: large when they point the same way. {} {} scores {}{}.",
                       row_words(s), tok(r.query), highest, some_blocked ? " among the keys it may see (the mask blocks the others next)" : "");
  }
  if (id == "scaled") {
    if (c.hs > 0 && c.scale.starts_with("1/√")) {
      return fmt::format("Why divide by √d_k: if the entries of q and k have mean 0 and variance 1, q · k is a sum of d_k = {} products, "
                         "so its variance is {} (a spread of about ±{:.2f}). Multiplying by 1/√{} = {:.4f} brings the variance back "
                         "to 1, so softmax gets moderate inputs and does not put nearly all the weight on the largest score.",
                         c.hs, c.hs, std::sqrt(static_cast<double>(c.hs)), c.hs, c.scale_factor);
    }
    if (!c.scale_source.empty()) {
      return fmt::format("The scores are multiplied by {} ({}), not by 1/√hs = 1/√{} = {:.4f}: the model's config sets the scale with a "
                         "number of its own rather than the head size (they agree when that number is hs). The aim is the same: keep "
                         "the scores' spread moderate, so that softmax does not put nearly all the weight on one key.",
                         c.scale_factor, c.scale_source, c.hs, 1.0 / std::sqrt(static_cast<double>(c.hs)));
    }
    return fmt::format("The scores are multiplied by the given factor {}.", c.scale_factor);
  }
  if (id == "alibi") {
    const Step* b = &s;
    const auto T = b->value.shape()[b->value.rank() - 2], S = b->value.shape().back();
    std::string example;
    if (T > 2 && S > 2) {
      example = fmt::format(" Here head 0, query {}: its own key costs {}, the key 1 behind {}, the key 2 behind {}.", tok(2),
                            format_fixed(b->value.at(2 * S + 2), 4), format_fixed(b->value.at(2 * S + 1), 4), format_fixed(b->value.at(2 * S + 0), 4));
    }
    return "ALiBi (Attention with Linear Biases) adds no positions to x. It lowers each score in proportion to how far the key lies "
           "behind the query, with a different slope per head: steep heads look at the last few tokens, gentle ones far back. Because "
           "the penalty only grows with distance, a model trained on short texts still behaves on longer ones." + example;
  }
  if (id == "biased") {
    return std::string("The scaled scores plus the ALiBi bias: what ") + (t.find("capped") != nullptr ? "soft-capping, then " : "") +
           "the mask and the softmax read.";
  }
  if (id == "capped") {
    return "Soft-capping (Gemma 2) squashes every score smoothly into (−c, c) with tanh: a score far beyond c cannot dominate the "
           "softmax, while a small one passes almost unchanged, since tanh x ≈ x near 0.";
  }
  if (id == "mask") {
    std::string words;
    if (c.causal && c.window > 0) {
      // the last row of batch row 0, read from the mask itself: its first and last visible keys, and
      // the key just before the window (out of reach), when there is one
      const auto S = s.value.shape().back(), i = c.T - 1;
      const Dim kd = s.dims.empty() ? Dim::S : s.dims.back();
      const auto key = [&](std::int64_t j) { return q(axis_label(c, kd, j, 0)); };
      std::int64_t first = -1, last = -1;
      for (std::int64_t j = 0; j < S; ++j)
        if (s.value.at(i * S + j) != 0) last = j, first = first < 0 ? j : first;
      words = fmt::format("A sliding-window causal mask (W = {}): each query sees its own key and the {} before it, never a later one, "
                          "and nothing further back than its window.",
                          c.window, c.window - 1);
      if (first >= 0) {
        words += fmt::format(" Row {} may look at {}{}.", tok(i), first == last ? key(first) : fmt::format("{} .. {}", key(first), key(last)),
                             first > 0 ? fmt::format(" but not at {}, out of its window", key(first - 1)) : "");
      }
    } else if (c.causal) {
      const auto i = std::min<std::int64_t>(1, c.T - 1);
      words = fmt::format("A causal (look-ahead) mask: query i may attend to keys 0 .. i only, so no token sees the future. Row {} may "
                          "look at {}{}.",
                          tok(i), i == 0 ? "itself" : fmt::format("{} and itself", tok(0)),
                          c.T > i + 1 ? fmt::format(" but not at {}", tok(i + 1)) : "");
    }
    if (!c.lengths.empty()) {
      if (!words.empty()) words += " ";
      words += fmt::format("Padding: keys at or past a batch row's length (lengths {}) are padding, and nobody attends to them.",
                           fmt::format("[{}]", fmt::join(c.lengths, ", ")));
    }
    return words;
  }
  if (id == "masked") {
    return "Blocked scores become −inf before softmax. exp(−inf) is exactly 0, so blocked keys get exactly zero weight and the "
           "other weights of the row still sum to 1. A large negative number such as −1e9 gives the same weights here, but "
           "would turn a fully blocked row into a uniform one instead of an error.";
  }
  if (id == "weights") {
    const Row r = pick_row(s);
    return fmt::format("Softmax turns each row of scores into a probability distribution over the keys: every weight is between "
                       "0 and 1 and each row sums to 1 (the row maximum is subtracted first, which changes nothing but keeps exp "
                       "from overflowing). {} {} puts {}.",
                       row_words(s), tok(r.query), attention_words(c, s, r));
  }
  if (id == "context" && c.fused) {
    return "The same context vectors as softmax(scores) · v, computed without ever holding the scores or the weights: the keys "
           "come a block at a time, and for each query row the pass keeps only the largest score so far, the sum of exp(score − "
           "largest) and the weighted sum of value rows. When a later block holds a larger score, what was summed is multiplied "
           "by exp(old largest − new largest), which is what it would have been had the new largest been known from the start. "
           "At the end the weighted sum divided by the sum is the context row (FlashAttention). Memory grows with T, not with "
           "T × S; run without --fused to see the scores and weights this pass never keeps.";
  }
  if (id == "context") {
    const Step* w = t.find("weights");
    if (w == nullptr) return "";
    const Row r = pick_row(*w);
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
      terms.push_back(fmt::format("{:.2f} · v[{}]", r.values[j], q(axis_label(c, w->dims.back(), j, 0))));
    }
    const bool some_blocked = std::find(blocked.begin(), blocked.end(), true) != blocked.end();
    return fmt::format("Each row is a weighted average of the value rows, with that query's weights. {}context[{}] = {}{}.{}",
                       block_prefix(*w), tok(r.query), fmt::join(terms, " + "), more ? " + …" : "",
                       some_blocked ? " Masked keys add nothing: their weight is exactly 0." : "");
  }
  if (id == "merged" && c.general) {
    return fmt::format("Transpose back to [.., T, H, hv] and read as [.., T, dv]: head h's hv = {} features land in columns h·{} .. "
                       "h·{}+{}, so every head's findings sit side by side in dv = {} columns{}.",
                       c.hv, c.hv, c.hv, c.hv - 1, c.dv, c.dv == c.C ? ", the input's width again" : "");
  }
  if (id == "merged") {
    return fmt::format("Transpose back to [.., T, H, hs] and read as [.., T, C]: head h's hs = {} features land in columns h·{} .. "
                       "h·{}+{}, so the result has the input's shape again, with every head's findings side by side.",
                       c.hs, c.hs, c.hs, c.hs - 1);
  }
  if (id == "output") {
    if (c.H > 1) return "W_o mixes the concatenated heads' features, so what one head found can combine with what another found.";
    if (c.general && c.Co != c.C) return fmt::format("W_o projects the dv = {} wide context vectors to Co = {} features.", c.dv, c.Co);
    return "W_o projects the context vectors back into the model's space, ready for the next layer.";
  }
  return "";
}

// ---- one entry ---------------------------------------------------------------------------------

// A flat index split into the step's axes; `lead` is the index over every axis but the last two.
struct Cell {
  std::vector<std::int64_t> at;
  std::int64_t lead = 0, row = 0, col = 0, rows = 1, cols = 1;
};

Cell cell_of(const Step& s, std::int64_t flat) {
  Cell c;
  const auto& shape = s.value.shape();
  c.at.assign(shape.size(), 0);
  std::int64_t rest = flat;
  for (std::size_t k = shape.size(); k-- > 0;) {
    c.at[k] = rest % shape[k];
    rest /= shape[k];
  }
  const auto r = shape.size();
  c.cols = r >= 1 ? shape[r - 1] : 1;
  c.rows = r >= 2 ? shape[r - 2] : 1;
  c.col = r >= 1 ? c.at[r - 1] : 0;
  c.row = r >= 2 ? c.at[r - 2] : 0;
  c.lead = flat / (c.rows * c.cols);
  return c;
}

std::string num(double v) {
  if (std::isinf(v)) return v < 0 ? "−∞" : "+∞";
  if (std::isnan(v)) return "nan";
  return format_fixed(static_cast<Scalar>(v), 4);
}

std::string index_text(const Step& s, const Cell& c) { return fmt::format("{}[{}]", s.id, fmt::join(c.at, ", ")); }

// The batch row of a cell, for token labels: its B axis when the step has one.
std::int64_t batch_of(const Step& s, const Cell& c) {
  for (std::size_t k = 0; k < s.dims.size(); ++k)
    if (s.dims[k] == Dim::B) return c.at[k];
  return 0;
}

// "a×b + c×d + … (64 terms)": the terms of a dot product, the first few written out.
std::string terms(const std::vector<std::pair<Scalar, Scalar>>& t, std::size_t total) {
  constexpr std::size_t kShown = 6;
  std::vector<std::string> parts;
  const auto operand = [](Scalar x) { return x < 0 ? fmt::format("({})", num(x)) : num(x); };  // 0.91×(-3.42), not 0.91×-3.42
  for (std::size_t k = 0; k < std::min(kShown, t.size()); ++k) parts.push_back(fmt::format("{}×{}", operand(t[k].first), operand(t[k].second)));
  std::string out = fmt::format("{}", fmt::join(parts, " + "));
  if (total > kShown) out += fmt::format(" + … ({} terms)", total);
  return out;
}

// "b, h, " or "h, " or "": the leading indices of a cell (batch row, head), for naming operands.
std::string lead_text(const Cell& c) {
  std::string out;
  for (std::size_t k = 0; k + 2 < c.at.size(); ++k) out += fmt::format("{}, ", c.at[k]);
  return out;
}

// "q.heads[1, 2]" (head 1's query 2) or "q[2]" when there is one head: a row of an operand step.
std::string operand_row(const Step& operand, const Cell& c, std::int64_t row) {
  std::string lead;
  const auto r = operand.value.shape().size();
  for (std::size_t k = 0; k + 2 < r && k + 2 < c.at.size(); ++k) lead += fmt::format("{}, ", c.at[k]);
  return fmt::format("{}[{}{}]", operand.id, lead, row);
}


// The logits the mask and the softmax read: capped, biased, scaled or the scores, the last one run.
const Step* logits_step(const Trace& t) {
  for (const char* id : {"capped", "biased", "scaled"})
    if (const Step* s = t.find(id)) return s;
  return t.find("scores");
}

// The key rows k.repeat copies: rotated when RoPE ran, else the kv heads.
const Step* score_rows_step_before_repeat(const Trace& t) {
  if (const Step* s = t.find("k.rope")) return s;
  return rows_step(t, "k.heads", "k");
}

// The rows the scores multiply: rotated when RoPE ran ("q.rope"), else the heads.
const Step* score_rows_step(const Trace& t, char which) {
  const std::string id(1, which);
  if (const Step* s = which == 'k' ? t.find("k.repeat") : nullptr) return s;  // grouped-query: the kv heads lined up
  if (const Step* s = t.find(id + ".rope")) return s;
  return rows_step(t, (id + ".heads").c_str(), id.c_str());
}

}  // namespace

std::string explain_step(const Trace& t, const Step& s, ExplainBlock block) {
  g_block = block;
  std::string text = explain_step_in_block(t, s);
  g_block = {};
  return text;
}

std::string explain_cell(const Trace& t, const Step& s, std::int64_t flat) {
  const auto& c = t.config;
  const Cell e = cell_of(s, flat);
  const Scalar v = s.value.at(flat);
  const std::int64_t b = batch_of(s, e);
  const std::string here = fmt::format("{} = {}", index_text(s, e), num(v));
  const auto qtok = [&](std::int64_t i) { return q(axis_label(c, Dim::T, i, b)); };
  // keys are labelled along the step's own last axis (S with given scores of another length, or cross mode)
  const Dim key_dim = !s.dims.empty() && (s.dims.back() == Dim::S || s.dims.back() == Dim::T) ? s.dims.back() : (c.mode == Mode::Cross ? Dim::S : Dim::T);
  const auto ktok = [&](std::int64_t j) { return q(axis_label(c, key_dim, j, b)); };
  const std::string lead = lead_text(e);  // "b, " (and "h, ") before a row index, as the step's own index reads
  const auto& id = s.id;
  if (id == "positions") {
    if (c.learned_positions) return fmt::format("{}\nlearned: feature {} of position {}'s row", here, e.col, e.row);
    return fmt::format("{}\n= {}({} / 10000^({}/{})): position {}, column pair {}", here, e.col % 2 == 0 ? "sin" : "cos", e.row,
                       e.col - e.col % 2, c.C, e.row, e.col / 2);
  }
  if (id == "x.pos") {
    const Step* x = t.find("x");
    const Step* p = t.find("positions");
    if (x == nullptr || p == nullptr) return here;
    const auto C = p->value.shape().back();
    return fmt::format("{}\n= x[…] + positions[{}, {}] = {} + {}: token {}'s feature {} plus its position's", here, e.row, e.col,
                       num(x->value.at(flat)), num(p->value.at(e.row * C + e.col)), qtok(e.row), e.col);
  }
  if (id == "rope.cos" || id == "rope.sin") {
    const auto R = 2 * s.value.shape().back();
    if (!c.rope_scaling.empty()) {
      const char band = static_cast<std::size_t>(e.col) < c.rope_bands.size() ? c.rope_bands[static_cast<std::size_t>(e.col)] : ' ';
      return fmt::format("{}\n= {}({} · θ_{}): position {}, pair {}{}", here, id == "rope.cos" ? "cos" : "sin", c.first_position + e.row, e.col,
                         c.first_position + e.row, e.col,
                         band == 'h'   ? ", in the high-frequency band: θ^(−2i/R) kept"
                         : band == 'm' ? ", in the middle band: smoothed between θ^(−2i/R) and θ^(−2i/R) / factor"
                         : band == 'l' ? ", in the low-frequency band: θ^(−2i/R) / factor"
                                       : fmt::format(", θ_i scaled ({})", c.rope_scaling));
    }
    return fmt::format("{}\n= {}({} · θ^(−2·{}/{})): position {}, pair {}", here, id == "rope.cos" ? "cos" : "sin", c.first_position + e.row,
                       e.col, R, c.first_position + e.row, e.col);
  }
  if (id == "q.rope" || id == "k.rope") {
    const bool query = id == "q.rope";
    const Step* in = t.find(query ? "q.norm" : "k.norm") != nullptr ? t.find(query ? "q.norm" : "k.norm")
                                                                    : rows_step(t, query ? "q.heads" : "k.heads", query ? "q" : "k");
    const Step* cs = t.find("rope.cos");
    const Step* sn = t.find("rope.sin");
    if (in == nullptr || cs == nullptr || sn == nullptr) return here;
    const auto pairs = cs->value.shape().back();
    const auto f = e.col;
    if (f >= 2 * pairs) return fmt::format("{}\n= {}[…, {}]: past the R = {} rotated features, unchanged", here, in->id, f, 2 * pairs);
    const bool interleaved = c.rope_interleaved;
    const bool second = interleaved ? f % 2 == 1 : f >= pairs;
    const std::int64_t i = interleaved ? f / 2 : (second ? f - pairs : f);
    const std::int64_t u = interleaved ? 2 * i : i, w = interleaved ? u + 1 : i + pairs;
    const std::int64_t position = (query ? c.query_first_position : c.key_first_position) + e.row;
    const std::int64_t row = position - c.first_position;
    const Scalar* x = in->value.data() + (flat - f);
    const Scalar cv = cs->value.at(row * pairs + i), sv = sn->value.at(row * pairs + i);
    const auto op = [](Scalar v) { return v < 0 ? fmt::format("({})", num(v)) : num(v); };  // 0.54 × (−0.42), not 0.54 × −0.42
    const std::string terms_text = second ? fmt::format("{} × {} + {} × {}", op(x[w]), op(cv), op(x[u]), op(sv))
                                          : fmt::format("{} × {} − {} × {}", op(x[u]), op(cv), op(x[w]), op(sv));
    return fmt::format("{}\n= {}[…, {}]·cos {} {}[…, {}]·sin: pair {} (features {} and {}) turned by position {}'s angle\n= {}", here, in->id,
                       second ? w : u, second ? "+" : "−", in->id, second ? u : w, i, u, w, position, terms_text);
  }
  if (id == "x" || id == "source") {
    return fmt::format("{}\nfeature {} of token {}'s embedding (an input)", here, e.col,
                       id == "x" ? qtok(e.row) : q(axis_label(c, Dim::S, e.row, b)));
  }
  if (id == "q" || id == "k" || id == "v" || id == "qkv" || id == "output") {
    const bool given = c.entry == Entry::QKV && id != "output";
    if (given) return fmt::format("{}\ngiven as input", here);
    const std::string w = id == "qkv" ? "W_qkv" : id == "output" ? "W_o" : "W_" + id;
    const Step* in = t.find(id == "output" ? (t.find("merged") != nullptr ? "merged" : "context") : (id == "q" || id == "qkv" || c.mode != Mode::Cross ? (t.find("x.pos") != nullptr ? "x.pos" : "x") : "source"));
    std::string row;
    if (in != nullptr && in->value.shape().size() >= 2) {
      const auto width = in->value.shape().back();
      std::vector<std::string> xs;
      for (std::int64_t k = 0; k < std::min<std::int64_t>(width, 6); ++k) xs.push_back(num(in->value.at((e.lead * e.rows + e.row) * width + k)));
      row = fmt::format("\n{}[{}{}] = [{}{}]", in->id, lead, e.row, fmt::join(xs, ", "), width > 6 ? ", …" : "");
    }
    return fmt::format("{}\n= {}[{}{}, :] · {}[:, {}]: row {} of {} times column {} of {} (a weight, an input not shown as a step){}", here,
                       in != nullptr ? in->id : "x", lead, e.row, w, e.col, e.row, in != nullptr ? in->id : "x", e.col, w, row);
  }
  if (id == "q.view" || id == "k.view" || id == "v.view") {
    const auto r = e.at.size();
    const auto h = e.at[r - 2], d = e.at[r - 1], width = s.value.shape()[r - 1];
    const std::string batch = r > 3 ? fmt::format("{}, ", e.at[0]) : "";
    return fmt::format("{}\n= {}[{}{}, {}]: the same number, column {} = {}·{} + {} regrouped as head {}, feature {}", here, id.substr(0, 1),
                       batch, e.at[r - 3], h * width + d, h * width + d, h, width, d, h, d);
  }
  if (id == "k.repeat" || id == "v.repeat") {
    const auto r = e.at.size();
    const std::int64_t n = c.H / c.Hkv, h = e.at[r - 3];
    const Step* in = id == "k.repeat" ? score_rows_step_before_repeat(t) : rows_step(t, "v.heads", "v");
    return fmt::format("{}\n= {}[{}{}{}, {}]: query head {} reads kv head ⌊{} / {}⌋ = {}", here, in != nullptr ? in->id : "k", r > 3 ? fmt::format("{}, ", e.at[0]) : "",
                       c.Hkv > 1 ? fmt::format("{}, ", h / n) : "", e.at[r - 2], e.at[r - 1], h, h, n, h / n);
  }
  if (id == "q.heads" || id == "k.heads" || id == "v.heads") {
    const auto r = e.at.size();
    const std::string batch = r > 3 ? fmt::format("{}, ", e.at[0]) : "";
    return fmt::format("{}\n= {}.view[{}{}, {}, {}]: the same number, heads first", here, id.substr(0, 1), batch, e.at[r - 2], e.at[r - 3],
                       e.at[r - 1]);
  }
  if (id == "k.T") {
    const Step* ks = score_rows_step(t, 'k');
    return fmt::format("{}\n= {}[…, {}, {}]: key {} ({}), feature {}, transposed", here, ks != nullptr ? ks->id : "k.heads", e.col, e.row, e.col,
                       ktok(e.col), e.row);
  }
  if (id == "scores") {
    const Step* qs = score_rows_step(t, 'q');
    const Step* ks = score_rows_step(t, 'k');
    if (qs == nullptr || ks == nullptr) return fmt::format("{}\ngiven as input", here);
    const auto hs = qs->value.shape().back();
    std::vector<std::pair<Scalar, Scalar>> tv;
    for (std::int64_t d = 0; d < hs; ++d)
      tv.emplace_back(qs->value.at((e.lead * e.rows + e.row) * hs + d), ks->value.at((e.lead * e.cols + e.col) * hs + d));
    return fmt::format("{}\n= {} · {}: how well query {} matches key {}\n= {}", here, operand_row(*qs, e, e.row), operand_row(*ks, e, e.col),
                       qtok(e.row), ktok(e.col), terms(tv, static_cast<std::size_t>(hs)));
  }
  if (id == "scaled") {
    const Step* sc = t.find("scores");
    return fmt::format("{}\n= scores[…] × the scale = {} × {}\n(the scale: {})", here, sc != nullptr ? num(sc->value.at(flat)) : "?",
                       num(c.scale_factor), c.scale);
  }
  if (id == "mask") {
    return v != 0 ? fmt::format("{}\nquery {} may attend to key {}", here, qtok(e.row), ktok(e.col))
                  : fmt::format("{}\nquery {} may not attend to key {}: blocked", here, qtok(e.row), ktok(e.col));
  }
  if (id == "alibi") {
    if (c.S != c.T) return fmt::format("{}\n−(the head's slope) × (the query's position − key {}'s)", here, ktok(e.col));
    const auto d = e.row - e.col;
    return fmt::format("{}\nkey {} lies {} position{} {} query {}: {} × the head's slope", here, ktok(e.col), d < 0 ? -d : d,
                       (d == 1 || d == -1) ? "" : "s", d < 0 ? "after" : "behind", qtok(e.row), -d);
  }
  if (id == "biased") {
    const Step* sc = t.find("scaled") != nullptr ? t.find("scaled") : t.find("scores");
    const Step* al = t.find("alibi");
    if (sc == nullptr || al == nullptr) return here;
    const auto plane = al->value.size() / std::max<std::int64_t>(1, c.H);  // T·S
    const auto h = e.lead % std::max<std::int64_t>(1, c.H);
    return fmt::format("{}\n= {}[…] + alibi[…] = {} + {}", here, sc->id, num(sc->value.at(flat)), num(al->value.at(h * plane + e.row * e.cols + e.col)));
  }
  if (id == "capped") {
    const Step* in = t.find("biased") != nullptr ? t.find("biased") : t.find("scaled") != nullptr ? t.find("scaled") : t.find("scores");
    if (in == nullptr) return here;
    const std::string cap = c.softcap > 0 ? fmt::format("{:g}", c.softcap) : "c";
    return fmt::format("{}\n= {} · tanh({}[…] / {}) = {} · tanh({} / {})", here, cap, in->id, cap, cap, num(in->value.at(flat)), cap);
  }
  if (id == "mask.add") return fmt::format("{}\nadded to the scaled score before the softmax", here);
  if (id == "masked") {
    if (std::isinf(v) && v < 0) return fmt::format("{}\nblocked by the mask: −∞, so its weight will be exactly 0", here);
    const Step* before = logits_step(t);
    return fmt::format("{}\n= {}: kept{}", here, before != nullptr ? fmt::format("{}[…] = {}", before->id, num(before->value.at(flat))) : "the score",
                       t.find("mask.add") != nullptr ? " (plus the additive mask)" : "");
  }
  if (id == "weights") {
    const Step* logits = t.find("masked");
    if (logits == nullptr || logits->value.shape() != s.value.shape()) logits = logits_step(t);
    if (logits == nullptr) return here;
    const std::int64_t row0 = flat - e.col;
    double mx = -std::numeric_limits<double>::infinity();
    for (std::int64_t j = 0; j < e.cols; ++j) mx = std::max(mx, static_cast<double>(logits->value.at(row0 + j)));
    const double x = logits->value.at(flat);
    if (std::isinf(mx) && mx < 0) {  // no key left in the row: the masked_row policy fills it
      return fmt::format("{}\nquery {} may see no key at all: the row is filled by the \"masked_row\" policy ({})", here, qtok(e.row),
                         std::isnan(v) ? "nan" : v == 0 ? "zeros" : "uniform, 1/S each");
    }
    if (std::isinf(x) && x < 0) return fmt::format("{}\nexp(−∞) = 0: key {} is blocked", here, ktok(e.col));
    double sum = 0;
    std::vector<std::string> parts;
    std::int64_t blocked_keys = 0;
    for (std::int64_t j = 0; j < e.cols; ++j) {
      const double xj = logits->value.at(row0 + j);
      if (std::isinf(xj) && xj < 0) {
        ++blocked_keys;
        continue;
      }
      sum += std::exp(xj - mx);
      if (parts.size() < 6) parts.push_back(num(std::exp(xj - mx)));
    }
    const std::int64_t live = e.cols - blocked_keys;
    const auto bracket = [](double y) { return y < 0 ? fmt::format("({})", num(y)) : num(y); };
    return fmt::format("{}\n= exp({} − max) / Σ exp(row − max), max = {}\n= exp({} − {}) / {} = {} / {}\nΣ = {}{} = {}{}\nquery {} puts {} of its "
                       "attention on key {}",
                       here, logits->id, num(mx), num(x), bracket(mx), num(sum), num(std::exp(x - mx)), num(sum), fmt::join(parts, " + "),
                       live > 6 ? fmt::format(" + … ({} keys)", live) : "", num(sum),
                       blocked_keys > 0 ? fmt::format(" ({} blocked key{} add{} 0)", blocked_keys, blocked_keys == 1 ? "" : "s", blocked_keys == 1 ? "s" : "") : "",
                       qtok(e.row), num(v), ktok(e.col));
  }
  if (id == "context") {
    const Step* w = t.find("weights");
    const Step* vs = t.find("v.repeat") != nullptr ? t.find("v.repeat") : rows_step(t, "v.heads", "v");
    if (w == nullptr || vs == nullptr) return here;
    const auto S = w->value.shape().back(), hv = vs->value.shape().back();
    std::vector<std::pair<Scalar, Scalar>> tv;
    std::int64_t blocked_terms = 0;
    for (std::int64_t j = 0; j < S; ++j) {
      const Scalar wj = w->value.at((e.lead * e.rows + e.row) * S + j);
      if (wj == 0) {
        ++blocked_terms;
        continue;
      }
      tv.emplace_back(wj, vs->value.at((e.lead * S + j) * hv + e.col));
    }
    return fmt::format("{}\n= Σ over keys j of weights[{}{}, j] × {}[{}j, {}]: query {}'s mixture of values, feature {}\n= {}{}", here, lead,
                       e.row, vs->id, lead, e.col, qtok(e.row), e.col, terms(tv, tv.size()),
                       blocked_terms > 0 ? fmt::format("\n({} key{} with weight 0 add{} nothing)", blocked_terms, blocked_terms == 1 ? "" : "s",
                                                       blocked_terms == 1 ? "s" : "") : "");
  }
  if (id == "merged") {
    const auto hv = c.hv > 0 ? c.hv : c.hs;
    const auto h = hv > 0 ? e.col / hv : 0, d = hv > 0 ? e.col % hv : e.col;
    return fmt::format("{}\n= context[{}{}, {}, {}]: head {}'s feature {} placed at column {}·{} + {}", here, lead, h, e.row, d, h, d, h, hv, d);
  }
  return here;
}

}  // namespace attn

