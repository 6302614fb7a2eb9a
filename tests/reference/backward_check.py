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
a sliding window, mask_fill −1e9, sinusoidal positions, q/k/v given; the upstream gradient as given,
from a target (the loss step too), from a seed (attn's own draw, read back) and by default sum(output).

The reference itself is checked: torch.autograd.gradcheck (finite differences) on tiny problems of
the same forward function. And refusals: a grad_output of the wrong shape, both seed and target, NaN
in the target, a variant not covered (rope) must exit 2 naming the path.

Usage: backward_check.py PATH_TO_ATTN
Exit 0: all agree. 1: a difference. 77: skipped (torch not importable).
"""
import json
import math
import subprocess
import sys

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


def run_attn(attn, doc, extra=()):
    r = subprocess.run([attn, "backward", "-", "--format", "json", *extra], input=json.dumps(doc), capture_output=True, text=True)
    return r


def reference(p, tensors):
    """The forward pass in torch float64 from leaf tensors (requires_grad); returns (named
    intermediates, output). tensors: x, source, W_q, W_k, W_v, W_o, b_*, q, k, v as given (x@W layout
    unless p["layout"] == "torch")."""
    t = dict(tensors)
    H, torch_layout = p["H"], p.get("layout") == "torch"
    named = {}

    def proj(inp, w, b):
        y = inp @ (t[w].T if torch_layout else t[w])
        return y + t[b] if b in t else y

    if "q" in t:
        q, k, v = t["q"], t["k"], t["v"]
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
    B, T, dk = q.shape
    S, dv = k.shape[1], v.shape[2]
    hs, hv = dk // H, dv // H
    qh, kh, vh = (z.view(B, z.shape[1], H, z.shape[2] // H).transpose(1, 2) for z in (q, k, v))
    if H > 1:
        named.update({"q.heads": qh, "k.heads": kh, "v.heads": vh})
    scores = qh @ kh.transpose(-2, -1)
    named["scores"] = scores
    scaled = scores / math.sqrt(hs)
    named["scaled"] = scaled
    logits = scaled
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
        for n, (i, o) in {"W_q": (C, dk), "W_k": (Cs, dk), "W_v": (Cs, dv)}.items():
            leaves[n] = r(o, i) if torch_layout else r(i, o)
            w[n] = leaves[n].tolist()
        if p.get("W_o", True):
            leaves["W_o"] = r(Co, dv) if torch_layout else r(dv, Co)
            w["W_o"] = leaves["W_o"].tolist()
        if p.get("bias"):
            for n, d in {"b_q": dk, "b_k": dk, "b_v": dv, "b_o": Co}.items():
                if n == "b_o" and "W_o" not in leaves:
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
    return doc, {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in leaves.items()}, batched


PARAM = {"W_q", "W_k", "W_v", "W_o", "b_q", "b_k", "b_v", "b_o"}


def check(attn, name, p, upstream, rng):
    doc, leaves, batched = problem(rng, p)
    named, out = reference(p, leaves)
    out_shape = list(out.shape) if batched else list(out.shape[1:])
    loss_ref = None
    if upstream == "given":
        g = rng.standard_normal(out_shape).round(3)
        doc["backward"] = {"grad_output": g.tolist()}
        gt = torch.tensor(g, dtype=torch.float64).reshape(out.shape)
        out.backward(gt)
    elif upstream == "target":
        tg = rng.standard_normal(out_shape).round(3)
        doc["backward"] = {"target": tg.tolist()}
        loss_ref = ((out - torch.tensor(tg, dtype=torch.float64).reshape(out.shape)) ** 2).mean()
        loss_ref.backward()
    elif upstream == "seed":
        doc["backward"] = {"seed": 7}
    else:
        out.sum().backward()
    r = run_attn(attn, doc)
    if r.returncode != 0:
        fail(f"{name} ({upstream}): exit {r.returncode}: {r.stderr.strip()}")
        return
    trace = json.loads(r.stdout)
    steps = {s["id"]: np.array(flat(s["data"]), dtype=np.float64).reshape(s["shape"]) for s in trace["steps"]}
    if upstream == "seed":
        # attn's own draw: read it back and differentiate along it
        g = torch.tensor(steps["grad.output"], dtype=torch.float64).reshape(out.shape)
        out.backward(g)
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
        if not batched and k not in ("loss",) and not k.startswith("grad.W") and not k.startswith("grad.b"):
            ref = ref.reshape(ref.shape[1:]) if ref.shape[0] == 1 else ref
        if p["H"] == 1 and ref.ndim == got.ndim + 1:
            ref = ref.reshape(got.shape)  # (a head axis of 1 the display drops)
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
    doc, _, _ = problem(rng, p)
    doc["rope"] = {}
    r = run_attn(attn, doc)
    if r.returncode != 2 or "rope is not covered yet" not in r.stderr:
        fail(f"refusal rope: exit {r.returncode}, stderr {r.stderr.strip()!r}")
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


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    attn = sys.argv[1]
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
    }
    count = 0
    for upstream in ("given", "target", "seed", "sum"):
        for name, p in problems.items():
            count += check(attn, name, p, upstream, rng) or 0
    refusals(attn, rng)
    check_command(attn, rng)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print(f"attn backward: {count} gradient steps of {len(problems)} problems × 4 upstream gradients agree with float64 autograd "
          f"within {TOL} relative")
    return 0


if __name__ == "__main__":
    sys.exit(main())
