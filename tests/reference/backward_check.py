#!/usr/bin/env python3
"""attn backward against float64 PyTorch autograd.

Each problem is an input JSON written here (random tensors from a seeded NumPy generator). attn
backward --format json gives the forward trace and every grad.* step. The reference is the forward
pass written out in torch, float64, with requires_grad on the inputs and retain_grad on every
intermediate; loss.backward() (or output.backward(grad_output)) then gives each gradient by autograd,
not by any formula of attn's. Every grad.* step attn shows must equal the matching autograd gradient
within 1e-4 relative (|a − b| ≤ 1e-4 · max(1, max |b|)), every gradient autograd has for a given
tensor or parameter must be shown, and none may be missing or extra.

Covered: self, causal, cross (Cs ≠ C), multi-head (H = 2, 3), general widths (dk ≠ dv ≠ Co ≠ C),
the torch layout, biases, with and without W_o, a batch with padding, keep and additive attn_masks,
a sliding window, mask_fill −1e9, sinusoidal positions, q/k/v given, a fused W_qkv (and b_qkv),
RoPE (half and interleaved, partial), grouped-query heads (kv_heads 2 of 4, 1 of 3), ALiBi and
soft-capping, alone and together; the upstream gradient as given, from a target (the loss step too),
from a seed (attn's own draw, read back) and by default sum(output). RoPE's tables and ALiBi's bias
are constants of the forward pass (checked by the forward tests); the reference reads them from the
trace.

The reference itself is checked: torch.autograd.gradcheck (finite differences) on tiny problems of
the same forward function. And refusals: a grad_output of the wrong shape, both seed and target, NaN
in the target, a checkpoint's layer (not covered yet) must exit 2 naming the path.

With --backend cuda (on a machine with a GPU): every problem × upstream gradient runs on the CPU and
on CUDA, and the CUDA trace must give the CPU's: the same step ids and shapes, every value within the
parity tolerance |cpu − cuda| <= 1e-5 + 1e-4·|cpu| (non-finite values exactly); it is also checked
against autograd as above. Two larger problems (rows past a warp's 32 keys, past one block) join them.
The CPU-only parts (refusals, attn check, --flash, steps.py) are left to the plain run.

Usage: backward_check.py PATH_TO_ATTN [--backend cuda]
Exit 0: all agree. 1: a difference. 77: skipped (torch not importable; with --backend cuda, no CUDA
build or no device).
"""
import json
import math
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"SKIPPED: PyTorch or numpy is not importable here ({e}); install python3-torch (scripts/setup.sh --tests)")
    sys.exit(77)

torch.set_num_threads(1)
TOL = 1e-4
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def flat(x):
    if isinstance(x, list):
        out = []
        for v in x:
            out.extend(flat(v))
        return out
    return [float("-inf") if x == "-inf" else float(x)]


PARITY_ATOL, PARITY_RTOL = 1e-5, 1e-4


def parity(name, cpu, dev, backend):
    """The device's trace against the CPU's: ids, shapes, values within the parity tolerance."""
    a, b = json.loads(cpu.stdout)["steps"], json.loads(dev.stdout)["steps"]
    if [s["id"] for s in a] != [s["id"] for s in b]:
        fail(f"{name}: {backend} steps {[s['id'] for s in b]} differ from the CPU's {[s['id'] for s in a]}")
        return 0
    worst = 0.0
    for sa, sb in zip(a, b):
        if sa["shape"] != sb["shape"]:
            fail(f"{name}: {sa['id']} has shape {sb['shape']} on {backend}, {sa['shape']} on the CPU")
            continue
        x, y = np.array(flat(sa["data"])), np.array(flat(sb["data"]))
        fin = np.isfinite(x)
        if not np.array_equal(fin, np.isfinite(y)) or not np.array_equal(x[~fin], y[~fin]):
            fail(f"{name}: {sa['id']}: non-finite values differ between the CPU and {backend}")
            continue
        d = np.abs(x[fin] - y[fin])
        over = d > PARITY_ATOL + PARITY_RTOL * np.abs(x[fin])
        if over.any():
            i = int(np.argmax(over))
            fail(f"{name}: {sa['id']}: {int(over.sum())} value(s) beyond the parity tolerance, first cpu {x[fin][i]!r} {backend} {y[fin][i]!r}")
        worst = max(worst, float(d.max()) if d.size else 0.0)
    return worst


def run_attn(attn, doc, extra=()):
    r = subprocess.run([attn, "backward", "-", "--format", "json", *extra], input=json.dumps(doc), capture_output=True, text=True)
    return r


def rotate(x, cos, sin, first, interleaved):
    """RoPE on (B, G, L, h): rows first .. first + L − 1 of the (P, R/2) tables, pairs (i, i + R/2) or (2i, 2i + 1)."""
    L, half = x.shape[2], cos.shape[1]
    c, s_ = cos[first:first + L], sin[first:first + L]
    if interleaved:
        a, b = x[..., 0:2 * half:2], x[..., 1:2 * half:2]
        ra, rb = a * c - b * s_, b * c + a * s_
        rot = torch.stack([ra, rb], dim=-1).flatten(-2)
    else:
        a, b = x[..., :half], x[..., half:2 * half]
        rot = torch.cat([a * c - b * s_, b * c + a * s_], dim=-1)
    return torch.cat([rot, x[..., 2 * half:]], dim=-1)


def reference(p, tensors, consts=None):
    """The forward pass in torch float64 from leaf tensors (requires_grad); returns (named
    intermediates, output). tensors: x, source, W_q, W_k, W_v, W_o, b_*, q, k, v as given (x@W layout
    unless p["layout"] == "torch")."""
    t = dict(tensors)
    H, torch_layout = p["H"], p.get("layout") == "torch"
    named = {}

    def proj(inp, w, b):
        y = inp @ (t[w].T if torch_layout else t[w])
        return y + t[b] if b in t else y

    consts = consts or {}
    if "q" in t:
        q, k, v = t["q"], t["k"], t["v"]
    elif "W_qkv" in t:
        x = t["x"]
        qkv = x @ (t["W_qkv"].T if torch_layout else t["W_qkv"])
        if "b_qkv" in t:
            qkv = qkv + t["b_qkv"]
        named["qkv"] = qkv
        dk, dkv = p["dk"], p["dk"] // H * p.get("kv_heads", H)
        q, k, v = qkv[..., :dk], qkv[..., dk:dk + dkv], qkv[..., dk + dkv:]
    else:
        x = t["x"]
        if p.get("positions"):
            T, C = x.shape[-2], x.shape[-1]
            pos = torch.arange(T, dtype=torch.float64)[:, None]
            pe = torch.zeros(T, C, dtype=torch.float64)
            pe[:, 0::2] = torch.sin(pos / 10000 ** (torch.arange(0, C, 2, dtype=torch.float64) / C))
            pe[:, 1::2] = torch.cos(pos / 10000 ** (torch.arange(0, C - 1, 2, dtype=torch.float64) / C))
            x = x + pe
            named["x.pos"] = x
        src = t["source"] if "source" in t else x
        q, k, v = proj(x, "W_q", "b_q"), proj(src, "W_k", "b_k"), proj(src, "W_v", "b_v")
    named.update(q=q, k=k, v=v)
    G = p.get("kv_heads", H)
    B, T, dk = q.shape
    S = k.shape[1]
    hs = dk // H
    dv = v.shape[2] // G * H
    qh = q.view(B, T, H, hs).transpose(1, 2)
    kh, vh = (z.view(B, S, G, z.shape[2] // G).transpose(1, 2) for z in (k, v))
    if H > 1:
        named.update({"q.heads": qh, "k.heads": kh, "v.heads": vh})
    if "rope" in p:
        inter = p["rope"].get("style") == "interleaved"
        qh = rotate(qh, consts["rope.cos"], consts["rope.sin"], 0, inter)
        kh = rotate(kh, consts["rope.cos"], consts["rope.sin"], 0, inter)
        named.update({"q.rope": qh, "k.rope": kh})
    if G != H:
        kh, vh = kh.repeat_interleave(H // G, dim=1), vh.repeat_interleave(H // G, dim=1)
        named.update({"k.repeat": kh, "v.repeat": vh})
    scores = qh @ kh.transpose(-2, -1)
    named["scores"] = scores
    scaled = scores / math.sqrt(hs)
    named["scaled"] = scaled
    logits = scaled
    if p.get("alibi"):
        logits = logits + consts["alibi"]
        named["biased"] = logits
    if "softcap" in p:
        logits = p["softcap"] * torch.tanh(logits / p["softcap"])
        named["capped"] = logits
    keep = torch.ones(B, T, S, dtype=torch.bool)
    blocking = False
    if p["mode"] == "causal":
        keep &= torch.ones(T, S, dtype=torch.bool).tril()
        blocking = True
        if p.get("window"):
            keep &= ~torch.ones(T, S, dtype=torch.bool).tril(-p["window"])
    if p.get("lengths"):
        for b, n in enumerate(p["lengths"]):
            keep[b, :, n:] = False
        blocking = True
    if "keep" in p:
        keep &= torch.tensor(p["keep"], dtype=torch.bool)
        blocking = True
    masking = blocking or "add" in p
    if "add" in p:  # [T, S], "-inf" as attn reads it
        logits = logits + torch.tensor([[float(v) for v in row] for row in p["add"]], dtype=torch.float64)
    if blocking:
        logits = logits.masked_fill(~keep[:, None], p.get("mask_fill", float("-inf")))
    if masking:
        named["masked"] = logits
    weights = torch.softmax(logits, dim=-1)
    named["weights"] = weights
    context = weights @ vh
    named["context"] = context
    merged = context.transpose(1, 2).reshape(B, T, dv)
    if H > 1:
        named["merged"] = merged
    out = merged
    if "W_o" in t:
        out = proj(merged, "W_o", "b_o")
        named["output"] = out
    for z in named.values():
        if z.requires_grad:
            z.retain_grad()
    return named, out


def problem(rng, p):
    """An input JSON and the float64 leaves for problem spec p."""
    B, T, S, C, Cs, dk, dv, Co, H = (p[k] for k in ("B", "T", "S", "C", "Cs", "dk", "dv", "Co", "H"))
    Cs = Cs if p["mode"] == "cross" else C  # (the keys' and values' input is x outside cross mode)
    torch_layout = p.get("layout") == "torch"
    r = lambda *shape: rng.standard_normal(shape).round(3)  # noqa: E731  (3 decimals: exact in the JSON)
    # "init": "scaled" draws each weight matrix ~ N(0, 1/fan_in), as a model is initialised: at larger
    # widths unscaled weights give scores of tens, a softmax that amplifies float32's rounding (the
    # same number of draws either way)
    fan = lambda n, *shape: (rng.standard_normal(shape) / math.sqrt(n)).round(3) if p.get("init") == "scaled" else r(*shape)  # noqa: E731
    leaves = {}
    doc = {"mode": p["mode"], "heads": H}
    batched = p.get("batched", B > 1)
    shaped = lambda a: a if batched else a[0]  # noqa: E731
    if p.get("given_qkv"):
        for n, (L, w) in {"q": (T, dk), "k": (S, dk), "v": (S, dv)}.items():
            leaves[n] = r(B, L, w)
            doc[n] = shaped(leaves[n]).tolist()
    else:
        leaves["x"] = r(B, T, C)
        doc["embeddings"] = shaped(leaves["x"]).tolist()
        if p["mode"] == "cross":
            leaves["source"] = r(B, S, Cs)
            doc["source"] = {"embeddings": shaped(leaves["source"]).tolist()}
        w = {}
        G = p.get("kv_heads", H)
        dkv, dvkv = dk // H * G, dv // H * G
        if p.get("fused"):
            leaves["W_qkv"] = fan(C, dk + dkv + dvkv, C) if torch_layout else fan(C, C, dk + dkv + dvkv)
            w["W_qkv"] = leaves["W_qkv"].tolist()
            if p.get("bias"):
                leaves["b_qkv"] = r(dk + dkv + dvkv)
                w["b_qkv"] = leaves["b_qkv"].tolist()
        for n, (i, o) in ({} if p.get("fused") else {"W_q": (C, dk), "W_k": (Cs, dkv), "W_v": (Cs, dvkv)}).items():
            leaves[n] = fan(i, o, i) if torch_layout else fan(i, i, o)
            w[n] = leaves[n].tolist()
        if p.get("W_o", True):
            leaves["W_o"] = fan(dv, Co, dv) if torch_layout else fan(dv, dv, Co)
            w["W_o"] = leaves["W_o"].tolist()
        if p.get("bias"):
            for n, d in {"b_q": dk, "b_k": dkv, "b_v": dvkv, "b_o": Co}.items():
                if (n == "b_o" and "W_o" not in leaves) or (n != "b_o" and p.get("fused")):
                    continue
                leaves[n] = r(d)
                w[n] = leaves[n].tolist()
        doc["weights"] = w
        if torch_layout:
            doc["layout"] = "torch"
        if p.get("positions"):
            doc["positions"] = "sinusoidal"
    if p.get("lengths"):
        doc["padding"] = {"lengths": p["lengths"]}
    if "keep" in p:
        doc["attn_mask"] = {"keep": p["keep"]}
    if "add" in p:
        doc["attn_mask"] = {"add": p["add"]}
    if p.get("window"):
        doc["window"] = p["window"]
    if "mask_fill" in p:
        doc["mask_fill"] = p["mask_fill"]
    for key in ("rope", "kv_heads", "alibi", "softcap"):
        if key in p:
            doc[key] = p[key]
    return doc, {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in leaves.items()}, batched


PARAM = {"W_q", "W_k", "W_v", "W_o", "b_q", "b_k", "b_v", "b_o", "W_qkv", "b_qkv"}


def check(attn, name, p, upstream, rng, backend=None):
    doc, leaves, batched = problem(rng, p)
    width = p["Co"] if p.get("W_o", True) and not p.get("given_qkv") else p["dv"]
    out_shape = ([p["B"]] if batched else []) + [p["T"], width]
    if upstream == "given":
        g = rng.standard_normal(out_shape).round(3)
        doc["backward"] = {"grad_output": g.tolist()}
    elif upstream == "target":
        tg = rng.standard_normal(out_shape).round(3)
        doc["backward"] = {"target": tg.tolist()}
    elif upstream == "seed":
        doc["backward"] = {"seed": 7}
    r = run_attn(attn, doc)
    if r.returncode != 0:
        fail(f"{name} ({upstream}): exit {r.returncode}: {r.stderr.strip()}")
        return
    if backend:  # the device's trace must be the CPU's; it is then the one checked against autograd
        dev = run_attn(attn, doc, ("--backend", backend))
        if dev.returncode != 0:
            fail(f"{name} ({upstream}) on {backend}: exit {dev.returncode}: {dev.stderr.strip()}")
            return
        WORST[0] = max(WORST[0], parity(f"{name} ({upstream})", r, dev, backend))
        r = dev
    trace = json.loads(r.stdout)
    steps = {s["id"]: np.array(flat(s["data"]), dtype=np.float64).reshape(s["shape"]) for s in trace["steps"]}
    # the RoPE tables and the ALiBi bias are constants of the forward pass (checked by the forward tests): taken from the trace
    consts = {k: torch.tensor(steps[k], dtype=torch.float64) for k in ("rope.cos", "rope.sin", "alibi") if k in steps}
    named, out = reference(p, leaves, consts)
    loss_ref = None
    if upstream == "given":
        out.backward(torch.tensor(g, dtype=torch.float64).reshape(out.shape))
    elif upstream == "target":
        loss_ref = ((out - torch.tensor(tg, dtype=torch.float64).reshape(out.shape)) ** 2).mean()
        loss_ref.backward()
    elif upstream == "seed":
        # attn's own draw: read it back and differentiate along it
        out.backward(torch.tensor(steps["grad.output"], dtype=torch.float64).reshape(out.shape))
    else:
        out.sum().backward()
    want = {}
    for k, z in named.items():
        if z.grad is not None:
            want["grad." + k] = z.grad
    for k, z in leaves.items():
        if z.grad is not None:
            want["grad." + ("x" if k == "x" else k)] = z.grad
    if "x.pos" in named:  # attn names x's gradient grad.x (positions are constants); x.pos's equals it
        want.pop("grad.x.pos", None)
    if upstream == "target":
        want["loss"] = loss_ref.detach().reshape(1)
    # the softmax-input step is named after what the softmax read; the mask's backward and the
    # scale's follow; autograd's scaled/scores gradients are those
    shown = {k for k in steps if k.startswith("grad.") or k == "loss"}
    for k in sorted(shown):
        if k == "grad.output":
            continue  # the upstream gradient itself (checked through everything downstream)
        if k not in want:
            fail(f"{name} ({upstream}): attn shows {k}, which autograd has no gradient for")
            continue
        ref = want[k].detach().numpy()
        got = steps[k]
        if ref.shape != got.shape and ref.size == got.size and [d for d in ref.shape if d != 1] == [d for d in got.shape if d != 1]:
            ref = ref.reshape(got.shape)  # (no batch axis in the input, one head, one kv head: axes of 1 the display drops)
        if ref.shape != got.shape:
            fail(f"{name} ({upstream}): {k} has shape {list(got.shape)}, autograd {list(ref.shape)}")
            continue
        err = float(np.abs(got - ref).max())
        scale = max(1.0, float(np.abs(ref).max()))
        if err > TOL * scale:
            fail(f"{name} ({upstream}): {k} differs by {err:.2e} (scale {scale:.2f})")
    # every gradient of a given tensor or parameter is shown
    for k in want:
        base = k[len("grad."):]
        if (base in PARAM or base in ("x", "source", "q", "k", "v")) and k not in shown:
            fail(f"{name} ({upstream}): autograd has {k}, attn does not show it")
    return len(shown)


def gradcheck_reference():
    """Finite differences against autograd on tiny problems: the reference's gradients are right."""
    rng = np.random.default_rng(3)
    for p in (dict(mode="causal", B=1, T=3, S=3, C=4, Cs=4, dk=4, dv=4, Co=4, H=2, bias=True),
              dict(mode="cross", B=2, T=2, S=3, C=3, Cs=5, dk=4, dv=2, Co=3, H=2, layout="torch", lengths=[3, 2])):
        _, leaves, _ = problem(rng, p)
        names = list(leaves)

        def f(*xs):
            return reference(p, dict(zip(names, xs)))[1].pow(2).sum()
        if not torch.autograd.gradcheck(f, tuple(leaves[n] for n in names), eps=1e-6, atol=1e-6):
            fail(f"gradcheck: the reference's gradients disagree with finite differences ({p['mode']})")
    print("reference: autograd agrees with finite differences (torch.autograd.gradcheck) on two tiny problems")


def refusals(attn, rng):
    p = dict(mode="self", B=1, T=3, S=3, C=4, Cs=4, dk=4, dv=4, Co=4, H=1)
    cases = [
        ({"grad_output": [[1.0, 2.0]]}, "backward.grad_output: expected"),
        ({"seed": 1, "target": [[0.0]]}, "backward: give exactly one of"),
        ({"target": [[0.0, 0.0, 0.0, "nan"]] * 3}, "backward.target"),
    ]
    for block, want in cases:
        doc, _, _ = problem(rng, p)
        doc["backward"] = block
        r = run_attn(attn, doc)
        if r.returncode != 2 or want not in r.stderr:
            fail(f"refusal {block}: exit {r.returncode}, stderr {r.stderr.strip()!r}; wanted exit 2 with {want!r}")
    ckpt = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples", "checkpoints", "tiny-gpt2")
    r = run_attn(attn, {"checkpoint": {"path": ckpt, "layer": 1}, "sentence": "The cat sat"})
    if r.returncode != 2 or "a checkpoint's layer is not covered yet" not in r.stderr:
        fail(f"refusal of a checkpoint: exit {r.returncode}, stderr {r.stderr.strip()!r}")
    print(f"refusals: {len(cases) + 1} inputs refused with exit 2 and the path")


def check_command(attn, rng):
    """attn check on printed gradients: the autograd values to 4 decimals pass, one digit off fails."""
    p = dict(mode="causal", B=1, T=3, S=3, C=4, Cs=4, dk=4, dv=4, Co=4, H=2, bias=True)
    doc, leaves, _ = problem(rng, p)
    named, out = reference(p, leaves)
    out.sum().backward()
    printed = {"grad.scores": named["scores"].grad[0].numpy().round(4).tolist(), "grad.W_q": leaves["W_q"].grad.numpy().round(4).tolist()}
    doc["expect"] = printed
    r = subprocess.run([attn, "check", "-"], input=json.dumps(doc), capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"attn check on autograd's gradients: exit {r.returncode}: {r.stdout[-800:]} {r.stderr}")
    printed["grad.W_q"][1][2] = round(printed["grad.W_q"][1][2] + 0.001, 4)
    r = subprocess.run([attn, "check", "-"], input=json.dumps(doc), capture_output=True, text=True)
    if r.returncode != 1 or "grad.W_q" not in r.stdout:
        fail(f"attn check with one printed gradient off by 0.001: exit {r.returncode} (wanted 1): {r.stdout[-800:]}")
    print("attn check: printed gradients (grad.scores, grad.W_q) from autograd pass; one off by 0.001 is flagged")


def flash_tiles(attn, problems, rng):
    """attn backward --flash BQxBK on every problem and several tile shapes: FlashAttention-2's tiled
    backward must give the materialised dQ, dK, dV (attn exits 1 above 1e-5 relative)."""
    runs = 0
    for name, p in problems.items():
        doc, _, _ = problem(rng, p)
        doc["backward"] = {"seed": 3}
        for tiles in ("1x1", "2x3", "3x2", f"{p['T']}x{p['S']}"):
            r = subprocess.run([attn, "backward", "-", "--flash", tiles, "--steps", "grad.output"], input=json.dumps(doc),
                               capture_output=True, text=True)
            line = next((x for x in r.stdout.splitlines() if x.startswith("largest |tiled")), "")
            if r.returncode != 0 or "the tiled backward gives the materialised gradients" not in r.stdout.replace("\n  ", " "):
                fail(f"--flash {tiles} on {name}: exit {r.returncode}: {line} {r.stderr.strip()}")
            runs += 1
    print(f"--flash: FlashAttention-2's tiled backward equals the materialised gradients on {runs} runs ({len(problems)} problems × 4 tile shapes)")


def steps_py(attn, problems, rng):
    """attn backward --dump, then its steps.py (every step's PyTorch code, run in float32 from the dumped
    inputs): each step, backward ones included, must come out as attn's values."""
    ups = ({"grad_output": None}, {"target": None}, {"seed": 5}, None)
    runs = 0
    with tempfile.TemporaryDirectory() as tmp:
        for n, (name, p) in enumerate(problems.items()):
            doc, _, batched = problem(rng, p)
            up = ups[n % 4]
            if up is not None:
                width = p["Co"] if p.get("W_o", True) and not p.get("given_qkv") else p["dv"]
                shape = ([p["B"]] if batched else []) + [p["T"], width]
                doc["backward"] = {k: (v if v is not None else rng.standard_normal(shape).round(3).tolist()) for k, v in up.items()}
            d = os.path.join(tmp, f"p{n}")
            r = subprocess.run([attn, "backward", "-", "--dump", d], input=json.dumps(doc), capture_output=True, text=True)
            if r.returncode != 0:
                fail(f"steps.py of {name}: attn backward --dump: exit {r.returncode}: {r.stderr.strip()}")
                continue
            r = subprocess.run([sys.executable, os.path.join(d, "steps.py")], capture_output=True, text=True)
            lines = [x for x in r.stdout.splitlines() if "largest difference" in x]
            if r.returncode != 0 or not any(x.startswith("grad.") for x in lines):
                fail(f"steps.py of {name}: exit {r.returncode}: {r.stderr.strip()[-600:]}")
                continue
            for x in lines:
                step, diff = x.split()[0], float(x.split("largest difference ")[1].split(",")[0])
                scale = max(1.0, float(np.abs(np.load(os.path.join(d, step + ".npy"))).max()))
                if diff > 1e-4 * scale or ", non-finite" in x:
                    fail(f"steps.py of {name}: {x.strip()}")
            runs += 1
    print(f"steps.py: every step's PyTorch code, backward steps included, gives attn's values on {runs} dumps")


WORST = [0.0]  # the largest |cpu − device| seen (--backend)


def device_usable(attn, backend):
    """None when attn backward runs on the backend, else why not (no CUDA build, no device)."""
    doc = {"mode": "self", "q": [[1.0, 0.0]], "k": [[1.0, 0.0]], "v": [[2.0]]}
    r = run_attn(attn, doc, ("--backend", backend))
    return None if r.returncode == 0 else (r.stderr.strip() or f"exit {r.returncode}")


def main():
    args = sys.argv[1:]
    backend = None
    if len(args) == 3 and args[1] == "--backend":
        backend = args[2]
        args = args[:1]
    if len(args) != 1:
        print(__doc__)
        return 2
    attn = args[0]
    if backend:
        why = device_usable(attn, backend)
        if why:
            print(f"SKIPPED: attn backward --backend {backend} does not run here: {why}")
            return 77
    gradcheck_reference()
    rng = np.random.default_rng(2026)
    base = dict(B=1, T=3, S=3, C=4, Cs=4, dk=4, dv=4, Co=4, H=1)
    problems = {
        "self": dict(base, mode="self", bias=True),
        "self, no W_o": dict(base, mode="self", W_o=False),
        "causal, torch layout": dict(base, mode="causal", layout="torch", bias=True),
        "multi-head H = 2, general widths": dict(base, mode="multi-head", H=2, C=5, dk=6, dv=4, Co=3, bias=True),
        "multi-head H = 3, no W_o": dict(base, mode="multi-head", H=3, T=4, S=4, C=6, dk=6, dv=9, W_o=False),
        "causal H = 2, batch with padding": dict(base, mode="causal", H=2, B=3, T=4, S=4, lengths=[4, 2, 3], bias=True),
        "cross Cs ≠ C, S ≠ T": dict(base, mode="cross", H=2, T=3, S=5, C=4, Cs=6, dk=4, dv=6, Co=5, bias=True),
        "cross, batch, torch layout, padding": dict(base, mode="cross", H=1, B=2, T=2, S=4, Cs=3, layout="torch", lengths=[4, 1]),
        "self, keep mask": dict(base, mode="self", T=4, S=4, keep=[[1, 0, 1, 1], [1, 1, 0, 0], [0, 1, 1, 1], [1, 1, 1, 0]]),
        "self, additive mask": dict(base, mode="self", H=2, T=3, S=3, add=[[0.0, -1.5, 0.5], [0.25, 0.0, "-inf"], [-2.0, 1.0, 0.0]]),
        "causal, window 2": dict(base, mode="causal", T=5, S=5, window=2, H=2),
        "causal, mask_fill -1e9": dict(base, mode="causal", T=4, S=4, mask_fill=-1e9),
        "self, sinusoidal positions": dict(base, mode="self", T=4, S=4, positions=True, bias=True),
        "q, k, v given, H = 2": dict(base, mode="causal", H=2, T=3, S=3, dk=4, dv=6, given_qkv=True),
        "q, k, v given, S ≠ T": dict(base, mode="self", T=2, S=4, dk=3, dv=5, given_qkv=True),
        "fused W_qkv with b_qkv, H = 2": dict(base, mode="causal", H=2, T=4, S=4, fused=True, bias=True),
        "fused W_qkv, torch layout, general widths": dict(base, mode="self", H=2, C=5, dk=4, dv=6, Co=3, fused=True, layout="torch"),
        "RoPE (half), H = 2": dict(base, mode="causal", H=2, T=4, S=4, dk=8, dv=8, C=8, Co=8, rope={}),
        "RoPE (interleaved, R = 2 of hs = 4)": dict(base, mode="self", H=2, T=3, S=3, dk=8, dv=4, C=6, rope={"style": "interleaved", "dims": 2}),
        "kv_heads 2 of H = 4": dict(base, mode="causal", H=4, kv_heads=2, T=4, S=4, dk=8, dv=8, C=8, Co=8, bias=True),
        "kv_heads 1 of H = 3, RoPE, window, fused": dict(base, mode="causal", H=3, kv_heads=1, T=5, S=5, dk=6, dv=6, C=6, Co=6, rope={},
                                                        window=3, fused=True),
        "ALiBi, H = 2, causal": dict(base, mode="causal", H=2, T=4, S=4, alibi=True),
        "soft-cap 0.5": dict(base, mode="self", T=3, S=3, softcap=0.5, bias=True),
        "ALiBi, soft-cap, padding, batch": dict(base, mode="causal", H=2, B=2, T=4, S=4, alibi=True, softcap=1.5, lengths=[4, 3]),
    }
    if backend:
        problems["causal B = 2, T = S = 40, H = 4 on 2 kv heads, RoPE, padding"] = dict(
            base, mode="causal", B=2, T=40, S=40, C=16, Cs=16, dk=16, dv=16, Co=16, H=4, kv_heads=2, rope={}, lengths=[40, 27], bias=True,
            init="scaled")
        problems["self, T = S = 300, H = 2, soft-cap, ALiBi"] = dict(
            base, mode="self", T=300, S=300, C=8, Cs=8, dk=8, dv=8, Co=8, H=2, alibi=True, softcap=2.0, init="scaled")
    count = 0
    for upstream in ("given", "target", "seed", "sum"):
        for name, p in problems.items():
            count += check(attn, name, p, upstream, rng, backend) or 0
    if backend:
        if failures:
            print(f"{len(failures)} failure(s)")
            return 1
        print(f"attn backward --backend {backend}: {count} gradient steps of {len(problems)} problems × 4 upstream gradients give the CPU's "
              f"trace (largest |cpu − {backend}| {WORST[0]:.2e}, within {PARITY_ATOL:g} + {PARITY_RTOL:g}·|cpu|) and agree with float64 "
              f"autograd within {TOL} relative")
        return 0
    refusals(attn, rng)
    check_command(attn, rng)
    flash_tiles(attn, problems, rng)
    steps_py(attn, problems, rng)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print(f"attn backward: {count} gradient steps of {len(problems)} problems × 4 upstream gradients agree with float64 autograd "
          f"within {TOL} relative")
    return 0


if __name__ == "__main__":
    sys.exit(main())
