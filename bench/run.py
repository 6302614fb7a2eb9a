#!/usr/bin/env python3
"""attn beside PyTorch and NumPy, in one run, at one thread count; prints the ratios and the
README's Performance and scaling tables (with --update-readme it writes them into README.md).

Usage (after building; see README "Performance"):
    /usr/bin/python3 bench/run.py [--build build] [--threads N] [--quick] [--update-readme]

Every comparison does the same materialised steps on both sides (projections, head split, kᵀ,
scores, scale, mask, softmax with row sums, weights·v, merge, output projection), all kept.
"""
import argparse
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "/usr/bin/python3"

# The reference computations, run in a child process so its thread settings take effect.
REFERENCE = r'''
import json, math, sys, time
cfg = json.loads(sys.argv[1])
lib, n = cfg["lib"], cfg["threads"]
if lib == "torch":
    import torch
    torch.set_num_threads(n)
else:
    import numpy as np

def run_torch(x, Wqkv, Wo, H, causal):
    B, T, C = x.shape; hs = C // H; kept = {}
    kept["qkv"] = qkv = x @ Wqkv
    q, k, v = (t.contiguous() for t in qkv.split(C, dim=-1)); kept.update(q=q, k=k, v=v)
    heads = lambda t: t.view(B, T, H, hs).transpose(1, 2).contiguous()
    qh, kh, vh = heads(q), heads(k), heads(v); kept.update(qh=qh, kh=kh, vh=vh)
    kT = kh.transpose(-2, -1).contiguous(); kept["kT"] = kT
    s = qh @ kT; kept["scores"] = s
    sc = s * (1.0 / math.sqrt(hs)); kept["scaled"] = sc
    if causal:
        mask = torch.tril(torch.ones(T, T)); kept["mask"] = mask
        sc = sc.masked_fill(mask == 0, float("-inf")); kept["masked"] = sc
    w = torch.softmax(sc, dim=-1); kept["weights"] = w; kept["sums"] = w.sum(-1)
    ctx = w @ vh; kept["context"] = ctx
    merged = ctx.transpose(1, 2).reshape(B, T, C); kept["merged"] = merged
    kept["output"] = merged @ Wo
    return kept

def run_numpy(x, Wqkv, Wo, H, causal):
    B, T, C = x.shape; hs = C // H; kept = {}
    kept["qkv"] = qkv = x @ Wqkv
    q, k, v = (np.ascontiguousarray(qkv[..., i * C:(i + 1) * C]) for i in range(3)); kept.update(q=q, k=k, v=v)
    heads = lambda t: np.ascontiguousarray(t.reshape(B, T, H, hs).transpose(0, 2, 1, 3))
    qh, kh, vh = heads(q), heads(k), heads(v); kept.update(qh=qh, kh=kh, vh=vh)
    kT = np.ascontiguousarray(kh.transpose(0, 1, 3, 2)); kept["kT"] = kT
    s = qh @ kT; kept["scores"] = s
    sc = s * np.float32(1.0 / math.sqrt(hs)); kept["scaled"] = sc
    if causal:
        mask = np.tril(np.ones((T, T), dtype=np.float32)); kept["mask"] = mask
        sc = np.where(mask == 0, np.float32(-np.inf), sc); kept["masked"] = sc
    e = np.exp(sc - sc.max(-1, keepdims=True)); w = e / e.sum(-1, keepdims=True); kept["weights"] = w; kept["sums"] = w.sum(-1)
    ctx = w @ vh; kept["context"] = ctx
    merged = np.ascontiguousarray(ctx.transpose(0, 2, 1, 3)).reshape(B, T, C); kept["merged"] = merged
    kept["output"] = merged @ Wo
    return kept

B, T, C, H, causal, reps = cfg["B"], cfg["T"], cfg["C"], cfg["H"], cfg["causal"], cfg["reps"]
if lib == "torch":
    g = torch.Generator().manual_seed(0)
    x = torch.randn(B, T, C, generator=g); Wqkv = torch.randn(C, 3 * C, generator=g) / C ** 0.5; Wo = torch.randn(C, C, generator=g) / C ** 0.5
    fn = run_torch
else:
    rs = np.random.RandomState(0)
    x = rs.randn(B, T, C).astype(np.float32); Wqkv = (rs.randn(C, 3 * C) / C ** 0.5).astype(np.float32); Wo = (rs.randn(C, C) / C ** 0.5).astype(np.float32)
    fn = run_numpy
fn(x, Wqkv, Wo, H, causal)  # warm up
times = []
for _ in range(reps):
    t0 = time.perf_counter(); kept = fn(x, Wqkv, Wo, H, causal); times.append(time.perf_counter() - t0); del kept
print(json.dumps(times))
'''

# cat/sat as a whole process: a user's script that prints the walkthrough's weights and output.
CATSAT = {
    "numpy": "import numpy as np\nx=np.array([[1.,0,1],[0,1,1]],dtype=np.float32)\ns=x@x.T/np.sqrt(3)\n"
             "e=np.exp(s-s.max(-1,keepdims=True));w=e/e.sum(-1,keepdims=True)\nprint(x,x,x,x.T,x@x.T,s,w,w@x)\n",
    "torch": "import torch\nx=torch.tensor([[1.,0,1],[0,1,1]])\ns=x@x.T/3**0.5\nw=torch.softmax(s,-1)\nprint(x,x,x,x.T,x@x.T,s,w,w@x)\n",
}


def wall(cmd, env, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True, cwd=ROOT)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def peak_rss(cmd, env):
    """Peak resident memory (bytes) and wall time of one child process. Measured by GNU time: a
    child forked straight from this Python would count Python's own memory (torch is loaded) in its
    peak, since Linux keeps the pre-exec high-water mark."""
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True, cwd=ROOT, check=True)
    return int(p.stderr.strip().splitlines()[-1]) * 1024, time.perf_counter() - t0


def reference(lib, threads, B, T, C, H, causal, reps):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    cfg = json.dumps(dict(lib=lib, threads=threads, B=B, T=T, C=C, H=H, causal=causal, reps=reps))
    out = subprocess.run([PY, "-c", REFERENCE, cfg], env=env, capture_output=True, text=True, check=True)
    return statistics.median(json.loads(out.stdout.strip().splitlines()[-1]))


def machine(threads):
    model = "unknown CPU"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    import numpy, torch
    blas = re.search(r"BLAS_INFO=(\w+)", torch.__config__.show())
    return (f"{model}, {os.cpu_count()} cores, {mem:.0f} GiB RAM, Linux {platform.release().split('-')[0]}; "
            f"{threads} threads on every side; PyTorch {torch.__version__} (BLAS: {blas.group(1) if blas else '?'}), "
            f"NumPy {numpy.__version__}")


def spec_file(tmp, T, B=1, C=768, H=12):
    path = os.path.join(tmp, f"causal_T{T}.json")
    json.dump({"mode": "causal", "heads": H, "random": {"seed": 0, "B": B, "T": T, "C": C, "fused": True, "output_projection": True}},
              open(path, "w"))
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--update-readme", action="store_true")
    args = ap.parse_args()
    n = args.threads
    attn, bench = os.path.join(args.build, "attn"), os.path.join(args.build, "attn_bench")
    env = dict(os.environ, OMP_NUM_THREADS=str(n))
    reps = 3 if args.quick else 5

    print(f"machine: {machine(n)}", flush=True)
    g = subprocess.run([bench, "--benchmark_format=json"], env=env, capture_output=True, text=True, check=True)
    bm = {re.sub(r"/min_time:[0-9.]+$", "", b["name"]): b for b in json.loads(g.stdout)["benchmarks"]}
    ms = lambda name: bm[name]["real_time"] * {"ms": 1, "us": 1e-3, "ns": 1e-6}[bm[name]["time_unit"]]

    rows = []  # (case, attn, numpy, torch, target, verdict)

    # 1. cat/sat, the whole process
    a = wall([attn, "run", "examples/cat_sat.json"], env, 30) * 1000
    np_ = wall([PY, "-c", CATSAT["numpy"]], env, 10) * 1000
    th = wall([PY, "-c", CATSAT["torch"]], env, 5) * 1000
    rows.append(("cat/sat walkthrough, whole process", a, np_, th, "≤ 5 ms", a <= 5))

    # 2.-3. in-process, every intermediate kept
    cases = [("B=2 T=4 C=512 H=8 (shape guide)", "BM_Pipeline/shape_flow_2x4x512", (2, 4, 512, 8, False), None),
             ("causal T=1024 C=768 H=12", "BM_Pipeline/causal_T1024", (1, 1024, 768, 12, True), 0.5),
             ("causal T=2048 C=768 H=12", "BM_Pipeline/causal_T2048", (1, 2048, 768, 12, True), 0.5)]
    for label, name, (B, T, C, H, causal), target in cases:
        a = ms(name)
        r = 3 if T >= 2048 else reps
        np_ = reference("numpy", n, B, T, C, H, causal, r) * 1000
        th = reference("torch", n, B, T, C, H, causal, r) * 1000
        rows.append((label, a, np_, th, f"≤ {target}× PyTorch" if target else "—", a <= target * th if target else None))
        print(f"  {label}: attn {a:.1f} ms, numpy {np_:.1f} ms, torch {th:.1f} ms", flush=True)

    checks = []
    pipe1024 = ms("BM_Pipeline/causal_T1024")
    checks.append(("summarised text of the T=1024 trace", f"{ms('BM_RenderText_T1024'):.1f} ms = "
                   f"{100 * ms('BM_RenderText_T1024') / pipe1024:.1f} % of the run", "≤ 10 %", ms("BM_RenderText_T1024") <= 0.1 * pipe1024))
    checks.append(("--dump every step as .npy, T=1024", f"{ms('BM_Dump_T1024'):.0f} ms", "≤ 1 s", ms("BM_Dump_T1024") <= 1000))
    checks.append(("load a 768 × 2304 float32 weight from .npy", f"{ms('BM_LoadWeightNpy'):.1f} ms", "≤ 20 ms", ms("BM_LoadWeightNpy") <= 20))
    checks.append(("the same weight from JSON", f"{ms('BM_LoadWeightJson'):.0f} ms ({bm['BM_LoadWeightJson']['json_bytes'] / 1e6:.0f} MB of text)",
                   "≤ 1 s", ms("BM_LoadWeightJson") <= 1000))

    scaling = []
    with tempfile.TemporaryDirectory() as tmp:
        for T in (1024, 2048):
            kept = bm[f"BM_Pipeline/causal_T{T}"]["kept_bytes"]
            peak, _ = peak_rss([attn, "run", spec_file(tmp, T), "--shapes-only"], env)
            checks.append((f"peak memory of `attn run`, T={T}", f"{peak / 1e6:.0f} MB for {kept / 1e6:.0f} MB kept = {peak / kept:.2f}×",
                           "≤ 1.3×", peak <= 1.3 * kept))
        for T in (128, 256, 512, 1024, 2048, 4096):
            times, peak = [], 0
            for _ in range(1 if T >= 4096 or args.quick else 3):
                p, t = peak_rss([attn, "run", spec_file(tmp, T), "--shapes-only"], env)
                times.append(t)
                peak = max(peak, p)
            scaling.append((T, statistics.median(times) * 1000, peak / 1e6))

    fmt_ms = lambda v: f"{v:.1f} ms" if v < 100 else f"{v:.0f} ms"
    perf = ["| case | attn | NumPy | PyTorch | attn / NumPy | attn / PyTorch | target | met |", "|---|---|---|---|---|---|---|---|"]
    for label, a, np_, th, target, ok in rows:
        perf.append(f"| {label} | {fmt_ms(a)} | {fmt_ms(np_)} | {fmt_ms(th)} | {a / np_:.2f}× | {a / th:.3f}× | {target} | "
                    f"{'—' if ok is None else ('yes' if ok else 'NO')} |")
    perf.append("")
    perf.append("| check | measured | target | met |")
    perf.append("|---|---|---|---|")
    for label, measured, target, ok in checks:
        perf.append(f"| {label} | {measured} | {target} | {'yes' if ok else 'NO'} |")
    scale = ["| T | time (`attn run`, whole process) | peak memory | time / T² (ns) |", "|---|---|---|---|"]
    for T, t, peak in scaling:
        scale.append(f"| {T} | {fmt_ms(t)} | {peak:.0f} MB | {t * 1e6 / T / T:.1f} |")
    text = (f"Measured by `bench/run.py` on {machine(n)}.\n\n" + "\n".join(perf) +
            "\n\nScaling (causal, C = 768, H = 12, every intermediate kept):\n\n" + "\n".join(scale) + "\n")
    print()
    print(text)
    if args.update_readme:
        readme = os.path.join(ROOT, "README.md")
        s = open(readme).read()
        a, b = s.index("<!-- bench:begin -->"), s.index("<!-- bench:end -->")
        open(readme, "w").write(s[:a] + "<!-- bench:begin -->\n" + text + s[b:])
        print("README.md updated")
    return 0 if all(ok is not False for *_, ok in rows) and all(ok for *_, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
