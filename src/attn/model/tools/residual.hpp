// The residual stream's pieces (residual.cpp) that a pass over a checkpoint's layers builds on: the
// traced layer's input (checkpoint_layer_spec), every head (checkpoint_heads) and generation
// (generate.cpp), which runs each layer's attention against its KV cache.
// Legend: T tokens, C model width.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attn/numerics/backend.hpp"
#include "attn/model/architectures/checkpoint.hpp"
#include "attn/model/tools/heads.hpp"

namespace attn::model {

// Layer i's attention (weights w, moved from) on x (1, T, C) = its norm1 output (OLMo 2 and BERT:
// the stream itself), as the pipeline's input: T = S = the rows of x, positions from 0.
Spec attention_spec(const Architecture& a, std::int64_t i, LayerWeights& w, Tensor x, const Labels& tokens);

// The attention block's output (1, T, C) for the spec of a layer's attention.
using Attention = std::function<Tensor(const Spec&)>;

// h (1, T, C) += mlp(norm2(h)): GPT-2's c_fc, gelu_new, c_proj; the Llama family's down(silu(gate) ·
// up); Gemma's and OLMo 2's MLP output normalised before the addition; BERT's LayerNorm after. A block
// of rows at a time (each row's products and norms are its own, so the bits are the whole tensor's):
// a long input's (T, I) activations are never whole. block_rows: 0, as many as keep a block near 64 MB.
void add_mlp(const Architecture& a, const LayerWeights& w, Backend& be, Tensor& h, std::int64_t block_rows = 0);
// Rows [r0, r1) of a (1, T, C) tensor, a copy (1, r1 − r0, C).
Tensor rows_of(const Tensor& t, std::int64_t r0, std::int64_t r1);
// The MLP's rows a block by default, for an MLP width I (what the memory estimates count).
std::int64_t mlp_block_rows(std::int64_t I);

// One layer on the residual stream h (1, T, C): attention (by `attention`, on the layer's spec), the
// norms and residual additions around it, then the MLP when `mlp` (nothing reads the stream after the
// last layer's attention unless the model's head does).
void run_layer_with(const Checkpoint& ckpt, std::int64_t i, Backend& be, Tensor& h, const Labels& tokens, const Attention& attention, bool mlp);


// The residual stream runs layer by layer on the CPU backend; each layer's attention is the pipeline
// itself (run_pipeline on a Spec like any other input), so the traced layer and the layers below it
// are one computation.
// Layer `layer`'s attention as a Spec (x = its norm1 output after the residual stream of the layers
// below), labelled with `tokens`.
// types: the encoders' token types ([T]; empty: all 0).
Spec checkpoint_layer_spec(const Checkpoint& ckpt, const std::vector<std::int64_t>& ids, const std::vector<std::int64_t>& types, const Labels& tokens,
                           std::int64_t layer);
// BART's decoder layer `layer`: its self-attention (causal, over the decoder's tokens) or its
// cross-attention (queries from the decoder's stream, keys and values from the encoder's output over
// the source), after the encoder over source_ids and the decoder's layers below.
Spec checkpoint_decoder_spec(const Checkpoint& ckpt, const std::vector<std::int64_t>& source_ids, const Labels& source_tokens,
                             const std::vector<std::int64_t>& ids, const Labels& tokens, std::int64_t layer, bool cross);
// An encoder-decoder's every layer: the encoder's self-attention over the source, the decoder's
// self-attention and its cross-attention, as three views.
std::vector<HeadsView> checkpoint_seq2seq_heads(const Checkpoint& ckpt, const std::vector<std::int64_t>& source_ids,
                                                const std::vector<std::string>& source_tokens, const std::vector<std::int64_t>& ids,
                                                const std::vector<std::string>& tokens);
// An encoder's special tokens where they stand in ids ([CLS] … [SEP], <s> … </s>); none for a decoder.
EncoderSpecials specials_of(const Checkpoint& ckpt, const std::vector<std::int64_t>& ids);
// (a decoder's or an encoder's every layer of heads: heads_stream.hpp, streamed)

}  // namespace attn::model
