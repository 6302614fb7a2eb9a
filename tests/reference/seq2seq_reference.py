#!/usr/bin/env python3
"""Reference forward passes of the encoder-decoders without learned positions, written from the
published modeling code (transformers' modeling_marian and modeling_t5), for checking attn's traces.

Marian (modeling_marian): BART's post-LN layers (model_reference._bart_attention: q scaled by hd^−½),
with embed_tokens(ids) · √d_model (scale_embedding) + MarianSinusoidalPositionalEmbedding, whose rows
are built in float64 as position_enc[p, j] = p / 10000^(2·(j // 2) / C), the sines of the even columns
in the first ⌈C/2⌉ features and the cosines of the odd ones after them, then cast to float32; no
layernorm_embedding; the MLP fc2(act(fc1(h))) with activation_function (swish: silu).

T5 (modeling_t5): pre-norm blocks; T5LayerNorm x · rsqrt(mean(x²) + eps) · w (no mean, no bias); the
attention q kᵀ with no 1/√d scale plus position_bias, which block 0 computes from its
relative_attention_bias table by _relative_position_bucket(memory − context, bidirectional = the
encoder, num_buckets, max_distance) and every block reuses; cross-attention (EncDecAttention) has
none; h += SelfAttention(LN(h)); (decoder) h += EncDecAttention(LN(h), enc); h += DenseReluDense(LN(h))
with wo(relu(wi x)) or, gated, wo(gelu_new(wi_0 x) · wi_1 x); the encoder's output is
encoder.final_layer_norm(h).

Variants for the tests that show each family's distinctive part matters: config keys "_scaled" (T5
with a 1/√d_kv scale), "_sides_swapped" (T5's bidirectional buckets with keys before and after the
query exchanged), "_interleaved" (Marian's positions as the original Transformer interleaves them).

forward_encoder(config, tensors, ids) returns per layer {"x", "weights", "output"};
forward_decoder(config, tensors, source_ids, ids) per layer {"self": {...}, "cross": {...}}.
"""
import math

import numpy as np
import torch

import model_reference as mr


# ---- Marian ------------------------------------------------------------------------------------------

def marian_positions(T, C, interleaved=False):
    """MarianSinusoidalPositionalEmbedding's rows 0 .. T − 1, float64 then float32, as its _init_weight."""
    position_enc = np.array([[pos / np.power(10000, 2 * (j // 2) / C) for j in range(C)] for pos in range(T)])
    out = torch.zeros(T, C)
    if interleaved:
        out[:, 0::2] = torch.FloatTensor(np.sin(position_enc[:, 0::2]))
        out[:, 1::2] = torch.FloatTensor(np.cos(position_enc[:, 1::2]))
        return out
    sentinel = C // 2 if C % 2 == 0 else C // 2 + 1
    out[:, 0:sentinel] = torch.FloatTensor(np.sin(position_enc[:, 0::2]))
    out[:, sentinel:] = torch.FloatTensor(np.cos(position_enc[:, 1::2]))
    return out


def _act(name):
    return {"swish": torch.nn.functional.silu, "silu": torch.nn.functional.silu, "relu": torch.relu, "gelu": mr.gelu_erf,
            "gelu_new": mr.gelu_new}[name]


def _marian_embed(config, W, ids, stack):
    C = config["d_model"]
    scale = math.sqrt(C) if config.get("scale_embedding") else 1.0
    table = "shared.weight" if config.get("share_encoder_decoder_embeddings", True) else f"{stack}.embed_tokens.weight"
    x = W(table)[torch.tensor(ids, dtype=torch.long)] * scale
    return x + marian_positions(len(ids), C, config.get("_interleaved", False)).to(x.dtype)


def _marian_layer_end(config, W, p, h):
    ln = lambda x, n: mr.layer_norm(x, W(n + ".weight"), W(n + ".bias"), 1e-5)  # noqa: E731
    lin = lambda x, n: x @ W(n + ".weight").T + W(n + ".bias")  # noqa: E731
    return ln(h + lin(_act(config.get("activation_function", "gelu"))(lin(h, p + "fc1")), p + "fc2"), p + "final_layer_norm")


def marian_encoder(config, tensors, ids, dtype=torch.float64, keep=None):
    t = mr._strip(tensors, "model.")
    W = lambda n: mr._t(t, n, dtype)  # noqa: E731
    T = len(ids)
    h = _marian_embed(config, W, ids, "encoder")
    out = []
    for i in range(config["encoder_layers"]):
        p = f"encoder.layers.{i}."
        w, o = mr._bart_attention(W, p, "self_attn", h, h, config["encoder_attention_heads"], torch.ones(T, T, dtype=torch.bool))
        out.append({"x": h, "weights": w, "output": o})
        h = mr.layer_norm(h + o, W(p + "self_attn_layer_norm.weight"), W(p + "self_attn_layer_norm.bias"), 1e-5)
        h = _marian_layer_end(config, W, p, h)
    if keep is not None:
        keep["h"] = h
    return out


def marian_decoder(config, tensors, source_ids, ids, dtype=torch.float64):
    t = mr._strip(tensors, "model.")
    W = lambda n: mr._t(t, n, dtype)  # noqa: E731
    keep = {}
    marian_encoder(config, tensors, source_ids, dtype, keep)
    enc = keep["h"]
    T, S, H = len(ids), enc.shape[0], config["decoder_attention_heads"]
    ln = lambda x, n: mr.layer_norm(x, W(n + ".weight"), W(n + ".bias"), 1e-5)  # noqa: E731
    h = _marian_embed(config, W, ids, "decoder")
    out = []
    for i in range(config["decoder_layers"]):
        p = f"decoder.layers.{i}."
        layer = {}
        w, o = mr._bart_attention(W, p, "self_attn", h, h, H, mr.causal_mask(T))
        layer["self"] = {"x": h, "weights": w, "output": o}
        h = ln(h + o, p + "self_attn_layer_norm")
        w, o = mr._bart_attention(W, p, "encoder_attn", h, enc, H, torch.ones(T, S, dtype=torch.bool))
        layer["cross"] = {"x": h, "weights": w, "output": o}
        h = ln(h + o, p + "encoder_attn_layer_norm")
        h = _marian_layer_end(config, W, p, h)
        out.append(layer)
    return out


# ---- T5 ----------------------------------------------------------------------------------------------

def relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128, sides_swapped=False):
    """T5Attention._relative_position_bucket, as published (its float32 logarithm included)."""
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        after = relative_position < 0 if sides_swapped else relative_position > 0
        relative_buckets += after.to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    relative_position_if_large = max_exact + (
        torch.log(relative_position.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    ).to(torch.long)
    relative_position_if_large = torch.min(relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1))
    relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
    return relative_buckets


def t5_bias(config, table, T, S, bidirectional):
    """compute_bias: [H, T, S] from the [num_buckets, H] table."""
    context = torch.arange(T, dtype=torch.long)[:, None]
    memory = torch.arange(S, dtype=torch.long)[None, :]
    buckets = relative_position_bucket(memory - context, bidirectional, config["relative_attention_num_buckets"],
                                       config["relative_attention_max_distance"], config.get("_sides_swapped", False))
    return table[buckets].permute(2, 0, 1), buckets


def _rms(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def _t5_attention(config, W, name, x, kv, bias, allowed):
    T, S, H, d = x.shape[0], kv.shape[0], config["num_heads"], config["d_kv"]
    heads = lambda y, n: y.view(n, H, d).transpose(0, 1)  # noqa: E731
    q, k, v = heads(x @ W(name + ".q.weight").T, T), heads(kv @ W(name + ".k.weight").T, S), heads(kv @ W(name + ".v.weight").T, S)
    scores = q @ k.transpose(-2, -1)
    if config.get("_scaled"):
        scores = scores / math.sqrt(d)
    if bias is not None:
        scores = scores + bias
    w = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    return w, (w @ v).transpose(0, 1).reshape(T, H * d) @ W(name + ".o.weight").T


def _t5_mlp(config, W, p, x):
    d = p + "DenseReluDense."
    if config.get("feed_forward_proj", "relu").startswith("gated"):
        act = mr.gelu_new if config["feed_forward_proj"] == "gated-gelu" else _act(config["feed_forward_proj"][6:])
        hidden = act(x @ W(d + "wi_0.weight").T) * (x @ W(d + "wi_1.weight").T)
    else:
        hidden = _act(config.get("feed_forward_proj", "relu"))(x @ W(d + "wi.weight").T)
    return hidden @ W(d + "wo.weight").T


def t5_encoder(config, tensors, ids, dtype=torch.float64, keep=None):
    W = lambda n: mr._t(tensors, n, dtype)  # noqa: E731
    eps = config.get("layer_norm_epsilon", 1e-6)
    T = len(ids)
    h = W("shared.weight")[torch.tensor(ids, dtype=torch.long)]
    bias, _ = t5_bias(config, W("encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"), T, T, True)
    out = []
    for i in range(config["num_layers"]):
        p = f"encoder.block.{i}.layer."
        x = _rms(h, W(p + "0.layer_norm.weight"), eps)
        w, o = _t5_attention(config, W, p + "0.SelfAttention", x, x, bias, torch.ones(T, T, dtype=torch.bool))
        out.append({"x": x, "weights": w, "output": o})
        h = h + o
        h = h + _t5_mlp(config, W, p + "1.", _rms(h, W(p + "1.layer_norm.weight"), eps))
    if keep is not None:
        keep["h"] = _rms(h, W("encoder.final_layer_norm.weight"), eps)
    return out


def t5_decoder(config, tensors, source_ids, ids, dtype=torch.float64):
    W = lambda n: mr._t(tensors, n, dtype)  # noqa: E731
    eps = config.get("layer_norm_epsilon", 1e-6)
    keep = {}
    t5_encoder(config, tensors, source_ids, dtype, keep)
    enc = keep["h"]
    T, S = len(ids), enc.shape[0]
    h = W("shared.weight")[torch.tensor(ids, dtype=torch.long)]
    bias, _ = t5_bias(config, W("decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"), T, T, False)
    out = []
    for i in range(config.get("num_decoder_layers") or config["num_layers"]):
        p = f"decoder.block.{i}.layer."
        layer = {}
        x = _rms(h, W(p + "0.layer_norm.weight"), eps)
        w, o = _t5_attention(config, W, p + "0.SelfAttention", x, x, bias, mr.causal_mask(T))
        layer["self"] = {"x": x, "weights": w, "output": o}
        h = h + o
        x = _rms(h, W(p + "1.layer_norm.weight"), eps)
        w, o = _t5_attention(config, W, p + "1.EncDecAttention", x, enc, None, torch.ones(T, S, dtype=torch.bool))
        layer["cross"] = {"x": x, "weights": w, "output": o}
        h = h + o
        h = h + _t5_mlp(config, W, p + "2.", _rms(h, W(p + "2.layer_norm.weight"), eps))
        out.append(layer)
    return out


def forward_encoder(config, tensors, ids, dtype=torch.float64):
    return t5_encoder(config, tensors, ids, dtype) if config["model_type"] == "t5" else marian_encoder(config, tensors, ids, dtype)


def forward_decoder(config, tensors, source_ids, ids, dtype=torch.float64):
    if config["model_type"] == "t5":
        return t5_decoder(config, tensors, source_ids, ids, dtype)
    if config["model_type"] == "marian":
        return marian_decoder(config, tensors, source_ids, ids, dtype)
    return mr.forward_bart_decoder(config, tensors, source_ids, ids, dtype)
