#!/usr/bin/env python3
"""attn backward beside PyTorch autograd, in one run, at one thread count (the issue's target:
T = 1024, C = 768, H = 12, causal, the whole backward pass with every step materialised, attn at most
1.0× PyTorch's time).

attn is timed as a whole process: reading the input, the forward pass, the backward pass (every
grad.* step computed and kept) and writing its default text walkthrough. PyTorch is timed in process
(no start-up, no output): the same forward steps, each kept with retain_grad (qkv, scores, scaled,
masked, weights, context, merged, output), then output.sum().backward(), float32, on the BLAS its
process maps (reported; a reference BLAS makes the verdict "not judged"). Median of --repeat runs
after one warm-up each.

Usage: /usr/bin/python3 bench/backward.py [--build build] [--threads N] [--repeat 5] [--T 1024]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TORCH = r'''
import json, math, sys, time
import torch
cfg = json.loads(sys.argv[1])
torch.set_num_threads(cfg["threads"])
T, C, H = cfg["T"], cfg["C"], cfg["H"]
hs = C // H
g = torch.Generator().manual_seed(0)
x = torch.randn(T, C, generator=g).requires_grad_()
Wqkv = ((torch.rand(C, 3 * C, generator=g) * 2 - 1) / math.sqrt(C)).requires_grad_()
Wo = ((torch.rand(C, C, generator=g) * 2 - 1) / math.sqrt(C)).requires_grad_()
causal = torch.ones(T, T, dtype=torch.bool).tril()

def step():
    kept = {}
    kept["qkv"] = qkv = x @ Wqkv
    q, k, v = qkv.split(C, dim=-1)
    heads = lambda t: t.reshape(T, H, hs).transpose(0, 1)
    qh, kh, vh = heads(q), heads(k), heads(v)
    kept["scores"] = s = qh @ kh.transpose(-2, -1)
    kept["scaled"] = sc = s * (1.0 / math.sqrt(hs))
    kept["masked"] = m = sc.masked_fill(~causal, float("-inf"))
    kept["weights"] = w = torch.softmax(m, dim=-1)
    kept["context"] = ctx = w @ vh
    kept["merged"] = merged = ctx.transpose(0, 1).reshape(T, C)
    kept["output"] = out = merged @ Wo
    for t in kept.values():
        t.retain_grad()
    for p in (x, Wqkv, Wo):
        p.grad = None
    out.sum().backward()
    return [t.grad for t in kept.values()] + [x.grad, Wqkv.grad, Wo.grad]

step()
times = []
for _ in range(cfg["repeat"]):
    t0 = time.perf_counter()
    step()
    times.append(time.perf_counter() - t0)
libs = sorted({line.split()[-1] for line in open("/proc/self/maps") if "blas" in line or "gomp" in line or "mkl" in line})
print(json.dumps({"median": sorted(times)[len(times) // 2], "libs": libs, "version": torch.__version__}))
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--T", type=int, default=1024)
    ap.add_argument("--C", type=int, default=768)
    ap.add_argument("--H", type=int, default=12)
    a = ap.parse_args()
    attn = os.path.join(a.build, "attn")
    spec = {"title": "backward benchmark", "mode": "causal", "heads": a.H,
            "random": {"seed": 0, "T": a.T, "C": a.C, "fused": True, "output_projection": True}}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "input.json")
        with open(path, "w") as f:
            json.dump(spec, f)
        cmd = [attn, "backward", path, "--threads", str(a.threads)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)  # warm-up (page cache)
        times = []
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            times.append(time.perf_counter() - t0)
        steps = subprocess.run([attn, "backward", path, "--shapes-only"], check=True, capture_output=True, text=True).stdout
    attn_s = statistics.median(times)
    cfg = {"threads": a.threads, "T": a.T, "C": a.C, "H": a.H, "repeat": a.repeat}
    r = subprocess.run(["/usr/bin/python3", "-c", TORCH, json.dumps(cfg)], capture_output=True, text=True, check=True)
    torch_res = json.loads(r.stdout.strip().splitlines()[-1])
    optimised = any("openblas" in lib or "mkl" in lib for lib in torch_res["libs"])
    ratio = attn_s / torch_res["median"]
    grads = sum(1 for line in steps.splitlines() if line.split(". ", 1)[-1].startswith("grad."))
    print(f"T = {a.T}, C = {a.C}, H = {a.H}, causal, fused W_qkv and W_o; {a.threads} threads on both sides; median of {a.repeat}")
    print(f"attn backward (whole process: input, forward, {grads} gradient steps, text output): {attn_s * 1000:.0f} ms")
    print(f"PyTorch {torch_res['version']} autograd in process (forward with 8 steps kept, backward): {torch_res['median'] * 1000:.0f} ms "
          f"on {', '.join(torch_res['libs']) or 'no BLAS found mapped'}")
    verdict = ("met" if ratio <= 1.0 else "not met") if optimised else "not judged (PyTorch is not on an optimised BLAS)"
    print(f"ratio attn / PyTorch: {ratio:.2f}× (target ≤ 1.0×): {verdict}")
    return 0 if verdict != "not met" else 1


if __name__ == "__main__":
    sys.exit(main())
