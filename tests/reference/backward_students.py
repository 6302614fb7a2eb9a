#!/usr/bin/env python3
"""Students who write attention's backward pass by hand in PyTorch, from scratch: each one makes one
of the four common backward mistakes (or none), saves the tensors a student would dump
(<step id>.npy, float64), and `attn diagnose` must name that mistake (or report the student correct).

The problem is examples/diagnose_causal_2heads.json (T = 4, C = 4, H = 2, causal, x, W_q, W_k, W_v,
W_o from np.random.RandomState(7).randn in that order), and the loss is sum(output), attn backward's
default. The correct student's hand-written gradients are first checked against torch autograd, so
the students are right where they mean to be.

Mistakes: softmax-backward-elementwise (w ⊙ grad.weights, no rowsum term), backward-scale-forgotten
(grad.scores = grad.scaled), backward-dk-untransposed (grad.k = grad.scores · q), backward-dx-one-path
(grad.x = grad.q · W_qᵀ only).

Usage: backward_students.py PATH_TO_ATTN PATH_TO_SPEC
Exit 0: every student diagnosed as expected. 1: a wrong diagnosis. 77: skipped (no torch).
"""
import math
import os
import sys

try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"SKIPPED: PyTorch or numpy is not importable here ({e}); install python3-torch (scripts/setup.sh --tests)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from diagnose_students import diagnose_students  # noqa: E402

T, C, H = 4, 4, 2
HS = C // H
MISTAKES = ["softmax-backward-elementwise", "backward-scale-forgotten", "backward-dk-untransposed", "backward-dx-one-path"]


def tensors():
    rs = np.random.RandomState(7)
    f32 = lambda a: torch.tensor(a.astype(np.float32).astype(np.float64))  # noqa: E731  (attn's float32 values, in float64)
    return [f32(rs.randn(T, C)) for _ in range(5)]  # x, W_q, W_k, W_v, W_o


def forward(x, Wq, Wk, Wv, Wo):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    split = lambda t: t.reshape(T, H, HS).transpose(0, 1)  # noqa: E731  [T, C] -> [H, T, hs]
    qh, kh, vh = split(q), split(k), split(v)
    scaled = qh @ kh.transpose(-2, -1) / math.sqrt(HS)
    masked = scaled.masked_fill(torch.ones(T, T).tril() == 0, float("-inf"))
    weights = torch.softmax(masked, dim=-1)
    context = weights @ vh
    merged = context.transpose(0, 1).reshape(T, C)
    return dict(q=q, k=k, v=v, qh=qh, kh=kh, vh=vh, weights=weights, merged=merged, output=merged @ Wo)


def student(mistake):
    """The forward pass, then the backward pass written out by hand, with one mistake (or none)."""
    x, Wq, Wk, Wv, Wo = tensors()
    f = forward(x, Wq, Wk, Wv, Wo)
    w = f["weights"]
    g_out = torch.ones(T, C, dtype=torch.float64)             # d sum(output) / d output
    g_merged = g_out @ Wo.T
    g_ctx = g_merged.reshape(T, H, HS).transpose(0, 1)        # the merge's backward: split
    g_w = g_ctx @ f["vh"].transpose(-2, -1)
    g_vh = w.transpose(-2, -1) @ g_ctx
    if mistake == "softmax-backward-elementwise":
        g_masked = w * g_w
    else:
        g_masked = w * (g_w - (g_w * w).sum(-1, keepdim=True))
    g_scaled = g_masked.masked_fill(torch.ones(T, T).tril() == 0, 0.0)  # masked_fill's backward
    g_scores = g_scaled if mistake == "backward-scale-forgotten" else g_scaled / math.sqrt(HS)
    g_qh = g_scores @ f["kh"]
    g_kh = (g_scores if mistake == "backward-dk-untransposed" else g_scores.transpose(-2, -1)) @ f["qh"]
    merge = lambda t: t.transpose(0, 1).reshape(T, C)  # noqa: E731
    g_q, g_k, g_v = merge(g_qh), merge(g_kh), merge(g_vh)
    g_x = g_q @ Wq.T if mistake == "backward-dx-one-path" else g_q @ Wq.T + g_k @ Wk.T + g_v @ Wv.T
    out = {"weights": w, "output": f["output"], "grad.output": g_out, "grad.W_o": f["merged"].T @ g_out, "grad.merged": g_merged,
           "grad.context": g_ctx, "grad.weights": g_w, "grad.v.heads": g_vh, "grad.masked": g_masked, "grad.scaled": g_scaled,
           "grad.scores": g_scores, "grad.q.heads": g_qh, "grad.k.heads": g_kh, "grad.q": g_q, "grad.k": g_k, "grad.v": g_v,
           "grad.W_q": x.T @ g_q, "grad.W_k": x.T @ g_k, "grad.W_v": x.T @ g_v, "grad.x": g_x}
    return {k: v.detach().numpy() for k, v in out.items()}


def autograd_agrees():
    """The correct student's gradients against autograd's."""
    leaves = [t.clone().requires_grad_() for t in tensors()]
    f = forward(*leaves)
    for key in ("q", "k", "v", "weights"):
        f[key].retain_grad()
    f["output"].sum().backward()
    s = student(None)
    want = {"grad.x": leaves[0].grad, "grad.W_q": leaves[1].grad, "grad.W_k": leaves[2].grad, "grad.W_v": leaves[3].grad,
            "grad.W_o": leaves[4].grad, "grad.q": f["q"].grad, "grad.k": f["k"].grad, "grad.v": f["v"].grad, "grad.weights": f["weights"].grad}
    bad = [k for k, v in want.items() if not np.allclose(s[k], v.numpy(), atol=1e-10)]
    if bad:
        print(f"FAIL the correct student disagrees with autograd on {bad}")
    return not bad


def main():
    attn, spec = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    failures = 0 if autograd_agrees() else 1
    failures += diagnose_students(attn, spec, student, MISTAKES, "backward students", width=30)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
