#!/usr/bin/env python3
"""attn heads on an input longer than it keeps whole and than the model's trained positions: the tiny
Llama checkpoint (max_position_embeddings 64) on 300 tokens. The text notes the positions passed, names
the largest off-diagonal weight by positions (its cells are blocks of positions, not tokens), and the
SVG's and HTML's sizes give T, not the number of cells; --head's JSON names the head it draws.

Usage: heads_long_input.py ATTN SOURCE_DIR
"""
import json
import os
import re
import subprocess
import sys
import tempfile

attn, source = sys.argv[1], sys.argv[2]
failures = []


def run(*args):
    p = subprocess.run([attn, *args], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        failures.append(f"attn {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()[:200]}")
    return p.stdout


with tempfile.TemporaryDirectory() as tmp:
    spec = os.path.join(tmp, "long.json")
    ids = [1] + [(7 * i) % 400 + 3 for i in range(299)]
    json.dump({"checkpoint": {"path": os.path.join(source, "examples", "checkpoints", "tiny-llama")}, "token_ids": ids}, open(spec, "w"))
    text = run("heads", spec, "--width", "120", "--color", "never")
    if "300 tokens, more than the 64 positions the model was trained for" not in text:
        failures.append("text: no note that 300 tokens pass the model's 64 positions")
    offs = re.findall(r"max off-diagonal [\d.]+ \(query (\d+) → key (\d+)\)", text)
    if len(offs) != 8 or not all(int(k) < int(q) < 300 for q, k in offs):
        failures.append(f"text: the largest off-diagonal weights are not named by positions, key before query: {offs}")
    for fmt in ("svg", "html"):
        if "2 layers × 4 heads, T = 300:" not in run("heads", spec, "--format", fmt):
            failures.append(f"{fmt}: its sizes do not give T = 300")
head = json.loads(run("heads", os.path.join(source, "examples", "induction.json"), "--head", "L1H3", "--format", "json") or "{}")
names = [(s["layer"], s["head"]) for row in head.get("summaries", []) for s in row]
if names != [(1, 3)]:
    failures.append(f"--head L1H3 --format json: its summary names {names}, not layer 1, head 3")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
