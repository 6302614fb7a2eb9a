#!/usr/bin/env python3
"""Reference check: attn's steps against PyTorch (nn.MultiheadAttention and F.linear) on random
problems in every mode: self, causal, cross, multi-head, padding, biases, fused and separate weights,
x@W and torch layouts, with and without a batch dimension.

Usage: torch_reference.py PATH_TO_ATTN
Exit 0: every compared value agrees within 1e-5. 1: a difference. 77: skipped (torch not importable).
"""
import json
import subprocess
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # ctest reports 77 as "skipped"
    print(f"SKIPPED: PyTorch is not importable here ({e}); install python3-torch (scripts/setup.sh --tests)")
    sys.exit(77)

TOL = 1e-5
torch.set_num_threads(1)


def run_attn(attn, spec):
    p = subprocess.run([attn, "run", "-", "--format", "json"], input=json.dumps(spec),
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"attn exited {p.returncode}: {p.stderr}")
    doc = json.loads(p.stdout)
    steps = {}
    for s in doc["steps"]:
        flat = torch.tensor(_flatten(s["data"]), dtype=torch.float32)
        steps[s["id"]] = flat.reshape(s["shape"])
    return steps


def _flatten(x):
    if isinstance(x, list):
        out = []
        for v in x:
            out.extend(_flatten(v))
        return out
    return [float(x)]  # "-inf" / "inf" / "nan" read as floats


def make_case(seed, mode, batched, heads, fused, layout):
    g = torch.Generator().manual_seed(seed)
    hs = int(torch.randint(1, 4, (1,), generator=g))
    C = heads * hs
    T = int(torch.randint(1, 8, (1,), generator=g))
    S = int(torch.randint(1, 7, (1,), generator=g)) if mode == "cross" else T
    B = 2 if batched else None
    torch.manual_seed(seed)
    mha = torch.nn.MultiheadAttention(C, heads, bias=True, batch_first=True)
    with torch.no_grad():
        mha.in_proj_bias.normal_(0, 0.1, generator=g)
        mha.out_proj.bias.normal_(0, 0.1, generator=g)
    shape = lambda L: (B, L, C) if batched else (L, C)
    x = torch.randn(shape(T), generator=g)
    src = torch.randn(shape(S), generator=g) if mode == "cross" else x
    lengths = None
    if batched and seed % 2 == 0:
        lengths = [S, max(1, S - 1 - seed % 3)]

    W = mha.in_proj_weight.detach()   # [3C, C], torch layout
    b = mha.in_proj_bias.detach()
    Wo, bo = mha.out_proj.weight.detach(), mha.out_proj.bias.detach()

    def lay(w):  # torch [out, in] -> the spec's layout
        return (w if layout == "torch" else w.T).tolist()

    spec = {"mode": mode, "heads": heads, "layout": layout, "embeddings": x.tolist()}
    if mode == "cross":
        spec["source"] = {"embeddings": src.tolist()}
    if fused:
        spec["weights"] = {"W_qkv": lay(W), "b_qkv": b.tolist()}
    else:
        spec["weights"] = {"W_q": lay(W[:C]), "W_k": lay(W[C:2 * C]), "W_v": lay(W[2 * C:]),
                           "b_q": b[:C].tolist(), "b_k": b[C:2 * C].tolist(), "b_v": b[2 * C:].tolist()}
    spec["weights"]["W_o"] = lay(Wo)
    spec["weights"]["b_o"] = bo.tolist()
    if lengths is not None:
        spec["padding"] = {"lengths": lengths}

    attn_mask = torch.triu(torch.ones(T, S, dtype=torch.bool), 1) if mode == "causal" else None
    kpm = None
    if lengths is not None:
        kpm = torch.arange(S)[None, :] >= torch.tensor(lengths)[:, None]
    with torch.no_grad():
        out, weights = mha(x, src, src, attn_mask=attn_mask, key_padding_mask=kpm,
                           need_weights=True, average_attn_weights=False)
        q = F.linear(x, W[:C], b[:C])
        k = F.linear(src, W[C:2 * C], b[C:2 * C])
        v = F.linear(src, W[2 * C:], b[2 * C:])
        split = lambda t, L: t.reshape(B or 1, L, heads, hs).transpose(1, 2)
        scores = split(q, T) @ split(k, S).transpose(-2, -1)
    ref = {"q": q, "k": k, "v": v, "scores": scores, "weights": weights, "output": out}
    return spec, ref


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    attn = sys.argv[1]
    worst = {}
    failures = 0
    count = 0
    configs = []
    for seed in range(12):
        for mode, heads in (("self", 1), ("causal", 1), ("cross", 1), ("multi-head", 2), ("causal", 4), ("cross", 3)):
            configs.append((seed, mode, seed % 3 != 0, heads, seed % 2 == 0, "torch" if seed % 4 < 2 else "x@W"))
    for seed, mode, batched, heads, fused, layout in configs:
        spec, ref = make_case(seed, mode, batched, heads, fused, layout)
        got = run_attn(attn, spec)
        count += 1
        for sid, want in ref.items():
            have = got[sid]
            want = want.reshape(have.shape)
            finite = torch.isfinite(want)
            if not torch.equal(finite, torch.isfinite(have)):
                print(f"FAIL seed={seed} mode={mode} step={sid}: non-finite entries differ")
                failures += 1
                continue
            diff = float((have[finite] - want[finite]).abs().max()) if finite.any() else 0.0
            key = f"{mode}/H={heads}"
            worst[key] = max(worst.get(key, 0.0), diff)
            if diff > TOL:
                failures += 1
                print(f"FAIL seed={seed} mode={mode} H={heads} batched={batched} fused={fused} layout={layout} "
                      f"step={sid}: max |attn - torch| = {diff:.3e} > {TOL}")
    print(f"compared {count} random problems (q, k, v, scores, weights, output) with torch {torch.__version__}")
    for key in sorted(worst):
        print(f"  {key:16s} max |attn - torch| = {worst[key]:.3e}")
    overall = max(worst.values())
    print(f"  overall          max |attn - torch| = {overall:.3e} (tolerance {TOL})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
