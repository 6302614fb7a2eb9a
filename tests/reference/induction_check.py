#!/usr/bin/env python3
"""The trained example, examples/checkpoints/induction (scripts/train_induction.py): its heads,
measured by an independent float64 forward pass (model_reference.py) on repeated random word
sequences, must include a previous-token head (mean weight on the key just before the query ≥ 0.4)
and, in a later layer, an induction head (on the repeats, mean weight on the key right after the
query token's earlier occurrence ≥ 0.4). Then `attn heads` on the example input must label those
two heads so (text, SVG, HTML and JSON), with the scores the reference computes for that input.

With ATTN_RETRAIN=1 the script retrains the model into a temporary directory (a few minutes) and
checks that it finds the same two heads (layer and head) with scores within 0.05 of the shipped
model's.

Usage: induction_check.py PATH_TO_ATTN
Exit 0: as above. 1: not. 77: skipped (torch not importable).
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as e:  # ctest reports 77 as "skipped"
    print(f"SKIPPED: PyTorch or numpy is not importable here ({e}); install python3-torch (scripts/setup.sh --tests)")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import model_reference  # noqa: E402
import train_induction  # noqa: E402

MODEL = os.path.join(ROOT, "examples", "checkpoints", "induction")
EXAMPLE = os.path.join(ROOT, "examples", "induction.json")
THRESHOLD = 0.4
torch.set_num_threads(1)
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL", msg)


def scores(config, tensors, ids):
    """[layer][head] -> (previous, induction): attn heads' two measures, from a float64 forward pass."""
    out = model_reference.forward(config, tensors, ids, dtype=torch.float64)
    T = len(ids)
    result = []
    for layer in out:
        w = layer["weights"].numpy()  # (H, T, T)
        per_head = []
        for h in range(w.shape[0]):
            previous = float(np.mean([w[h, i, i - 1] for i in range(1, T)]))
            last, induction = {}, []
            for i, t in enumerate(ids):
                if t in last:
                    induction.append(w[h, i, last[t] + 1])
                last[t] = i
            per_head.append((previous, float(np.mean(induction)) if len(induction) >= 2 else -1.0))
        result.append(per_head)
    return result


def mean_scores(model_dir, sequences):
    config, tensors = model_reference.load(model_dir)
    per = [scores(config, tensors, s) for s in sequences]
    L, H = len(per[0]), len(per[0][0])
    return [[tuple(float(np.mean([p[l][h][k] for p in per])) for k in range(2)) for h in range(H)] for l in range(L)]


def the_heads(table):
    """(layer, head, score) of the best previous-token head and of the best induction head above it."""
    prev = max(((l, h, s[0]) for l, row in enumerate(table) for h, s in enumerate(row)), key=lambda x: x[2])
    ind = max(((l, h, s[1]) for l, row in enumerate(table) for h, s in enumerate(row) if l > prev[0]), key=lambda x: x[2], default=None)
    return prev, ind


def random_sequences(n, seed):
    """n sequences of the training script's kind (its own generator, another seed)."""
    _, _, word_ids = train_induction.tokenizer_files()
    return [list(map(int, row)) for row in train_induction.batch(np.random.RandomState(seed), word_ids, n)]


def check_model(model_dir, label):
    table = mean_scores(model_dir, random_sequences(32, 7))
    prev, ind = the_heads(table)
    print(f"{label}: previous-token head L{prev[0]} H{prev[1]} {prev[2]:.3f}; "
          f"induction head {'none' if ind is None else f'L{ind[0]} H{ind[1]} {ind[2]:.3f}'}")
    if prev[2] < THRESHOLD:
        fail(f"{label}: no previous-token head: the best, L{prev[0]} H{prev[1]}, scores {prev[2]:.3f} < {THRESHOLD}")
    if ind is None or ind[2] < THRESHOLD:
        fail(f"{label}: no induction head above layer {prev[0]}: the best scores {ind and ind[2]:.3f} < {THRESHOLD}")
    return prev, ind


def check_attn_labels(attn, prev, ind):
    spec = json.load(open(EXAMPLE))
    p = subprocess.run([attn, "heads", EXAMPLE, "--format", "json"], capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"attn heads {EXAMPLE}: exit {p.returncode}: {p.stderr.strip()[:300]}")
        return
    doc = json.loads(p.stdout)
    # the example's own tokens, through the reference
    tok = subprocess.run([attn, "tokenize", MODEL, spec["sentence"], "--format", "json"], capture_output=True, text=True)
    ids = json.loads(tok.stdout)["ids"]
    config, tensors = model_reference.load(MODEL)
    table = scores(config, tensors, ids)
    for (l, h, _), pattern, k in ((prev, "previous token", 0), (ind, "induction", 1)):
        s = doc["summaries"][l][h]
        want = table[l][h][k]
        if s["pattern"] != pattern:
            fail(f"attn heads labels L{l} H{h} {s['pattern']!r}, expected {pattern!r} (reference score {want:.3f})")
        elif abs(s["pattern_share"] - want) > 1e-4:
            fail(f"attn heads: L{l} H{h} {pattern} score {s['pattern_share']:.6f}, the reference {want:.6f}")
        else:
            print(f"ok   attn heads labels L{l} H{h} {pattern} {s['pattern_share']:.4f} (reference {want:.4f})")
    for fmt, needles in (("text", [f"L{prev[0]} h{prev[1]}  previous token", f"L{ind[0]} h{ind[1]}  induction"]),
                         ("svg", ["previous token", "induction"]), ("html", ["previous token", "induction"])):
        out = subprocess.run([attn, "heads", EXAMPLE, "--format", fmt, "--color", "never"] if fmt == "text" else
                             [attn, "heads", EXAMPLE, "--format", fmt], capture_output=True, text=True, env=dict(os.environ, COLUMNS="80")).stdout
        missing = [n for n in needles if n not in out]
        if missing:
            fail(f"attn heads --format {fmt}: missing {missing}")
        else:
            print(f"ok   attn heads --format {fmt} names both heads")


def main(argv):
    attn = os.path.abspath(argv[1])
    prev, ind = check_model(MODEL, "shipped model")
    if ind is not None:
        check_attn_labels(attn, prev, ind)
    if os.environ.get("ATTN_RETRAIN") == "1":
        with tempfile.TemporaryDirectory() as work:
            out = os.path.join(work, "induction")
            subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "train_induction.py"), out], check=True)
            p2, i2 = check_model(out, "retrained model")
            if (p2[:2], i2 and i2[:2]) != (prev[:2], ind and ind[:2]) or abs(p2[2] - prev[2]) > 0.05 or (i2 and abs(i2[2] - ind[2]) > 0.05):
                fail(f"retraining found other heads: {p2}, {i2} against the shipped {prev}, {ind}")
    else:
        print("(the model is not retrained: ATTN_RETRAIN=1 does, a few minutes)")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
