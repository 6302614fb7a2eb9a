#!/usr/bin/env python3
"""Reference forward pass of hub checkpoints (GPT-2 and the Llama family), written from the published
architectures, for checking attn's checkpoint traces.

GPT-2 (Radford et al. 2019; the semantics of transformers' modeling_gpt2): h = wte[ids] + wpe[0..T);
per layer a = LayerNorm_1(h), qkv = a @ c_attn.weight + c_attn.bias (Conv1D, [C, 3C]), heads of
hs = C / H, causal softmax(q kᵀ / √hs), merge, out = ctx @ c_proj.weight + c_proj.bias;
h += out; h += c_proj2(gelu_new(LayerNorm_2(h) @ c_fc + b)). gelu_new is the tanh approximation.

Llama / Mistral / Qwen2 / Qwen3 / Phi-3 (transformers' modeling_llama, _mistral, _qwen2, _qwen3, _phi3): h =
embed_tokens[ids]; per
layer a = RMSNorm(h) = h · rsqrt(mean(h²) + eps) · w (in float32); q, k, v = a Wᵀ (+ b: Qwen2),
heads of head_dim (config "head_dim", else hidden / heads); Qwen3: q and k RMSNorm per head
(q_norm, k_norm) before RoPE; RoPE "half" (rotate_half) with
inv_freq_i = theta^(−2i/head_dim) at positions 0..T), scaled as "rope_scaling" or "rope_parameters"
say (linear, llama3; scaled_inv_freq); the key/value heads repeated H / Hkv times
(repeat_kv); causal softmax(q kᵀ / √head_dim), Mistral's sliding window W: query i sees keys j with
i − W < j ≤ i; out = merge(ctx) o_projᵀ; h += out; h += down(silu(gate(RMSNorm_2(h))) · up(...)).

Gemma 2 / Gemma 3 (transformers' modeling_gemma2, _gemma3): h = embed_tokens[ids] · normalizer, where
normalizer = torch.tensor(hidden_size ** 0.5, dtype=the model's dtype) (√C rounded to BF16 for a BF16
checkpoint); RMSNorm multiplies by (1 + w); per layer r = h, a = input_layernorm(h), the attention with
scores · query_pre_attn_scalar^−½, Gemma 2's soft-cap c · tanh(scores / c) before the mask, a sliding
window on the sliding layers (layer_types, else Gemma 2: even layers; Gemma 3: (i + 1) % pattern ≠ 0),
Gemma 3's q_norm / k_norm per head before RoPE and θ = rope_local_base_freq on sliding layers;
h = r + post_attention_layernorm(o); h = h + post_feedforward_layernorm(down(gelu_tanh(gate(m)) · up(m)))
with m = pre_feedforward_layernorm(h). A multimodal "gemma3" is its text_config under the prefix
language_model.model. (or model.language_model.).

OLMo 2 (modeling_olmo2): no norm before attention: q = q_norm(q_proj(h)), k = k_norm(k_proj(h)) over
the whole projected width, then heads and RoPE; h = h + post_attention_layernorm(o);
h = h + post_feedforward_layernorm(mlp(h)).

Every weight is read with safetensors_io and converted to float32 first (as attn does); the arithmetic
then runs in float32 or float64 (dtype argument).

forward(...) returns per layer {"x": the layer's first norm output [T, C], "weights": [H, T, T],
"output": [T, C] (the attention block after its output projection, before the residual add)}.

Self-test: python3 model_reference.py   (attention against nn.MultiheadAttention; RoPE against a
complex-number formulation; GQA against explicitly repeated weights; the window against a loop)
"""
import json
import math
import os
import sys

import numpy as np

try:
    import torch
except ImportError as e:
    if __name__ == "__main__":  # ctest reports 77 as "skipped"
        print(f"SKIPPED: PyTorch is not importable here ({e})")
        sys.exit(77)
    raise

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

LLAMA_TYPES = ("llama", "mistral", "qwen2", "qwen3", "phi3", "gemma2", "gemma3_text", "gemma3", "olmo2")
GEMMA_TYPES = ("gemma2", "gemma3_text", "gemma3")
TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def load(path, config=None):
    """(config, {name: float32 numpy}) of a checkpoint directory or a lone .safetensors file."""
    if config is None:
        with open(os.path.join(path, "config.json"), encoding="utf-8") as f:
            config = json.load(f)
    return config, safetensors_io.load_f32(path)


def _strip(tensors, prefix):
    """Names without the optional prefix ("transformer." / "model.")."""
    out = {}
    for name, t in tensors.items():
        out[name[len(prefix):] if name.startswith(prefix) else name] = t
    return out


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * w + b


def rms_norm(x, w, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope_settings(config):
    """(theta, scaling or None) from either config form: top-level rope_theta + rope_scaling, or
    rope_parameters holding rope_theta, rope_type and the scaling's keys."""
    params = config.get("rope_parameters")
    if params:
        scaling = {k: v for k, v in params.items() if k != "rope_theta"}
        return params.get("rope_theta", config.get("rope_theta", 10000.0)), scaling
    return config.get("rope_theta", 10000.0), config.get("rope_scaling")


def scaled_inv_freq(inv_freq, scaling):
    """RoPE frequency scaling as transformers' rope utilities define it (linear: θ_i / factor; llama3:
    by wavelength 2π/θ_i, above original/low_freq_factor divided by the factor, below
    original/high_freq_factor kept, between the two a linear blend by
    s = (original/wavelength − low)/(high − low) of θ_i/factor and θ_i)."""
    kind = (scaling or {}).get("rope_type", (scaling or {}).get("type", "default"))
    if kind == "default":
        return inv_freq
    factor = float(scaling["factor"])
    if kind == "linear":
        return inv_freq / factor
    assert kind == "llama3", kind
    low, high = float(scaling["low_freq_factor"]), float(scaling["high_freq_factor"])
    original = float(scaling["original_max_position_embeddings"])
    wavelength = 2 * math.pi / inv_freq
    out = inv_freq.clone()
    for i in range(len(inv_freq)):
        w = float(wavelength[i])
        if w > original / low:
            out[i] = inv_freq[i] / factor
        elif w >= original / high:
            s = (original / w - low) / (high - low)
            out[i] = (1 - s) * inv_freq[i] / factor + s * inv_freq[i]
    return out


def rope_tables(T, head_dim, theta, dtype, scaling=None):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    inv_freq = scaled_inv_freq(inv_freq, scaling)
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def apply_rope(x, cos, sin):
    """x [heads, T, head_dim]; the "half" pairing (i, i + head_dim/2)."""
    return x * cos + rotate_half(x) * sin


def causal_mask(T, window=None):
    """True where query i may see key j: j ≤ i (and i − W < j with a window W)."""
    i = torch.arange(T).unsqueeze(1)
    j = torch.arange(T).unsqueeze(0)
    allowed = j <= i
    if window is not None:
        allowed &= j > i - window
    return allowed


def attention(q, k, v, allowed):
    """q [H, T, d], k, v [H, T, d] -> (weights [H, T, T], ctx [H, T, d])."""
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~allowed, float("-inf"))
    w = torch.softmax(scores, dim=-1)
    return w, w @ v


def _t(tensors, name, dtype):
    if name not in tensors:
        raise KeyError(f"missing tensor {name}")
    return torch.from_numpy(np.ascontiguousarray(tensors[name], dtype=np.float32)).to(dtype)


def ablated(ctx, i, ablate):
    """ctx [H, T, d] with layer i's heads in ablate ({layer: (heads, "zero" | "mean")}) removed before the
    output projection: zeroed, or replaced by their mean over the T positions (attn heads --ablate)."""
    if not ablate or i not in ablate:
        return ctx
    heads, mode = ablate[i]
    ctx = ctx.clone()
    for h in heads:
        ctx[h] = 0 if mode == "zero" else ctx[h].mean(dim=0, keepdim=True).expand_as(ctx[h])
    return ctx


def forward_gpt2(config, tensors, ids, dtype=torch.float32, layers=None, keep=None, ablate=None):
    t = _strip(tensors, "transformer.")
    C, H = config["n_embd"], config["n_head"]
    L = config["n_layer"]
    eps = config.get("layer_norm_epsilon", 1e-5)
    hs = C // H
    T = len(ids)
    W = lambda n: _t(t, n, dtype)  # noqa: E731
    ids_t = torch.tensor(ids, dtype=torch.long)
    h = W("wte.weight")[ids_t] + W("wpe.weight")[torch.arange(T)]
    allowed = causal_mask(T)
    out = []
    for i in range(L if layers is None else layers):
        p = f"h.{i}."
        a = layer_norm(h, W(p + "ln_1.weight"), W(p + "ln_1.bias"), eps)
        qkv = a @ W(p + "attn.c_attn.weight") + W(p + "attn.c_attn.bias")
        q, k, v = qkv.split(C, dim=-1)
        heads = lambda x: x.view(T, H, hs).transpose(0, 1)  # noqa: E731
        w, ctx = attention(heads(q), heads(k), heads(v), allowed)
        ctx = ablated(ctx, i, ablate)
        merged = ctx.transpose(0, 1).reshape(T, C)
        o = merged @ W(p + "attn.c_proj.weight") + W(p + "attn.c_proj.bias")
        out.append({"x": a, "weights": w, "output": o})
        h = h + o
        m = layer_norm(h, W(p + "ln_2.weight"), W(p + "ln_2.bias"), eps)
        h = h + gelu_new(m @ W(p + "mlp.c_fc.weight") + W(p + "mlp.c_fc.bias")) @ W(p + "mlp.c_proj.weight") \
            + W(p + "mlp.c_proj.bias")
    if keep is not None:  # the stream after the last layer, and the logits: ln_f, then the tied wte
        keep["h"] = h
        keep["logits"] = layer_norm(h, W("ln_f.weight"), W("ln_f.bias"), eps) @ W("wte.weight").T
    return out


def sliding_layers(config, L):
    """Which layers slide: layer_types, else the family's rule (Gemma 2: even layers; Gemma 3: all but every
    sliding_window_pattern-th; Mistral, Phi-3: every layer; Qwen: from max_window_layers on)."""
    mt = config["model_type"]
    if config.get("_wrong_sliding"):  # a reader with the other layers sliding
        return [not s for s in sliding_layers(dict(config, _wrong_sliding=False), L)]
    if mt in GEMMA_TYPES:
        if config.get("layer_types"):
            return [t == "sliding_attention" for t in config["layer_types"]]
        if mt == "gemma2":
            return [i % 2 == 0 for i in range(L)]
        return [(i + 1) % config.get("sliding_window_pattern", 6) != 0 for i in range(L)]
    if mt in ("mistral", "phi3"):
        return [config.get("sliding_window") is not None] * L
    if mt in ("qwen2", "qwen3") and config.get("use_sliding_window"):
        return [i >= config.get("max_window_layers", 28) for i in range(L)]
    return [False] * L


def forward_llama(config, tensors, ids, dtype=torch.float32, layers=None, keep=None, ablate=None):
    mt = config["model_type"]
    if mt == "gemma3":  # the language model of a multimodal checkpoint
        inner = dict(config["text_config"], model_type="gemma3_text")
        for k, v in config.items():
            if k.startswith("_"):
                inner[k] = v
        inner.setdefault("torch_dtype", config.get("torch_dtype"))
        prefix = "language_model.model." if any(n.startswith("language_model.model.") for n in tensors) else "model.language_model."
        outer = _strip(tensors, prefix[:-len("model.")]) if prefix.startswith("language_model.") else {}
        inner_tensors = _strip(tensors, prefix)
        if "lm_head.weight" in outer:
            inner_tensors["lm_head.weight"] = outer["lm_head.weight"]
        inner.setdefault("tie_word_embeddings", config.get("tie_word_embeddings", True))
        return forward_llama(inner, inner_tensors, ids, dtype, layers, keep, ablate)
    t = _strip(tensors, "model.")  # (lm_head.weight, beside the prefix, keeps its name)
    gemma, olmo2 = mt in GEMMA_TYPES, mt == "olmo2"
    C = config["hidden_size"]
    H = config["num_attention_heads"]
    Hkv = config.get("num_key_value_heads") or H
    hd = config.get("head_dim") or C // H
    L = config["num_hidden_layers"]
    eps = config.get("rms_norm_eps", 1e-6)
    theta, scaling = rope_settings(config)
    sliding = sliding_layers(config, L)
    T = len(ids)
    W = lambda n: _t(t, n, dtype)  # noqa: E731
    plus = 0.0 if config.get("_plain_norm") else 1.0  # Gemma's (1 + w); the check's variant reads w

    def norm(x, name):
        return rms_norm(x, W(name) + plus, eps) if gemma else rms_norm(x, W(name), eps)

    h = W("embed_tokens.weight")[torch.tensor(ids, dtype=torch.long)]
    if gemma:  # modeling_gemma: the normalizer in the model's dtype
        root = torch.tensor(C ** 0.5, dtype=torch.float64)
        if not config.get("_unrounded_scale"):
            root = root.to(TORCH_DTYPES[config.get("torch_dtype", "float32")])
        h = h * root.to(dtype)
    tables = {}

    def rope_of(i):
        local = mt == "gemma3_text" and sliding[i] and not config.get("_no_local_theta")
        key = "local" if local else "global"
        if key not in tables:
            tables[key] = rope_tables(T, hd, config.get("rope_local_base_freq", 10000.0), dtype) if local \
                else rope_tables(T, hd, theta, dtype, scaling)
        return tables[key]

    out = []
    for i in range(L if layers is None else layers):
        p = f"layers.{i}."
        a = h if olmo2 else norm(h, p + "input_layernorm.weight")

        def proj(name):
            y = a @ W(p + f"self_attn.{name}.weight").T
            if mt == "qwen2":
                y = y + W(p + f"self_attn.{name}.bias")
            return y

        if mt == "phi3":  # modeling_phi3: one qkv_proj, q's rows, then k's, then v's
            qkv = a @ W(p + "self_attn.qkv_proj.weight").T
            q_, k_, v_ = qkv[:, :H * hd], qkv[:, H * hd:(H + Hkv) * hd], qkv[:, (H + Hkv) * hd:]
        else:
            q_, k_, v_ = proj("q_proj"), proj("k_proj"), proj("v_proj")
        if olmo2 and not config.get("_qk_norm_per_head"):  # modeling_olmo2: over the whole projection, before the split
            q_ = rms_norm(q_, W(p + "self_attn.q_norm.weight"), eps)
            k_ = rms_norm(k_, W(p + "self_attn.k_norm.weight"), eps)
        q = q_.reshape(T, H, hd).transpose(0, 1)
        k = k_.reshape(T, Hkv, hd).transpose(0, 1)
        v = v_.reshape(T, Hkv, hd).transpose(0, 1)
        if olmo2 and config.get("_qk_norm_per_head"):  # the variant: each head's features alone
            q = rms_norm(q, W(p + "self_attn.q_norm.weight").reshape(H, 1, hd), eps)
            k = rms_norm(k, W(p + "self_attn.k_norm.weight").reshape(Hkv, 1, hd), eps)
        per_head = (mt == "qwen3" and not config.get("_skip_qk_norm")) or mt == "gemma3_text"
        after_rope = config.get("_qk_norm_after_rope")
        if per_head and not after_rope:  # modeling_qwen3 / _gemma3: RMSNorm over each head's features, before RoPE
            q = norm(q, p + "self_attn.q_norm.weight")
            k = norm(k, p + "self_attn.k_norm.weight")
        cos, sin = rope_of(i)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if per_head and after_rope:
            q = norm(q, p + "self_attn.q_norm.weight")
            k = norm(k, p + "self_attn.k_norm.weight")
        rep = H // Hkv
        k = k.repeat_interleave(rep, dim=0)  # repeat_kv: kv head g serves query heads g·rep .. g·rep + rep − 1
        v = v.repeat_interleave(rep, dim=0)
        allowed = causal_mask(T, config.get("sliding_window") if sliding[i] else None)
        if gemma:
            w, ctx = gemma_attention(q, k, v, allowed, config)
        else:
            w, ctx = attention(q, k, v, allowed)
        ctx = ablated(ctx, i, ablate)
        o = ctx.transpose(0, 1).reshape(T, H * hd) @ W(p + "self_attn.o_proj.weight").T
        out.append({"x": a, "weights": w, "output": o})
        h = h + (norm(o, p + "post_attention_layernorm.weight") if gemma or olmo2 else o)
        m = h if olmo2 else norm(h, p + ("pre_feedforward_layernorm.weight" if gemma else "post_attention_layernorm.weight"))
        if mt == "phi3":  # one gate_up_proj, chunked: the gate first
            g, u = (m @ W(p + "mlp.gate_up_proj.weight").T).chunk(2, dim=-1)
        else:
            g = m @ W(p + "mlp.gate_proj.weight").T
            u = m @ W(p + "mlp.up_proj.weight").T
        act = gelu_new(g) if gemma else torch.nn.functional.silu(g)  # Gemma's gelu_pytorch_tanh is the tanh form
        y = (act * u) @ W(p + "mlp.down_proj.weight").T
        h = h + (norm(y, p + "post_feedforward_layernorm.weight") if gemma or olmo2 else y)
    if keep is not None:  # the stream after the last layer, and the logits: the final norm, then the LM head
        keep["h"] = h
        tied = config.get("tie_word_embeddings", gemma)  # the config classes' defaults: Gemma's true, the others' false
        head = W("embed_tokens.weight") if tied else W("lm_head.weight")
        logits = norm(h, "norm.weight") @ head.T
        cap = config.get("final_logit_softcapping", 30.0 if mt == "gemma2" else None)
        keep["logits"] = cap * torch.tanh(logits / cap) if cap else logits
    return out


def gemma_attention(q, k, v, allowed, config):
    """modeling_gemma2's eager attention: scores · query_pre_attn_scalar^−½, soft-capped, then masked."""
    scores = q @ k.transpose(-1, -2) * config.get("query_pre_attn_scalar", 256) ** -0.5
    cap = config.get("attn_logit_softcapping")
    if cap and not config.get("_softcap_after_mask"):
        scores = torch.tanh(scores / cap) * cap
    scores = scores.masked_fill(~allowed, float("-inf"))
    if cap and config.get("_softcap_after_mask"):  # the variant: the masked scores become −cap, not −inf
        scores = torch.tanh(scores / cap) * cap
    w = torch.softmax(scores, dim=-1)
    return w, w @ v


ENCODER_TYPES = ("bert", "roberta", "distilbert", "bart", "marian", "t5")
SEQ2SEQ_TYPES = ("bart", "marian", "t5")


def forward_bart_encoder(config, tensors, ids, dtype=torch.float32, layers=None, keep=None):
    """BART's encoder (transformers' modeling_bart): h = layernorm_embedding(shared[ids] · s +
    embed_positions[2 + i]) with s = √d_model when scale_embedding, else 1
    (BartLearnedPositionalEmbedding's offset of 2); per layer (post-LN) q = q_proj(h) · hd^−½ (BART
    scales the queries, not the scores), o = out_proj(attention), h = self_attn_layer_norm(h + o),
    h = final_layer_norm(h + fc2(gelu(fc1(h)))), every key visible. Variant for the tests:
    _no_offset (positions from row 0)."""
    t = _strip(tensors, "model.")
    W = lambda n: _t(t, n, dtype)  # noqa: E731
    C, H, L = config["d_model"], config["encoder_attention_heads"], config["encoder_layers"]
    hs, T = C // H, len(ids)
    scale = math.sqrt(C) if config.get("scale_embedding") else 1.0
    ids_t = torch.tensor(ids, dtype=torch.long)
    positions = torch.arange(T) + (0 if config.get("_no_offset") else 2)
    h = W("shared.weight")[ids_t] * scale + W("encoder.embed_positions.weight")[positions]
    h = layer_norm(h, W("encoder.layernorm_embedding.weight"), W("encoder.layernorm_embedding.bias"), 1e-5)
    lin = lambda x, n: x @ W(n + ".weight").T + W(n + ".bias")  # noqa: E731
    out = []
    for i in range(L if layers is None else layers):
        p = f"encoder.layers.{i}."
        a = h
        heads = lambda x: x.view(T, H, hs).transpose(0, 1)  # noqa: E731
        q = lin(a, p + "self_attn.q_proj") * hs ** -0.5
        k, v = lin(a, p + "self_attn.k_proj"), lin(a, p + "self_attn.v_proj")
        w = torch.softmax(heads(q) @ heads(k).transpose(-2, -1), dim=-1)
        o = lin((w @ heads(v)).transpose(0, 1).reshape(T, C), p + "self_attn.out_proj")
        out.append({"x": a, "weights": w, "output": o})
        h = layer_norm(h + o, W(p + "self_attn_layer_norm.weight"), W(p + "self_attn_layer_norm.bias"), 1e-5)
        f = lin(gelu_erf(lin(h, p + "fc1")), p + "fc2")
        h = layer_norm(h + f, W(p + "final_layer_norm.weight"), W(p + "final_layer_norm.bias"), 1e-5)
    if keep is not None:  # the encoder's output, which the decoder's cross-attention reads
        keep["h"] = h
    return out


def gelu_erf(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def _bart_attention(W, p, att, x, kv, H, allowed):
    """BartAttention: q = q_proj(x) · hd^−½, k and v from kv (x itself, or the encoder's output)."""
    T, C = x.shape
    S, hs = kv.shape[0], C // H
    lin = lambda y, n: y @ W(f"{p}{att}.{n}.weight").T + W(f"{p}{att}.{n}.bias")  # noqa: E731
    q = lin(x, "q_proj").view(T, H, hs).transpose(0, 1) * hs ** -0.5
    k = lin(kv, "k_proj").view(S, H, hs).transpose(0, 1)
    v = lin(kv, "v_proj").view(S, H, hs).transpose(0, 1)
    scores = (q @ k.transpose(-2, -1)).masked_fill(~allowed, float("-inf"))
    w = torch.softmax(scores, dim=-1)
    return w, lin((w @ v).transpose(0, 1).reshape(T, C), "out_proj")


def forward_bart_decoder(config, tensors, source_ids, ids, dtype=torch.float32):
    """BART's decoder (modeling_bart): the encoder's output over source_ids (every layer); then
    h = layernorm_embedding(shared[ids] · s + decoder.embed_positions[2 + i]) and per layer (post-LN)
    h = self_attn_layer_norm(h + self_attn(h), causal), h = encoder_attn_layer_norm(h +
    encoder_attn(h, enc)), h = final_layer_norm(h + fc2(gelu(fc1(h)))). Returns per layer
    {"self": {x, weights, output}, "cross": {x, weights, output}}."""
    t = _strip(tensors, "model.")
    W = lambda n: _t(t, n, dtype)  # noqa: E731
    C, H = config["d_model"], config["decoder_attention_heads"]
    ln = lambda x, n: layer_norm(x, W(n + ".weight"), W(n + ".bias"), 1e-5)  # noqa: E731
    lin = lambda x, n: x @ W(n + ".weight").T + W(n + ".bias")  # noqa: E731
    scale = math.sqrt(C) if config.get("scale_embedding") else 1.0
    keep = {}
    forward_bart_encoder(config, tensors, source_ids, dtype, keep=keep)
    enc = keep["h"]
    T, S = len(ids), enc.shape[0]
    h = W("shared.weight")[torch.tensor(ids, dtype=torch.long)] * scale + W("decoder.embed_positions.weight")[torch.arange(T) + 2]
    h = ln(h, "decoder.layernorm_embedding")
    out = []
    for i in range(config["decoder_layers"]):
        p = f"decoder.layers.{i}."
        layer = {}
        w, o = _bart_attention(W, p, "self_attn", h, h, H, causal_mask(T))
        layer["self"] = {"x": h, "weights": w, "output": o}
        h = ln(h + o, p + "self_attn_layer_norm")
        w, o = _bart_attention(W, p, "encoder_attn", h, enc, H, torch.ones(T, S, dtype=torch.bool))
        layer["cross"] = {"x": h, "weights": w, "output": o}
        h = ln(h + o, p + "encoder_attn_layer_norm")
        h = ln(h + lin(gelu_erf(lin(h, p + "fc1")), p + "fc2"), p + "final_layer_norm")
        out.append(layer)
    return out


def forward_encoder(config, tensors, ids, dtype=torch.float32, layers=None, types=None):
    """BERT / RoBERTa / DistilBERT (transformers' modeling_bert, _roberta, _distilbert): h =
    LayerNorm(word[ids] + position[p] + token_type[types]) with p = 0..T−1, or RoBERTa's
    create_position_ids_from_input_ids (padding_idx + cumulative count of non-padding tokens);
    DistilBERT has no token types; per layer (post-LN) o = dense(attention(h)) with every key visible,
    h = LayerNorm(h + o), h = LayerNorm(h + down(gelu(up(h)))) with the erf GELU. LayerNorm weights
    under .weight/.bias or BERT's older .gamma/.beta. Variants for the tests: _no_offset (RoBERTa's
    positions from 0), _no_token_types, _gelu_tanh."""
    mt = config["model_type"]
    if mt == "bart":
        return forward_bart_encoder(config, tensors, ids, dtype, layers)
    if mt in ("marian", "t5"):  # seq2seq_reference.py, beside this file
        import seq2seq_reference
        return seq2seq_reference.forward_encoder(config, tensors, ids, dtype)[:layers]
    distil = mt == "distilbert"
    t = _strip(tensors, mt + ".")
    W = lambda n: _t(t, n, dtype)  # noqa: E731

    def ln(base, x):
        w, b = (base + ".weight", base + ".bias") if base + ".weight" in t else (base + ".gamma", base + ".beta")
        return layer_norm(x, W(w), W(b), 1e-12 if distil else config.get("layer_norm_eps", 1e-12))

    C = config["dim"] if distil else config["hidden_size"]
    H = config["n_heads"] if distil else config["num_attention_heads"]
    L = config["n_layers"] if distil else config["num_hidden_layers"]
    hs, T = C // H, len(ids)
    ids_t = torch.tensor(ids, dtype=torch.long)
    if mt == "roberta" and not config.get("_no_offset"):
        pad = config.get("pad_token_id", 1)
        mask = (ids_t != pad).long()
        positions = torch.cumsum(mask, 0) * mask + pad
    else:
        positions = torch.arange(T)
    h = W("embeddings.word_embeddings.weight")[ids_t] + W("embeddings.position_embeddings.weight")[positions]
    if not distil and not config.get("_no_token_types"):
        tt = torch.tensor(types if types is not None else [0] * T, dtype=torch.long)
        h = h + W("embeddings.token_type_embeddings.weight")[tt]
    h = ln("embeddings.LayerNorm", h)
    allowed = torch.ones(T, T, dtype=torch.bool)
    act = gelu_new if config.get("_gelu_tanh") else gelu_erf
    out = []
    for i in range(L if layers is None else layers):
        if distil:
            p = f"transformer.layer.{i}."
            n = {"q": "attention.q_lin", "k": "attention.k_lin", "v": "attention.v_lin", "o": "attention.out_lin",
                 "ln1": "sa_layer_norm", "up": "ffn.lin1", "down": "ffn.lin2", "ln2": "output_layer_norm"}
        else:
            p = f"encoder.layer.{i}."
            n = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value", "o": "attention.output.dense",
                 "ln1": "attention.output.LayerNorm", "up": "intermediate.dense", "down": "output.dense", "ln2": "output.LayerNorm"}
        lin = lambda x, k: x @ W(p + n[k] + ".weight").T + W(p + n[k] + ".bias")  # noqa: E731
        heads = lambda x: x.view(T, H, hs).transpose(0, 1)  # noqa: E731
        w, ctx = attention(heads(lin(h, "q")), heads(lin(h, "k")), heads(lin(h, "v")), allowed)
        o = lin(ctx.transpose(0, 1).reshape(T, C), "o")
        out.append({"x": h, "weights": w, "output": o})
        h = ln(p + n["ln1"], h + o)
        h = ln(p + n["ln2"], h + lin(act(lin(h, "up")), "down"))
    return out


def forward(config, tensors, ids, dtype=torch.float32, layers=None, types=None, keep=None, ablate=None):
    mt = config.get("model_type")
    if mt in ENCODER_TYPES:
        return forward_encoder(config, tensors, ids, dtype, layers, types)
    if mt == "gpt2":
        return forward_gpt2(config, tensors, ids, dtype, layers, keep, ablate)
    if mt in LLAMA_TYPES:
        return forward_llama(config, tensors, ids, dtype, layers, keep, ablate)
    raise ValueError(f"model_type {mt!r} is not one the reference knows")


def num_layers(config):
    if config.get("model_type") in ("bart", "marian"):
        return config["encoder_layers"]
    if config.get("model_type") == "t5":
        return config["num_layers"]
    if config.get("model_type") == "gemma3":
        return config["text_config"]["num_hidden_layers"]
    if config.get("model_type") == "distilbert":
        return config["n_layers"]
    return config["n_layer"] if config.get("model_type") == "gpt2" else config["num_hidden_layers"]


def vocab_size(config):
    return config["text_config"]["vocab_size"] if config.get("model_type") == "gemma3" else config["vocab_size"]


# ---- self-test -----------------------------------------------------------------------------------

def _self_test():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    dt = torch.float64
    worst = {}

    def note(name, d):
        worst[name] = max(worst.get(name, 0.0), float(d))

    # 1. GPT-2 attention layer against nn.MultiheadAttention with the same weights
    for C, H, T in [(16, 4, 7), (12, 3, 1), (8, 1, 5), (32, 8, 9)]:
        g = torch.Generator().manual_seed(C * 100 + T)
        cfg = {"model_type": "gpt2", "n_embd": C, "n_head": H, "n_layer": 1, "n_positions": 16,
               "layer_norm_epsilon": 1e-5}
        r = lambda *s, sc=0.3: (torch.randn(*s, generator=g) * sc).numpy().astype(np.float32)  # noqa: E731
        tensors = {"wte.weight": r(20, C, sc=1.0), "wpe.weight": r(16, C, sc=0.5),
                   "h.0.ln_1.weight": 1 + r(C, sc=0.1), "h.0.ln_1.bias": r(C, sc=0.1),
                   "h.0.attn.c_attn.weight": r(C, 3 * C, sc=0.5), "h.0.attn.c_attn.bias": r(3 * C, sc=0.1),
                   "h.0.attn.c_proj.weight": r(C, C), "h.0.attn.c_proj.bias": r(C, sc=0.1),
                   "h.0.ln_2.weight": 1 + r(C, sc=0.1), "h.0.ln_2.bias": r(C, sc=0.1),
                   "h.0.mlp.c_fc.weight": r(C, 4 * C), "h.0.mlp.c_fc.bias": r(4 * C),
                   "h.0.mlp.c_proj.weight": r(4 * C, C), "h.0.mlp.c_proj.bias": r(C)}
        ids = torch.randint(0, 20, (T,), generator=g).tolist()
        got = forward(cfg, tensors, ids, dt)[0]
        mha = torch.nn.MultiheadAttention(C, H, bias=True, batch_first=True).to(dt)
        with torch.no_grad():
            mha.in_proj_weight.copy_(torch.from_numpy(tensors["h.0.attn.c_attn.weight"]).T)
            mha.in_proj_bias.copy_(torch.from_numpy(tensors["h.0.attn.c_attn.bias"]))
            mha.out_proj.weight.copy_(torch.from_numpy(tensors["h.0.attn.c_proj.weight"]).T)
            mha.out_proj.bias.copy_(torch.from_numpy(tensors["h.0.attn.c_proj.bias"]))
            x = got["x"].unsqueeze(0)
            mask = ~causal_mask(T)  # True = not allowed
            o, w = mha(x, x, x, attn_mask=mask, need_weights=True, average_attn_weights=False)
        note("gpt2 weights vs nn.MultiheadAttention", (w[0] - got["weights"]).abs().max())
        note("gpt2 output vs nn.MultiheadAttention", (o[0] - got["output"]).abs().max())
        # the LayerNorm against torch's
        e = torch.from_numpy(tensors["wte.weight"]).to(dt)[ids] + torch.from_numpy(tensors["wpe.weight"]).to(dt)[:T]
        ln = torch.nn.functional.layer_norm(e, (C,), torch.from_numpy(tensors["h.0.ln_1.weight"]).to(dt),
                                            torch.from_numpy(tensors["h.0.ln_1.bias"]).to(dt), 1e-5)
        note("gpt2 ln_1 vs F.layer_norm", (ln - got["x"]).abs().max())
    # gelu_new against torch's tanh GELU
    xs = torch.linspace(-6, 6, 1001, dtype=dt)
    note("gelu_new vs F.gelu(approximate='tanh')",
         (gelu_new(xs) - torch.nn.functional.gelu(xs, approximate="tanh")).abs().max())

    # 2. RoPE rotate_half against complex numbers: pair (x_i, x_{i+d/2}) as x_i + i·x_{i+d/2}, times e^{i·p·θ_i}
    for hd, theta, T in [(8, 10000.0, 7), (12, 500000.0, 9), (2, 10000.0, 3), (64, 1e6, 5)]:
        x = torch.randn(3, T, hd, dtype=dt)
        cos, sin = rope_tables(T, hd, theta, dt)
        ours = apply_rope(x, cos, sin)
        half = hd // 2
        z = torch.complex(x[..., :half], x[..., half:])
        ang = torch.arange(T, dtype=dt)[:, None] * torch.tensor(
            [theta ** (-2.0 * i / hd) for i in range(half)], dtype=dt)[None, :]
        zr = z * torch.polar(torch.ones_like(ang), ang)
        ref = torch.cat((zr.real, zr.imag), dim=-1)
        note("RoPE half vs complex", (ours - ref).abs().max())
        # relative property: <R_m q, R_n k> depends on m − n only
        q1, k1 = torch.randn(hd, dtype=dt), torch.randn(hd, dtype=dt)
        Q = apply_rope(q1.expand(T, hd), cos, sin)
        K = apply_rope(k1.expand(T, hd), cos, sin)
        if T >= 3:
            note("RoPE relative-position invariance", abs(float(Q[2] @ K[1] - Q[1] @ K[0])))

    # 3. Llama attention (no RoPE contribution at T = 1 aside; full check with GQA) against the same
    # computation with each kv head's weights explicitly copied per query head, and nn.MultiheadAttention
    # for the case Hkv = H, T = 1 (RoPE is the identity at position 0)
    for C, H, Hkv, hd, T, mt in [(32, 4, 2, 8, 7, "llama"), (32, 4, 1, 12, 6, "llama"), (16, 4, 4, 4, 1, "llama"),
                                 (16, 2, 2, 8, 5, "qwen2"), (32, 4, 2, 8, 8, "mistral")]:
        g = torch.Generator().manual_seed(hd * 1000 + T)
        r = lambda *s, sc=0.3: (torch.randn(*s, generator=g) * sc).numpy().astype(np.float32)  # noqa: E731
        cfg = {"model_type": mt, "hidden_size": C, "num_attention_heads": H, "num_key_value_heads": Hkv,
               "head_dim": hd, "num_hidden_layers": 1, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
               "intermediate_size": 2 * C, "sliding_window": 3}
        tensors = {"model.embed_tokens.weight": r(20, C, sc=1.0),
                   "model.layers.0.input_layernorm.weight": 1 + r(C, sc=0.1),
                   "model.layers.0.self_attn.q_proj.weight": r(H * hd, C),
                   "model.layers.0.self_attn.k_proj.weight": r(Hkv * hd, C),
                   "model.layers.0.self_attn.v_proj.weight": r(Hkv * hd, C),
                   "model.layers.0.self_attn.o_proj.weight": r(C, H * hd),
                   "model.layers.0.post_attention_layernorm.weight": 1 + r(C, sc=0.1),
                   "model.layers.0.mlp.gate_proj.weight": r(2 * C, C),
                   "model.layers.0.mlp.up_proj.weight": r(2 * C, C),
                   "model.layers.0.mlp.down_proj.weight": r(C, 2 * C)}
        for n in ("q", "k", "v"):
            rows = (H if n == "q" else Hkv) * hd
            tensors[f"model.layers.0.self_attn.{n}_proj.bias"] = r(rows, sc=0.2)
        ids = torch.randint(0, 20, (T,), generator=g).tolist()
        got = forward(cfg, tensors, ids, dt)[0]
        # independent: loop over query heads, kv head = h // (H / Hkv), explicit per-position rotation
        x = got["x"]
        e = torch.from_numpy(tensors["model.embed_tokens.weight"]).to(dt)[ids]
        wn = torch.from_numpy(tensors["model.layers.0.input_layernorm.weight"]).to(dt)
        note("RMSNorm vs formula", (x - e / torch.sqrt((e ** 2).mean(-1, keepdim=True) + 1e-6) * wn).abs().max())
        P = lambda n: torch.from_numpy(tensors[f"model.layers.0.self_attn.{n}.weight"]).to(dt)  # noqa: E731
        B = lambda n: (torch.from_numpy(tensors[f"model.layers.0.self_attn.{n}.bias"]).to(dt)  # noqa: E731
                       if mt == "qwen2" else 0)
        Wo = P("o_proj")
        ctxs, out = [], torch.zeros(T, C, dtype=dt)
        for h in range(H):
            kv = h // (H // Hkv)
            qh = x @ P("q_proj")[h * hd:(h + 1) * hd].T + (B("q_proj")[h * hd:(h + 1) * hd] if mt == "qwen2" else 0)
            kh = x @ P("k_proj")[kv * hd:(kv + 1) * hd].T + (B("k_proj")[kv * hd:(kv + 1) * hd] if mt == "qwen2" else 0)
            vh = x @ P("v_proj")[kv * hd:(kv + 1) * hd].T + (B("v_proj")[kv * hd:(kv + 1) * hd] if mt == "qwen2" else 0)

            def rot(vec, pos):
                o = vec.clone()
                for i in range(hd // 2):
                    a = pos * 10000.0 ** (-2.0 * i / hd)
                    c, s = math.cos(a), math.sin(a)
                    o[i] = vec[i] * c - vec[i + hd // 2] * s
                    o[i + hd // 2] = vec[i + hd // 2] * c + vec[i] * s
                return o

            qh = torch.stack([rot(qh[p_], p_) for p_ in range(T)])
            kh = torch.stack([rot(kh[p_], p_) for p_ in range(T)])
            wrow = torch.zeros(T, T, dtype=dt)
            for i in range(T):
                js = [j for j in range(T) if j <= i and (mt != "mistral" or j > i - 3)]
                s = torch.stack([qh[i] @ kh[j] for j in js]) / math.sqrt(hd)
                wrow[i, js] = torch.softmax(s, 0)
            note(f"{mt} weights vs per-head loop", (wrow - got["weights"][h]).abs().max())
            ctxs.append(wrow @ vh)
            out += (wrow @ vh) @ Wo[:, h * hd:(h + 1) * hd].T
        note(f"{mt} output vs per-head loop", (out - got["output"]).abs().max())
        if Hkv == H and T == 1 and mt == "llama":
            mha = torch.nn.MultiheadAttention(C, H, bias=False, batch_first=True).to(dt)
            with torch.no_grad():
                mha.in_proj_weight.copy_(torch.cat([P("q_proj"), P("k_proj"), P("v_proj")]))
                mha.out_proj.weight.copy_(Wo)
                o, w = mha(x[None], x[None], x[None], need_weights=True, average_attn_weights=False)
            note("llama T=1 output vs nn.MultiheadAttention", (o[0] - got["output"]).abs().max())

    # 4. float32 and float64 runs of the same weights agree closely (the float32 arithmetic is sane)
    out32 = forward(cfg, tensors, ids, torch.float32)[0]["output"].double()
    out64 = forward(cfg, tensors, ids, torch.float64)[0]["output"]
    note("float32 vs float64 forward", (out32 - out64).abs().max())
    ok = True
    for k, v in worst.items():
        lim = 1e-5 if "float32" in k else 1e-10
        flag = "ok" if v <= lim else "FAIL"
        ok &= v <= lim
        print(f"  {flag:4} {k}: max |diff| {v:.3g}")
    print("model_reference: self-test", "passed" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(_self_test())
