#!/usr/bin/env python3
"""Every step's code, run: the trace's "code" (PyTorch statements) against the trace's values.

For each problem, `attn run FILE --dump DIR` writes the steps (DIR/<id>.npy), the trace
(DIR/trace.json, each step's "code") and the inputs the code names (DIR/inputs/<name>.npy). This
script puts those inputs in one Python scope under their names, with torch, numpy as np, math and the
trace's integers (B, T, S, C, H, hs, hv, dk, dv, Cs, Co, and kv_heads, the config's name for Hkv), then
runs each step's code in order, in DIR, as a student would paste it, and compares the variable it
defines (the step id with dots as underscores) with the step's .npy: the same shape (no batch axis
where the trace has none), at most 1e-4 of the step's largest magnitude apart, with the same NaN and
infinities. Every sixth problem's DIR/steps.py (the same code as one script) is run as a student
would run it, too.

Problems: every example (examples/*.json, the checkpoint ones included), each again with --fused where
attn fuses it, a list of variants written here (layouts, biases, cross, general widths, given q/k/v
and scores, padding, attn_mask block/keep/add, mask_fill, empty rows under each policy, RoPE styles,
partial, offsets and scalings, grouped and multi-query heads, fused W_qkv, ALiBi, soft-cap, windows,
bottom-right causal, positions, scales), layers of every tiny checkpoint make_checkpoints.py writes
(GPT-2, Llama, Mistral, Qwen2/3, Phi-3, Gemma 2/3, OLMo 2), and every --mistake on the examples that
take it (its code is the student's). One step's code changed on purpose must fail the comparison (the
check can fail).

Usage: step_code_check.py ATTN REPO_DIR     (exit 0 pass, 1 fail, 77 skipped)
"""
import glob
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as e:  # ctest reports 77 as "skipped"
    print(f"SKIPPED: NumPy or PyTorch is not importable here ({e}); install python3-numpy and "
          f"python3-torch (scripts/setup.sh --tests)")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_checkpoints  # noqa: E402

TOL = 1e-4
INTS = ("B", "T", "S", "C", "H", "hs", "hv", "dk", "dv", "Cs", "Co")
torch.set_num_threads(1)


def var(step_id):
    return step_id.replace(".", "_")


def compare(got, want):
    """None when got matches want, else what differs."""
    if not isinstance(got, torch.Tensor):
        return f"the code made a {type(got).__name__}, not a tensor"
    g = got.detach().to(torch.float64).numpy()
    w = want.astype(np.float64)
    if list(g.shape) != list(w.shape):  # the code's shape is the one printed: no batch axis where the trace has none
        return f"shape {list(g.shape)}, the trace's {list(w.shape)}"
    if not np.array_equal(np.isnan(g), np.isnan(w)):
        return "NaN in other places"
    fin = np.isfinite(w)
    if not np.array_equal(np.isfinite(g), fin) or not np.array_equal(g[~fin & ~np.isnan(w)], w[~fin & ~np.isnan(w)]):
        return "infinities in other places"
    if not fin.any():
        return None
    scale = float(np.abs(w[fin]).max())
    d = float(np.abs(g[fin] - w[fin]).max())
    if d > TOL * scale if scale > 0 else d > 0:
        i = np.unravel_index(int(np.argmax(np.where(fin, np.abs(g - np.where(fin, w, 0)), -1))), w.shape)
        return f"differs by {d:.3g} (largest |value| {scale:.3g}) at {list(map(int, i))}: code {g[i]:.7g}, trace {w[i]:.7g}"
    return None


def run_steps(directory, mutate=None):
    """Runs every step's code of a --dump directory; returns (steps run, failures)."""
    with open(os.path.join(directory, "trace.json")) as f:
        doc = json.load(f)
    scope = {"torch": torch, "np": np, "math": math}
    cfg = doc["config"]
    for n in INTS:
        if cfg.get(n) is not None:
            scope[n] = int(cfg[n])
    if "H" in scope:
        scope["kv_heads"] = int(cfg.get("kv_heads", scope["H"]))  # written only when it differs from H
    for path in sorted(glob.glob(os.path.join(directory, "inputs", "*.npy"))):
        scope[os.path.basename(path)[:-4]] = torch.from_numpy(np.load(path))
    failures, ran = [], 0
    here = os.getcwd()
    os.chdir(directory)
    try:
        for step in doc["steps"]:
            sid, code = step["id"], step.get("code", "")
            if mutate:
                code = mutate(sid, code)
            if not code:
                failures.append(f"{sid}: no code")
                continue
            try:
                exec(code, scope)  # noqa: S102 (the code under test)
            except Exception as e:  # noqa: BLE001
                failures.append(f"{sid}: `{code}` raised {type(e).__name__}: {e}")
                break
            ran += 1
            if var(sid) not in scope:
                failures.append(f"{sid}: `{code}` defines no {var(sid)}")
                continue
            why = compare(scope[var(sid)], np.load(os.path.join(directory, sid + ".npy")))
            if why:
                failures.append(f"{sid}: {why}\n      code: {code}")
    finally:
        os.chdir(here)
    return ran, failures


class Tally:
    def __init__(self):
        self.problems = self.steps = 0
        self.failures = []
        self.fused = self.scripts = self.mistakes = 0


def run_script(directory, steps):
    """DIR/steps.py, as a student runs it: None when it ran every step and each matched, else why not."""
    # (from the directory above: the script finds its files wherever it is started)
    p = subprocess.run([sys.executable, os.path.join(os.path.basename(directory), "steps.py")], cwd=os.path.dirname(directory),
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        return f"steps.py exited {p.returncode}: {p.stderr.strip()[-300:]}"
    lines = p.stdout.splitlines()
    if len(lines) != steps:
        return f"steps.py printed {len(lines)} lines for {steps} steps"
    for line in lines:
        d = float(line.rsplit("largest difference ", 1)[1].split(",")[0])
        if "differ" in line.split("largest difference")[1] or not d <= 1e-3:
            return f"steps.py: {line}"
    return None


def check(attn, tally, label, path, extra=(), optional=False, cwd=None, script=False):
    """attn run PATH --dump, then every step's code (and with `script` DIR/steps.py); `optional`: exit 2
    means not applicable."""
    d = tempfile.mkdtemp(prefix="attn-code-")
    try:
        p = subprocess.run([attn, "run", path, "--dump", os.path.join(d, "dump"), *extra], capture_output=True, text=True,
                           cwd=cwd, timeout=300)
        if p.returncode == 2 and optional:
            return False
        if p.returncode != 0:
            tally.failures.append(f"{label}: attn exited {p.returncode}: {p.stderr.strip()[:300]}")
            return False
        ran, failures = run_steps(os.path.join(d, "dump"))
        if script:
            tally.scripts += 1
            why = run_script(os.path.join(d, "dump"), ran)
            if why:
                failures.append(why)
        tally.problems += 1
        tally.steps += ran
        tally.failures += [f"{label}: {f}" for f in failures]
        return True
    finally:
        shutil.rmtree(d, ignore_errors=True)


def variants():
    """(name, problem): the variants the examples do not all cover, small and seeded."""
    rng = np.random.default_rng(20261125)

    def m(*shape, s=1.0):
        return (rng.standard_normal(shape) * s).astype(np.float32).tolist()

    out = []
    # layouts, biases, cross with general widths, an output projection
    out.append(("torch layout, biases, cross, Cs ≠ C, dv ≠ dk, Co", {
        "mode": "cross", "heads": 2, "layout": "torch", "embeddings": m(3, 4), "source": {"embeddings": m(5, 6)},
        "dv": 6, "weights": {"W_q": m(4, 4), "W_k": m(4, 6), "W_v": m(6, 6), "W_o": m(3, 6),
                             "b_q": m(4), "b_k": m(4), "b_v": m(6), "b_o": m(3)}}))
    out.append(("batched, W_qkv with b_qkv, grouped 4/2", {
        "mode": "causal", "heads": 4, "kv_heads": 2, "embeddings": m(2, 3, 8),
        "weights": {"W_qkv": m(8, 16, s=0.5), "b_qkv": m(16)}}))
    out.append(("multi-query 4/1 with RoPE, given q k v", {
        "mode": "causal", "heads": 4, "kv_heads": 1, "q": m(5, 8), "k": m(5, 2), "v": m(5, 2), "rope": {}}))
    out.append(("padding, masked_row zeros, H=2", {
        "mode": "causal", "heads": 2, "q": m(2, 4, 4), "k": m(2, 4, 4), "v": m(2, 4, 4), "padding": {"lengths": [4, 2]}}))
    block = [[False, True, True], [True, True, True], [False, False, True]]
    for policy in ("zeros", "nan", "uniform"):
        out.append((f"an empty row under masked_row {policy}", {
            "mode": "self", "heads": 1, "q": m(3, 2), "k": m(3, 2), "v": m(3, 2),
            "attn_mask": {"block": block}, "masked_row": policy}))
    out.append(("attn_mask keep per batch row, H=2", {
        "mode": "multi-head", "heads": 2, "q": m(2, 3, 4), "k": m(2, 3, 4), "v": m(2, 3, 4),
        "attn_mask": {"keep": [[[True, False, True]] * 3, [[True, True, False]] * 3]}}))
    out.append(("attn_mask add, shared, with causal", {
        "mode": "causal", "heads": 2, "embeddings": m(3, 4), "weights": {"W_q": m(4, 4), "W_k": m(4, 4), "W_v": m(4, 4)},
        "attn_mask": {"add": [[0, -1.5, 0], [0.5, 0, 0], [0, 0, -2]]}}))
    out.append(("attn_mask add per batch row, H=2", {
        "mode": "multi-head", "heads": 2, "q": m(2, 3, 4), "k": m(2, 3, 4), "v": m(2, 3, 4),
        "attn_mask": {"add": [[[0, "-inf", 1], [0, 0, 0], [1, 1, 0]], [[2, 0, 0], [0, "-inf", 0], [0, 0, 0]]]}}))
    out.append(("mask_fill -1e9", {
        "mode": "causal", "heads": 1, "embeddings": m(4, 3), "weights": {"W_q": m(3, 3), "W_k": m(3, 3), "W_v": m(3, 3)}, "mask_fill": -1e9}))
    out.append(("scores given, H=2, v given, scale 0.5", {
        "mode": "multi-head", "heads": 2, "scores": m(1, 2, 3, 3), "v": m(1, 3, 4), "scale": 0.5}))
    out.append(("scores given, causal, no v", {"mode": "causal", "scores": m(3, 3)}))
    out.append(("scores given, batched, one head, padding", {
        "mode": "causal", "scores": m(2, 1, 3, 3), "v": m(2, 3, 2), "padding": {"lengths": [3, 2]}}))
    out.append(("RoPE interleaved, partial (2 of 4), offset 3, H=2", {
        "mode": "causal", "heads": 2, "q": m(3, 8), "k": m(3, 8), "v": m(3, 8),
        "rope": {"style": "interleaved", "dims": 2, "offset": 3}}))
    out.append(("RoPE half, partial (4 of 6), cross", {
        "mode": "cross", "heads": 1, "embeddings": m(2, 6), "source": {"embeddings": m(4, 6)},
        "weights": {"W_q": m(6, 6), "W_k": m(6, 6), "W_v": m(6, 6)}, "rope": {"dims": 4, "theta": 100}}))
    out.append(("RoPE linear scaling", {
        "mode": "causal", "heads": 2, "q": m(4, 8), "k": m(4, 8), "v": m(4, 8),
        "rope": {"offset": 7, "scaling": {"rope_type": "linear", "factor": 4}}}))
    out.append(("RoPE llama3 scaling, every band", {
        "mode": "causal", "heads": 1, "q": m(4, 16), "k": m(4, 16), "v": m(4, 16),
        "rope": {"theta": 10000, "offset": 30, "scaling": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 1,
                                                            "high_freq_factor": 4, "original_max_position_embeddings": 64}}}))
    out.append(("ALiBi without causal, H=3 (interpolated slopes)", {
        "mode": "multi-head", "heads": 3, "q": m(3, 6), "k": m(3, 6), "v": m(3, 6), "alibi": True}))
    out.append(("ALiBi given slopes, bottom-right causal S > T, soft-cap", {
        "mode": "causal", "causal_align": "bottom-right", "heads": 2, "q": m(2, 4, s=3), "k": m(5, 4, s=3), "v": m(5, 4),
        "alibi": {"slopes": [0.5, 0.25]}, "softcap": 5}))
    out.append(("soft-cap without ALiBi", {
        "mode": "causal", "heads": 1, "q": m(3, 2, s=4), "k": m(3, 2, s=4), "v": m(3, 2), "softcap": 2}))
    out.append(("window 2, bottom-right, padding", {
        "mode": "causal", "causal_align": "bottom-right", "window": 2, "heads": 2, "q": m(2, 3, 4), "k": m(2, 5, 4),
        "v": m(2, 5, 4), "padding": {"lengths": [5, 4]}, "masked_row": "zeros"}))
    out.append(("learned positions, batched", {
        "mode": "causal", "heads": 2, "embeddings": m(2, 3, 4), "positions": {"learned": m(3, 4)},
        "weights": {"W_q": m(4, 4), "W_k": m(4, 4), "W_v": m(4, 4)}}))
    out.append(("sinusoidal positions, odd C", {
        "mode": "self", "heads": 1, "embeddings": m(4, 5), "positions": "sinusoidal",
        "weights": {"W_q": m(5, 5), "W_k": m(5, 5), "W_v": m(5, 5)}}))
    out.append(("scale none, with embeddings", {
        "mode": "self", "heads": 1, "embeddings": m(3, 2), "weights": {"W_q": m(2, 2), "W_k": m(2, 2), "W_v": m(2, 2)},
        "scale": "none"}))
    out.append(("scale a number, RoPE on one head", {
        "mode": "self", "heads": 1, "embeddings": m(3, 4), "weights": {"W_q": m(4, 4), "W_k": m(4, 4), "W_v": m(4, 4)},
        "scale": 0.3, "rope": {}}))
    return out


def checkpoint_inputs(work):
    """(name, input) for layer 0 and the last layer of every tiny test checkpoint."""
    out = []
    for name, (d, config) in make_checkpoints.make_all(work).items():
        spec = make_checkpoints.CHECKPOINTS[name]
        checkpoint = {"path": os.path.join(d, spec["lone_file"]), "config": config} if "lone_file" in spec else {"path": d}
        text = config.get("text_config", config)
        layers = int(text.get("num_hidden_layers", text.get("n_layer", text.get("num_layers", text.get("encoder_layers", 1)))))
        vocab = int(text.get("vocab_size", 512))
        ids = [(7 * i + 3) % min(vocab, 200) for i in range(6)]
        encdec = config.get("model_type") in ("bart", "marian", "t5")  # its encoder: "stack" and "source_ids"
        for layer in sorted({0, layers - 1}):
            ck = dict(checkpoint, layer=layer, **({"stack": "encoder"} if encdec else {}))
            out.append((f"checkpoint {name} layer {layer}", {"checkpoint": ck, ("source_ids" if encdec else "token_ids"): ids}))
            for att in ("self", "cross") if encdec else ():  # the decoder's two attentions, over a 4-token decoder input
                dec = dict(checkpoint, layer=layer, stack="decoder", attention=att)
                out.append((f"checkpoint {name} decoder layer {layer} {att}", {"checkpoint": dec, "source_ids": ids, "token_ids": [2, 0, 9, 4]}))
    return out


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    attn, repo = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    tally = Tally()
    work = tempfile.mkdtemp(prefix="attn-code-check-")
    try:
        examples = sorted(glob.glob(os.path.join(repo, "examples", "*.json")))
        problems = [(os.path.relpath(p, repo), p) for p in examples]
        for i, (name, problem) in enumerate(variants() + checkpoint_inputs(os.path.join(work, "checkpoints"))):
            path = os.path.join(work, f"problem-{i}.json")
            with open(path, "w") as f:
                json.dump(problem, f)
            problems.append((name, path))
        for i, (name, path) in enumerate(problems):
            check(attn, tally, name, path, script=i % 6 == 0)
            if check(attn, tally, name + " --fused", path, ("--fused",), optional=True):
                tally.fused += 1

        # every simulated mistake: the code is the student's, and gives the mistaken trace
        p = subprocess.run([attn, "run", "-", "--mistake", "?"], input="{}", capture_output=True, text=True)
        mistakes = p.stderr.strip().rsplit("mistakes: ", 1)[-1].split(", ")  # "--mistake ?: no such mistake; attn run's mistakes: w-transposed, ..."
        if len(mistakes) < 10:
            tally.failures.append(f"could not read the mistakes' names from: {p.stderr.strip()}")
        fixtures = [os.path.join(repo, "examples", n + ".json") for n in
                    ("diagnose_causal_2heads", "diagnose_general_2heads", "llama_like", "alibi_softcap", "window_3", "padding_batch2")]
        for mistake in mistakes:
            applied = 0
            for path in fixtures:
                label = f"{os.path.relpath(path, repo)} --mistake {mistake}"
                applied += check(attn, tally, label, path, ("--mistake", mistake), optional=True)
            tally.mistakes += applied > 0
            if not applied:
                tally.failures.append(f"--mistake {mistake}: no fixture takes it")

        # the check can fail: the weights' softmax over the wrong axis
        d = os.path.join(work, "mutant")
        subprocess.run([attn, "run", os.path.join(repo, "examples", "masked_4x4.json"), "--dump", d], check=True,
                       capture_output=True)
        _, failures = run_steps(d, lambda sid, code: code.replace("dim=-1", "dim=-2") if sid == "weights" else code)
        if not any(f.startswith("weights:") for f in failures):
            tally.failures.append("a softmax over dim=-2 in the weights' code was not caught")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for f in tally.failures:
        print("FAIL", f)
    print(f"{tally.problems} traces ({tally.fused} of them --fused, {tally.scripts} also as steps.py, "
          f"every one of the {tally.mistakes} mistakes on the fixtures that take it), "
          f"{tally.steps} steps' code run against the trace; "
          f"{len(tally.failures)} failure(s)")
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
