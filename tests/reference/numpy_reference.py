#!/usr/bin/env python3
"""Reference check against NumPy itself:
1. "generator": "numpy" reproduces np.random.RandomState(seed).rand / .randn exactly, drawn in the
   documented order (embeddings, then W_q, W_k, W_v);
2. `attn run --dump DIR` writes .npy files that np.load reads back to the trace's values;
3. {"npy": path} inputs written by NumPy (float32 and float64) are read as the same tensors.

Usage: numpy_reference.py PATH_TO_ATTN
Exit 0: all agree. 1: a difference. 77: skipped (numpy not importable).
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError as e:
    print(f"SKIPPED: NumPy is not importable here ({e}); install python3-numpy (scripts/setup.sh --tests)")
    sys.exit(77)


def run(attn, spec, *extra, cwd=None):
    p = subprocess.run([attn, "run", "-", "--format", "json", *extra], input=json.dumps(spec),
                       capture_output=True, text=True, cwd=cwd)
    if p.returncode != 0:
        raise RuntimeError(f"attn exited {p.returncode}: {p.stderr}")
    doc = json.loads(p.stdout)
    return {s["id"]: np.array(s["data"], dtype=np.float64) for s in doc["steps"]}


def main():
    attn = os.path.abspath(sys.argv[1])
    failures = 0
    checked = 0

    def expect(ok, what):
        nonlocal failures, checked
        checked += 1
        if not ok:
            failures += 1
            print("FAIL", what)

    # 1. the numpy generator
    for seed in (0, 1, 42, 2**32 - 1):
        for dist in ("rand", "randn"):
            spec = {"random": {"generator": "numpy", "distribution": dist, "seed": seed, "B": 2, "T": 3, "C": 4}}
            got = run(attn, spec)
            rs = np.random.RandomState(seed)
            draw = getattr(rs, dist)
            x = draw(2, 3, 4).astype(np.float32)
            w_q = draw(4, 4).astype(np.float32)
            # JSON carries float32's shortest round-trip text: read back as float32 it is exact
            expect(np.array_equal(got["x"].astype(np.float32), x), f"seed={seed} {dist}: x differs from RandomState({seed}).{dist}(2, 3, 4)")
            q = (x.astype(np.float64) @ w_q.astype(np.float64))
            expect(np.abs(got["q"] - q).max() < 1e-5, f"seed={seed} {dist}: q differs from x @ W_q with W_q the next draw")

    with tempfile.TemporaryDirectory() as tmp:
        # 2. --dump
        spec = {"mode": "causal", "heads": 2, "random": {"seed": 3, "B": 2, "T": 4, "C": 6, "output_projection": True}}
        dump = os.path.join(tmp, "dump")
        got = run(attn, spec, "--dump", dump)
        trace = json.load(open(os.path.join(dump, "trace.json")))
        for step in trace["steps"]:
            arr = np.load(os.path.join(dump, step["id"] + ".npy"))
            expect(arr.dtype == np.float32 and list(arr.shape) == step["shape"], f"dump {step['id']}: dtype/shape")
            finite = np.isfinite(arr)
            expect(np.array_equal(arr[finite], got[step["id"]][finite].astype(np.float32)), f"dump {step['id']}: values")
            expect(np.all(np.isneginf(arr[~finite])), f"dump {step['id']}: non-finite entries are -inf")

        # 3. .npy inputs written by NumPy
        rng = np.random.RandomState(7)
        x64 = rng.randn(3, 4)
        np.save(os.path.join(tmp, "x64.npy"), x64)
        np.save(os.path.join(tmp, "x32.npy"), x64.astype(np.float32))
        for name in ("x64.npy", "x32.npy"):
            spec = {"embeddings": {"npy": name}, "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}}
            path = os.path.join(tmp, "spec.json")
            json.dump(spec, open(path, "w"))
            p = subprocess.run([attn, "run", path, "--format", "json"], capture_output=True, text=True, cwd="/")
            expect(p.returncode == 0, f"npy input {name}: attn exited {p.returncode}: {p.stderr}")
            if p.returncode == 0:
                x = np.array(json.loads(p.stdout)["steps"][0]["data"])
                expect(np.array_equal(x.astype(np.float32), x64.astype(np.float32)), f"npy input {name}: values")
        np.save(os.path.join(tmp, "xf.npy"), np.asfortranarray(x64))
        json.dump({"embeddings": {"npy": "xf.npy"}, "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}},
                  open(os.path.join(tmp, "f.json"), "w"))
        p = subprocess.run([attn, "run", os.path.join(tmp, "f.json")], capture_output=True, text=True)
        expect(p.returncode == 2 and "Fortran-order" in p.stderr, f"Fortran-order npy refused: {p.returncode} {p.stderr}")

    print(f"numpy reference: {checked} checks, {failures} failed (numpy {np.__version__})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
