// attn decode --explain's words for the KV cache (explain_decode.hpp): every number is this run's, read
// from the prefill's and the decoded tokens' traces and the rows compared; a general fact is stated only
// where this run meets its premises (the mask's fill, the window, RoPE, positions, ALiBi, the heads).
#include "attn/tools/explain_decode.hpp"

#include <fmt/format.h>

namespace attn {
namespace {

// What the explanations say about this run, read from its traces.
struct CacheFacts {
  std::int64_t P = 0, T = 0, H = 1, Hkv = 1, hs = 0, hv = 0, window = 0;
  std::int64_t bytes = 0;  // per token, for this layer (per batch row when batched)
  bool batched = false, rope = false, positions = false, alibi = false;
  std::string fill;  // what a blocked score becomes, as the masked step's formula writes it ("−inf", "−1")
};

CacheFacts facts(const Decode& d) {
  const Trace& t = d.prefill_trace;
  const auto& c = t.config;
  CacheFacts f;
  f.P = d.prefill, f.T = d.prefill + static_cast<std::int64_t>(d.tokens.size());
  f.H = c.H, f.Hkv = c.Hkv, f.hs = c.hs, f.hv = c.hv > 0 ? c.hv : c.hs, f.window = c.window, f.batched = c.batched;
  f.bytes = f.Hkv * (f.hs + f.hv) * 4;
  f.rope = t.find("k.rope") != nullptr;
  f.positions = t.find("x.pos") != nullptr;
  f.alibi = t.find("alibi") != nullptr;
  f.fill = "−inf";
  if (const Step* m = t.find("masked")) {  // "masked = scaled where mask = 1, −inf where mask = 0"
    const auto from = m->formula.find("mask = 1, "), to = m->formula.find(" where mask = 0");
    if (from != std::string::npos && to != std::string::npos && to > from) f.fill = m->formula.substr(from + 10, to - from - 10);
    if (f.fill.starts_with("-")) f.fill = "−" + f.fill.substr(1);  // one minus sign (U+2212), as the sentences write numbers
  }
  return f;
}

// "positions 1 .. 4", or "position 0" for one.
std::string positions(std::int64_t from, std::int64_t to) {
  return from == to ? fmt::format("position {}", from) : fmt::format("positions {} .. {}", from, to);
}

// "1 entry", "4 entries": n and its noun (plural: `many`).
std::string count(std::int64_t n, const char* one, const char* many) { return fmt::format("{} {}", n, n == 1 ? one : many); }

std::string per_row(const CacheFacts& f) { return f.batched ? " per batch row" : ""; }

// "token 3 "on"": a position and its token, as decode's headings name them.
std::string token_at(const Decode& d, std::int64_t p) { return fmt::format("token {} \"{}\"", p, d.rows[static_cast<std::size_t>(p)].token); }

// What a cached key is: rotated at its own position, and where its position came in.
std::string key_kind(const CacheFacts& f) {
  // claim: cache-keys-rotated
  if (f.rope) return "its keys already rotated by RoPE for its own position (a key is turned once, when its token arrives)";
  // claim: cache-keys-positions
  if (f.positions) return "its keys and values, made from its x row with its own position's encoding already added";
  return "its keys and values";
}

}  // namespace

std::string explain_decode_cache(const Decode& d) {
  const CacheFacts f = facts(d);
  const std::string kv = f.Hkv == 1 ? "one key/value head" : fmt::format("each of the Hkv = {} key/value heads", f.Hkv);
  std::string gqa;
  if (f.Hkv < f.H) {
    // claim: cache-gqa-smaller
    gqa = fmt::format(" The H = {} query heads share these Hkv = {} heads (each serves H / Hkv = {}), so the cache is {} times smaller than one "
                      "with a key and a value per query head: H · (hs + hv) × 4 = {} · ({} + {}) × 4 = {} bytes.",
                      f.H, f.Hkv, f.H / f.Hkv, f.H / f.Hkv, f.H, f.hs, f.hv, f.H * (f.hs + f.hv) * 4);
  }
  return fmt::format(
      // claim: cache-contents
      "A KV cache keeps, for every token seen so far, {}: for {}, a key of hs = {} and a value of hv = {} numbers, in float32. That is "
      "Hkv · (hs + hv) × 4 = {} · ({} + {}) × 4 = {} bytes per token{} for this one attention layer; a model keeps one such cache per "
      "attention layer, so its bytes per token are the sum over its layers. After all T = {} tokens this layer's cache holds {} × {} = {} "
      "bytes{}.{}\n"
      // claim: cache-prefill
      "The prefill runs {} in one causal pass, as attn run would, and writes {} keys and values into the cache; it reads "
      "nothing from it. The first step after the prompt is {} (position {}): the cache then holds the prefill's {}, {}, and the new token's own key and value are appended as entry {}.",
      key_kind(f), kv, f.hs, f.hv, f.Hkv, f.hs, f.hv, f.bytes, per_row(f), f.T, f.T, f.bytes, f.T * f.bytes, per_row(f), gqa, f.P == 1 ? "token 0" : fmt::format("tokens 0 .. {}", f.P - 1), f.P == 1 ? "its" : "their",
      token_at(d, f.P), f.P, count(f.P, "entry", "entries"), positions(0, f.P - 1), f.P);
}

std::string explain_decode_token(const Decode& d, std::size_t k) {
  const CacheFacts f = facts(d);
  const std::int64_t p = f.P + static_cast<std::int64_t>(k);
  // claim: decode-reads-all
  std::string reads = fmt::format("Its query then reads all {} cached keys, {}, and mixes their values with the weights.", p + 1, positions(0, p));
  if (f.window > 0 && p + 1 > f.window) {
    // claim: decode-window
    reads = fmt::format("Its query then reads only the last W = {} of the {} cached keys, {} (the sliding window), and mixes "
                        "their values with the weights; {} {} in this cache but masked ({} there), so a cache that "
                        "only ever serves this window could drop {} and keep W = {} entries.",
                        f.window, p + 1, positions(p - f.window + 1, p), positions(0, p - f.window), p == f.window ? "stays" : "stay",
                        f.fill, p == f.window ? "it" : "them", f.window);
  }
  const std::string ends = fmt::format(
      // claim: decode-cache-ends
      " The cache ends at the query's own position: there is no key after position {} yet, so the causal mask has nothing later to "
      "block{}.",
      p, f.window > 0 && p + 1 > f.window ? " (only the window does)" : "");
  // claim: decode-one-row
  return fmt::format("Token {} \"{}\": only its own x row goes through W_q, W_k and W_v (one row, not {}); {} "
                     "recomputed. Its key and value are appended: the cache grows from {} ({} × {} = {} bytes{}) to {} ({} × {} = {} "
                     "bytes). {}{}{}{}",
                     p, d.rows[static_cast<std::size_t>(p)].token, p + 1,
                     p == 1 ? "the earlier token's key and value is not" : fmt::format("none of the {} earlier tokens' keys or values is", p),
                     count(p, "entry", "entries"), p, f.bytes, p * f.bytes, per_row(f), p + 1, p + 1, f.bytes, (p + 1) * f.bytes, reads,
                     // claim: decode-rope-query
                     k == 0 ? ends : "", f.rope ? fmt::format(" Its query is rotated for position {}, as row {} of the full pass's is.", p, p) : "",
                     // claim: decode-alibi-distance
                     f.alibi ? fmt::format(" ALiBi's bias on key j is by the distance {} − j, the same as in the full pass's row {}.", p, p) : "");
}

std::string explain_decode_rows(const Decode& d) {
  const CacheFacts f = facts(d);
  const DecodedRow& first = d.rows[static_cast<std::size_t>(f.P)];
  const std::string measured = fmt::format(
      "Measured here: the first decoded row, {}, differs from the full pass's row {} by {:.3g} in its weights{} and {:.3g} in its "
      "context; the largest difference over the decoded rows is {:.3g} (over the prefill's rows, {:.3g}), ",
      token_at(d, f.P), f.P, first.weights,
      d.last_id == "context" ? "" : fmt::format(", {:.3g} in its {}", first.last, d.last_id), first.context, d.decoded_max, d.prefill_max);
  if (f.fill != "−inf") {
    // claim: decode-rows-finite-fill
    return fmt::format("This run blocks with mask_fill = {}, not −inf. In the full pass a blocked later key then keeps the weight exp({} − row "
                       "max) / Σ, exactly 0 only where that underflows; the cache holds no later key to give it to, so a decoded row equals "
                       "the full pass's row only where every such weight underflowed. {}{}.",
                       f.fill, f.fill, measured,
                       d.agrees() ? "within the tolerance 1e-06" : "beyond the tolerance 1e-06: here decoding does not reproduce the full pass");
  }
  const std::string depends =
      f.rope ? "its own x row and its own position (RoPE turns key j by position j's angles)"
             : f.positions ? "its own x row, its position's encoding added" : "its own x row";
  return fmt::format(
      // claim: decode-rows-equal
      "Why a decoded row equals the full causal pass's row: in the full pass, row p's scores against the keys after p are −inf, so exp "
      "gives them weight exactly 0, and the row reads only q[p] and the keys and values of positions 0 .. p{}. A token's key and value "
      "depend only on {}, never on a later token, so the ones the cache kept from earlier steps are the ones the full pass computes: the "
      "cache holds exactly what row p reads.{} {}{}.",
      f.window > 0 ? fmt::format(", within its window of W = {}", f.window) : "", depends,
      // claim: decode-rows-alibi
      f.alibi ? " ALiBi's bias depends only on the distance between query and key, the same in both." : "", measured,
      d.agrees() ? (d.decoded_max == 0 ? "the same numbers exactly" : "within the tolerance 1e-06: the same numbers up to float rounding")
                 : "beyond the tolerance 1e-06: here decoding does not reproduce the full pass");
}

}  // namespace attn
