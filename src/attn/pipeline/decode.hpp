// attn decode: generation with a KV cache, step by step. A causal trace of the first P tokens (the
// prefill), then one token at a time against the cache, then every decoded row compared with the
// same row of the full causal trace. The numerics are the pipeline's (run_prefill, run_decode_step);
// this file cuts the problem into those steps' specs and compares.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attn/numerics/backend.hpp"
#include "attn/core/spec.hpp"
#include "attn/core/trace.hpp"

namespace attn {

// The largest |decoded − full| over one row of a step, for each step compared.
struct DecodedRow {
  std::int64_t position = 0;  // the token's index (0-based) in the sequence
  std::string token;          // its label (batch row 0's)
  double weights = 0, context = 0, last = 0;  // last: output (or merged) row
};

struct Decode {
  std::int64_t prefill = 0;           // P
  Trace prefill_trace;                // causal, T = S = P
  std::vector<Trace> tokens;          // one per decoded token, positions P .. T − 1
  std::vector<DecodedRow> rows;       // every row, prefill's and decoded, against the full trace
  std::string last_id;                // the step compared as `last` ("output", "merged" or "context")
  double prefill_max = 0, decoded_max = 0;
  static constexpr double kTolerance = 1e-6;
  bool agrees() const { return prefill_max <= kTolerance && decoded_max <= kTolerance; }
};

// InputError unless the spec can be generated left to right: mode causal from embeddings, no padding
// or attn_mask, 1 ≤ prefill < T (nullopt: not given, 1); door spells the prefill in messages.
Decode run_decode(const Spec& spec, Backend& backend, std::optional<std::int64_t> prefill, Door door = Door::Cli);

// decode's options as any door gives them (nullopt: not given), before the input is read: tokens in
// 1 .. 4096, top in 1 .. 100 and only with tokens, prefill only without (its range is the input's T,
// run_decode's to check).
void check_decode_options(Door door, std::optional<std::int64_t> tokens, std::optional<std::int64_t> top, std::optional<std::int64_t> prefill);

// Generation's two specs for run_decode_step at position t: `one` is the new token's spec as built
// for position 0 (T = S = 1, no expectations); the first is it at position t, the second it against
// the t + 1 cached keys, labelled `keys`.
std::pair<Spec, Spec> decode_specs_at(const Spec& one, std::int64_t t, const Labels& keys);

}  // namespace attn
