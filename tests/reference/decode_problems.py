#!/usr/bin/env python3
"""attn decode on random problems of every variant: a prefill, then one token at a time against the KV
cache; every decoded row (weights, context, output) must equal the full causal trace's row within
1e-6, which attn prints and turns into its exit code. The full trace itself is checked against
PyTorch by torch_variants.py. Bad decode inputs must exit 2 naming what is wrong.

Usage: decode_problems.py ATTN_BINARY     (exit 0 pass, 1 fail, 77 skipped)
"""
import json
import re
import subprocess
import sys

try:
    import numpy as np
except ImportError as e:
    print(f"SKIPPED: NumPy is not importable here ({e}); install python3-numpy (scripts/setup.sh --tests)")
    sys.exit(77)


def run(attn, problem, *args):
    p = subprocess.run([attn, "decode", "-", "--color", "never", *args], input=json.dumps(problem), capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    attn = sys.argv[1]
    rng = np.random.default_rng(7)
    failures, problems = [], 0
    for case in range(24):
        H = [1, 2, 4, 6][case % 4]
        Hkv = [H, 1, 2 if H % 2 == 0 else H][case % 3]
        hs = [2, 4][case % 2]
        T = [2, 5, 7, 9][(case // 2) % 4]
        P = [1, T // 2, T - 1][case % 3]
        problem = {"mode": "causal", "heads": H, "kv_heads": Hkv,
                   "random": {"seed": case, "T": T, "C": H * hs, "output_projection": case % 2 == 0, "fused": case % 5 == 1}}
        if case % 3 == 0:
            problem["random"]["B"] = 2
        if case % 4 != 3:
            problem["rope"] = {"style": ["half", "interleaved"][case % 2], "offset": [0, 3][(case // 4) % 2]}
            if case % 7 in (2, 4):  # scaled RoPE: the cache's tables must be scaled as the full pass's are
                problem["rope"]["scaling"] = {"rope_type": "linear", "factor": 8.0} if case % 7 == 2 else \
                    {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 16}
        if case % 3 == 1:
            problem["window"] = [1, 2, 3][case % 3]
        if case % 4 == 2:
            problem["alibi"] = True
        if case % 5 == 3:
            problem["softcap"] = 2.0
        if case % 6 == 5:
            problem["positions"] = "sinusoidal"
        name = f"case {case} (H={H}, Hkv={Hkv}, hs={hs}, T={T}, P={P}, {sorted(k for k in problem if k not in ('mode', 'heads', 'random'))})"
        rc, out, err = run(attn, problem, "--prefill", str(P))
        problems += 1
        m = re.search(r"largest \|decoded − full\| = (\S+) over the decoded rows \((\S+) over the prefill's\)", out)
        tokens = len(re.findall(r"^══ token \d+ ", out, re.M))
        if rc != 0 or m is None or float(m.group(1)) > 1e-6 or tokens != T - P:
            failures.append(f"{name}: exit {rc}, {m.group(0) if m else 'no comparison'}, {tokens} decoded tokens (want {T - P}) {err.strip()}")
    refusals = [
        ({"mode": "self", "random": {"seed": 1, "T": 3, "C": 2}}, [], "mode"),
        ({"mode": "causal", "random": {"seed": 1, "T": 3, "C": 2}}, ["--prefill", "3"], "--prefill 3"),
        ({"mode": "causal", "random": {"seed": 1, "T": 3, "C": 2}}, ["--prefill", "0"], "--prefill 0"),
        ({"mode": "causal", "random": {"seed": 1, "T": 1, "C": 2}}, [], "T = 1: decode needs at least 2 tokens"),
        ({"mode": "causal", "q": [[1.0]], "k": [[1.0]], "v": [[1.0]]}, [], "q: decode needs embeddings"),
        ({"mode": "causal", "random": {"seed": 1, "B": 2, "T": 3, "C": 2}, "padding": {"lengths": [3, 2]}}, [], "padding"),
    ]
    for problem, args, path in refusals:
        rc, _, err = run(attn, problem, *args)
        problems += 1
        if rc != 2 or not err.startswith(f"attn: {path}"):
            failures.append(f"refusal {problem} {args}: exit {rc}, {err.strip()!r} (wanted exit 2 naming {path})")
    for f in failures:
        print("FAIL", f)
    print(f"{problems} decode runs, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
