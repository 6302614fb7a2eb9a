#!/usr/bin/env python3
"""attn check's why, on documents written here by a hand computation that made one mistake or kept one convention.

Each document is computed in plain Python (no NumPy, no attn: loops over lists, as a walkthrough's
author would), with one variant of the computation: the scale left out, 1/√C or 1/d_k for 1/√d_k,
the softmax over the queries, the mask left out or applied after the softmax, −1e9 for −inf, the
weights read transposed (nn.Linear's habit), or each step computed from the previous step's printed,
rounded numbers. attn check must exit 1 (the document differs), name that variant alone in "why",
and reproduce every differing value. Then: a document with one mistyped number that no variant
explains; a mistake plus a mistyped number, explained in part; and 1/√C against 1/d_k where
C = d_k², which no document can tell apart.

Usage: check_why.py PATH_TO_ATTN
Exit 0: all as expected. 1: a failure.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

# ---- attention by hand ----


def matmul(a, b):
    return [[sum(a[i][k] * b[k][j] for k in range(len(b))) for j in range(len(b[0]))] for i in range(len(a))]


def transpose(a):
    return [list(r) for r in zip(*a)]


def softmax_row(r):
    m = max(r)
    e = [math.exp(x - m) for x in r]
    return [x / sum(e) for x in e]


def columns(a, first, width):
    return [row[first:first + width] for row in a]


def attention(x, w, heads=1, causal=False, mistake=None, decimals=4, rounded=()):
    """Every step of one variant: {step id: nested list}; the steps in `rounded` are rounded to
    `decimals` before the next steps use them (a document that computed from its printed numbers)."""
    def show(name, a):
        return [[round(v, decimals) for v in r] for r in a] if name in rounded else a
    t, c = len(x), len(x[0])
    hs = c // heads
    wt = {n: transpose(m) if mistake == "w-transposed" else m for n, m in w.items()}
    q, k, v = (show(n[-1].lower(), matmul(x, wt[n])) for n in ("W_q", "W_k", "W_v"))
    scale = {None: 1 / math.sqrt(hs), "scale-missing": 1.0, "scale-sqrt-c": 1 / math.sqrt(c), "scale-dk": 1 / hs}.get(mistake, 1 / math.sqrt(hs))
    out = {"q": q, "k": k, "v": v, "scores": [], "scaled": [], "masked": [], "weights": [], "context": []}
    for h in range(heads):
        qh, kh, vh = (columns(m, h * hs, hs) for m in (q, k, v))
        scores = show("scores", matmul(qh, transpose(kh)))
        scaled = show("scaled", [[s * scale for s in r] for r in scores])
        blocked = [[causal and j > i and mistake != "mask-missing" for j in range(t)] for i in range(t)]
        fill = -1e9 if mistake == "fill-1e9" else -math.inf
        masked = [[fill if blocked[i][j] and mistake != "mask-after-softmax" else scaled[i][j] for j in range(t)] for i in range(t)]
        if mistake == "softmax-wrong-axis":
            weights = transpose([softmax_row(col) for col in transpose(masked)])
        else:
            weights = [softmax_row(r) for r in masked]
        if mistake == "mask-after-softmax":
            weights = [[0.0 if blocked[i][j] else weights[i][j] for j in range(t)] for i in range(t)]
        weights = show("weights", weights)
        for name, value in (("scores", scores), ("scaled", scaled), ("masked", masked), ("weights", weights), ("context", matmul(weights, vh))):
            out[name].append(value)
    if heads == 1:
        out = {n: (a[0] if n not in ("q", "k", "v") else a) for n, a in out.items()}
    return out


def printed(a, decimals):
    """As a document prints it: fixed decimals; −inf as the string the expect block takes."""
    if isinstance(a, list):
        return "[" + ", ".join(printed(r, decimals) for r in a) + "]"
    if a == -math.inf:
        return '"-inf"'
    if a == -1e9:
        return "-1000000000.0"
    return f"{a:.{decimals}f}"


# ---- the documents ----

X = [[1.0, 0.5, -0.5, 0.0], [0.0, 1.0, 0.5, -1.0], [0.5, -0.5, 1.0, 1.0], [-1.0, 0.0, 0.5, 1.0]]
W = {"W_q": [[0.9, -0.4, 0.3, 0.8], [0.2, 1.1, -0.7, 0.1], [-0.5, 0.6, 1.2, -0.3], [0.7, -0.2, 0.4, 0.9]],
     "W_k": [[1.0, 0.3, -0.6, 0.2], [-0.4, 0.8, 0.5, -0.9], [0.6, -0.1, 0.9, 0.4], [0.2, 0.7, -0.3, 1.1]],
     "W_v": [[0.5, -1.0, 0.2, 0.7], [1.2, 0.4, -0.6, 0.3], [-0.3, 0.9, 1.0, -0.8], [0.6, 0.1, -0.4, 1.1]]}


def wide(m):
    """A [4, 4] matrix doubled to [8, 8] (two heads of d_k = 4 where C = 8): block-diagonal, the second block flipped in sign."""
    return [r + [0.0] * 4 for r in m] + [[0.0] * 4 + [-v for v in r] for r in m]


X8 = [r + [v * 0.5 for v in reversed(r)] for r in X]
W8 = {n: wide(m) for n, m in W.items()}


def document(title, x, w, steps, heads=1, causal=False, mistake=None, decimals=4, rounded=False, edit=None):
    values = attention(x, w, heads, causal, mistake, decimals, set(steps) if rounded else set())
    if edit:
        edit(values)
    expect = ", ".join(f'"{s}": {printed(values[s], decimals)}' for s in steps)
    return (f'{{"title": {json.dumps(title)}, "mode": "{"causal" if causal else "self"}", "heads": {heads}, '
            f'"embeddings": {json.dumps(x)}, "weights": {json.dumps(w)}, "expect": {{{expect}}}}}')


def check(attn, tmp, name, text):
    path = os.path.join(tmp, name + ".json")
    with open(path, "w") as f:
        f.write(text)
    r = subprocess.run([attn, "check", path, "--format", "json"], capture_output=True, text=True)
    if r.returncode not in (0, 1):
        raise RuntimeError(f"{name}: attn check exited {r.returncode}: {r.stderr}")
    return r.returncode, json.loads(r.stdout)


def main():
    attn = sys.argv[1]
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)
        print(("ok   " if cond else "FAIL ") + what)

    # (name, mistake, document arguments, the variant attn must name)
    cases = [
        ("scale-missing", dict(mistake="scale-missing"), ["scores", "weights", "context"], "scale-missing"),
        ("scale-sqrt-c", dict(mistake="scale-sqrt-c", heads=2, x=X8, w=W8), ["scaled", "weights"], "scale-sqrt-c"),
        ("scale-dk", dict(mistake="scale-dk", heads=2, x=X8, w=W8), ["scaled", "weights", "context"], "scale-dk"),
        ("softmax over the queries", dict(mistake="softmax-wrong-axis"), ["scaled", "weights"], "softmax-wrong-axis"),
        ("mask left out", dict(mistake="mask-missing", causal=True), ["scaled", "weights", "context"], "mask-missing"),
        ("mask after the softmax", dict(mistake="mask-after-softmax", causal=True), ["weights", "context"], "mask-after-softmax"),
        ("−1e9 for −inf", dict(mistake="fill-1e9", causal=True), ["masked", "weights"], "fill-1e9"),
        ("weights read transposed", dict(mistake="w-transposed"), ["q", "k", "v", "weights"], "w-transposed"),
        ("each step from the printed one, 2 decimals", dict(rounded=True, decimals=2), ["scores", "scaled", "weights", "context"], "rounded"),
        ("scale left out, and rounded as printed", dict(mistake="scale-missing", rounded=True, decimals=2), ["scores", "weights", "context"],
         "scale-missing + rounded"),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for i, (title, args, steps, want) in enumerate(cases):
            x, w = args.pop("x", X), args.pop("w", W)
            rc, r = check(attn, tmp, f"case{i}", document(title, x, w, steps, **args))
            why = r["why"]
            names = [v["variant"] for v in why["explained_by"]] if why else []
            expect(rc == 1 and r["differences"] > 0, f"{title}: the document differs (exit {rc}, {r['differences']} differ)")
            expect(names == [want], f"{title}: why names {want} alone (got {names})")
            if names == [want]:
                v = why["explained_by"][0]
                expect(v["explained"] == r["differences"] and v["broken"] == 0,
                       f"{title}: it reproduces every differing value ({v['explained']}/{r['differences']}, {v['broken']} broken)")
                expect(why["text"].startswith("why: the document's "), f"{title}: the text says why: {why['text'].strip()}")

        # one number mistyped in a right document: nothing explains it
        def typo(values):
            values["weights"][1][0] += 0.1
        rc, r = check(attn, tmp, "typo", document("a typo", X, W, ["scores", "weights"], edit=typo))
        expect(rc == 1 and r["differences"] == 1 and r["why"]["explained_by"] == [],
               f"a mistyped weight: no variant explains it ({r['why']['explained_by'] if r['why'] else None})")
        expect(r["why"]["text"].startswith("why: no variant explains it: none of the "), "a mistyped weight: the text says so")

        # the scale left out, and one context value mistyped: explained in part, the part said
        def context_typo(values):
            values["context"][2][1] += 0.5
        rc, r = check(attn, tmp, "part", document("part", X, W, ["weights", "context"], mistake="scale-missing", edit=context_typo))
        best = r["why"]["explained_by"]
        expect(len(best) == 1 and best[0]["variant"] == "scale-missing" and best[0]["explained"] == r["differences"] - 1,
               f"scale left out plus a typo: scale-missing explains all but the typo ({best})")
        expect(r["why"]["text"].startswith("why, in part: the document's weights and context match when 1/√d_k is left out ("
                                           f"{r['differences'] - 1} of the {r['differences']} differing values: weights 16/16, context 15/16)"),
               f"scale left out plus a typo: the part is said: {r['why']['text'].strip()}")

        # C = 4 with two heads of d_k = 2: 1/√C = 1/d_k, so both scale mistakes explain it equally
        rc, r = check(attn, tmp, "tie", document("tie", X, W, ["scaled", "weights"], heads=2, mistake="scale-dk"))
        names = sorted(v["variant"] for v in r["why"]["explained_by"])
        expect(names == ["scale-dk", "scale-sqrt-c"], f"1/√C = 1/d_k: a tie of scale-dk and scale-sqrt-c ({names})")
        expect(r["why"]["text"].startswith("why: 2 variants explain it equally"), "the tie is said")

    print(f"check_why: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
