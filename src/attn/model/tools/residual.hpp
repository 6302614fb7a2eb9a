// The residual stream's pieces (residual.cpp) that a pass over a checkpoint's layers builds on: the
// traced layer's input (checkpoint_layer_spec), every head (checkpoint_heads) and generation
// (generate.cpp), which runs each layer's attention against its KV cache.
// Legend: T tokens, C model width.
#pragma once

#include <cstdint>
#include <functional>

#include "attn/numerics/backend.hpp"
#include "attn/model/architectures/checkpoint.hpp"

namespace attn::model {

// Layer i's attention (weights w, moved from) on x (1, T, C) = its norm1 output (OLMo 2 and BERT:
// the stream itself), as the pipeline's input: T = S = the rows of x, positions from 0.
Spec attention_spec(const Architecture& a, std::int64_t i, LayerWeights& w, Tensor x, const Labels& tokens);

// The attention block's output (1, T, C) for the spec of a layer's attention.
using Attention = std::function<Tensor(const Spec&)>;

// One layer on the residual stream h (1, T, C): attention (by `attention`, on the layer's spec), the
// norms and residual additions around it, then the MLP when `mlp` (nothing reads the stream after the
// last layer's attention unless the model's head does).
void run_layer_with(const Checkpoint& ckpt, std::int64_t i, Backend& be, Tensor& h, const Labels& tokens, const Attention& attention, bool mlp);

}  // namespace attn::model
