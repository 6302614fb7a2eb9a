// attn decode --tokens N on a causal checkpoint: the whole model writes N tokens, the most probable
// each time, every layer attending against its KV cache; for each new token the chosen layer's
// attention over the cache and the top next-token candidates with their probabilities; then every
// step checked against one full causal pass over the same tokens.
// Legend: T tokens so far, C model width, H heads, V vocabulary.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "attn/numerics/backend.hpp"
#include "attn/model/architectures/checkpoint.hpp"

namespace attn::model {

struct Candidate {
  std::int64_t id = 0;
  std::string token;  // its label ("␣cat"), "#id" past the tokenizer
  double p = 0;       // softmax of the logits, in double
};

// One prediction: the query token at `position` (the last prompt token first, then each token
// written) attends over the cache of the chosen layer; the logits give the next token.
struct GenerationStep {
  std::int64_t position = 0;
  std::int64_t query_id = 0;
  std::string query;                // its label
  std::vector<float> attention;     // [H, position + 1]: the chosen layer's weights of this query over the cache
  std::vector<Candidate> top;       // the K most probable next tokens, most probable first (ties: lower id)
  double logits_difference = 0;     // max |cached − full| over the vocabulary's logits
  double weights_difference = 0;    // max |cached − full| over the chosen layer's weights row, every head
};

struct Generation {
  std::string model;                // Checkpoint::describe()
  std::string head_name;            // the LM head's tensor
  std::vector<std::string> notes;   // what was read
  std::int64_t layer = 0, heads = 0;
  std::vector<std::int64_t> prompt_ids;
  std::vector<std::string> prompt;  // their labels
  std::vector<std::string> prompt_pieces;  // their vocabulary spellings ("Ġcat"), for the JSON
  std::vector<std::int64_t> generated;
  std::vector<std::string> generated_labels;
  std::vector<std::string> generated_pieces;
  std::int64_t window = 0;          // the chosen layer's sliding window (0: none)
  std::optional<double> final_softcap;  // Gemma 2's, applied to the logits
  std::vector<GenerationStep> steps;  // one per generated token
  double logits_max = 0, weights_max = 0;
  static constexpr double kLogitTolerance = 1e-4;    // |cached − full| ≤ kLogitTolerance · max(1, |full|)
  static constexpr double kWeightTolerance = 1e-6;   // as attn decode's rows
  bool agrees = true;               // every step within the tolerances, and the full pass picks the same tokens
};

// tokens (1 .. 4096) new tokens after in's ids; top (1 .. 100) candidates shown per step. InputError
// for either outside its range, an encoder, more tokens than GPT-2's positions, or a missing final
// norm or LM head; door spells the options in messages.
Generation generate(const CheckpointInput& in, Backend& be, std::int64_t tokens, std::int64_t top, Door door = Door::Cli);

// The rows of h (1, R, C) through the final norm and the LM head (head: Checkpoint::lm_head()): logits
// (R, V), Gemma 2's final soft-cap c · tanh(l / c) applied. Also attn heads --ablate's loss.
Tensor logits_of(const Checkpoint& ckpt, Backend& be, const Tensor& h, const Tensor& head);


}  // namespace attn::model
