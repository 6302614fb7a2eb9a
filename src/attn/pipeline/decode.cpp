// attn decode: the problem cut into a prefill and one spec pair per new token; the rows compared.
#include "attn/pipeline/decode.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attn/core/error.hpp"
#include "attn/pipeline/pipeline.hpp"
#include "attn/numerics/position_tables.hpp"

namespace attn {
namespace {

// Rows [from, from + n) along axis 1 of a (B, L, C) tensor, or along axis 0 of an (L, C) one.
Tensor rows(const Tensor& t, std::int64_t from, std::int64_t n) {
  const bool batched = t.rank() == 3;
  const auto B = batched ? t.dim(0) : 1, L = t.dim(-2), C = t.dim(-1);
  Tensor out = Tensor::uninitialized(batched ? Shape{B, n, C} : Shape{n, C});
  for (std::int64_t b = 0; b < B; ++b)
    std::copy(t.data() + (b * L + from) * C, t.data() + (b * L + from + n) * C, out.mutable_data() + b * n * C);
  return out;
}

Labels label_range(const Labels& l, std::int64_t from, std::int64_t n) {
  Labels out;
  for (const auto& row : l) out.emplace_back(row.begin() + from, row.begin() + from + n);
  return out;
}

// w's n tokens moved `from` positions on: RoPE's tables for their positions.
Spec moved(Spec w, std::int64_t from, std::int64_t n) {
  if (w.rope) {
    w.rope->offset += from;
    const auto count = w.rope->place(n, n, false);
    RopeTables t = rope_tables(w.rope->table_first, count, w.rope->dims, w.rope->theta, w.rope->scaling);
    w.rope->cos = std::move(t.cos), w.rope->sin = std::move(t.sin);
  }
  w.expect.clear();
  return w;
}

// The spec's tokens [from, from + n) as queries and keys, RoPE's tables for their positions.
Spec window_of(const Spec& s, std::int64_t from, std::int64_t n) {
  Spec w = s;
  w.T = w.S = n;
  w.x = rows(s.x, from, n);
  w.tokens = w.source_tokens = label_range(s.tokens, from, n);
  if (s.positions != Positions::None) w.position_table = rows(s.position_table, from, n);
  return moved(std::move(w), from, n);
}

// Token t (w, at its position) as the query against keys 0 .. t, the cache's: T = 1, S = t + 1, the
// causal diagonal bottom-right.
Spec against_cache(Spec w, std::int64_t t, Labels keys) {
  w.S = t + 1;
  w.source_tokens = std::move(keys);
  w.causal_align = CausalAlign::BottomRight;
  w.cached = true;
  if (w.rope) w.rope->place(1, t + 1, false);
  return w;
}

Spec step_of(const Spec& s, std::int64_t t) { return against_cache(window_of(s, t, 1), t, label_range(s.tokens, 0, t + 1)); }

// max |a[lead, a_row, j] − b[lead, b_row, j]| for j < a's columns: row a_row of a part's step (the
// prefill, or a decoded token) against row b_row of the full trace's.
double row_difference(const Tensor& a, std::int64_t a_row, const Tensor& b, std::int64_t b_row) {
  const auto a_rows = a.dim(-2), cols = a.dim(-1), b_rows = b.dim(-2), b_cols = b.dim(-1);
  const auto lead = a.size() / (a_rows * cols);
  double worst = 0;
  for (std::int64_t l = 0; l < lead; ++l)
    for (std::int64_t j = 0; j < cols; ++j) {
      const double d = std::fabs(static_cast<double>(a.at((l * a_rows + a_row) * cols + j)) - static_cast<double>(b.at((l * b_rows + b_row) * b_cols + j)));
      worst = std::isnan(d) ? INFINITY : std::max(worst, d);
    }
  return worst;
}

}  // namespace

std::pair<Spec, Spec> decode_specs_at(const Spec& one, std::int64_t t, const Labels& keys) {
  if (one.T != 1 || one.S != 1) throw InternalError("decode_specs_at: expected one token's spec");
  Spec token = moved(one, t, 1);
  Spec step = against_cache(token, t, keys);
  return {std::move(token), std::move(step)};
}

void check_decode_options(Door door, std::optional<std::int64_t> tokens, std::optional<std::int64_t> top, std::optional<std::int64_t> prefill) {
  check_range(door, "tokens", tokens, kTokensRange);
  check_range(door, "top", top, kTopRange);
  const std::string with_tokens = option_name(door, "tokens") + (door == Door::Python ? "=N" : " N");
  if (top && !tokens) throw InputError(fmt::format("{}: goes with {} (the whole model writing N tokens)", option_name(door, "top"), with_tokens));
  if (prefill && tokens) {
    throw InputError(fmt::format("{}: with {} the whole sentence is the prefill (one causal pass), then each written token is decoded against "
                                 "the cache; leave {} out", option_name(door, "prefill"), option_name(door, "tokens"), option_name(door, "prefill")));
  }
}

Decode run_decode(const Spec& s, Backend& be, std::optional<std::int64_t> given_prefill, Door door) {
  if (s.mode != Mode::Causal) {
    throw InputError(fmt::format("mode: decode generates one token after another, each seeing only the ones before: it needs mode "
                                 "\"causal\", got \"{}\"{}", mode_name(s.mode),
                                 s.x_note.empty() ? ""
                                                  : " (a checkpoint's layer: a decoder-only model's, or an encoder-decoder's \"stack\": \"decoder\" "
                                                    "with \"attention\": \"self\")"));
  }
  if (s.entry != Entry::Embeddings) {
    throw InputError(fmt::format("{}: decode needs embeddings and weights (each new token is projected as it arrives); given {} have no "
                                 "tokens to feed in", s.entry == Entry::Scores ? "scores" : "q", s.entry == Entry::Scores ? "scores" : "q, k, v"));
  }
  if (s.relative_bias) {
    throw InputError("T5's relative position bias: decode does not trace it token by token yet; attn run traces the decoder's layer whole");
  }
  if (!s.lengths.empty()) throw InputError("padding: decode feeds every batch row the same tokens one by one; padding is not supported here");
  if (s.user_mask != UserMask::None) throw InputError("attn_mask: decode's mask is causal (with the window, if any); an attn_mask is not supported here");
  if (!given_prefill && s.T < 2) {  // --prefill not given: 1
    throw InputError(fmt::format("T = {}: decode needs at least 2 tokens, the first in one causal pass (the prefill) and each later one "
                                 "decoded against the cache", s.T));
  }
  const std::int64_t prefill = given_prefill.value_or(1);
  if (prefill < 1 || prefill >= s.T) {
    throw InputError(fmt::format("{}: expected 1 ≤ P < T = {} (P tokens in one causal pass, then T − P decoded one by one)",
                                 option_with(door, "prefill", prefill), s.T));
  }
  Decode d;
  d.prefill = prefill;
  const Trace full = run_pipeline(s, be);
  KvCache cache;
  d.prefill_trace = run_prefill(window_of(s, 0, prefill), be, cache);
  for (std::int64_t t = prefill; t < s.T; ++t) d.tokens.push_back(run_decode_step(window_of(s, t, 1), step_of(s, t), be, cache));

  d.last_id = full.find("output") != nullptr ? "output" : full.find("merged") != nullptr ? "merged" : "context";
  const auto compare = [&](const Trace& part, std::int64_t first, std::int64_t count) {
    for (std::int64_t i = 0; i < count; ++i) {
      DecodedRow r;
      r.position = first + i;
      r.token = s.tokens[0][static_cast<std::size_t>(first + i)];
      // the part's row i: one row per token of the part
      const auto one = [&](const char* id) { return row_difference(part.find(id)->value, i, full.find(id)->value, first + i); };
      r.weights = one("weights"), r.context = one("context"), r.last = one(d.last_id.c_str());
      double& worst = first < prefill ? d.prefill_max : d.decoded_max;
      worst = std::max({worst, r.weights, r.context, r.last});
      d.rows.push_back(std::move(r));
    }
  };
  compare(d.prefill_trace, 0, prefill);
  for (std::size_t k = 0; k < d.tokens.size(); ++k) compare(d.tokens[k], prefill + static_cast<std::int64_t>(k), 1);
  return d;
}

}  // namespace attn
