// The readers of the input format's blocks, one concern per file; parse_spec (spec.cpp) calls them
// in a fixed order, which is also the order refusals are found in. Each fills its part of the Spec.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "attn/spec/parse.hpp"
#include "attn/core/spec.hpp"
#include "attn/io/json_read.hpp"
#include "attn/spec/random_block.hpp"
#include "attn/io/read_context.hpp"

namespace attn {

// entry.cpp: where the walkthrough starts.
// The "source" block, refused outside mode "cross"; an empty object when absent.
const json& read_source(const json& root, const Spec& s);
// Given scores, given q/k/v, or embeddings with their weights: sets entry, B, T, S, C, H and the tensors.
void read_entry(ReadContext& ctx, const json& root, const json& src, const RandomFill& rnd, Spec& s);

// weights.cpp: projections, and the number of heads.
// Per-head weights tell H when `heads` is absent; where names them.
std::optional<std::int64_t> heads_in_weights(const json& root, std::string& where);
// H as the input sets it: `heads`, else the data's (per-head weights, [B, H, T, S] scores), else the mode's default.
std::int64_t resolve_heads(const json& root, Mode mode, std::optional<std::int64_t> from_data, const std::string& data_path);
void check_heads_divide(const Spec& s);
void read_weights(ReadContext& ctx, const json& root, Spec& s, const RandomFill& rnd);

// labels.cpp: tokens and source tokens (needs T, S and B).
void read_tokens(const json& root, const json& src, Spec& s);

// masks.cpp: attn_mask, causal_align, masked_row, mask_fill, padding (needs T, S and B).
void read_masks(const json& root, Spec& s);

// variants.cpp: kv_heads (needs H; sets Hkv, H when absent).
void read_kv_heads(const json& root, Spec& s);
// positions (needs T, C and the entry point).
void read_positions(const ReadContext& ctx, const json& root, Spec& s);
// rope (needs T, S, H and dk).
void read_rope(const json& root, Spec& s);
// alibi (needs H, T, S and the mode), softcap.
void read_alibi(const json& root, Spec& s);
void read_softcap(const json& root, Spec& s);

// backward.cpp: the "backward" block (attn backward's upstream gradient); shapes are checked once the
// output's is known.
void read_backward(const ReadContext& ctx, const json& root, Spec& s);

// predict.cpp: the "exercise" block's "predict" list (its other keys are attn exercise's, read elsewhere).
void read_predict(const json& root, Spec& s);

// spec.cpp: whether key is one of the input format's top-level keys.
bool known_root_key(std::string_view key);

// checkpoint.cpp: a real model's layer (the whole input, with title, comment and expect beside it).
void read_checkpoint(const json& root, const std::string& base_dir, Spec& s);

// expect.cpp: what a document printed; decimals are its numbers' printed decimals per step id
// (parse_json's, for the key "expect").
void read_expect(const json& root, const std::map<std::string, std::vector<int>>& decimals,
                 const std::map<std::string, std::vector<std::string>>& literals, Spec& s);

}  // namespace attn
