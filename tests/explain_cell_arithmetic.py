#!/usr/bin/env python3
"""Every worked line of the HTML walkthrough's hovers (attn run EXAMPLE --format html --explain, each
number's computation with this run's numbers) reproduces from its digits as printed, for every example
in examples/*.json, checkpoint examples included. explain_arithmetic.py does the same for backward
--explain and decode --explain; this is the forward's.

A hover reads "weights[0, 1, 2] = 0.3837" and then its working. Each line "= A = B …" claims every
segment that is arithmetic on printed numbers (· × + − / ^, parentheses, exp, tanh, sin, cos, √)
equals the first line's value; "Σ = A = S" claims A equals S; "exp(A − B) / S = N / S" claims exp(A − B)
is N and B is the "max = B" of the line before; "column c = h·w + d" and "⌊h / n⌋ = m" are integer
identities; "(the scale: 1/√2 = 0.7071)" is one too. Each is recomputed from its operands as printed
and must land within half a unit of the last printed digit of its result. A sum too long to write out
must still be recomputable: an elided term ("…") fails. "puts 1.0000 of its attention" (or 0.0000) is
said only of a weight that is exactly 1 (or 0), read from the same run's JSON trace.

Usage: explain_cell_arithmetic.py ATTN_BINARY EXAMPLES_DIR     (exit 0 pass, 1 fail)
"""
import glob
import html
import json
import math
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

from explain_arithmetic import reproduces, value

NUMBER = r"[−-]?\d+(?:\.\d+)?"
ARITHMETIC = re.compile(r"^(?:[0-9.()·×+−/^√ -]|exp|tanh|sin|cos)+$")
FUNCTIONS = {"exp": math.exp, "tanh": math.tanh, "sin": math.sin, "cos": math.cos, "sqrt": math.sqrt}


def evaluate(expr):
    """An arithmetic segment's value from its printed digits: exact (a Fraction) while it is + − · × /,
    a float once exp, tanh, sin, cos, √ or a fractional power enters. Only digits, operators,
    parentheses and those five names reach eval (ARITHMETIC)."""
    py = expr.replace("·", "*").replace("×", "*").replace("−", "-").replace("^", "**")
    py = re.sub(r"√(\d+(?:\.\d+)?)", r"sqrt(\1)", py)
    py = re.sub(r"(?<![\w.])(\d+(?:\.\d+)?)", r"Fraction('\1')", py)
    return eval(py, {"__builtins__": {}, "Fraction": Fraction, **FUNCTIONS})


def close(computed, printed):
    """reproduces() for a float result too (exp, tanh, sin): within half a unit of the last printed digit."""
    return reproduces(Fraction(computed), printed)


def segments(text):
    """The parts of "= A = B: words" claimed equal: words after a colon and a closing remark dropped."""
    parts = []
    for part in re.sub(r":\s.*$", "", text).split(" = "):
        part = part.strip()
        part = re.sub(r"\s\((?:\d+ blocked keys? adds? 0|the other \d+ (?:terms|keys), summed)\)$", "", part)
        parts.append(part)
    return parts


class Checker:
    def __init__(self, where, failures):
        self.where, self.failures, self.checked = where, failures, 0

    def claim(self, ok, message):
        self.checked += 1
        if not ok:
            self.failures.append(f"{self.where}: {message}")

    def chain(self, parts, result, hover_head):
        """Each arithmetic segment of parts against the printed result."""
        for part in parts:
            if re.search(r"\+ … \(", part):
                self.claim(False, f"{hover_head}: an elided sum a reader cannot recompute: {part}")
            elif ARITHMETIC.match(part) and re.search(r"\d", part):
                computed = evaluate(part)
                self.claim(close(computed, result), f"{hover_head}: {part} = {result} recomputes to {float(computed):.8g}")

    def softmax(self, lines, k, hover_head):
        """'= exp(A − B) / S = N / S' under '…, max = M': exp(A − B) is N, B is M."""
        m = re.match(rf"= exp\(({NUMBER}) − \(?({NUMBER})\)?\) / ({NUMBER}) = ({NUMBER}) / ({NUMBER})$", lines[k])
        if not m:
            return
        a, b, s, n, s2 = m.groups()
        self.claim(close(math.exp(value(a) - value(b)), n), f"{hover_head}: exp({a} − {b}) = {n} recomputes to {math.exp(value(a) - value(b)):.8g}")
        mx = re.search(rf"max = ({NUMBER})$", lines[k - 1])
        self.claim(s == s2 and mx is not None and mx.group(1) == b, f"{hover_head}: the softmax's max or sum said two ways: {lines[k - 1]} / {lines[k]}")

    def integers(self, line, hover_head):
        for c, h, w, d in re.findall(r"column (\d+) = (\d+)·(\d+) \+ (\d+)", line):
            self.claim(int(c) == int(h) * int(w) + int(d), f"{hover_head}: column {c} = {h}·{w} + {d}")
        for h, n, m in re.findall(r"⌊(\d+) / (\d+)⌋ = (\d+)", line):
            self.claim(int(h) // int(n) == int(m), f"{hover_head}: ⌊{h} / {n}⌋ = {m}")
        for expr, result in re.findall(r"(\d+/√\d+) = (" + NUMBER + r")(?![\d.])", line):
            self.claim(close(evaluate(expr), result), f"{hover_head}: the scale {expr} = {result}")

    def attention(self, line, hover_head, exact):
        """'puts P of its attention': P printed as 1 or 0 only when the weight is exactly that."""
        m = re.search(r" puts (\S+) of its attention", line)
        if not m or exact is None:
            return
        p = m.group(1)
        rounds_to = float(p) if re.fullmatch(r"\d+\.\d+", p) else None
        if rounds_to in (0.0, 1.0):
            self.claim(exact == rounds_to, f"{hover_head}: says {p} of its attention, the weight is {exact!r}")

    def hover(self, text, weights):
        lines = text.split("\n")
        head = re.match(rf"^(\S+)\[([\d, ]+)\] = (\S+)$", lines[0])
        if not head:
            return
        step, index, result = head.groups()
        exact = None
        if step == "weights" and weights is not None:
            exact = weights
            for i in (int(x) for x in index.split(", ")):
                exact = exact[i]
        for k, line in enumerate(lines[1:], start=1):
            if line.startswith("= "):
                self.chain(segments(re.sub(rf", max = {NUMBER}$", "", line[2:])), result, lines[0])
                self.softmax(lines, k, lines[0])
            elif line.startswith("Σ = "):
                parts = segments(line[4:])
                self.chain(parts[:-1], parts[-1], lines[0])
            self.integers(line, lines[0])
            self.attention(line, lines[0], exact)


def run(attn, path):
    common = [attn, "run", path, "--color", "never"]
    page = subprocess.run(common + ["--format", "html", "--explain"], capture_output=True, text=True)
    trace = subprocess.run(common + ["--format", "json", "--steps", "weights"], capture_output=True, text=True)
    return path, page, trace


def weights_of(trace):
    if trace.returncode != 0:
        return None
    steps = [s for s in json.loads(trace.stdout)["steps"] if s["id"] == "weights"]
    return steps[0]["data"] if steps else None


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    attn, examples = sys.argv[1], sys.argv[2]
    failures, checked, hovers = [], 0, 0
    paths = sorted(glob.glob(os.path.join(examples, "*.json")))
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda p: run(attn, p), paths))
    for path, page, trace in results:
        where = os.path.basename(path)
        if page.returncode != 0:
            failures.append(f"{where}: exit {page.returncode}: {page.stderr.strip()}")
            continue
        checker = Checker(where, failures)
        weights = weights_of(trace)
        texts = [html.unescape(x) for x in re.findall(r'data-x="([^"]*)"', page.stdout)]
        for text in texts:
            checker.hover(text, weights)
        if checker.checked == 0:
            failures.append(f"{where}: no worked line found in {len(texts)} hovers (the parser or the hovers changed)")
        checked += checker.checked
        hovers += len(texts)
    for f in failures[:int(os.environ.get("SHOW", 60))]:
        print("FAIL", f)
    if len(failures) > 60:
        print(f"… and {len(failures) - 60} more")
    print(f"{len(paths)} examples, {hovers} hovers: {checked} worked results recomputed from their printed operands; {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
