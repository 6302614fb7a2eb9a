#!/usr/bin/env python3
"""Masks the way frameworks mean them, checked against PyTorch:
  attn_mask.block  = nn.MultiheadAttention's boolean attn_mask (True = not allowed)
  attn_mask.keep   = scaled_dot_product_attention's boolean mask (True = may attend)
  attn_mask.add    = a float mask added to the scores (nn.MultiheadAttention's float attn_mask)
  causal top-left  = scaled_dot_product_attention(is_causal=True)
  causal bottom-right = GPT-2's cached-keys slicing: tril(ones(S, S))[S - T:, :]
  masked_row nan   = nn.MultiheadAttention(need_weights=True) on a fully masked row
  masked_row uniform / mask_fill -1e9 = masked_fill(-1e9) then softmax (the course notes' code)
  masked_row zeros = scaled_dot_product_attention's safe softmax (PyTorch 2.5+): NaN rows as 0
torch 1.13 has SDPA as F._scaled_dot_product_attention (same mask conventions); torch 2 as F.scaled_dot_product_attention.

Usage: torch_masks.py PATH_TO_ATTN. Exit 0 all agree within 1e-5, 1 a difference, 77 skipped.
"""
import json
import math
import subprocess
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:
    print(f"SKIPPED: PyTorch is not importable here ({e}); install python3-torch (scripts/setup.sh --tests)")
    sys.exit(77)

torch.set_num_threads(1)
TOL = 1e-5


def attn(exe, spec):
    p = subprocess.run([exe, "run", "-", "--format", "json"], input=json.dumps(spec), capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"attn exited {p.returncode}: {p.stderr}")
    out = {}
    for s in json.loads(p.stdout)["steps"]:
        flat = []
        def walk(x):
            if isinstance(x, list):
                for e in x:
                    walk(e)
            else:
                flat.append(float(x))
        walk(s["data"])
        out[s["id"]] = torch.tensor(flat, dtype=torch.float32).reshape(s["shape"])
    return out


def sdpa(F, torch, q, k, v, attn_mask=None, is_causal=False):
    """SDPA's output and weights. torch 1.13's private form returns both; torch 2's public one returns
    the output only, so the weights are its formula written out (the output still torch's own)."""
    if hasattr(F, "_scaled_dot_product_attention"):
        return F._scaled_dot_product_attention(q, k, v, attn_mask, 0.0, True, is_causal)
    o = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal)
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if is_causal:
        attn_mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, -math.inf)
    return o, torch.softmax(s, dim=-1)


def same(a, b):
    a, b = a.reshape(-1), b.reshape(-1)
    nan_a, nan_b = torch.isnan(a), torch.isnan(b)
    if not torch.equal(nan_a, nan_b):
        return math.inf
    ok = ~nan_a
    return float((a[ok] - b[ok]).abs().max()) if ok.any() else 0.0


def main():
    exe = sys.argv[1]
    g = torch.Generator().manual_seed(0)
    results = []

    def record(name, got, want):
        d = same(got, want)
        results.append((name, d))
        print(f"{'ok  ' if d <= TOL else 'FAIL'} {name:58s} max |attn - torch| = {d:.2e}")

    T, S, C = 4, 6, 4
    q = torch.randn(T, C, generator=g)
    k = torch.randn(S, C, generator=g)
    v = torch.randn(S, C, generator=g)
    kq = k[:T]  # keys of the queries' own length, for self-attention
    vq = v[:T]

    # block: nn.MultiheadAttention's boolean mask (True = not allowed), identity projections
    block = torch.rand(T, T, generator=g) < 0.4
    block[:, 0] = False  # every row keeps a key
    mha = torch.nn.MultiheadAttention(C, 1, bias=False)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.eye(C).repeat(3, 1))
        mha.out_proj.weight.copy_(torch.eye(C))
        x = q
        out, w = mha(x, x, x, attn_mask=block, need_weights=True)
    got = attn(exe, {"embeddings": x.tolist(), "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity", "W_o": "identity"},
                     "attn_mask": {"block": block.tolist()}})
    record("block = nn.MultiheadAttention attn_mask (bool): weights", got["weights"], w)
    record("block = nn.MultiheadAttention attn_mask (bool): output", got["output"], out)

    # keep: SDPA's boolean mask (True = may attend)
    keep = ~block
    o, w = sdpa(F, torch, q[None], kq[None], vq[None], attn_mask=keep[None])
    got = attn(exe, {"q": q.tolist(), "k": kq.tolist(), "v": vq.tolist(), "attn_mask": {"keep": keep.tolist()}})
    record("keep = scaled_dot_product_attention attn_mask (bool): weights", got["weights"], w[0])
    record("keep = scaled_dot_product_attention attn_mask (bool): context", got["context"], o[0])

    # add: a float mask added to the scores (with -inf entries)
    add = torch.randn(T, T, generator=g)
    add[block] = -math.inf
    with torch.no_grad():
        out, w = mha(x, x, x, attn_mask=add, need_weights=True)
    got = attn(exe, {"embeddings": x.tolist(), "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity", "W_o": "identity"},
                     "attn_mask": {"add": [[("-inf" if math.isinf(e) else e) for e in row] for row in add.tolist()]}})
    record("add = nn.MultiheadAttention attn_mask (float): weights", got["weights"], w)
    record("add = nn.MultiheadAttention attn_mask (float): output", got["output"], out)

    # causal, T != S, top-left: SDPA is_causal
    o, w = sdpa(F, torch, q[None], k[None], v[None], is_causal=True)
    got = attn(exe, {"mode": "causal", "q": q.tolist(), "k": k.tolist(), "v": v.tolist()})
    record("causal top-left (T=4, S=6) = SDPA is_causal: weights", got["weights"], w[0])
    record("causal top-left (T=4, S=6) = SDPA is_causal: context", got["context"], o[0])

    # causal, T != S, bottom-right: GPT-2 slicing its [S, S] tril to the last T rows
    bias = torch.tril(torch.ones(S, S))[S - T:, :S]
    scores = (q @ k.T) / math.sqrt(C)
    w = torch.softmax(scores.masked_fill(bias == 0, -math.inf), -1)
    got = attn(exe, {"mode": "causal", "causal_align": "bottom-right", "q": q.tolist(), "k": k.tolist(), "v": v.tolist()})
    record("causal bottom-right (T=4, S=6) = GPT-2 cached keys: weights", got["weights"], w)
    record("causal bottom-right (T=4, S=6) = GPT-2 cached keys: context", got["context"], w @ v)

    # a fully masked row, three policies
    full = block.clone()
    full[2, :] = True  # query 2 may attend nothing
    with torch.no_grad():
        out, w_nan = mha(x, x, x, attn_mask=full, need_weights=True)
    spec = {"embeddings": x.tolist(), "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity", "W_o": "identity"},
            "attn_mask": {"block": full.tolist()}}
    got = attn(exe, dict(spec, masked_row="nan"))
    record("masked_row nan = nn.MultiheadAttention(need_weights): weights", got["weights"], w_nan)
    record("masked_row nan = nn.MultiheadAttention(need_weights): output", got["output"], out)
    got = attn(exe, dict(spec, masked_row="zeros"))
    record("masked_row zeros = SDPA safe softmax (NaN rows as 0)", got["weights"], torch.nan_to_num(w_nan, nan=0.0))
    s_ = (x @ x.T) / math.sqrt(C)
    w_fill = torch.softmax(s_.masked_fill(full, -1e9), -1)
    got = attn(exe, dict(spec, masked_row="uniform"))
    record("masked_row uniform = masked_fill(-1e9): weights", got["weights"], w_fill)
    got = attn(exe, dict(spec, mask_fill=-1e9))
    record("mask_fill -1e9 = the course notes' masked_fill(mask, -1e9)", got["weights"], w_fill)
    record("mask_fill -1e9: masked scores hold -1e9", got["masked"], s_.masked_fill(full, -1e9))

    failures = sum(1 for _, d in results if not d <= TOL)
    print(f"masks: {len(results)} comparisons with torch {torch.__version__}, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
