#!/usr/bin/env python3
"""A class for attn grade's tests and bench, made by `attn exercise` itself: a causal two-head
template (T = 3, C = 4, hs = 2, W_o; each student's embeddings and weights drawn from -1 to 1 in
tenths), a roster of ids s01, s02, ... and names "Student 1", ..., asked steps as given. Also the two
helpers the tests share: a trace's steps, and values rounded as a key holds them.

  make_class.py ATTN DIR --students N [--seed S] [--ask scores,weights,context]
"""
import argparse
import json
import os
import subprocess
import tempfile

TEMPLATE = {
    "title": "Causal attention, two heads",
    "mode": "causal",
    "heads": 2,
    "tokens": ["the", "cat", "sat"],
    # (the numbers fix the shapes; each student's are drawn)
    "embeddings": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]],
    "weights": {name: [[1 if r == c else 0 for c in range(4)] for r in range(4)] for name in ("W_q", "W_k", "W_v", "W_o")},
}


def rounded(values, decimals):
    if isinstance(values, list):
        return [rounded(v, decimals) for v in values]
    return values if isinstance(values, str) else round(values, decimals)


def trace(attn, problem, *options):
    out = subprocess.run([attn, "run", problem, "--format", "json", *options], check=True, capture_output=True, text=True).stdout
    return {s["id"]: s.get("data") for s in json.loads(out)["steps"]}


def make_class(attn, out, students, seed, ask, decimals=2):
    """attn exercise's class in `out` (a new folder); returns its class.json."""
    with tempfile.TemporaryDirectory() as tmp:
        template = os.path.join(tmp, "causal_two_heads.json")
        with open(template, "w") as f:
            json.dump(dict(TEMPLATE, exercise={"ask": ask, "values": {"low": -1, "high": 1, "decimals": 1}, "decimals": decimals}), f)
        roster = os.path.join(tmp, "roster.csv")
        width = 2 if students < 100 else 4
        with open(roster, "w") as f:
            f.write("id,name\n" + "".join("s{:0{}d},Student {}\n".format(i, width, i) for i in range(1, students + 1)))
        subprocess.run([attn, "exercise", template, "--students", roster, "--out", out, "--seed", str(seed)], check=True, capture_output=True,
                       text=True)
    with open(os.path.join(out, "class.json")) as f:
        return json.load(f)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("attn")
    p.add_argument("out")
    p.add_argument("--students", type=int, required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--ask", default="scores,weights,context")
    a = p.parse_args()
    make_class(a.attn, a.out, a.students, a.seed, a.ask.split(","))
