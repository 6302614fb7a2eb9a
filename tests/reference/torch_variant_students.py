#!/usr/bin/env python3
"""Students of today's attention written independently in PyTorch: each computes a Llama-style layer
(RoPE, grouped-query heads, a causal sliding window, ALiBi) from scratch, makes one of the variants'
classic mistakes (or none), saves the tensors a student would dump (<step id>.npy), and
`attn diagnose` must name that mistake (or report the student correct).

The mistakes, as a student writes them:
  rope-wrong-style    GPT-J's rotate_every_two (pairs (2i, 2i+1)) where the model uses Llama's rotate_half
  rope-on-v           apply_rotary_pos_emb on the values too
  rope-before-split   RoPE on the [T, H·hs] rows before .view(B, T, H, hs): tables sized to the whole width
  kv-tiled            k.repeat(1, H/Hkv, 1, 1) (torch's tile) instead of repeat_kv's interleave
  window-off-by-one   keep j >= i - W (W + 1 keys) instead of j > i - W
  alibi-sign-flipped  + m·(i - j) instead of − m·(i - j)

The problem: T = 7, C = 16, H = 4, Hkv = 2, hs = 4, RoPE "half" (theta 10000), causal with W = 3,
ALiBi with Press et al.'s slopes; x and the weights drawn here and written into the problem's JSON.

Usage: torch_variant_students.py PATH_TO_ATTN
Exit 0: every student diagnosed as expected. 1: a wrong diagnosis. 77: skipped (no torch).
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"SKIPPED: NumPy or PyTorch is not importable here ({e}); install python3-numpy and python3-torch (scripts/setup.sh --tests)")
    sys.exit(77)

T, C, H, HKV, HS, W, THETA = 7, 16, 4, 2, 4, 3, 10000.0
MISTAKES = ["rope-wrong-style", "rope-on-v", "rope-before-split", "kv-tiled", "window-off-by-one", "alibi-sign-flipped"]


def tables(L, R):
    inv = 1.0 / (THETA ** (torch.arange(0, R, 2, dtype=torch.float64) / R))
    f = torch.outer(torch.arange(L, dtype=torch.float64), inv)
    return torch.cos(f), torch.sin(f)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rotate_every_two(x):
    return torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)


def rope(x, style):
    """x (..., L, d): all d features rotated, with tables sized to d."""
    cos, sin = tables(x.shape[-2], x.shape[-1])
    if style == "half":
        return x * torch.cat((cos, cos), -1) + rotate_half(x) * torch.cat((sin, sin), -1)
    return x * cos.repeat_interleave(2, -1) + rotate_every_two(x) * sin.repeat_interleave(2, -1)


def slopes(n):
    start = 2 ** (-8 / n)
    return [start ** (h + 1) for h in range(n)]


def problem():
    rng = np.random.default_rng(11)
    f32 = lambda a: a.astype(np.float32)
    x = f32(rng.standard_normal((T, C)))
    wq, wk, wv = (f32(rng.standard_normal((C, n)) / np.sqrt(C)) for n in (H * HS, HKV * HS, HKV * HS))
    spec = {"title": "variant students", "mode": "causal", "heads": H, "kv_heads": HKV, "window": W, "alibi": True,
            "rope": {"style": "half"}, "tokens": [f"t{i}" for i in range(T)], "embeddings": x.tolist(),
            "weights": {"W_q": wq.tolist(), "W_k": wk.tolist(), "W_v": wv.tolist()}}
    return spec, *(torch.tensor(a, dtype=torch.float64) for a in (x, wq, wk, wv))


def student(mistake, x, wq, wk, wv):
    q, k, v = x @ wq, x @ wk, x @ wv
    if mistake == "rope-before-split":
        q, k = rope(q, "half"), rope(k, "half")           # the whole [T, H·hs] row as one vector
    q = q.view(T, H, HS).transpose(0, 1)
    k = k.view(T, HKV, HS).transpose(0, 1)
    v = v.view(T, HKV, HS).transpose(0, 1)
    if mistake != "rope-before-split":
        style = "interleaved" if mistake == "rope-wrong-style" else "half"
        q, k = rope(q, style), rope(k, style)
        if mistake == "rope-on-v":
            v = rope(v, "half")
    n = H // HKV
    if mistake == "kv-tiled":
        kr, vr = k.repeat(n, 1, 1), v.repeat(n, 1, 1)
    else:
        kr = k[:, None].expand(HKV, n, T, HS).reshape(H, T, HS)
        vr = v[:, None].expand(HKV, n, T, HS).reshape(H, T, HS)
    scaled = q @ kr.transpose(-2, -1) / HS ** 0.5
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    sign = 1.0 if mistake == "alibi-sign-flipped" else -1.0
    alibi = sign * torch.tensor(slopes(H), dtype=torch.float64)[:, None, None] * (i - j).to(torch.float64)
    keep = (j <= i) & ((j >= i - W) if mistake == "window-off-by-one" else (j > i - W))
    weights = torch.softmax((scaled + alibi).masked_fill(~keep, float("-inf")), dim=-1)
    context = weights @ vr
    return {"q.rope": q, "k.rope": k, "k.repeat": kr, "v.repeat": vr, "alibi": alibi, "mask": keep.to(torch.float64),
            "weights": weights, "context": context}


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    attn = sys.argv[1]
    spec, x, wq, wk, wv = problem()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        spec_path = os.path.join(tmp, "problem.json")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        for mistake in ["none"] + MISTAKES:
            d = os.path.join(tmp, mistake)
            os.mkdir(d)
            for step, t in student(mistake, x, wq, wk, wv).items():
                np.save(os.path.join(d, step + ".npy"), t.numpy())
            p = subprocess.run([attn, "diagnose", spec_path, d], capture_output=True, text=True)
            verdict = [line for line in p.stdout.splitlines() if line.startswith("verdict:")]
            if mistake == "none":
                ok = p.returncode == 0 and "\ncorrect: the student's" in p.stdout
            else:
                ok = p.returncode == 1 and verdict == [f"verdict: {mistake}"]
            print(f"{'ok  ' if ok else 'FAIL'} {mistake}: exit {p.returncode}, {verdict[0] if verdict else 'correct' if p.returncode == 0 else 'no verdict'}")
            if not ok:
                failures.append(mistake)
                print(p.stdout + p.stderr)
    print(f"{1 + len(MISTAKES)} students, {len(failures)} misdiagnosed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
