#!/usr/bin/env python3
"""Independent reference check of attn's general projection widths against PyTorch.

Legend: C model width (the queries' input), Cs source width (cross; = C otherwise), dk = H·hs
query/key width, dv = H·hv value width, Co output width, B batch, T queries, S keys, H heads.

Builds ~150 seeded random problems over every shape combination: modes self / causal / cross /
multi-head; dk ≠ C, dv ≠ dk, Co ≠ dv, Cs ≠ C; H ∈ {1, 2, 3, 4}; no batch dimension, B = 1, B = 3;
T and S of odd sizes including 1; layouts x@W (written or left as the default) and torch; separate,
per-head and fused weights, "identity", q/k/v given directly; with and without biases, W_o and
padding. Each problem goes to `ATTN run - --format json` on stdin, and EVERY step of the trace is
compared with:

  1. reference_torch: the formulas written out in torch (float64), step by step;
  2. reference_mha:   torch.nn.MultiheadAttention (float64), for the problems it can express
                      (dk = dv = Co = C, with W_o; kdim = vdim = Cs): its output against attn's
                      `output`, its per-head weights (average_attn_weights=False) against `weights`.

A step that is missing, extra, out of the documented order or of the wrong shape fails, as does any
value more than 1e-5 away. A few negative inputs must be refused with exit code 2 and a message
naming the JSON path.

Usage: torch_general.py ATTN_BINARY      the check (exit 0 pass, 1 fail, 77 skipped)
       torch_general.py --self-test      no binary: the references checked against each other
                                         (hand-written torch vs nn.MultiheadAttention vs NumPy loops)
       add --keep DIR to write each failing problem's JSON input there.
"""
import json
import math
import os
import subprocess
import sys
import time

try:
    import numpy as np
    import torch
except ImportError as e:  # ctest reports 77 as "skipped"
    print(f"SKIPPED: NumPy or PyTorch is not importable here ({e}); install python3-numpy and "
          f"python3-torch (scripts/setup.sh --tests)")
    sys.exit(77)

if hasattr(sys.stdout, "reconfigure"):
    sys.stdout.reconfigure(encoding="utf-8", errors="replace")

TOL = 1e-5          # |attn (float32) − reference (float64)|, absolute
SEED = 20261123
torch.set_num_threads(1)

# The trace's steps in their documented order, and each one's full axes (before dropping B when the
# input has no batch dimension and H when H = 1).
STEP_AXES = {
    "x":       "B T C",
    "source":  "B S Cs",
    "qkv":     "B T Dqkv",     # Dqkv = 2·dk + dv
    "q":       "B T dk",
    "k":       "B S dk",
    "v":       "B S dv",
    "q.view":  "B T H hs",
    "q.heads": "B H T hs",
    "k.view":  "B S H hs",
    "k.heads": "B H S hs",
    "v.view":  "B S H hv",
    "v.heads": "B H S hv",
    "k.T":     "B H hs S",
    "scores":  "B H T S",
    "scaled":  "B H T S",
    "mask":    "B T S",        # "T S" when there is no padding (causal alone)
    "masked":  "B H T S",
    "weights": "B H T S",
    "context": "B H T hv",
    "merged":  "B T dv",
    "output":  "B T Co",
}
STEP_ORDER = list(STEP_AXES)


class SpecError(Exception):
    """An input the spec says must be refused; path is the JSON path attn's message must name."""

    def __init__(self, path, why):
        super().__init__(f"{path}: {why}")
        self.path = path


class Problem:
    """One input, read back the way the README specifies: canonical x@W matrices ([in, out]),
    activations always batched [B, L, width] (B = 1 when the input had no batch dimension)."""

    def describe(self):
        return (f"mode={self.mode} form={self.form} layout={self.layout} B={self.B if self.batched else '-'} "
                f"H={self.H} T={self.T} S={self.S} C={self.C} Cs={self.Cs} dk={self.dk} dv={self.dv} "
                f"Co={self.Co} bias={self.bias_names} pad={self.lengths}")


# ---------------------------------------------------------------------------------------------
# Problem generation: canonical float32-exact tensors, then the JSON input that encodes them
# ---------------------------------------------------------------------------------------------

def f32(a):
    """Values attn reads exactly (it stores float32); kept as float64 for the references."""
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def encode_matrix(w, layout):
    """Canonical [in, out] → the input's 2-D layout (torch: [out, in], as nn.Linear.weight)."""
    return (w.T if layout == "torch" else w).tolist()


def encode_per_head(w, heads, layout):
    """Canonical [in, H·h] → per-head [H, in, h] (torch: [H, h, in]); head i owns columns i·h..(i+1)·h."""
    h = w.shape[1] // heads
    blocks = [w[:, i * h:(i + 1) * h] for i in range(heads)]          # H × [in, h]
    return [(b.T if layout == "torch" else b).tolist() for b in blocks]


def pick_sizes(rng, mode, H, square, fused):
    """T, S, C, Cs, hs, hv, Co. square: dk = dv = Co = C (what nn.MultiheadAttention can express)."""
    T = int(rng.choice([1, 2, 3, 5, 7]))
    S = int(rng.choice([1, 2, 3, 4, 5, 6])) if mode == "cross" else T
    if mode == "cross" and S == T and T > 1:
        S = 1 if rng.random() < 0.3 else T + 1                        # S ≠ T, now and then S = 1
    hs = int(rng.integers(1, 4))
    if square:
        hv = hs
        C = Co = H * hs
    else:
        hv = hs if rng.random() < 0.2 else int(rng.choice([d for d in (1, 2, 3, 4) if d != hs]))
        C = int(rng.choice([c for c in range(1, 8) if c != H * hs]))            # C ≠ dk
        Co = int(rng.choice([c for c in range(1, 8) if c != H * hv]))           # Co ≠ dv
    Cs = C
    if mode == "cross" and not fused:                                           # fused cross needs Cs = C
        Cs = int(rng.choice([c for c in range(1, 8) if c != C]))                # Cs ≠ C
    return T, S, C, Cs, hs, hv, Co


def make_problem(rng, idx, mode, form, layout, batch):
    """A random problem: (spec for attn, truth = the canonical tensors it was built from)."""
    heads_default = False
    if mode == "multi-head":
        H = int(rng.choice([2, 3, 4]))
        heads_default = (H == 2 and idx % 2 == 0)                     # leave "heads" out: default 2
    else:
        H = int(rng.choice([1, 2, 3, 4]))
    fused = form == "fused"
    with_wo = rng.random() < 0.7
    square = with_wo and rng.random() < 0.35
    T, S, C, Cs, hs, hv, Co = pick_sizes(rng, mode, H, square, fused)
    dk, dv = H * hs, H * hv
    B = batch or 1
    bias_kind = str(rng.choice(["all", "none", "in", "out", "some"] if with_wo else ["all", "none", "some"]))

    def linear(n_in, n_out):                                          # [n_in, n_out], unit-variance outputs
        return f32(rng.standard_normal((n_in, n_out)) / math.sqrt(n_in))

    def bias(n):
        return f32(0.3 * rng.standard_normal(n))

    t = {"mode": mode, "form": form, "H": H, "batched": batch is not None}
    t["x"] = f32(rng.standard_normal((B, T, C)))                      # [B, T, C]
    t["src"] = f32(rng.standard_normal((B, S, Cs))) if mode == "cross" else t["x"]   # [B, S, Cs]
    t["Wq"], t["Wk"], t["Wv"] = linear(C, dk), linear(Cs, dk), linear(Cs, dv)       # [C, dk] [Cs, dk] [Cs, dv]
    identity = []
    if form == "separate" and square and rng.random() < 0.6:
        t["Wq"] = np.eye(C)                                           # dk = C: "identity" is square
        identity.append("W_q")
        if mode != "cross":
            t["Wv"] = np.eye(C)                                       # dv = Cs = C
            identity.append("W_v")
    t["Wo"] = linear(dv, Co) if with_wo else None                     # [dv, Co]
    in_bias = {"all": "qkv", "in": "qkv", "none": "", "out": "",
               "some": "".join(c for c in "qkv" if rng.random() < 0.5) or "v"}[bias_kind]
    if fused and in_bias:
        in_bias = "qkv"                                               # b_qkv is all or nothing
    t["bq"] = bias(dk) if "q" in in_bias else None
    t["bk"] = bias(dk) if "k" in in_bias else None
    t["bv"] = bias(dv) if "v" in in_bias else None
    t["bo"] = bias(Co) if with_wo and bias_kind in ("all", "out", "some") else None
    t["lengths"] = None
    if batch is not None and rng.random() < 0.5:
        t["lengths"] = [int(rng.integers(1, S + 1)) for _ in range(B)]     # ≥ 1: no fully masked row
        if S > 1 and min(t["lengths"]) == S:
            t["lengths"][int(rng.integers(0, B))] = int(rng.integers(1, S))

    unbatch = (lambda a: a.tolist()) if batch is not None else (lambda a: a[0].tolist())
    spec = {"title": f"torch_general #{idx}", "mode": mode, "embeddings": unbatch(t["x"])}
    if not heads_default:
        spec["heads"] = H
    if layout == "torch" or idx % 3:                                  # else: "x@W" as the default
        spec["layout"] = layout
    if mode == "cross":
        spec["source"] = {"embeddings": unbatch(t["src"])}
    w = {}
    if form == "fused":
        w["W_qkv"] = encode_matrix(np.concatenate([t["Wq"], t["Wk"], t["Wv"]], axis=1), layout)  # [C, 2dk+dv]
        if t["bq"] is not None:
            w["b_qkv"] = np.concatenate([t["bq"], t["bk"], t["bv"]]).tolist()                    # [2dk+dv]
        if not with_wo and dv != dk:
            spec["dv"] = dv                                           # else dv = W_o's input width, or dk
    else:
        enc = (lambda m: encode_per_head(m, H, layout)) if form == "per-head" else (lambda m: encode_matrix(m, layout))
        for name, key in (("W_q", "Wq"), ("W_k", "Wk"), ("W_v", "Wv")):
            w[name] = "identity" if name in identity else enc(t[key])
        for name, key in (("b_q", "bq"), ("b_k", "bk"), ("b_v", "bv")):
            if t[key] is not None:
                w[name] = t[key].tolist()
    if with_wo:
        w["W_o"] = encode_matrix(t["Wo"], layout)
        if t["bo"] is not None:
            w["b_o"] = t["bo"].tolist()
    spec["weights"] = w
    if t["lengths"] is not None:
        spec["padding"] = {"lengths": t["lengths"]}
    return spec, t


def make_given_problem(rng, idx, mode, batch):
    """q, k, v given directly (no projections): dv ≠ dk allowed."""
    H = int(rng.choice([2, 3, 4])) if mode == "multi-head" else int(rng.choice([1, 2, 3, 4]))
    T = int(rng.choice([1, 3, 4, 5]))
    hs = int(rng.integers(1, 4))
    hv = int(rng.choice([d for d in (1, 2, 3, 4) if d != hs]))
    B = batch or 1
    t = {"mode": mode, "form": "given", "H": H, "batched": batch is not None, "lengths": None}
    t["q"] = f32(rng.standard_normal((B, T, H * hs)))                 # [B, T, dk]
    t["k"] = f32(rng.standard_normal((B, T, H * hs)))                 # [B, S, dk], S = T
    t["v"] = f32(rng.standard_normal((B, T, H * hv)))                 # [B, S, dv]
    unbatch = (lambda a: a.tolist()) if batch is not None else (lambda a: a[0].tolist())
    spec = {"title": f"torch_general #{idx} (q, k, v given)", "mode": mode, "heads": H,
            "q": unbatch(t["q"]), "k": unbatch(t["k"]), "v": unbatch(t["v"])}
    if batch is not None and T > 1:
        t["lengths"] = [int(rng.integers(1, T + 1)) for _ in range(B)]
        spec["padding"] = {"lengths": t["lengths"]}
    return spec, t


def make_problems():
    rng = np.random.default_rng(SEED)
    out = []
    modes = ["self", "causal", "cross", "multi-head"]
    for rep in range(2):
        for mode in modes:
            for form in ("separate", "per-head", "fused"):
                for layout in ("x@W", "torch"):
                    for batch in (None, 1, 3):
                        out.append(make_problem(rng, len(out), mode, form, layout, batch))
    for mode, batch in (("self", None), ("causal", 3), ("multi-head", 1), ("self", 3), ("causal", None),
                        ("multi-head", 3)):
        out.append(make_given_problem(rng, len(out), mode, batch))
    return out


# ---------------------------------------------------------------------------------------------
# Reading an input as the README specifies (independent of the generator's encoders)
# ---------------------------------------------------------------------------------------------

def _batched(a, path):
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 2:
        return a[None], False                                         # [L, w] → [1, L, w]
    if a.ndim == 3:
        return a, True
    raise SpecError(path, f"expected [L, width] or [B, L, width], got {list(a.shape)}")


def _weight(spec, name, layout, n_in):
    """weights.<name> as canonical [in, out]; also returns the per-head H it implies (or None)."""
    value = spec["weights"][name]
    path = f"weights.{name}"
    if isinstance(value, str):
        if value != "identity":
            raise SpecError(path, f"unknown string {value!r}")
        return np.eye(n_in), None                                     # square by definition
    a = np.asarray(value, dtype=np.float64)
    if a.ndim == 2:
        w = a.T if layout == "torch" else a                           # [in, out]
        heads = None
    elif a.ndim == 3:
        heads = a.shape[0]
        if layout == "torch":                                         # [H, h, in] → [H·h, in] → [in, H·h]
            w = a.reshape(a.shape[0] * a.shape[1], a.shape[2]).T
        else:                                                         # [H, in, h] → [in, H, h] → [in, H·h]
            w = a.transpose(1, 0, 2).reshape(a.shape[1], a.shape[0] * a.shape[2])
    else:
        raise SpecError(path, f"expected a matrix, got {a.ndim} dimensions")
    if w.shape[0] != n_in:
        raise SpecError(path, f"input width {w.shape[0]}, expected {n_in}")
    return w, heads


def _bias(spec, name, n):
    b = spec.get("weights", {}).get(name)
    if b is None:
        return None
    b = np.asarray(b, dtype=np.float64)
    if b.shape != (n,):
        raise SpecError(f"weights.{name}", f"expected [{n}], got {list(b.shape)}")
    return b


def read_spec(spec):
    """Problem from a JSON input, by the README's rules; SpecError for what must be refused."""
    p = Problem()
    p.mode = spec.get("mode", "self")
    p.cross = p.mode == "cross"
    p.causal = p.mode == "causal"
    p.layout = spec.get("layout", "x@W")
    p.given = "q" in spec
    w = spec.get("weights", {})
    p.fused = "W_qkv" in w
    p.form = "given" if p.given else "fused" if p.fused else (
        "per-head" if not isinstance(w["W_q"], str) and np.ndim(w["W_q"]) == 3 else "separate")
    p.bias_names = ",".join(n for n in ("b_q", "b_k", "b_v", "b_qkv", "b_o") if n in w) or "none"
    if p.given:
        p.q, p.batched = _batched(spec["q"], "q")                     # [B, T, dk]
        p.k, _ = _batched(spec["k"], "k")                             # [B, S, dk]
        p.v, _ = _batched(spec["v"], "v")                             # [B, S, dv]
        p.B, p.T, p.dk = p.q.shape
        p.S, p.dv = p.k.shape[1], p.v.shape[2]
        p.C = p.Cs = p.Co = None
        p.Wo = None
        p.H = spec.get("heads", 2 if p.mode == "multi-head" else 1)
    else:
        p.x, p.batched = _batched(spec["embeddings"], "embeddings")   # [B, T, C]
        p.src = _batched(spec["source"]["embeddings"], "source.embeddings")[0] if p.cross else p.x   # [B, S, Cs]
        p.B, p.T, p.C = p.x.shape
        p.S, p.Cs = p.src.shape[1], p.src.shape[2]
        if p.src.shape[0] != p.B:
            raise SpecError("source.embeddings", "batch size differs from the embeddings'")
        per_head = set()
        wo_in = None
        if "W_o" in w and not isinstance(w["W_o"], str):              # W_o's input width fixes dv for a fused weight
            a = np.asarray(w["W_o"])
            wo_in = a.shape[1] if p.layout == "torch" else a.shape[0]
        if p.fused:
            Wqkv, _ = _weight(spec, "W_qkv", p.layout, p.C)           # [C, 2dk + dv]
            width = Wqkv.shape[1]
            dv = wo_in if wo_in is not None else spec.get("dv", width // 3 if width % 3 == 0 else None)
            if dv is None or width - dv <= 0 or (width - dv) % 2:
                raise SpecError("weights.W_qkv", f"width {width} is not 2·dk + dv")
            p.dk, p.dv = (width - dv) // 2, dv
            if p.cross and p.Cs != p.C:
                raise SpecError("weights.W_qkv", f"a fused weight needs Cs = C in cross mode ({p.Cs} ≠ {p.C})")
            p.Wq, p.Wk, p.Wv = Wqkv[:, :p.dk], Wqkv[:, p.dk:2 * p.dk], Wqkv[:, 2 * p.dk:]   # q | k | v
            b = _bias(spec, "b_qkv", width)
            p.bq, p.bk, p.bv = (None, None, None) if b is None else (b[:p.dk], b[p.dk:2 * p.dk], b[2 * p.dk:])
        else:
            p.Wq, hq = _weight(spec, "W_q", p.layout, p.C)            # [C, dk]
            p.Wk, hk = _weight(spec, "W_k", p.layout, p.Cs)           # [Cs, dk]
            p.Wv, hv = _weight(spec, "W_v", p.layout, p.Cs)           # [Cs, dv]
            per_head = {h for h in (hq, hk, hv) if h is not None}
            p.dk, p.dv = p.Wq.shape[1], p.Wv.shape[1]
            if p.Wk.shape[1] != p.dk:
                raise SpecError("weights.W_k", f"output width {p.Wk.shape[1]} ≠ W_q's {p.dk}")
            p.bq, p.bk, p.bv = _bias(spec, "b_q", p.dk), _bias(spec, "b_k", p.dk), _bias(spec, "b_v", p.dv)
        p.H = spec.get("heads", per_head.pop() if per_head else 2 if p.mode == "multi-head" else 1)
        p.Wo, p.bo, p.Co = None, None, None
        if "W_o" in w:
            p.Wo, _ = _weight(spec, "W_o", p.layout, p.dv)            # [dv, Co]
            p.Co = p.Wo.shape[1]
            p.bo = _bias(spec, "b_o", p.Co)
    if p.dk % p.H:
        raise SpecError("weights.W_qkv" if p.fused else "weights.W_q", f"dk = {p.dk} not divisible by H = {p.H}")
    if p.dv % p.H:
        raise SpecError("weights.W_qkv" if p.fused else "weights.W_v", f"dv = {p.dv} not divisible by H = {p.H}")
    p.hs, p.hv = p.dk // p.H, p.dv // p.H
    p.scale = 1.0 / math.sqrt(p.hs)                                   # default "sqrt_dk": 1/√hs
    p.lengths = spec.get("padding", {}).get("lengths")
    return p


def expected_steps(p):
    """[(id, shape)] in trace order, from the sizes alone."""
    size = {"B": p.B, "T": p.T, "S": p.S, "C": p.C, "Cs": p.Cs, "H": p.H, "hs": p.hs, "hv": p.hv,
            "dk": p.dk, "dv": p.dv, "Co": p.Co, "Dqkv": 2 * p.dk + p.dv}
    present = {
        "x": not p.given, "source": p.cross, "qkv": p.fused and not p.cross,
        "q": True, "k": True, "v": True,
        "q.view": p.H > 1, "q.heads": p.H > 1, "k.view": p.H > 1, "k.heads": p.H > 1,
        "v.view": p.H > 1, "v.heads": p.H > 1,
        "k.T": True, "scores": True, "scaled": True,
        "mask": p.causal or p.lengths is not None, "masked": p.causal or p.lengths is not None,
        "weights": True, "context": True, "merged": p.H > 1, "output": p.Wo is not None,
    }
    out = []
    for sid in STEP_ORDER:
        if present[sid]:
            out.append((sid, tuple(size[a] for a in step_axes(p, sid))))
    return out


def step_axes(p, sid):
    """The axes a step is shown with: B dropped without a batch dimension, H dropped when H = 1."""
    axes = STEP_AXES[sid].split()
    if sid == "mask" and p.lengths is None:
        axes = ["T", "S"]                                             # causal alone: one [T, S] pattern
    return [a for a in axes if not (a == "B" and not p.batched) and not (a == "H" and p.H == 1)]


def keep_mask(p):
    """[B, T, S] bool, True = may attend: causal (top-left) and padding."""
    keep = torch.ones(p.B, p.T, p.S, dtype=torch.bool)                # [B, T, S]
    if p.causal:
        keep &= torch.tril(torch.ones(p.T, p.S, dtype=torch.bool))   # query i sees keys j ≤ i
    if p.lengths is not None:
        keep &= (torch.arange(p.S)[None, :] < torch.tensor(p.lengths)[:, None])[:, None, :]  # [B, 1, S]
    return keep


# ---------------------------------------------------------------------------------------------
# Reference 1: the formulas, written out in torch (float64)
# ---------------------------------------------------------------------------------------------

def reference_torch(p):
    """Every step, with its full axes (STEP_AXES: B and H always present)."""
    T_ = lambda a: None if a is None else torch.tensor(a, dtype=torch.float64)
    lin = lambda a, W, b: a @ W + (b if b is not None else 0.0)      # y = x·W + b
    B, T, S, H, hs, hv = p.B, p.T, p.S, p.H, p.hs, p.hv
    r = {}
    if p.given:
        q, k, v = T_(p.q), T_(p.k), T_(p.v)                           # [B, T, dk] [B, S, dk] [B, S, dv]
    else:
        x, src = T_(p.x), T_(p.src)                                   # [B, T, C], [B, S, Cs]
        r["x"] = x                                                    # [B, T, C]
        if p.cross:
            r["source"] = src                                         # [B, S, Cs]
        if p.fused and not p.cross:
            Wqkv = torch.cat([T_(p.Wq), T_(p.Wk), T_(p.Wv)], dim=1)  # [C, 2dk + dv]
            bqkv = None if p.bq is None else torch.cat([T_(p.bq), T_(p.bk), T_(p.bv)])  # [2dk + dv]
            r["qkv"] = qkv = lin(x, Wqkv, bqkv)                       # [B, T, 2dk + dv]
            q, k, v = qkv.split([p.dk, p.dk, p.dv], dim=-1)           # [B, T, dk] [B, T, dk] [B, T, dv]
        else:
            q = lin(x, T_(p.Wq), T_(p.bq))                            # [B, T, dk]
            k = lin(src, T_(p.Wk), T_(p.bk))                          # [B, S, dk]
            v = lin(src, T_(p.Wv), T_(p.bv))                          # [B, S, dv]
    r["q"], r["k"], r["v"] = q, k, v
    r["q.view"] = q.view(B, T, H, hs)                                 # [B, T, H, hs]
    r["q.heads"] = qh = r["q.view"].transpose(1, 2)                   # [B, H, T, hs]
    r["k.view"] = k.reshape(B, S, H, hs)                              # [B, S, H, hs]
    r["k.heads"] = kh = r["k.view"].transpose(1, 2)                   # [B, H, S, hs]
    r["v.view"] = v.reshape(B, S, H, hv)                              # [B, S, H, hv]
    r["v.heads"] = vh = r["v.view"].transpose(1, 2)                   # [B, H, S, hv]
    r["k.T"] = kh.transpose(-2, -1)                                   # [B, H, hs, S]
    r["scores"] = qh @ r["k.T"]                                       # [B, H, T, S]
    r["scaled"] = r["scores"] * p.scale                               # [B, H, T, S]
    keep = keep_mask(p)                                               # [B, T, S]
    r["mask"] = (keep if p.lengths is not None else keep[0]).double()  # [B, T, S] or [T, S], 1 = may attend
    r["masked"] = r["scaled"].masked_fill(~keep[:, None], float("-inf"))  # [B, H, T, S]
    r["weights"] = torch.softmax(r["masked"], dim=-1)                 # [B, H, T, S]
    r["context"] = r["weights"] @ vh                                  # [B, H, T, hv]
    r["merged"] = r["context"].transpose(1, 2).reshape(B, T, p.dv)    # [B, T, dv]
    if p.Wo is not None:
        r["output"] = lin(r["merged"], T_(p.Wo), T_(p.bo))            # [B, T, Co]
    return r


def shown(p, sid, full):
    """A full-axes reference tensor in the shape the trace shows it (B / H axes of size 1 dropped)."""
    axes = STEP_AXES[sid].split() if not (sid == "mask" and p.lengths is None) else ["T", "S"]
    dims = [n for a, n in zip(axes, full.shape) if not (a == "B" and not p.batched) and not (a == "H" and p.H == 1)]
    assert full.numel() == math.prod(dims)
    return full.reshape(dims).numpy()


# ---------------------------------------------------------------------------------------------
# Reference 2: torch.nn.MultiheadAttention (float64), where it applies
# ---------------------------------------------------------------------------------------------

def mha_applies(p):
    """nn.MultiheadAttention has q/k/v/out widths all = embed_dim (C) and always an out projection."""
    return (not p.given and p.Wo is not None and p.dk == p.C and p.dv == p.C and p.Co == p.C)


def reference_mha(p, truth=None):
    """(output [B, T, C], per-head weights [B, H, T, S]) from nn.MultiheadAttention. With truth, the
    weights come from the generator's canonical tensors rather than from read_spec."""
    s = truth if truth is not None else {"x": p.x, "src": p.src, "Wq": p.Wq, "Wk": p.Wk, "Wv": p.Wv,
                                         "Wo": p.Wo, "bq": p.bq, "bk": p.bk, "bv": p.bv, "bo": p.bo}
    t = lambda a: torch.tensor(a, dtype=torch.float64)
    has_bias = any(s[b] is not None for b in ("bq", "bk", "bv", "bo"))
    mha = torch.nn.MultiheadAttention(p.C, p.H, bias=has_bias, kdim=p.Cs, vdim=p.Cs, batch_first=True,
                                      dtype=torch.float64).eval()
    zero = lambda b, n: t(s[b]) if s[b] is not None else torch.zeros(n, dtype=torch.float64)
    with torch.no_grad():
        if mha._qkv_same_embed_dim:                                   # Cs = C: one in_proj_weight [3C, C]
            mha.in_proj_weight.copy_(torch.cat([t(s["Wq"]).T, t(s["Wk"]).T, t(s["Wv"]).T]))
        else:                                                         # Cs ≠ C: [C, C], [C, Cs], [C, Cs]
            mha.q_proj_weight.copy_(t(s["Wq"]).T)
            mha.k_proj_weight.copy_(t(s["Wk"]).T)
            mha.v_proj_weight.copy_(t(s["Wv"]).T)
        mha.out_proj.weight.copy_(t(s["Wo"]).T)                       # [C, C], nn.Linear layout
        if has_bias:
            mha.in_proj_bias.copy_(torch.cat([zero("bq", p.C), zero("bk", p.C), zero("bv", p.C)]))  # [3C]
            mha.out_proj.bias.copy_(zero("bo", p.C))                  # [C]
        attn_mask = ~torch.tril(torch.ones(p.T, p.S, dtype=torch.bool)) if p.causal else None  # [T, S], True = blocked
        kpm = None
        if p.lengths is not None:
            kpm = torch.arange(p.S)[None, :] >= torch.tensor(p.lengths)[:, None]  # [B, S], True = ignore
        x, src = t(s["x"]), t(s["src"])                               # [B, T, C], [B, S, Cs]
        if not p.batched:
            x, src = x[0], src[0]                                     # unbatched path: [T, C], [S, Cs]
        out, w = mha(x, src, src, attn_mask=attn_mask, key_padding_mask=kpm, need_weights=True,
                     average_attn_weights=False)                      # [(B,) T, C], [(B,) H, T, S]
        if not p.batched:
            out, w = out[None], w[None]
    return out, w                                                     # [B, T, C], [B, H, T, S]


# ---------------------------------------------------------------------------------------------
# Reference 3 (self-test only): NumPy, one query row and one head at a time
# ---------------------------------------------------------------------------------------------

def reference_loops(p):
    if p.given:
        q, k, v = p.q, p.k, p.v
    else:
        def proj(a, W, b):                                            # row by row, a[b, i] · W + b
            out = np.zeros(a.shape[:2] + (W.shape[1],))
            for bb in range(a.shape[0]):
                for i in range(a.shape[1]):
                    out[bb, i] = sum(a[bb, i, c] * W[c] for c in range(W.shape[0])) + (0 if b is None else b)
            return out
        q, k, v = proj(p.x, p.Wq, p.bq), proj(p.src, p.Wk, p.bk), proj(p.src, p.Wv, p.bv)
    scores = np.zeros((p.B, p.H, p.T, p.S))
    weights = np.zeros((p.B, p.H, p.T, p.S))
    merged = np.zeros((p.B, p.T, p.dv))
    for b in range(p.B):
        for h in range(p.H):
            qs, ks, vs = slice(h * p.hs, (h + 1) * p.hs), slice(h * p.hs, (h + 1) * p.hs), slice(h * p.hv, (h + 1) * p.hv)
            for i in range(p.T):
                allowed = [j for j in range(p.S) if (not p.causal or j <= i)
                           and (p.lengths is None or j < p.lengths[b])]
                for j in range(p.S):
                    scores[b, h, i, j] = float(np.dot(q[b, i, qs], k[b, j, ks]))
                top = max(scores[b, h, i, j] * p.scale for j in allowed)
                e = {j: math.exp(scores[b, h, i, j] * p.scale - top) for j in allowed}
                total = sum(e.values())
                for j in allowed:
                    weights[b, h, i, j] = e[j] / total
                    merged[b, i, vs] += weights[b, h, i, j] * v[b, j, vs]
    r = {"q": q, "k": k, "v": v, "scores": scores, "weights": weights, "merged": merged}
    if p.Wo is not None:
        r["output"] = merged @ p.Wo + (0 if p.bo is None else p.bo)
    return r


# ---------------------------------------------------------------------------------------------
# Negative inputs: refused with exit code 2 and a message naming the JSON path
# ---------------------------------------------------------------------------------------------

def negative_cases():
    """(name, spec, [required substrings; a tuple = any one of them])."""
    x = [[0.1, 0.2, 0.3, 0.4], [0.5, -0.6, 0.7, 0.8], [-0.9, 1.0, 1.1, 1.2]]          # [T, C] = [3, 4]
    src = [[0.3, -0.1, 0.2], [0.5, 0.4, -0.6]]                                           # [S, Cs] = [2, 3]
    m = lambda r, c: [[round(0.1 * (i + 1) - 0.05 * j, 3) for j in range(c)] for i in range(r)]
    return [
        ("W_q of width 5 with H = 2",
         {"mode": "self", "heads": 2, "embeddings": x,
          "weights": {"W_q": m(4, 5), "W_k": m(4, 5), "W_v": m(4, 4)}},
         ["weights.W_q", "divisible by H = 2"]),
        ("W_v of width 3 with H = 2",
         {"mode": "self", "heads": 2, "embeddings": x,
          "weights": {"W_q": m(4, 2), "W_k": m(4, 2), "W_v": m(4, 3)}},
         ["weights.W_v", "H = 2"]),
        ("W_k whose input width is C, not Cs (cross)",
         {"mode": "cross", "embeddings": x, "source": {"embeddings": src},
          "weights": {"W_q": m(4, 2), "W_k": m(4, 2), "W_v": m(3, 2)}},
         ["weights.W_k"]),
        ("W_k whose input width ≠ Cs, torch layout",
         {"mode": "cross", "layout": "torch", "embeddings": x, "source": {"embeddings": src},
          "weights": {"W_q": m(2, 4), "W_k": m(2, 5), "W_v": m(2, 3)}},
         ["weights.W_k"]),
        ("W_k whose output width ≠ W_q's (dk)",
         {"mode": "self", "embeddings": x, "weights": {"W_q": m(4, 2), "W_k": m(4, 3), "W_v": m(4, 2)}},
         [("weights.W_k", "weights.W_q")]),
        ("W_o whose input width ≠ dv",
         {"mode": "self", "embeddings": x,
          "weights": {"W_q": m(4, 2), "W_k": m(4, 2), "W_v": m(4, 3), "W_o": m(2, 5)}},
         ["weights.W_o"]),
        ("W_o whose input width ≠ dv, torch layout",
         {"mode": "self", "layout": "torch", "embeddings": x,
          "weights": {"W_q": m(2, 4), "W_k": m(2, 4), "W_v": m(3, 4), "W_o": m(5, 2)}},
         ["weights.W_o"]),
        ("b_v of length dk instead of dv",
         {"mode": "self", "embeddings": x,
          "weights": {"W_q": m(4, 2), "W_k": m(4, 2), "W_v": m(4, 3), "b_v": [0.1, 0.2]}},
         ["weights.b_v"]),
        ("b_o of the wrong length",
         {"mode": "self", "embeddings": x,
          "weights": {"W_q": m(4, 2), "W_k": m(4, 2), "W_v": m(4, 3), "W_o": m(3, 5), "b_o": [0.1, 0.2, 0.3]}},
         ["weights.b_o"]),
        ("fused W_qkv of width 10 with no W_o and no dv (not 3·dk)",
         {"mode": "self", "embeddings": x, "weights": {"W_qkv": m(4, 10)}},
         ["weights.W_qkv"]),
        ("fused W_qkv of width 11 with W_o [4, 4] (2·dk = 7)",
         {"mode": "self", "embeddings": x, "weights": {"W_qkv": m(4, 11), "W_o": m(4, 4)}},
         ["weights.W_qkv"]),
        ("fused W_qkv of width 10 with dv = 3 (2·dk = 7)",
         {"mode": "self", "dv": 3, "embeddings": x, "weights": {"W_qkv": m(4, 10)}},
         ["weights.W_qkv"]),
        ("b_qkv of length 3·dk when dv ≠ dk",
         {"mode": "self", "embeddings": x,
          "weights": {"W_qkv": m(4, 7), "W_o": m(3, 4), "b_qkv": [0.1] * 6}},
         ["weights.b_qkv"]),
        ("fused W_qkv in cross mode with Cs ≠ C",
         {"mode": "cross", "embeddings": x, "source": {"embeddings": src}, "weights": {"W_qkv": m(4, 6)}},
         [("weights.W_qkv", "source")]),
        ("W_q \"identity\" with W_k of width dk ≠ C",
         {"mode": "self", "embeddings": x, "weights": {"W_q": "identity", "W_k": m(4, 2), "W_v": m(4, 2)}},
         [("weights.W_q", "weights.W_k")]),
    ]


# ---------------------------------------------------------------------------------------------
# Running attn and comparing
# ---------------------------------------------------------------------------------------------

def run_attn(attn, spec):
    proc = subprocess.run([attn, "run", "-", "--format", "json"], input=json.dumps(spec),
                          capture_output=True, text=True, timeout=60)
    return proc.returncode, proc.stdout, proc.stderr


def to_array(data):
    """A step's nested data (numbers, "-inf", "inf", "nan") as float64; None when ragged."""
    try:
        return np.array(data, dtype=object).astype(np.float64)
    except (ValueError, TypeError):
        return None


def max_diff(have, want):
    """max |have − want| over finite entries; inf when the non-finite entries differ."""
    fin_h, fin_w = np.isfinite(have), np.isfinite(want)
    if not np.array_equal(fin_h, fin_w) or not np.array_equal(have[~fin_w], want[~fin_w]):
        return math.inf
    return float(np.abs(have[fin_w] - want[fin_w]).max()) if fin_w.any() else 0.0


class Tally:
    def __init__(self):
        self.worst = {}          # step kind → (max diff, problem index)
        self.failures = []

    def add(self, kind, diff, idx):
        if kind not in self.worst or diff > self.worst[kind][0]:
            self.worst[kind] = (diff, idx)

    def fail(self, msg, always=False):
        self.failures.append(msg)
        if always or len(self.failures) <= 40:
            print("FAIL " + msg)


def check_problem(attn, idx, spec, tally, keep_dir):
    p = read_spec(spec)
    rc, out, err = run_attn(attn, spec)
    nfail = len(tally.failures)
    if rc != 0:
        tally.fail(f"#{idx} {p.describe()}: attn exited {rc}: {err.strip()[:300]}")
    else:
        steps = json.loads(out)["steps"]
        expected = expected_steps(p)
        got_ids = [s["id"] for s in steps]
        want_ids = [sid for sid, _ in expected]
        missing = [s for s in want_ids if s not in got_ids]
        extra = [s for s in got_ids if s not in want_ids]
        if missing or extra:
            tally.fail(f"#{idx} {p.describe()}: steps missing {missing}, extra {extra}")
        elif got_ids != want_ids:
            tally.fail(f"#{idx} {p.describe()}: steps out of order: {got_ids}, expected {want_ids}")
        ref = reference_torch(p)
        shapes = dict(expected)
        by_id = {}
        for s in steps:
            sid = s["id"]
            if sid not in shapes:
                continue
            have = to_array(s["data"])
            if list(s["shape"]) != list(shapes[sid]) or have is None or have.shape != shapes[sid] \
                    or len(s.get("dims", [])) != len(shapes[sid]):
                tally.fail(f"#{idx} {p.describe()}: step {sid} shape {s['shape']} (dims {s.get('dims')}, "
                           f"data {None if have is None else list(have.shape)}), expected {list(shapes[sid])}")
                continue
            by_id[sid] = have
            d = max_diff(have, shown(p, sid, ref[sid]))
            tally.add(sid, d, idx)
            if d > TOL:
                tally.fail(f"#{idx} {p.describe()}: step {sid}: max |attn − torch| = {d:.3e} > {TOL}")
        if mha_applies(p) and "output" in by_id and "weights" in by_id:
            out_m, w_m = reference_mha(p)                             # [B, T, C], [B, H, T, S]
            for sid, full in (("output", out_m), ("weights", w_m)):
                d = max_diff(by_id[sid], shown(p, sid, full))
                tally.add(f"{sid} (nn.MultiheadAttention)", d, idx)
                if d > TOL:
                    tally.fail(f"#{idx} {p.describe()}: step {sid}: max |attn − nn.MultiheadAttention| = {d:.3e}")
    if keep_dir and len(tally.failures) > nfail:
        os.makedirs(keep_dir, exist_ok=True)
        with open(os.path.join(keep_dir, f"problem_{idx:03d}.json"), "w") as f:
            json.dump(spec, f)


def check_negatives(attn, tally):
    for name, spec, needles in negative_cases():
        rc, out, err = run_attn(attn, spec)
        msg = err.strip()
        missing = [n for n in needles
                   if not any(alt in msg for alt in (n if isinstance(n, tuple) else (n,)))]
        if rc != 2 or missing or not msg.startswith("attn: "):
            tally.fail(f"negative '{name}': exit {rc} (want 2), message {msg[:200]!r}"
                       + (f" lacks {missing}" if missing else ""), always=True)
        else:
            print(f"  refused as it must: {name}: {msg.splitlines()[0][:150]}")


def main_check(attn, keep_dir):
    if not (os.path.isfile(attn) and os.access(attn, os.X_OK)):
        print(f"{attn}: not an executable")
        return 2
    start = time.time()
    problems = make_problems()
    tally = Tally()
    failed = 0
    for idx, (spec, _) in enumerate(problems):
        before = len(tally.failures)
        check_problem(attn, idx, spec, tally, keep_dir)
        failed += len(tally.failures) > before
    print(f"{len(problems) - failed} of {len(problems)} problems agree with the references in every step")
    print("negative inputs:")
    check_negatives(attn, tally)
    n_mha = sum(mha_applies(read_spec(s)) for s, _ in problems)
    print(f"per step (torch {torch.__version__}; {n_mha} problems also against nn.MultiheadAttention):")
    for kind in sorted(tally.worst, key=lambda k: (STEP_ORDER.index(k.split()[0]), k)):
        d, i = tally.worst[kind]
        print(f"  {kind:32s} max |attn − torch| = {d:.3e}   (problem #{i})")
    if tally.worst:
        kind, (overall, i) = max(tally.worst.items(), key=lambda kv: kv[1][0])
        print(f"{len(problems)} problems, max |attn − torch| = {overall:.3e} (tolerance {TOL}); worst step: "
              f"{kind} in problem #{i} ({read_spec(problems[i][0]).describe()}); {time.time() - start:.1f} s")
    else:
        print(f"{len(problems)} problems, max |attn − torch| = n/a: no step could be compared")
    if tally.failures:
        print(f"FAILED: {len(tally.failures)} failure(s)")
        return 1
    return 0


# ---------------------------------------------------------------------------------------------
# --self-test: the references against each other, no binary needed
# ---------------------------------------------------------------------------------------------

def self_test():
    start = time.time()
    problems = make_problems()
    errors = []
    worst = {"torch vs loops": 0.0, "torch vs nn.MultiheadAttention": 0.0}
    cover = {}

    def count(key):
        cover[key] = cover.get(key, 0) + 1

    def close(what, a, b, tol=1e-10):
        d = max_diff(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
        worst[what.split(":")[0]] = max(worst[what.split(":")[0]], d)
        if d > tol:
            errors.append(f"{what}: {d:.3e}")

    for idx, (spec, truth) in enumerate(problems):
        spec = json.loads(json.dumps(spec))                           # exactly what attn would be fed
        p = read_spec(spec)
        tag = f"#{idx} {p.describe()}"
        # the JSON carries float32-exact values
        for key in ("x", "src", "Wq", "Wk", "Wv", "Wo", "bq", "bk", "bv", "bo", "q", "k", "v"):
            a = truth.get(key)
            if a is not None and not np.array_equal(a, np.asarray(a, dtype=np.float32)):
                errors.append(f"{tag}: {key} not float32-exact")
        # 0. read_spec (layouts, per-head, fused split, defaults) gives back the generator's tensors
        assert p.mode == truth["mode"] and p.H == truth["H"] and p.batched == truth["batched"], tag
        assert p.lengths == truth["lengths"] and p.form == truth["form"], tag
        for key in (("q", "k", "v") if p.given else ("x", "src", "Wq", "Wk", "Wv", "Wo", "bq", "bk", "bv", "bo")):
            a, b = getattr(p, key), truth[key]
            if (a is None) != (b is None) or (a is not None and (a.shape != b.shape or not np.array_equal(a, b))):
                errors.append(f"{tag}: read_spec's {key} differs from the generator's")
        # 1. the hand-written torch reference: shapes as the README's table
        ref = reference_torch(p)
        expected = expected_steps(p)
        for sid, shape in expected:
            got = shown(p, sid, ref[sid]).shape
            if got != shape:
                errors.append(f"{tag}: reference {sid} shows as {got}, table says {shape}")
        w = ref["weights"]                                            # [B, H, T, S]
        keep = keep_mask(p)[:, None].expand_as(w)
        if not torch.allclose(w.sum(-1), torch.ones((), dtype=torch.float64), atol=1e-12) or bool((w[~keep] != 0).any()):
            errors.append(f"{tag}: weights rows do not sum to 1 or a blocked key has weight")
        if not p.given and p.fused and not p.cross:                   # qkv splits back into q | k | v
            close(f"torch vs loops: {tag} qkv", ref["qkv"], torch.cat([ref["q"], ref["k"], ref["v"]], -1))
        # 2. against the NumPy loops, every step they compute
        loops = reference_loops(p)
        for sid, val in loops.items():
            close(f"torch vs loops: {tag} {sid}", ref[sid], val)
        # 3. against nn.MultiheadAttention, built from the generator's tensors (not read_spec's)
        if mha_applies(p):
            out_m, w_m = reference_mha(p, truth)
            close(f"torch vs nn.MultiheadAttention: {tag} output", ref["output"], out_m)
            close(f"torch vs nn.MultiheadAttention: {tag} weights", ref["weights"], w_m)
            count("nn.MultiheadAttention: " + p.mode)
        # coverage
        count(f"mode {p.mode}")
        count(f"form {p.form}")
        count(f"H = {p.H}")
        count(f"B = {p.B}" if p.batched else "unbatched")
        if not p.given:
            count(f"layout {spec.get('layout', 'x@W (default)')}")
            count("W_o" if p.Wo is not None else "no W_o")
            count(f"biases {p.bias_names}" if p.bias_names in ("none",) else "some bias")
            count("dk ≠ C" if p.dk != p.C else "dk = C")
            if p.Wo is not None:
                count("Co ≠ dv" if p.Co != p.dv else "Co = dv")
            if p.cross:
                count("Cs ≠ C" if p.Cs != p.C else "Cs = C (fused cross)")
                count("S ≠ T" if p.S != p.T else "S = T (cross)")
            if "identity" in json.dumps(spec["weights"]):
                count("identity")
            if "dv" in spec:
                count('fused with "dv"')
            if p.fused and p.Wo is None and "dv" not in spec:
                count("fused, dv = dk by default")
            if "heads" not in spec:
                count("heads left out (multi-head default 2)")
        count("dv ≠ dk" if p.dv != p.dk else "dv = dk")
        count("padding" if p.lengths is not None else "no padding")
        if p.T == 1:
            count("T = 1")
        if p.S == 1:
            count("S = 1")
    # 4. the negative inputs break a rule read_spec enforces, at the path the check expects
    for name, spec, needles in negative_cases():
        try:
            read_spec(json.loads(json.dumps(spec)))
            errors.append(f"negative '{name}': read_spec accepts it")
        except SpecError as e:
            paths = needles[0] if isinstance(needles[0], tuple) else (needles[0],)
            if e.path not in paths:
                errors.append(f"negative '{name}': read_spec refuses it at {e.path}, the check expects {paths}")
    required = ["mode self", "mode causal", "mode cross", "mode multi-head", "form separate", "form per-head",
                "form fused", "form given", "H = 1", "H = 2", "H = 3", "H = 4", "unbatched", "B = 1", "B = 3",
                "layout x@W", "layout torch", "layout x@W (default)", "W_o", "no W_o", "biases none", "some bias",
                "dk ≠ C", "dv ≠ dk", "dv = dk", "Co ≠ dv", "Cs ≠ C", "Cs = C (fused cross)", "S ≠ T", "identity",
                'fused with "dv"', "fused, dv = dk by default", "heads left out (multi-head default 2)",
                "padding", "no padding", "T = 1", "S = 1", "nn.MultiheadAttention: cross",
                "nn.MultiheadAttention: self", "nn.MultiheadAttention: causal", "nn.MultiheadAttention: multi-head"]
    for key in required:
        if cover.get(key, 0) == 0:
            errors.append(f"coverage: no problem with {key}")
    print(f"self-test: {len(problems)} problems, {len(negative_cases())} negative inputs, "
          f"torch {torch.__version__}, numpy {np.__version__}")
    print("coverage: " + ", ".join(f"{k}: {v}" for k, v in sorted(cover.items())))
    print(f"  {'read_spec vs generator':32s} tensors identical (layouts, per-head, fused split, defaults)"
          if not any("read_spec" in e for e in errors) else "  read_spec vs generator: DIFFER")
    for k, v in worst.items():
        print(f"  {k:32s} max difference {v:.3e}")
    for e in errors[:40]:
        print("SELF-TEST FAIL " + e)
    print(f"self-test {'FAILED' if errors else 'passed'} ({len(errors)} errors) in {time.time() - start:.1f} s")
    return 1 if errors else 0


def main(argv):
    keep_dir = None
    if "--keep" in argv:
        i = argv.index("--keep")
        keep_dir = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    if argv == ["--self-test"]:
        return self_test()
    if len(argv) != 1 or argv[0].startswith("-"):
        print(__doc__)
        return 2
    return main_check(argv[0], keep_dir)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
