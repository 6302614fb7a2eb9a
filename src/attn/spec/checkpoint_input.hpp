// An input naming a checkpoint, read: the model opened, the text tokenized and the layer and stack
// chosen (spec/checkpoint.cpp), for run, decode and generate; or every layer's heads (heads_input.cpp).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attn/model/architectures/checkpoint.hpp"
#include "attn/model/tools/heads_stream.hpp"

namespace attn::model {

// The input JSON at path ("-": standard input) as a checkpoint's input; `command` names what needs
// one in the message for a file without "checkpoint" ("attn decode --tokens").
CheckpointInput load_checkpoint_input(const std::string& path, const std::string& command);
// The same from the input's text: origin names it in messages, base_dir resolves its relative paths.
CheckpointInput load_checkpoint_input_text(const std::string& text, const std::string& origin, const std::string& base_dir,
                                           const std::string& command);
// The same from the input's parsed JSON (root holds "checkpoint"); base_dir resolves relative paths.
CheckpointInput read_checkpoint_input(const nlohmann::json& root, const std::string& base_dir);

// Refuses up front (exit 2, with the estimate) an input whose run through the model's layers would need
// more memory than the machine has available now (tools/cost.hpp's model_run_bytes): `command` names
// it; streamed: attn heads' layers, which hold no [H, T, S] step; kept: the bytes of weights it keeps;
// rollout: --rollout's maps and products, named apart in the message.
void require_model_fits(const CheckpointInput& in, const std::string& command, bool streamed, double kept, double rollout = 0);
// Whether the input JSON at path names a checkpoint (false for standard input, read once by its command).
bool names_checkpoint(const std::string& path);

// attn heads: path is the input JSON ("-": standard input); refused when every head's weights would
// take more than max_bytes (why: where that limit comes from, for the message).
// An encoder-decoder's input with decoder tokens gives three views: the encoder's, the decoder's
// self-attention and the cross-attention.
// keep: whether every weight is kept at any T (--weights); else up to T = kKeepWeightsUpTo, pooled beyond.
// hooks: --rollout's and --ablate's (heads_stream.hpp), for one stack only (refused for an encoder-decoder).
std::vector<HeadsView> load_heads(const std::string& path, std::int64_t max_bytes, const std::string& why, const HeadsKeep& keep = {},
                                  const LayerHooks& hooks = {});
// The same from the input's text: origin names it in messages, base_dir resolves its relative paths.
std::vector<HeadsView> load_heads_text(const std::string& text, const std::string& origin, const std::string& base_dir, std::int64_t max_bytes,
                                       const std::string& why, const HeadsKeep& keep = {}, const LayerHooks& hooks = {});

}  // namespace attn::model
