#!/usr/bin/env python3
"""Every worked sum in --explain reproduces from its digits as printed: both backward examples
(attn backward --explain) and attn decode --explain. Each "a · b + c · d = e" (any of · × + − / and
parentheses between numbers), each softmax Jacobian entry J[j, k] = w[j] · (δ[j, k] − w[k]) from the
printed w, and each entry of J · g from the printed J and g is recomputed from the operands as printed
and must land within half a unit of the result's last printed digit.

decode --explain's own numbers are checked against the input's sizes, computed here: the cache's bytes
per token Hkv · (hs + hv) · 4, the entries before and after each append, the window's positions, the
first step after the prompt, the measured differences (those of the comparison table), and a run with
a finite mask_fill, where the explanation must say the rows differ and why.

Usage: explain_arithmetic.py ATTN_BINARY EXAMPLES_DIR     (exit 0 pass, 1 fail)
"""
import json
import re
import subprocess
import sys
from fractions import Fraction

RUNS = [
    ["backward", "cat_sat_backward.json", "--explain"],
    ["backward", "masked_4x4_backward.json", "--explain"],
    ["decode", "llama_like.json", "--prefill", "4", "--explain"],
    ["decode", "positions_sinusoidal.json", "--explain"],
]

NUM = r"[−-]?\d+(?:\.\d+)?"
# an operand run: numbers, operators and parentheses, ending at " = RESULT"
# (the result is looked ahead at, not taken: in "a · b = c · d = e" it is the next sum's first operand)
WORKED = re.compile(r"([0-9.()·×+−/ ]*?[0-9)][0-9.()·×+−/ ]*?)\s=\s(?=(" + NUM + r")(?!\d|\.\d))")


def value(text):
    return Fraction(text.replace("−", "-"))


def evaluate(run):
    """The value of the longest tail of the run that is a whole expression (numbers, at least one operator,
    balanced parentheses), exactly, from its printed digits; None if no tail is one ("to 5 (5 × 64" is 5 × 64)."""
    for i in range(len(run)):
        expr = run[i:].strip()
        if not expr or expr[0] not in "0123456789(−" or (i > 0 and run[i - 1] in "0123456789."):
            continue
        depth = 0
        for ch in expr:
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth < 0:
                break
        if depth != 0 or not re.search(r"[\d)]\s*[·×+−/]\s*[−\d(]", expr):
            continue
        py = re.sub(r"(\d+(?:\.\d+)?)", r"Fraction('\1')", expr.replace("·", "*").replace("×", "*").replace("−", "-"))
        try:
            return eval(py, {"Fraction": Fraction})  # only digits, operators and parentheses reach here
        except SyntaxError:
            continue
    return None


def reproduces(computed, printed):
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return abs(computed - value(printed)) <= Fraction(1, 2) / 10**decimals + Fraction(1, 10**12)


def check_worked(line, where, failures):
    checked = 0
    for m in WORKED.finditer(line):
        computed = evaluate(m.group(1))
        if computed is None:
            continue
        checked += 1
        if not reproduces(computed, m.group(2)):
            failures.append(f"{where}: {m.group(1).strip()} = {m.group(2)} recomputes to {float(computed):.6g}")
    return checked


def vector(text):
    return None if "…" in text else [value(x.strip()) for x in text.split(",")]


def check_jacobians(lines, where, failures):
    """The matrix after "w = [..], it is:" against the printed w; "J · g = [..]" against the printed J and g."""
    checked = 0
    for i, line in enumerate(lines):
        m = re.search(r"w = \[([^\]]*)\], it is:", line)
        if not m or vector(m.group(1)) is None:
            continue
        w = vector(m.group(1))
        printed_rows = [row.split()[-len(w):] for row in lines[i + 3:i + 3 + len(w)]]  # a blank line, the keys, then one line per key
        rows = [[value(x) for x in row] for row in printed_rows]
        for j, row in enumerate(printed_rows):
            for k, printed in enumerate(row):
                checked += 1
                if not reproduces(w[j] * ((1 if j == k else 0) - w[k]), printed):
                    failures.append(f"{where}: J[{j}, {k}] = {printed} does not reproduce from w as printed")
        for later in lines[i + 3 + len(w):i + 6 + len(w)]:
            g = re.search(r"g = \[([^\]]*)\]: J · g = \[([^\]]*)\]", later)
            if g and vector(g.group(1)) is not None:
                gv, jg = vector(g.group(1)), [x.strip() for x in g.group(2).split(",")]
                for j, printed in enumerate(jg):
                    checked += 1
                    if not reproduces(sum(rows[j][k] * gv[k] for k in range(len(gv))), printed):
                        failures.append(f"{where}: (J · g)[{j}] = {printed} does not reproduce from the printed J and g")
    return checked


def decode_explained(attn, problem, prefill):
    p = subprocess.run([attn, "decode", "-", "--prefill", str(prefill), "--explain", "--color", "never", "--width", "1000", "--steps", "weights"],
                       input=json.dumps(problem), capture_output=True, text=True)
    return p.returncode, " ".join(p.stdout.split())  # one line: the explanations' paragraphs joined


def check_decode(examples, attn, failures):
    """llama_like (H = 4, Hkv = 2, C = 16, window 4, RoPE, T = 6) with P = 4, then a finite mask_fill."""
    problem = json.load(open(f"{examples}/llama_like.json"))
    H, Hkv, C, W, T, P = problem["heads"], problem["kv_heads"], problem["random"]["C"], problem["window"], len(problem["tokens"]), 4
    hs = C // H
    per_token = Hkv * (hs + hs) * 4  # float32 keys and values of every kv head
    rc, out = decode_explained(attn, problem, P)
    want = [f"Hkv · (hs + hv) × 4 = {Hkv} · ({hs} + {hs}) × 4 = {per_token} bytes per token for this one attention layer",
            f"After all T = {T} tokens this layer's cache holds {T} × {per_token} = {T * per_token} bytes.",
            f"H · (hs + hv) × 4 = {H} · ({hs} + {hs}) × 4 = {H * 2 * hs * 4} bytes",
            f"The first step after the prompt is token {P} \"{problem['tokens'][P]}\" (position {P}): the cache then holds the prefill's "
            f"{P} entries, positions 0 .. {P - 1}, and the new token's own key and value are appended as entry {P}."]
    for p in range(P, T):
        want.append(f"the cache grows from {p} entries ({p} × {per_token} = {p * per_token} bytes) to {p + 1} "
                    f"({p + 1} × {per_token} = {(p + 1) * per_token} bytes)")
        first_seen = p - W + 1
        want.append(f"reads only the last W = {W} of the {p + 1} cached keys, positions {first_seen} .. {p} (the sliding window)")
    want.append(f"there is no key after position {P} yet")
    table = re.search(rf" {P} {problem['tokens'][P]} (\S+) (\S+) (\S+) ← first decoded", out)
    if table:
        want.append(f"differs from the full pass's row {P} by {table.group(1)} in its weights, {table.group(3)} in its output and "
                    f"{table.group(2)} in its context")
    else:
        failures.append("decode llama_like: the comparison table's first decoded row not found")
    if rc != 0:
        failures.append(f"decode llama_like --explain: exit {rc}")
    for w in want:
        if w not in out:
            failures.append(f"decode llama_like --explain: expected \"{w}\"")
    finite = json.load(open(f"{examples}/positions_sinusoidal.json"))
    finite["mask_fill"] = -1
    rc, out = decode_explained(attn, finite, 2)
    for w in ["This run blocks with mask_fill = −1, not −inf.", "beyond the tolerance 1e-06: here decoding does not reproduce the full pass"]:
        if w not in out:
            failures.append(f"decode --explain with mask_fill −1: expected \"{w}\"")
    if "Why a decoded row equals" in out:
        failures.append("decode --explain with mask_fill −1: claims the rows are equal")
    return len(want) + 2


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    attn, examples = sys.argv[1], sys.argv[2]
    failures, checked = [], 0
    for args in RUNS:
        cmd = [attn, args[0], f"{examples}/{args[1]}", *args[2:], "--color", "never", "--width", "1000"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            failures.append(f"{' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
            continue
        lines = p.stdout.splitlines()
        where = " ".join(args)
        n = sum(check_worked(l, where, failures) for l in lines if "▸" in l or l.startswith("      "))
        n += check_jacobians(lines, where, failures)
        if n == 0:
            failures.append(f"{where}: no worked line found (the parser or the explanation changed)")
        checked += n
    checked += check_decode(examples, attn, failures)
    for f in failures:
        print("FAIL", f)
    print(f"{checked} worked results recomputed from their printed operands; {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
