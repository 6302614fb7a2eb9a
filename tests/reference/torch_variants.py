#!/usr/bin/env python3
"""Reference check of the attention variants of today's models against PyTorch, written from the
papers and the well-known conventions (not from attn's code).

Legend: B batch, T queries, S keys, C model width, H heads, hs = C/H.

Variants checked so far:
  positions: "sinusoidal" (Vaswani et al. 2017, section 3.5: PE[p, 2i] = sin(p / 10000^(2i/C)),
             PE[p, 2i+1] = cos(...)) and {"learned": table} (GPT-2's wpe: row p added to token p),
             added to x before the projections.

Each problem is a seeded random input sent to `ATTN run - --format json`; the steps a variant adds
and the attention's output are compared with a float64 torch computation of the same formulas. Any
value more than 1e-5 away fails; a variant step that is missing fails. Bad variant inputs must be
refused with exit code 2 and a message naming the JSON path.

Usage: torch_variants.py ATTN_BINARY     (exit 0 pass, 1 fail, 77 skipped)
"""
import json
import subprocess
import sys

try:
    import numpy as np
    import torch
except ImportError as e:  # ctest reports 77 as "skipped"
    print(f"SKIPPED: NumPy or PyTorch is not importable here ({e}); install python3-numpy and "
          f"python3-torch (scripts/setup.sh --tests)")
    sys.exit(77)

TOL = 1e-5
SEED = 20261123
torch.set_num_threads(1)


def sinusoidal(L, C):
    """Vaswani et al. 2017, 3.5, in float64."""
    pe = torch.zeros(L, C, dtype=torch.float64)
    pos = torch.arange(L, dtype=torch.float64)[:, None]
    for i2 in range(0, C, 2):
        angle = pos[:, 0] / (10000.0 ** (i2 / C))
        pe[:, i2] = torch.sin(angle)
        if i2 + 1 < C:
            pe[:, i2 + 1] = torch.cos(angle)
    return pe


def attention(x, wq, wk, wv, H, causal):
    """Multi-head attention in float64: x (B, T, C), W in x@W form."""
    B, T, _ = x.shape
    q, k, v = x @ wq, x @ wk, x @ wv
    hs, hv = q.shape[-1] // H, v.shape[-1] // H
    q = q.view(B, T, H, hs).transpose(1, 2)
    k = k.view(B, T, H, hs).transpose(1, 2)
    v = v.view(B, T, H, hv).transpose(1, 2)
    scores = q @ k.transpose(-2, -1) / hs ** 0.5
    if causal:
        scores = scores.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return (weights @ v).transpose(1, 2).reshape(B, T, H * hv)


def run(attn, problem):
    p = subprocess.run([attn, "run", "-", "--format", "json"], input=json.dumps(problem), capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def numbers(data):
    """The trace's nested lists, its "-inf", "inf" and "nan" strings read as floats."""
    if isinstance(data, list):
        return [numbers(d) for d in data]
    return float(data) if isinstance(data, str) else data


def steps_of(stdout):
    return {s["id"]: torch.tensor(numbers(s["data"]), dtype=torch.float64) for s in json.loads(stdout)["steps"]}


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    attn = sys.argv[1]
    rng = np.random.default_rng(SEED)
    failures, checked, worst = [], 0, {}

    def compare(name, variant, got, want):
        nonlocal checked
        checked += 1
        if got is None:
            failures.append(f"{name}: step missing")
            return
        if tuple(got.shape) != tuple(want.shape):
            failures.append(f"{name}: shape {tuple(got.shape)}, reference {tuple(want.shape)}")
            return
        d = float((got - want).abs().max()) if got.numel() else 0.0
        worst[variant] = max(worst.get(variant, 0.0), d)
        if d > TOL:
            failures.append(f"{name}: differs by {d:.3g}")

    # ---- positions ------------------------------------------------------------------------------
    for case in range(24):
        B = [None, 1, 2][case % 3]
        T = [1, 2, 3, 5, 8, 13][case % 6]
        H = [1, 2, 3][case % 3]
        C = H * [2, 3, 4][(case // 3) % 3]
        causal = case % 2 == 1
        learned = case % 4 >= 2
        P = T + (case % 3)
        x = rng.standard_normal((B or 1, T, C)).astype(np.float32)
        w = {n: rng.standard_normal((C, C)).astype(np.float32) / np.sqrt(C) for n in ("W_q", "W_k", "W_v")}
        table = rng.standard_normal((P, C)).astype(np.float32) if learned else None
        problem = {"mode": "causal" if causal else ("multi-head" if H > 1 else "self"), "heads": H,
                   "embeddings": (x if B else x[0]).tolist(), "weights": {n: m.tolist() for n, m in w.items()},
                   "positions": {"learned": table.tolist()} if learned else "sinusoidal"}
        name = f"positions case {case} ({'learned' if learned else 'sinusoidal'}, B={B}, T={T}, C={C}, H={H}, causal={causal})"
        rc, out, err = run(attn, problem)
        if rc != 0:
            failures.append(f"{name}: exit {rc}: {err.strip()}")
            continue
        got = steps_of(out)
        pe = torch.tensor(table[:T], dtype=torch.float64) if learned else sinusoidal(T, C)
        xs = torch.tensor(x, dtype=torch.float64)
        want_x = xs + pe
        want_out = attention(want_x, *(torch.tensor(w[n], dtype=torch.float64) for n in ("W_q", "W_k", "W_v")), H, causal)
        last = "merged" if H > 1 else "context"
        compare(name + " positions", "positions", got.get("positions"), pe)
        compare(name + " x.pos", "positions", got.get("x.pos"), want_x if B else want_x[0])
        ctx = got.get(last)
        compare(name + " " + last, "positions", ctx, want_out if B else want_out[0])

    # refused inputs: exit 2 and the JSON path
    base = {"mode": "self", "embeddings": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
            "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}}
    refusals = [
        ({"positions": "rotary"}, "positions"),
        ({"positions": {"learned": [[0.0, 0.0]]}}, "positions.learned"),
        ({"positions": {"learned": [[0.0, 0.0, 0.0]] * 3}}, "positions.learned"),
        ({"positions": {"table": [[0.0, 0.0]] * 3}}, "positions.table"),
        ({"positions": 3}, "positions"),
    ]
    for extra, path in refusals:
        rc, _, err = run(attn, {**base, **extra})
        checked += 1
        if rc != 2 or not err.startswith(f"attn: {path}"):
            failures.append(f"refusal {extra}: exit {rc}, message {err.strip()!r} (wanted exit 2 naming {path})")
    rc, _, err = run(attn, {"mode": "self", "q": [[1.0]], "k": [[1.0]], "v": [[1.0]], "positions": "sinusoidal"})
    checked += 1
    if rc != 2 or "positions" not in err:
        failures.append(f"positions with q, k, v given: exit {rc}, {err.strip()!r}")

    for f in failures[:30]:
        print("FAIL", f)
    for variant, d in sorted(worst.items()):
        print(f"{variant}: largest difference {d:.3g} (tolerance {TOL})")
    print(f"{checked} checks, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
