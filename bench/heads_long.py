#!/usr/bin/env python3
"""attn heads on long inputs beside attn run, in one run: a checkpoint of Llama-3.2-1B's shape (C 2048,
16 layers × 32 heads on 8 kv heads, head_dim 64, MLP 8192, vocabulary 128,256, BF16; random weights in
the real names and shapes, written by bench/checkpoint_bench.py's writer to a temporary directory),
random token ids of each length. For each T: the wall time of `attn heads SPEC` (every layer's
heads summarised, drawn as text) and of `attn run SPEC --steps output` traced at the last layer (the
layers below run, then the last layer's attention), and each one's peak memory beyond the mapped
checkpoint (peak RssAnon: what the process allocated, the file's pages not counted).

The targets (docs/performance.md): heads ≤ 1.5× run at T = 2,048; heads' memory beyond the mapped
checkpoint ≤ 1 GB at T = 8,192. A command that exits 2 (refused up front: its estimate passes the
machine's memory) is reported as refused with its message.

Usage: /usr/bin/python3 bench/heads_long.py [--build build] [--lengths 1024,2048,4096,8192] [--threads N]
       [--skip-run-above T]   (attn run is not measured above T: at 8,192 its traced layer alone keeps
                               [H, T, T] steps of 8.6 GB each)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checkpoint_bench import MODELS, ROOT, write_checkpoint  # noqa: E402


def measure(cmd, env):
    """(seconds, peak anonymous bytes, exit code, last stderr line) of one run, memory sampled every 2 ms."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    anon = 0
    while p.poll() is None:
        try:
            for line in open(f"/proc/{p.pid}/status"):
                if line.startswith("RssAnon:"):
                    anon = max(anon, int(line.split()[1]) * 1024)
        except (FileNotFoundError, ProcessLookupError):
            break
        time.sleep(0.002)
    err = p.stderr.read().decode(errors="replace").strip()
    return time.perf_counter() - t0, anon, p.returncode, err.splitlines()[-1] if err else ""


def cell(r):
    if r is None:
        return "–"
    s, anon, rc, err = r
    if rc == 2:
        return f"refused up front ({err[:80]}…)"
    if rc != 0:
        return f"failed (exit {rc}: {err[:60]})"
    return f"{s:.1f} s, {anon / 1e9:.2f} GB"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--lengths", default="1024,2048,4096,8192")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--skip-run-above", type=int, default=1 << 30)
    a = ap.parse_args()
    attn = os.path.join(ROOT, a.build, "attn")
    m = MODELS["llama"]
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = os.path.join(tmp, "llama")
        os.mkdir(ckpt)
        write_checkpoint(ckpt, m)
        for T in (int(t) for t in a.lengths.split(",")):
            ids = [int(i) for i in np.random.default_rng(T).integers(0, m["V"], T)]
            spec = os.path.join(tmp, f"spec{T}.json")
            json.dump({"checkpoint": {"path": "llama", "layer": m["L"] - 1}, "token_ids": ids}, open(spec, "w"))
            heads = measure([attn, "heads", spec, "--threads", str(a.threads), "--width", "120"], env)
            run = measure([attn, "run", spec, "--steps", "output", "--threads", str(a.threads)], env) if T <= a.skip_run_above else None
            ratio = f"{heads[0] / run[0]:.2f}×" if run and run[2] == 0 and heads[2] == 0 else "–"
            rows.append((T, cell(run), cell(heads), ratio))
            print(f"T = {T}: run {cell(run)}; heads {cell(heads)}; heads / run {ratio}", flush=True)
    print("\n| tokens | `attn run` to layer 15 (time, memory beyond the mapped file) | `attn heads` (time, memory beyond the mapped file) | heads / run |")
    print("|---|---|---|---|")
    for T, r, h, ratio in rows:
        print(f"| {T:,} | {r} | {h} | {ratio} |")


if __name__ == "__main__":
    main()
