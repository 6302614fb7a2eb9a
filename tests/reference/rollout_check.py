#!/usr/bin/env python3
"""attn heads --rollout and --ablate against a float64 reference written from the published GPT-2 and
Llama code (model_reference.py, not attn's), on the trained induction checkpoint and the tiny example
checkpoints (GPT-2, Llama with grouped-query heads in bfloat16, and BERT for an encoder's rollout).

Rollout (Abnar & Zuidema 2020), computed here from the reference's weights: per layer A = the heads'
mean (or max, or min) at each cell, Ã = (A + I) with each row divided by its sum, R_0 = Ã_0,
R_l = Ã_l R_{l−1}. Checked: attn's "rollout" [L][T][T] within 1e-5 of R, every row summing to 1, for
mean, max and min, and the listed query's top token.

Ablation: the reference removes heads' context vectors before the output projection (zeroed, or
replaced by their mean over the positions: model_reference.ablated). Checked, for zero and mean: the
ablated run's weights of every layer within 1e-4, the mean next-token loss (−log softmax of the
logits at each position i < T − 1 for token i + 1) within 1e-5, clean and ablated. On the induction
model: removing the previous-token heads (L0H0, L0H2) takes each induction head's score below half
of its clean score, and --evidence's run for L0H0 reports it.

Usage: rollout_check.py PATH_TO_ATTN     Exit 0 pass, 1 fail, 77 skipped (no torch).
"""
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
try:
    import numpy as np
    import torch
    import model_reference as ref
except ImportError as e:
    print(f"SKIPPED: numpy or torch is not importable here ({e})")
    sys.exit(77)

MAP_TOL, WEIGHT_TOL, LOSS_TOL = 1e-5, 1e-4, 1e-5
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def attn_json(attn, work, name, checkpoint, ids, *args):
    path = os.path.join(work, name + ".json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"checkpoint": {"path": checkpoint}, "token_ids": ids}, f)
    r = subprocess.run([attn, "heads", path, "--format", "json", *args], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"{name} {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
        return None
    return json.loads(r.stdout)


def rollout(weights, combine):
    """weights: per layer [H, T, T] float64 -> [L, T, T]."""
    out, R = [], None
    for w in weights:
        a = {"mean": w.mean(0), "max": w.max(0), "min": w.min(0)}[combine] + np.eye(w.shape[-1])
        a = a / a.sum(-1, keepdims=True)
        R = a if R is None else a @ R
        out.append(R)
    return np.array(out)


def loss_of(logits, ids):
    lg = logits.double()
    lse = torch.logsumexp(lg[:-1], dim=-1)
    return float((lse - lg[torch.arange(len(ids) - 1), torch.tensor(ids[1:])]).mean())


def check_rollout(attn, work, name, path, ids, config, tensors):
    layers = ref.forward(config, tensors, ids, torch.float64)
    weights = [l["weights"].numpy() for l in layers]
    for combine in ("mean", "max", "min"):
        got = attn_json(attn, work, name, path, ids, "--rollout", "--rollout-heads", combine)
        if got is None:
            continue
        want = rollout(weights, combine)
        have = np.array(got["rollout"], dtype=np.float64)
        err = float(np.abs(have - want).max())
        rows = float(np.abs(have.sum(-1) - 1).max())
        print(f"{name} rollout {combine}: max |attn − reference| {err:.2e}, rows sum to 1 within {rows:.2e}")
        if err > MAP_TOL or rows > MAP_TOL:
            fail(f"{name} rollout {combine}: {err:.2e} from the reference, rows off by {rows:.2e}")
        top = int(np.argmax(want[-1, -1]))
        if got["rollout_top"][-1][0]["position"] != top:
            fail(f"{name} rollout {combine}: the last query's top token is {got['rollout_top'][-1][0]['position']}, the reference's {top}")


def check_ablation(attn, work, name, path, ids, config, tensors, heads, mode):
    keep_clean, keep = {}, {}
    ref.forward(config, tensors, ids, torch.float64, keep=keep_clean)
    by_layer = {}
    for l, h in heads:
        by_layer.setdefault(l, ([], mode))[0].append(h)
    layers = ref.forward(config, tensors, ids, torch.float64, keep=keep, ablate=by_layer)
    got = attn_json(attn, work, name, path, ids, "--ablate", ",".join(f"L{l}H{h}" for l, h in heads), "--ablation", mode)
    if got is None:
        return None
    run = got["runs"][0]
    have = np.array(run["heads"]["weights"], dtype=np.float64)
    want = np.array([l["weights"].numpy() for l in layers])
    err = float(np.abs(have - want).max())
    clean, ablated = loss_of(keep_clean["logits"], ids), loss_of(keep["logits"], ids)
    dl, dc = abs(run["loss"] - ablated), abs(got["loss"] - clean)
    print(f"{name} ablate {heads} {mode}: weights within {err:.2e}; loss clean {got['loss']:.6f} ({dc:.1e}), "
          f"ablated {run['loss']:.6f} ({dl:.1e})")
    if err > WEIGHT_TOL:
        fail(f"{name} ablate {heads} {mode}: weights {err:.2e} from the reference")
    if dl > LOSS_TOL or dc > LOSS_TOL:
        fail(f"{name} ablate {heads} {mode}: loss off by {dc:.2e} (clean), {dl:.2e} (ablated)")
    return got


def check_induction_story(attn, work, got):
    """Removing the previous-token heads removes the induction: every clean induction head of L1 below half."""
    changes = [c for c in got["runs"][0]["changes"] if c["clean_pattern"] == "induction"]
    if not changes:
        fail("induction: no induction head among the changes")
    for c in changes:
        print(f"induction L{c['layer']}H{c['head']}: {c['clean_score']:.3f} -> {c['ablated_score']:.3f} without L0H0, L0H2")
        if not c["ablated_score"] < 0.5 * c["clean_score"]:
            fail(f"induction L{c['layer']}H{c['head']}: {c['ablated_score']} is not below half of {c['clean_score']}")


def check_evidence(attn, work, path, ids):
    """--evidence: the run that ablates L0H0 (a previous-token head) names an induction head's fall first."""
    got = attn_json(attn, work, "induction-evidence", path, ids, "--evidence")
    if got is None:
        return
    runs = {tuple(r["ablated"]): r for r in got["runs"]}
    if ("L0H0",) not in runs:
        fail(f"--evidence: no run ablates L0H0 (runs: {sorted(runs)})")
        return
    moved = [c for c in runs[("L0H0",)]["changes"] if c["clean_score"] is not None and c["ablated_score"] is not None]
    top = max(moved, key=lambda c: abs(c["ablated_score"] - c["clean_score"]))
    print(f"--evidence L0H0: largest change L{top['layer']}H{top['head']} {top['clean_pattern']} {top['clean_score']:.3f} -> {top['ablated_score']:.3f}")
    if top["clean_pattern"] != "induction" or not top["ablated_score"] < top["clean_score"]:
        fail(f"--evidence L0H0: the largest change is {top}, not an induction head's fall")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    attn = sys.argv[1]
    ex = os.path.join(ROOT, "examples", "checkpoints")
    # examples/induction.json's sentence (attn tokenize gives these ids): two words, then seven said twice
    induction_ids = [442, 452, 279, 461, 500, 428, 440, 399, 397, 279, 461, 500, 428, 440, 399, 397]
    cases = [("induction", os.path.join(ex, "induction"), induction_ids),
             ("tiny-gpt2", os.path.join(ex, "tiny-gpt2"), [5, 60, 17, 101, 33, 7, 60, 17]),
             ("tiny-llama", os.path.join(ex, "tiny-llama"), [1, 45, 263, 329, 373, 278, 45, 263])]
    with tempfile.TemporaryDirectory() as work:
        for name, path, ids in cases:
            config, tensors = ref.load(path)
            check_rollout(attn, work, name, path, ids, config, tensors)
            for mode in ("zero", "mean"):
                got = check_ablation(attn, work, name, path, ids, config, tensors, [(0, 0), (0, 2)], mode)
                if name == "induction" and mode == "zero" and got is not None:
                    check_induction_story(attn, work, got)
                    check_evidence(attn, work, path, ids)
        bert = os.path.join(ex, "tiny-bert")
        config, tensors = ref.load(bert)
        check_rollout(attn, work, "tiny-bert", bert, [2, 45, 67, 89, 12, 3], config, tensors)
    print(f"{len(failures)} failure(s)" if failures else "rollout and ablation agree with the float64 reference")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
