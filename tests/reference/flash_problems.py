#!/usr/bin/env python3
"""attn run --flash BQxBK on random problems of every variant: FlashAttention's tiled pass (running
max, running sum, rescaled accumulator) must give the materialised context within 1e-5, for tiles of
1x1, sizes that do not divide T or S, and tiles larger than the problem; fully masked tiles are
skipped. Bad --flash uses must exit 2 naming the option.

Usage: flash_problems.py ATTN_BINARY     (exit 0 pass, 1 fail, 77 skipped)
"""
import json
import re
import subprocess
import sys


def run(attn, problem, *args):
    steps = "context" if "scores" not in problem else "weights"
    p = subprocess.run([attn, "run", "-", "--color", "never", "--steps", steps, *args], input=json.dumps(problem),
                       capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    attn = sys.argv[1]
    failures, runs, skipped_seen = [], 0, False
    for case in range(30):
        H = [1, 2, 4, 3][case % 4]
        mode = ["causal", "self", "cross", "causal", "multi-head"][case % 5]
        if mode == "multi-head" and H == 1:
            H = 2
        T = [1, 4, 7, 9, 16][case % 5]
        problem = {"mode": mode, "heads": H, "random": {"seed": case, "T": T, "C": H * [2, 3][case % 2], "output_projection": case % 3 == 0}}
        if mode == "cross":
            problem["random"]["S"] = [3, 8][case % 2]
        if case % 4 == 1:
            problem["random"]["B"] = 2
        if mode == "causal" and case % 2 == 1:
            problem["window"] = 2
        if H % 2 == 0 and case % 3 == 1:
            problem["kv_heads"] = H // 2
        if mode != "cross" and case % 5 == 3:
            problem["alibi"] = True
        if case % 6 == 2:
            problem["softcap"] = 3.0
        if case % 7 == 4 and H * [2, 3][case % 2] % 2 == 0 and H * [2, 3][case % 2] // H % 2 == 0:
            problem["rope"] = {}
        if case % 8 == 5 and mode != "cross":
            problem["padding"] = {"lengths": [T, max(1, T - 2)]}
            problem["masked_row"] = "zeros"   # a window past a row's length leaves it no key
            problem["random"]["B"] = 2
        tiles = ["1x1", "2x3", f"{T + 1}x{T + 2}", "3x2"][case % 4]
        rc, out, err = run(attn, problem, "--flash", tiles)
        runs += 1
        m = re.search(r"largest \|flash − context\| = (\S+):", out)
        skipped_seen = skipped_seen or "skipped (no exp, no product)" in out
        if rc != 0 or m is None or float(m.group(1)) > 1e-5:
            failures.append(f"case {case} ({problem}, --flash {tiles}): exit {rc}, {m.group(0) if m else 'no comparison'} {err.strip()}")
    if not skipped_seen:
        failures.append("no causal problem skipped a fully masked tile")
    base = {"mode": "causal", "random": {"seed": 1, "T": 3, "C": 2}}
    refusals = [
        (base, ["--flash", "2"], "--flash 2"),
        (base, ["--flash", "0x2"], "--flash 0x2"),
        (base, ["--flash", "2x3x4"], "--flash 2x3x4"),
        (base, ["--flash", "2x3", "--format", "json"], "--flash"),
        (base, ["--flash", "2x3", "--mistake", "scale-missing"], "--flash"),
        ({"mode": "self", "scores": [[1.0, 0.0], [0.0, 1.0]]}, ["--flash", "1x1"], "--flash"),
    ]
    for problem, args, path in refusals:
        rc, _, err = run(attn, problem, *args)
        runs += 1
        if rc != 2 or not err.startswith(f"attn: {path}"):
            failures.append(f"refusal {args}: exit {rc}, {err.strip()!r} (wanted exit 2 naming {path})")
    for f in failures:
        print("FAIL", f)
    print(f"{runs} runs, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
