#!/usr/bin/env python3
"""Generation check: `attn decode SPEC --tokens N --format json` on every causal tiny checkpoint of
make_checkpoints.py (GPT-2, Llama with and without a tied head, Mistral's window, Qwen2, Qwen3,
Phi-3, Gemma 2 with its final soft-cap, Gemma 3, OLMo 2, ...) against greedy generation by an
independent float64 forward pass (model_reference.py: the final norm and the LM head, tied or not):
the same tokens, and each step's candidates' probabilities within 1e-4. Then the refusals: an
encoder, too many tokens for GPT-2's positions, --prefill or --top without what they go with, a
missing lm_head.weight.

Usage: generate_check.py PATH_TO_ATTN
Exit 0: all agree. 1: a difference. 77: skipped (torch not importable).
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
sys.path.insert(0, HERE)
import make_checkpoints  # noqa: E402
import model_reference  # noqa: E402

TOL = 1e-4
TOKENS = 4
torch.set_num_threads(1)
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL", msg)


def reference_greedy(config, tensors, prompt, n):
    """[(next id, probabilities (V,), the gap between the two most probable)] for n steps, in float64."""
    ids, out = list(prompt), []
    for _ in range(n):
        keep = {}
        model_reference.forward(config, tensors, ids, dtype=torch.float64, keep=keep)
        logits = keep["logits"][-1]
        p = torch.softmax(logits, dim=-1).numpy()
        order = np.argsort(-logits.numpy(), kind="stable")
        out.append((int(order[0]), p, float(logits[order[0]] - logits[order[1]])))
        ids.append(int(order[0]))
    return out


def run(attn, spec_path, *args):
    p = subprocess.run([attn, "decode", spec_path, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def check_model(attn, work, name, d, config):
    spec = {"checkpoint": {"path": d, "layer": model_reference.num_layers(config) - 1}}
    has_tokenizer = any(os.path.exists(os.path.join(d, f)) for f in ("tokenizer.json", "vocab.json", "tokenizer.model"))
    if has_tokenizer:
        spec["sentence"] = "The cat sat on the mat"
    else:
        spec["token_ids"] = [5, 17, 3, 11, 29, 2]
    path = os.path.join(work, f"{name}.json")
    with open(path, "w") as f:
        json.dump(spec, f)
    rc, out, err = run(attn, path, "--tokens", str(TOKENS), "--format", "json", "--top", "5")
    if rc != 0:
        fail(f"{name}: attn decode --tokens exited {rc}: {err.strip()[:300]}")
        return
    doc = json.loads(out)
    if not doc["agrees"]:
        fail(f"{name}: attn's cached steps differ from its own full pass")
    config, tensors = model_reference.load(d)
    ref = reference_greedy(config, tensors, doc["prompt_ids"], TOKENS)
    worst = 0.0
    for k, (step, (want, p, gap)) in enumerate(zip(doc["steps"], ref)):
        got = doc["generated"][k]
        if got != want:
            if gap < 1e-4:  # a tie within float32's reach: the rest follows another path
                print(f"  {name}: step {k}: the two most probable tokens are {gap:.2g} apart in float64; stopping the comparison there")
                break
            fail(f"{name}: step {k}: attn wrote {got}, the float64 reference {want} (gap {gap:.3g})")
            break
        for c in step["top"]:
            d_p = abs(c["p"] - float(p[c["id"]]))
            worst = max(worst, d_p)
            if d_p > TOL:
                fail(f"{name}: step {k}: p({c['id']}) = {c['p']} against {p[c['id']]}")
        # the candidates are the most probable ones, in order
        best = [int(i) for i in np.argsort(-p, kind="stable")[:len(step["top"])]]
        if [c["id"] for c in step["top"]][:1] != best[:1]:
            fail(f"{name}: step {k}: top candidate {step['top'][0]['id']} against {best[0]}")
    print(f"ok   {name}: {doc['generated']} (largest |Δp| {worst:.2g}; head {doc['lm_head']})")


def check_refusals(attn, work, made):
    enc = os.path.join(work, "bert.json")
    with open(enc, "w") as f:
        json.dump({"checkpoint": {"path": made["bert-f32"][0]}, "sentence": "the cat"}, f)
    gpt = os.path.join(work, "gpt2-long.json")
    with open(gpt, "w") as f:
        json.dump({"checkpoint": {"path": made["gpt2-f32"][0]}, "token_ids": list(range(30))}, f)
    bart = os.path.join(work, "bart.json")
    with open(bart, "w") as f:
        json.dump({"checkpoint": {"path": made["bart-f32"][0], "stack": "encoder"}, "source": "the cat"}, f)
    cases = [
        (enc, ["--tokens", "2"], "is an encoder"),
        (bart, ["--tokens", "2"], "does not generate with an encoder-decoder yet"),
        (gpt, ["--tokens", "5"], "n_positions = 32"),
        (gpt, ["--tokens", "2", "--prefill", "3"], "--prefill"),
        (gpt, ["--top", "3"], "goes with --tokens"),
        (gpt, ["--tokens", "2", "--head", "9"], "--head 9"),
        (gpt, ["--tokens", "2", "--head", "1", "--format", "json"], "--format json writes every head"),
    ]
    # an untied checkpoint without its lm_head.weight
    src = made["llama-bf16-sharded"][0]
    broken = os.path.join(work, "no-lm-head")
    if not os.path.exists(broken):
        import shutil
        import safetensors_io as st
        shutil.copytree(src, broken)
        for fname in os.listdir(broken):
            if fname.endswith(".safetensors"):
                t = st.load_file(os.path.join(broken, fname))
                if "lm_head.weight" in t:
                    del t["lm_head.weight"]
                    st.save_file(t, os.path.join(broken, fname))
        idx = os.path.join(broken, "model.safetensors.index.json")
        if os.path.exists(idx):
            j = json.load(open(idx))
            j["weight_map"].pop("lm_head.weight", None)
            make_checkpoints.write_json(idx, j)
    nolm = os.path.join(work, "no-lm-head.json")
    with open(nolm, "w") as f:
        json.dump({"checkpoint": {"path": broken}, "token_ids": [1, 5, 9]}, f)
    cases.append((nolm, ["--tokens", "2"], "lm_head.weight\" is missing"))
    for path, args, needle in cases:
        rc, out, err = run(attn, path, *args)
        if rc != 2 or needle not in err:
            fail(f"refusal {os.path.basename(path)} {' '.join(args)}: exit {rc}, {err.strip()[:200]!r}; expected exit 2 naming {needle!r}")
        else:
            print(f"ok   refused {os.path.basename(path)} {' '.join(args)}: {err.strip()[:100]}")


def main(argv):
    attn = os.path.abspath(argv[1])
    with tempfile.TemporaryDirectory() as work:
        made = make_checkpoints.make_all(work)
        causal = [n for n, (d, c) in made.items() if c is not None and c.get("model_type") not in model_reference.ENCODER_TYPES]
        for name in causal:
            d, config = made[name]
            if not os.path.exists(os.path.join(d, "config.json")):
                continue  # (a lone .safetensors file: its config is given inline, generation works the same)
            check_model(attn, work, name, d, config)
        check_refusals(attn, work, made)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
