#!/usr/bin/env python3
"""A class directory as `attn exercise` writes it (the contract in docs/classroom.md), for attn
grade's tests and bench until `attn exercise` lands: class.json, and per student problem.json (the
variant: the template with its embeddings and weights drawn) and key.json (the asked steps of
`attn run problem.json --format json`, rounded). Not the handouts, key.csv or quiz files: grade reads
none of them.

  make_class.py ATTN DIR --students N [--seed S] [--ask scores,weights,context]
"""
import argparse
import json
import os
import random
import subprocess

# The template: a causal two-head problem (T = 3, C = 4, hs = 2), small enough to do by hand.
TEMPLATE = {
    "title": "Causal attention, two heads",
    "mode": "causal",
    "heads": 2,
    "tokens": ["the", "cat", "sat"],
}
# attn exercise keeps the template's "exercise" block in problem.json; this branch's reader does not
# know the block yet, so the variant goes alone (set True once attn exercise has landed).
EXERCISE_BLOCK = False


def draw(rng, rows, cols):
    """Values from -1 to 1 in steps of 0.5 (the template's "values": low -1, high 1, decimals 1)."""
    return [[rng.choice([-1, -0.5, 0, 0.5, 1]) for _ in range(cols)] for _ in range(rows)]


def variant(seed, index):
    rng = random.Random(seed * 100003 + index)
    spec = dict(TEMPLATE)
    spec["embeddings"] = draw(rng, 3, 4)
    spec["weights"] = {name: draw(rng, 4, 4) for name in ("W_q", "W_k", "W_v", "W_o")}
    return spec, "v{}-{}".format(seed, index)


def rounded(values, decimals):
    if isinstance(values, list):
        return [rounded(v, decimals) for v in values]
    return values if isinstance(values, str) else round(values, decimals)


def trace(attn, problem, *options):
    out = subprocess.run([attn, "run", problem, "--format", "json", *options], check=True, capture_output=True, text=True).stdout
    return {s["id"]: s.get("data") for s in json.loads(out)["steps"]}


def make_class(attn, out, students, seed, ask, decimals=2):
    os.makedirs(out, exist_ok=True)
    roster = []
    for i in range(1, students + 1):
        sid = "s{:02d}".format(i) if students < 100 else "s{:04d}".format(i)
        spec, code = variant(seed, i)
        if EXERCISE_BLOCK:
            spec["exercise"] = {"ask": ask, "decimals": decimals}
        os.makedirs(os.path.join(out, sid), exist_ok=True)
        problem = os.path.join(out, sid, "problem.json")
        with open(problem, "w") as f:
            json.dump(spec, f)
        steps = trace(attn, problem)
        with open(os.path.join(out, sid, "key.json"), "w") as f:
            json.dump({step: rounded(steps[step], decimals) for step in ask}, f)
        roster.append({"id": sid, "name": "Student {}".format(i), "variant": code})
    manifest = {"attn_exercise": 1, "template": "causal_two_heads.json", "seed": seed, "ask": ask, "decimals": decimals,
                "tolerance": 0.5 * 10 ** -decimals, "students": roster}
    with open(os.path.join(out, "class.json"), "w") as f:  # written last, as attn exercise does
        json.dump(manifest, f, indent=1)
    return manifest


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("attn")
    p.add_argument("out")
    p.add_argument("--students", type=int, required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--ask", default="scores,weights,context")
    a = p.parse_args()
    make_class(a.attn, a.out, a.students, a.seed, a.ask.split(","))
