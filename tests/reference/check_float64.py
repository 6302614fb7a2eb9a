#!/usr/bin/env python3
"""attn check on documents that computed in float64 and printed 8 decimals, as NumPy notebooks do.

Each document is written here by NumPy in float64 (inputs as full-precision decimals or float64
.npy files, the printed steps to 8 decimals), then checked:
1. right documents pass, every step judged in float64: projections, multi-head causal attention,
   float64 .npy inputs, NumPy's RandomState draws, a backward pass, and a cancellation case (a score
   of 0.0245 from terms of size ~1) that attn's own float32 trace gets wrong by more than the
   printed half unit, so float32 alone would flag it;
2. a document with one digit wrong in its 7th decimal fails on exactly that number, judged in
   float64, quoted as written, the computed value NumPy's float64 one;
3. a float32 document printed to 8 decimals is recognised as one (its digits are float32 numbers'),
   and a document printed to 4 decimals is judged by float32 or float64, either;
4. 120 seeded documents (causal, two heads) computed by NumPy in float64, NumPy in float32 and
   PyTorch in float32, printed to 4, 5, 6 and 8 decimals, all pass; 10 float64 ones with a 7th
   decimal off by one all fail.

Usage: check_float64.py PATH_TO_ATTN
Exit 0: all as expected. 1: a failure. 77: skipped (NumPy not importable).
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


def printed(a, decimals=8):
    """The array as a notebook prints it: fixed decimals, as JSON text (the literals are kept)."""
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 0:
        return f"{a:.{decimals}f}"
    return "[" + ", ".join(printed(r, decimals) for r in a) + "]"


def full(a):
    """Inputs as the document holds them: every float64 digit (repr round-trips)."""
    return json.dumps(np.asarray(a, dtype=np.float64).tolist())


def softmax(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def check(attn, text, cwd=None):
    p = subprocess.run([attn, "check", "-", "--format", "json"], input=text, capture_output=True, text=True, cwd=cwd)
    if p.returncode not in (0, 1):
        raise RuntimeError(f"attn check exited {p.returncode}: {p.stderr}")
    return p.returncode, json.loads(p.stdout)


def run_json(attn, text):
    p = subprocess.run([attn, "run", "-", "--format", "json"], input=text, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"attn run exited {p.returncode}: {p.stderr}")
    return {s["id"]: np.array(s["data"], dtype=np.float64) for s in json.loads(p.stdout)["steps"]}


def main():
    attn = os.path.abspath(sys.argv[1])
    failures = []

    def expect(ok, what):
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    def passes(name, text, cwd=None):
        rc, r = check(attn, text, cwd)
        judged = {s["id"]: s["judged"] for s in r["steps"]}
        expect(rc == 0 and r["differences"] == 0,
               f"{name}: {r['checked']} printed values pass (exit {rc}, {r['differences']} differ: "
               f"{[(d['step'], d['position'], d['printed'], d['float64']) for d in r['differing']][:3]})")
        expect(all(j == "float64" for j in judged.values()), f"{name}: every step judged in float64 ({judged})")
        return r

    rng = np.random.default_rng(2026)

    # 1a. self-attention with projections: x (4, 6), W_q, W_k (6, 3), W_v (6, 4)
    x = rng.standard_normal((4, 6))
    Wq, Wk, Wv = rng.standard_normal((6, 3)), rng.standard_normal((6, 3)), rng.standard_normal((6, 4))
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    scores = q @ k.T
    scaled = scores / np.sqrt(3)
    weights = softmax(scaled)
    context = weights @ v
    doc = {"q": q, "k": k, "v": v, "scores": scores, "scaled": scaled, "weights": weights, "context": context}

    def projected(expect_block):
        return ('{"mode": "self", "embeddings": %s, "weights": {"W_q": %s, "W_k": %s, "W_v": %s}, "expect": {%s}}'
                % (full(x), full(Wq), full(Wk), full(Wv), ", ".join(f'"{k}": {v}' for k, v in expect_block.items())))

    passes("projected self-attention", projected({k: printed(v) for k, v in doc.items()}))

    # 2. one digit wrong in the 7th decimal of the largest weight, by one: 1e-7, less than 4 float32
    #    ulps there (float32 alone would let it pass); flagged, alone, judged in float64
    wrong = {k: printed(v) for k, v in doc.items()}
    i, j = np.unravel_index(np.argmax(weights), weights.shape)
    right_literal = f"{weights[i, j]:.8f}"
    digit = int(right_literal[8])  # "0.xxxxxxDx": the 7th decimal
    wrong_literal = right_literal[:8] + str(digit + 1 if digit < 9 else digit - 1) + right_literal[9:]
    expect(weights[i, j] > 0.5 and 1e-7 < 4 * 2.0**-24 * weights[i, j], f"weights[{i}, {j}] = {weights[i, j]:.4f}: 1e-7 is under 4 float32 ulps")
    wrong["weights"] = wrong["weights"].replace(right_literal, wrong_literal, 1)
    expect(wrong["weights"] != printed(weights), f"the 7th decimal of weights[{i}, {j}] changed: {right_literal} -> {wrong_literal}")
    rc, r = check(attn, projected(wrong))
    expect(rc == 1 and r["differences"] == 1, f"one wrong 7th decimal: exit {rc}, {r['differences']} differ (want 1, 1)")
    if r["differing"]:
        d = r["differing"][0]
        expect(d["step"] == "weights" and d["position"].startswith(f"[{i}, {j}]"), f"the wrong one is weights[{i}, {j}] ({d['step']} {d['position']})")
        expect(d["judged"] == "float64", f"judged in float64 ({d['judged']})")
        expect(abs(d["computed"] - weights[i, j]) < 1e-13, f"computed is NumPy's float64 value ({d['computed']!r} vs {weights[i, j]!r})")
        p = subprocess.run([attn, "check", "-"], input=projected(wrong), capture_output=True, text=True)
        expect(f" {wrong_literal} " in p.stdout or f"printed {wrong_literal} " in p.stdout, f"the text report quotes {wrong_literal} as written")
        expect("weights: 16 printed, 1 differ" in p.stdout and "· float64" in p.stdout, "the text report names the step and its judge")

    # 1b. cancellation: a score of about 0.0245 from terms of size ~1
    qc = rng.uniform(0.6, 1.0, (3, 3)) * np.array([1, -1, 1])
    kc = rng.uniform(0.6, 1.0, (3, 3))
    # the last feature of each key makes its score with query 0 exactly 0.0245 + a little
    kc[:, 2] = (0.0245 + rng.uniform(0, 1e-4, 3) - qc[0, 0] * kc[:, 0] - qc[0, 1] * kc[:, 1]) / qc[0, 2]
    vc = rng.standard_normal((3, 2))
    sc = qc @ kc.T
    wc = softmax(sc / np.sqrt(3))
    text = ('{"mode": "self", "q": %s, "k": %s, "v": %s, "expect": {"scores": %s, "weights": %s, "context": %s}}'
            % (full(qc), full(kc), full(vc), printed(sc), printed(wc), printed(wc @ vc)))
    ours32 = run_json(attn, text)["scores"]
    expect(np.all(np.abs(sc[0]) < 0.025) and np.all(np.abs(qc[0] * kc).sum(axis=1) > 1), "query 0's scores are ~0.0245 from terms of size ~1")
    worst32 = np.abs(ours32 - np.round(sc, 8)).max()
    expect(worst32 > 5e-9, f"attn's float32 scores miss the printed ones by {worst32:.2e} > half a unit (5e-9): float32 alone would flag them")
    passes("cancellation", text)

    # 1c. causal, two heads, with W_o
    x2 = rng.standard_normal((5, 4))
    Wq2, Wk2, Wv2, Wo2 = (rng.standard_normal((4, 4)) for _ in range(4))
    def heads(t):
        return t.reshape(5, 2, 2).transpose(1, 0, 2)
    qh, kh, vh = heads(x2 @ Wq2), heads(x2 @ Wk2), heads(x2 @ Wv2)
    s2 = qh @ kh.transpose(0, 2, 1) / np.sqrt(2)
    s2 = np.where(np.tril(np.ones((5, 5), bool)), s2, -np.inf)
    w2 = softmax(s2)
    merged = (w2 @ vh).transpose(1, 0, 2).reshape(5, 4)
    text = ('{"mode": "causal", "heads": 2, "embeddings": %s, "weights": {"W_q": %s, "W_k": %s, "W_v": %s, "W_o": %s}, '
            '"expect": {"weights": %s, "merged": %s, "output": %s}}'
            % (full(x2), full(Wq2), full(Wk2), full(Wv2), full(Wo2), printed(w2), printed(merged), printed(merged @ Wo2)))
    passes("causal, two heads, W_o", text)

    # 1d. the same inputs as float64 .npy files
    with tempfile.TemporaryDirectory() as d:
        for name, a in {"x": x, "wq": Wq, "wk": Wk, "wv": Wv}.items():
            np.save(os.path.join(d, name + ".npy"), a)
        text = ('{"mode": "self", "embeddings": {"npy": "x.npy"}, "weights": {"W_q": {"npy": "wq.npy"}, "W_k": {"npy": "wk.npy"}, '
                '"W_v": {"npy": "wv.npy"}}, "expect": {"weights": %s, "context": %s}}' % (printed(weights), printed(context)))
        with open(os.path.join(d, "doc.json"), "w") as f:
            f.write(text)
        p = subprocess.run([attn, "check", "doc.json", "--format", "json"], capture_output=True, text=True, cwd=d)
        r = json.loads(p.stdout) if p.stdout else {}
        expect(p.returncode == 0 and all(s["judged"] == "float64" for s in r.get("steps", [])),
               f"float64 .npy inputs: exit {p.returncode}, judged {[s['judged'] for s in r.get('steps', [])]}")

    # 1e. NumPy's RandomState draws, as the document drew them (float64)
    rs = np.random.RandomState(7)
    xr = rs.rand(3, 4)
    Wqr, Wkr, Wvr = rs.rand(4, 4), rs.rand(4, 4), rs.rand(4, 4)
    wr = softmax((xr @ Wqr) @ (xr @ Wkr).T / 2)
    text = ('{"mode": "self", "random": {"generator": "numpy", "seed": 7, "T": 3, "C": 4}, "expect": {"x": %s, "weights": %s, "context": %s}}'
            % (printed(xr), printed(wr), printed(wr @ (xr @ Wvr))))
    passes("RandomState(7).rand draws", text)

    # 1f. a backward pass: the gradients of given q, k, v under a given upstream gradient
    qb, kb, vb, g = (rng.standard_normal((3, 4)) for _ in range(4))
    wb = softmax(qb @ kb.T / 2)
    gw = g @ vb.T
    gscaled = wb * (gw - (gw * wb).sum(axis=1, keepdims=True))
    gscores = gscaled / 2
    text = ('{"mode": "self", "q": %s, "k": %s, "v": %s, "backward": {"grad_output": %s}, '
            '"expect": {"grad.weights": %s, "grad.scores": %s, "grad.q": %s, "grad.k": %s, "grad.v": %s}}'
            % (full(qb), full(kb), full(vb), full(g), printed(gw), printed(gscores), printed(gscores @ kb), printed(gscores.T @ qb),
               printed(wb.T @ g)))
    passes("backward pass", text)

    # 3a. a float32 document printed to 8 decimals: its digits are float32 numbers'
    x32, Wq32, Wk32 = x.astype(np.float32), Wq.astype(np.float32), Wk.astype(np.float32)
    q32 = x32 @ Wq32
    text = ('{"mode": "self", "embeddings": %s, "weights": {"W_q": %s, "W_k": %s, "W_v": "identity"}, "expect": {"q": %s}}'
            % (full(x32), full(Wq32), full(Wk32), printed(q32)))
    rc, r = check(attn, text)
    expect(r["float32_digits"] and [s["judged"] for s in r["steps"]] == ["float32"], f"a float32 document is recognised ({r['judged']})")
    expect(rc == 0, f"its q, printed to 8 decimals from float32, passes (exit {rc}, {r['differences']} differ)")

    # 3b. printed to 4 decimals: float32 or float64, either
    rc, r = check(attn, projected({"weights": printed(weights, 4), "context": printed(context, 4)}))
    expect(rc == 0 and all(s["judged"] == "float32 or float64" for s in r["steps"]), f"4 decimals: either judges (exit {rc})")

    # 4. seeded documents: causal attention with two heads (T = 4, C = 6), computed by NumPy in float64,
    #    by NumPy in float32 and by PyTorch in float32 (where importable), printed to 4, 5, 6 and 8
    #    decimals: every right one passes; at 8 decimals a float64 one with a 7th decimal off by one fails
    try:
        import torch
    except ImportError:
        torch = None
    makers = ["numpy float64", "numpy float32"] + (["torch float32"] if torch is not None else [])
    wrong_seen = right_flagged = errors_missed = 0
    for seed in range(10):
        rs = np.random.default_rng(100 + seed)
        x0 = rs.standard_normal((4, 6))
        W0 = [rs.standard_normal((6, 6)) for _ in range(3)]
        for maker in makers:
            if maker == "torch float32":
                xt, Wt = torch.tensor(x0, dtype=torch.float32), [torch.tensor(w, dtype=torch.float32) for w in W0]
                qt, kt, vt = (xt @ w for w in Wt)
                split = lambda t: t.reshape(4, 2, 3).transpose(0, 1)
                st = (split(qt) @ split(kt).transpose(1, 2)) / 3 ** 0.5
                st = st.masked_fill(~torch.tril(torch.ones(4, 4, dtype=torch.bool)), float("-inf"))
                wt = torch.softmax(st, dim=-1)
                steps = {"q": qt.numpy(), "masked": st.numpy(), "weights": wt.numpy(), "merged": (wt @ split(vt)).transpose(0, 1).reshape(4, 6).numpy()}
                xs, Ws = xt.numpy(), [w.numpy() for w in Wt]
            else:
                dt = np.float64 if maker == "numpy float64" else np.float32
                xs, Ws = x0.astype(dt), [w.astype(dt) for w in W0]
                qn, kn, vn = (xs @ w for w in Ws)
                split = lambda t: t.reshape(4, 2, 3).transpose(1, 0, 2)
                sn = (split(qn) @ split(kn).transpose(0, 2, 1)) / dt(np.sqrt(3))
                sn = np.where(np.tril(np.ones((4, 4), bool)), sn, -np.inf).astype(dt)
                wn = softmax(sn).astype(dt)
                steps = {"q": qn, "masked": sn, "weights": wn, "merged": (wn @ split(vn)).transpose(1, 0, 2).reshape(4, 6)}
            for decimals in (4, 5, 6, 8):
                block = {k: printed(v, decimals).replace("-inf", '"-inf"') for k, v in steps.items()}
                def document(b):
                    return ('{"mode": "causal", "heads": 2, "embeddings": %s, "weights": {"W_q": %s, "W_k": %s, "W_v": %s}, "expect": {%s}}'
                            % (full(xs), full(Ws[0]), full(Ws[1]), full(Ws[2]), ", ".join(f'"{k}": {v}' for k, v in b.items())))
                rc, r = check(attn, document(block))
                if rc != 0:
                    right_flagged += 1
                    print(f"      {maker}, seed {seed}, {decimals} decimals: {[(d['step'], d['position'], d['printed'], d['float32'], d['float64']) for d in r['differing']][:2]}")
                if maker == "numpy float64" and decimals == 8:
                    w8 = np.where(np.isfinite(steps["weights"]), steps["weights"], 0)
                    at = np.unravel_index(np.argmax(w8), w8.shape)
                    lit = f"{w8[at]:.8f}"
                    bad = lit[:8] + str(int(lit[8]) + 1 if lit[8] != "9" else 8) + lit[9:]
                    wrong_seen += 1
                    rc, _ = check(attn, document(dict(block, weights=block["weights"].replace(lit, bad, 1))))
                    errors_missed += rc != 1
    expect(right_flagged == 0, f"{10 * len(makers) * 4} right documents ({', '.join(makers)}; 4, 5, 6 and 8 decimals): {right_flagged} flagged")
    expect(errors_missed == 0, f"{wrong_seen} float64 documents with a 7th decimal off by one: {errors_missed} not flagged")

    if failures:
        print(f"FAILED: {len(failures)} check(s)")
        return 1
    print("all float64 document checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
