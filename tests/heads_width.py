#!/usr/bin/env python3
"""attn heads fits its width and labels its grid's rows: every line of every heads example, at --width 60,
80 and 120, at the default width (80 in a pipe, $COLUMNS = 60 where set) and in the narrowest, 20, in
shades and in colour, is at most that many display cells (a wide character counts 2, colour escapes
none). The induction example at 80 names its queries as the tokens line does ("10 ␣milk₂") and its
keys' positions above each head; at 60, where two tokens share a cell, the rows name their positions
and the note says the narrowest --width that gives each token its row, named (checked: it does, one less
does not).

Usage: heads_width.py ATTN SOURCE_DIR
"""
import os
import re
import subprocess
import sys
import unicodedata

attn, source = sys.argv[1], sys.argv[2]
EXAMPLES = ["induction", "tiny_gpt2", "tiny_llama", "bert_pair", "t5_cross"]
failures = []


def cells(line):
    line = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", line)
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


def heads(example, *args, columns=None):
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns:
        env["COLUMNS"] = str(columns)
    r = subprocess.run([attn, "heads", f"examples/{example}.json", *args], cwd=source, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        failures.append(f"attn heads examples/{example}.json {' '.join(args)}: exit {r.returncode}\n{r.stderr}")
    return r.stdout


def check_width(out, width, what):
    for n, line in enumerate(out.splitlines(), 1):
        if cells(line) > width:
            failures.append(f"{what}: line {n} is {cells(line)} cells, wider than {width}:\n{line}")


for example in EXAMPLES:
    for color in ["never", "truecolor"]:
        for width in [20, 60, 80, 120]:
            check_width(heads(example, "--width", str(width), "--color", color), width, f"{example} --width {width} --color {color}")
        check_width(heads(example, "--color", color), 80, f"{example} --color {color}, in a pipe (default 80)")
        check_width(heads(example, "--color", color, columns=60), 60, f"{example} --color {color}, COLUMNS=60")

# the rows name their queries, the tokens as the tokens line names them; the keys' positions above
at80 = heads("induction", "--width", "80", "--color", "never").splitlines()
for want in [r"^ 3 ␣milk₁ +[░▒▓█ ·]+$", r"^10 ␣milk₂ +[░▒▓█ ·]+$", r"^15 ␣tan₂ +[░▒▓█ ·]+$", r"^L1 +0    5    10 +0    5    10 "]:
    if not any(re.search(want, line) for line in at80):
        failures.append(f"induction --width 80: no line matches {want!r}")
at60 = heads("induction", "--width", "60", "--color", "never").splitlines()
for want in [r"^10–11 +[░▒▓█ ·]+$", r"^ +0–1 +[░▒▓█ ·]+$", r"^each cell shows the largest weight of a 2 × 2 block"]:
    if not any(re.search(want, line) for line in at60):
        failures.append(f"induction --width 60: no line matches {want!r}")

# a pooled grid's note names the narrowest width that gives each token its row, and that width does
note = re.search(r"--width (\d+) gives each token its row, named", " ".join(l.strip() for l in at60))
if not note:
    failures.append("induction --width 60: the block note does not say which --width gives each token its row")
else:
    unpooled = int(note.group(1))
    at_it = heads("induction", "--width", str(unpooled), "--color", "never")
    if not re.search(r"^10 ␣milk₂ +[░▒▓█ ·]+$", at_it, re.M) or "block of tokens" in at_it:
        failures.append(f"induction --width {unpooled} (as the note says): query 10 has no row of its own named ␣milk₂")
    if re.search(r"^10 ␣milk₂ +[░▒▓█ ·]+$", heads("induction", "--width", str(unpooled - 1), "--color", "never"), re.M):
        failures.append(f"induction --width {unpooled - 1} names each token's row too: the note's {unpooled} is not the narrowest")

if failures:
    print("FAIL:\n" + "\n\n".join(failures))
    sys.exit(1)
print(f"ok: attn heads on {len(EXAMPLES)} examples fits --width 20, 60, 80, 120 and the default, in shades and colour; "
      "its rows and keys are labelled")
