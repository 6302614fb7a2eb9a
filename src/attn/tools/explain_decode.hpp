// attn decode --explain: the KV cache with this run's numbers: what it stores per token (bytes, for
// this one layer), what the prefill writes and each new query reads, where the cache ends, and why a
// decoded row equals the full causal pass's row (or, in a run where it does not, what happened).
// Reads what run_decode kept; computes nothing but sizes. The steps' own words are explain.hpp's.
#pragma once

#include <cstddef>
#include <string>

#include "attn/pipeline/decode.hpp"

namespace attn {

// Before the prefill: what the cache stores per token, and what the prefill and the first step
// after the prompt do with it. Paragraphs, one a line.
std::string explain_decode_cache(const Decode& d);
// Decoded token k (position P + k): what goes in, what its query reads, where the cache ends.
std::string explain_decode_token(const Decode& d, std::size_t k);
// After the comparison with the full pass: why the rows agree, with this run's measured differences.
std::string explain_decode_rows(const Decode& d);

}  // namespace attn
