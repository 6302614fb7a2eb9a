#!/usr/bin/env python3
"""attn beside NumPy and PyTorch on an optimised BLAS, in one run, at one thread count; prints every
target's measurement and verdict, and with --update-readme writes the README's Performance tables.

Usage (after `scripts/setup.sh --bench` and a build; see README "Performance"):
    /usr/bin/python3 bench/run.py [--build build] [--threads N] [--quick] [--update-readme]

The anchors do the same materialised steps in process (projections, head split, kᵀ, scores, scale,
mask, softmax with row sums, weights·v, merge, output projection; every intermediate kept); attn is
timed as a whole process writing its default text walkthrough. Each anchor reports the BLAS library
its process actually mapped; against a reference (unoptimised) BLAS no target is judged "met".
"""
import argparse
import hashlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "/usr/bin/python3"

# The anchors' computation, in a child process so its thread settings take effect. It prints the
# median time and the BLAS libraries mapped into the process (read from /proc/self/maps).
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

def sgemm(N):
    a = np.ones((N, N), dtype=np.float32) if lib == "numpy" else torch.ones(N, N)
    a @ a
    ts = []
    for _ in range(3):
        t0 = time.perf_counter(); a @ a; ts.append(time.perf_counter() - t0)
    return 2.0 * N ** 3 / min(ts)

def mapped_blas():
    libs = set()
    for line in open("/proc/self/maps"):
        path = line.split()[-1]
        name = path.rsplit("/", 1)[-1]
        if re.search(r"(blas|mkl|lapack|gomp|acml|blis)", name) and path.startswith("/"):
            libs.add(path)
    return sorted(libs)

import re
if cfg.get("sgemm"):
    rate = sgemm(cfg["sgemm"])
    print(json.dumps({"rate": rate, "blas": mapped_blas()}))
    sys.exit(0)
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
print(json.dumps({"times": times, "blas": mapped_blas()}))
'''


def blas_kind(libs):
    """What the mapped libraries say about the BLAS in use."""
    text = " ".join(libs)
    if "openblas" in text:
        return "OpenBLAS"
    if "mkl" in text:
        return "MKL"
    if "blis" in text:
        return "BLIS"
    if re.search(r"/blas/libblas|libblas\.so", text):
        return "reference BLAS (unoptimised)"
    return "own kernels (no BLAS library mapped)"


def optimised(kind):
    return kind in ("OpenBLAS", "MKL", "BLIS") or kind.startswith("own kernels")


def anchor(lib, threads, **cfg):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    out = subprocess.run([PY, "-c", REFERENCE, json.dumps(dict(lib=lib, threads=threads, **cfg))], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def wall(cmd, env, reps, warmup=1):
    """Median wall time of `reps` whole-process runs, after `warmup` untimed ones (as each anchor runs
    its computation once untimed before timing it)."""
    for _ in range(warmup):
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True, cwd=ROOT)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True, cwd=ROOT)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def peak_rss(cmd, env):
    """Peak resident memory (bytes) of one child process, by GNU time (a child forked from this
    Python would count Python's own memory in its peak)."""
    p = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True, cwd=ROOT, check=True)
    return int(p.stderr.strip().splitlines()[-1]) * 1024


def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def spec_file(tmp, T, B=1, C=768, H=12):
    path = os.path.join(tmp, f"causal_T{T}.json")
    json.dump({"mode": "causal", "heads": H, "random": {"seed": 0, "B": B, "T": T, "C": C, "fused": True, "output_projection": True}},
              open(path, "w"))
    return path


def digest(cmd, env):
    return hashlib.sha256(subprocess.run(cmd, env=env, capture_output=True, check=True, cwd=ROOT).stdout).hexdigest()


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

    g = subprocess.run([bench, "--benchmark_format=json", "--benchmark_filter=BM_Plan|BM_FreshWrite"], env=env, capture_output=True,
                       text=True, check=True)
    bm = {b["name"]: b for b in json.loads(g.stdout)["benchmarks"]}
    kernel = f"attn's products on its {bm['BM_Plan/1024']['label']} fma-chain kernels"
    fresh_rate = bm["BM_FreshWrite/real_time"]["bytes_per_second"]
    np_gemm, th_gemm = anchor("numpy", n, sgemm=2048), anchor("torch", n, sgemm=2048)
    sgemm_rate = max(np_gemm["rate"], th_gemm["rate"])
    np_blas, th_blas = blas_kind(np_gemm["blas"]), blas_kind(th_gemm["blas"])
    honest = optimised(np_blas) and optimised(th_blas)
    import numpy
    import torch
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    machine = (f"{cpu_model()}, {os.cpu_count()} cores, {mem:.0f} GiB RAM, Linux {platform.release().split('-')[0]}; {n} threads "
               f"on every side; {kernel}; NumPy {numpy.__version__} on {np_blas} ({', '.join(np_gemm['blas']) or 'none mapped'}); "
               f"PyTorch {torch.__version__} on {th_blas} ({', '.join(th_gemm['blas']) or 'none mapped'}); measured sgemm "
               f"{sgemm_rate / 1e9:.0f} GFLOP/s (2048³, the faster anchor), fresh-memory writes {fresh_rate / 1e9:.2f} GB/s")
    print(f"machine: {machine}", flush=True)
    if not honest:
        print("anchors: a reference BLAS is loaded; no target is judged (run scripts/setup.sh --bench for OpenBLAS)", flush=True)

    verdict = lambda ok: "—" if ok is None else ("not judged" if not honest else ("yes" if ok else "NO"))
    small, big, checks = [], [], []

    # 1. small walkthroughs: every example as a whole process, default settings
    examples = sorted(f for f in os.listdir(os.path.join(ROOT, "examples")) if f.endswith(".json"))
    true_ms = wall(["/bin/true"], env, 30) * 1000
    for f in examples:
        ms = wall([attn, "run", os.path.join("examples", f)], env, 15 if args.quick else 31) * 1000
        small.append((f[:-5], ms))
    worst = max(small, key=lambda r: r[1])
    catsat = dict(small)["cat_sat"]
    checks.append(("cat/sat, whole process (median)", f"{catsat:.1f} ms (/bin/true: {true_ms:.1f} ms)", "≤ 4 ms", catsat <= 4))
    checks.append((f"every example ({len(small)}), whole process (median); slowest", f"{worst[1]:.1f} ms ({worst[0]})", "≤ 4 ms",
                   worst[1] <= 4))
    print(f"  examples: cat/sat {catsat:.1f} ms, slowest {worst[0]} {worst[1]:.1f} ms", flush=True)

    # 2. and 4. T = 1024, 2048, 4096: whole process against the anchors in process, and the limit
    with tempfile.TemporaryDirectory() as tmp:
        for T in (1024, 2048, 4096):
            spec = spec_file(tmp, T)
            r = 1 if T >= 4096 or args.quick else 3
            a = wall([attn, "run", spec], env, 5 if T == 1024 and not args.quick else r) * 1000
            np_ = statistics.median(anchor("numpy", n, B=1, T=T, C=768, H=12, causal=True, reps=r)["times"]) * 1000
            th = statistics.median(anchor("torch", n, B=1, T=T, C=768, H=12, causal=True, reps=r)["times"]) * 1000
            flops, kept = bm[f"BM_Plan/{T}"]["flops"], bm[f"BM_Plan/{T}"]["kept_bytes"]
            limit = max(flops / sgemm_rate, kept / fresh_rate) * 1000
            big.append((T, a, np_, th, limit, a <= 0.5 * np_ and a <= 0.5 * th))
            print(f"  T={T}: attn {a:.0f} ms, numpy {np_:.0f} ms, torch {th:.0f} ms, limit {limit:.0f} ms", flush=True)

        # 3. memory at T = 2048
        kept = bm["BM_Plan/2048"]["kept_bytes"]
        peak = peak_rss([attn, "run", spec_file(tmp, 2048)], env)
        checks.append(("peak memory of `attn run`, T = 2048", f"{peak / 1e6:.0f} MB for {kept / 1e6:.0f} MB of trace = {peak / kept:.2f}×",
                       "≤ 0.6×", peak <= 0.6 * kept))

        # 5. the same bytes for any thread count and product kernel
        spec = spec_file(tmp, 256)
        json_out = [attn, "run", spec, "--format", "json"]
        d1 = digest(json_out + ["--threads", "1"], env)
        d2 = digest(json_out + ["--threads", str(max(n, 2))], env)
        d3 = digest(json_out, dict(env, ATTN_GEMM_KERNEL="portable"))
        checks.append(("T = 256 JSON trace: --threads 1, --threads N, portable kernel", "identical" if d1 == d2 == d3 else "DIFFERENT",
                       "identical", d1 == d2 == d3))

    # 6. real-size checkpoints: GPT-2 small's and Llama-3.2-1B's shapes, whole processes (bench/checkpoint_bench.py)
    import checkpoint_bench
    results = checkpoint_bench.measure(attn, n, reps=3)
    checks += checkpoint_bench.rows(results)
    for r in results:
        print(f"  checkpoint {r['name']}: attn {r['attn_s']:.2f} s, torch {r['torch_s']:.2f} s", flush=True)

    fmt_ms = lambda v: f"{v:.1f} ms" if v < 100 else f"{v:.0f} ms"
    perf = ["| causal, C = 768, H = 12 | attn (whole process) | NumPy (in process) | PyTorch (in process) | attn / NumPy | "
            "attn / PyTorch | limit | attn / limit | met (≤ 0.5× both) |", "|---|---|---|---|---|---|---|---|---|"]
    for T, a, np_, th, limit, ok in big:
        perf.append(f"| T = {T} | {fmt_ms(a)} | {fmt_ms(np_)} | {fmt_ms(th)} | {a / np_:.2f}× | {a / th:.2f}× | {fmt_ms(limit)} | "
                    f"{a / limit:.2f}× | {verdict(ok)} |")
    perf += ["", "| check | measured | target | met |", "|---|---|---|---|"]
    for label, measured, target, ok in checks:
        perf.append(f"| {label} | {measured} | {target} | {verdict(ok)} |")
    perf += ["", "Every example, whole process (median of runs, default settings):", "",
             "| example | time |", "|---|---|"] + [f"| `{name}` | {ms:.1f} ms |" for name, ms in small]
    text = (f"Measured by `bench/run.py` on {machine}.\n\nThe limit is max(FLOPs ÷ the measured sgemm rate, bytes of a fully "
            f"materialised trace ÷ the measured fresh-memory write rate).\n\n" + "\n".join(perf) + "\n")
    print()
    print(text)
    if args.update_readme:
        readme = os.path.join(ROOT, "docs", "performance.md")
        s = open(readme).read()
        a, b = s.index("<!-- bench:begin -->"), s.index("<!-- bench:end -->")
        open(readme, "w").write(s[:a] + "<!-- bench:begin -->\n" + text + s[b:])
        print("docs/performance.md updated")
    all_ok = all(ok for *_, ok in big) and all(ok for *_, ok in checks)
    return 0 if honest and all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
