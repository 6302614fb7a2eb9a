#!/usr/bin/env python3
"""Students written independently in NumPy: each one implements causal two-head attention from
scratch, makes one common mistake (or none), saves the tensors a student would dump
(<step id>.npy, float64), and `attn diagnose` must name that mistake (or report the student correct).

The problem is examples/diagnose_causal_2heads.json: T = 4, C = 4, H = 2, with x, W_q, W_k, W_v,
W_o drawn from np.random.RandomState(7).randn in that order.

Usage: numpy_students.py PATH_TO_ATTN PATH_TO_SPEC
Exit 0: every student diagnosed as expected. 1: a wrong diagnosis. 77: skipped (no numpy).
"""
import os
import sys

try:
    import numpy as np
except ImportError as e:
    print(f"SKIPPED: NumPy is not importable here ({e}); install python3-numpy (scripts/setup.sh --tests)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from diagnose_students import diagnose_students  # noqa: E402

T, C, H = 4, 4, 2
HS = C // H
MISTAKES = ["w-transposed", "scale-missing", "scale-sqrt-c", "scale-dk", "softmax-wrong-axis", "mask-flipped",
            "mask-after-softmax", "fill-1e9", "qk-swapped", "heads-interleaved", "merge-no-transpose",
            "output-missing", "output-transposed", "scale-third"]
# With C = 4 and hs = 2, 1/√C = 1/d_k = 0.5: a student who divided by √C and one who divided by d_k
# give the same numbers, and diagnose must say so rather than name one; each report shows the factor
# the student used against the right one. scale-third is no catalogue mistake (a factor of 1/3): no
# mistake is named, but the factor is.
SAME_AS_SQRT_C = ("scale-sqrt-c or scale-dk (a tie)",
                  ["\nthe student's scale factor: 0.5 (the student's scaled ÷ the scores), where the right one is 1/√2 = 0.7071\n",
                   "\n  0.5 is 1/√C = 1/√4 (scale-sqrt-c) and also 1/d_k = 1/2 (scale-dk)\n",
                   "\nscale-sqrt-c and scale-dk give the same numbers here (each reproduces the student's scaled and 5 of the 5 later "
                   "steps): from these tensors attn cannot tell which the student made\n"])
EXPECT = {"scale-sqrt-c": SAME_AS_SQRT_C, "scale-dk": SAME_AS_SQRT_C,
          "scale-missing": ("scale-missing", ["\nthe student's scale factor: 1 (the student's scaled ÷ the scores), where the right one "
                                              "is 1/√2 = 0.7071\n  1 is no scale at all (scale-missing)\n"]),
          "scale-third": ("differs, cause not diagnosed", ["\nthe student's scale factor: 0.3333 (the student's scaled ÷ the scores)"])}


def tensors():
    rs = np.random.RandomState(7)
    # attn holds float32; the student computes in float64 from the same float32 values
    f32 = lambda a: a.astype(np.float32).astype(np.float64)
    x = f32(rs.randn(T, C))
    return x, f32(rs.randn(C, C)), f32(rs.randn(C, C)), f32(rs.randn(C, C)), f32(rs.randn(C, C))


def student(mistake):
    x, Wq, Wk, Wv, Wo = tensors()
    W = (lambda w: w.T) if mistake == "w-transposed" else (lambda w: w)
    q, k, v = x @ W(Wq), x @ W(Wk), x @ W(Wv)

    def split(t):  # [T, C] -> [H, T, hs]
        if mistake == "heads-interleaved":
            return t.reshape(T, HS, H).transpose(2, 0, 1)
        return t.reshape(T, H, HS).transpose(1, 0, 2)

    qh, kh, vh = split(q), split(k), split(v)
    scores = kh @ qh.transpose(0, 2, 1) if mistake == "qk-swapped" else qh @ kh.transpose(0, 2, 1)
    factor = {"scale-missing": 1.0, "scale-sqrt-c": 1 / np.sqrt(C), "scale-dk": 1 / HS, "scale-third": 1 / 3}.get(mistake, 1 / np.sqrt(HS))
    scaled = scores * factor
    tril = np.tril(np.ones((T, T)))
    blocked = (tril == 1) if mistake == "mask-flipped" else (tril == 0)
    out = {"x": x, "q": q, "k": k, "v": v, "q.heads": qh, "k.heads": kh, "v.heads": vh,
           "scores": scores, "scaled": scaled}
    with np.errstate(invalid="ignore"):
        if mistake == "mask-after-softmax":
            e = np.exp(scaled - scaled.max(-1, keepdims=True))
            weights = np.where(blocked, 0.0, e / e.sum(-1, keepdims=True))
        else:
            masked = np.where(blocked, -1e9 if mistake == "fill-1e9" else -np.inf, scaled)
            out["masked"] = masked
            axis = -2 if mistake == "softmax-wrong-axis" else -1
            e = np.exp(masked - masked.max(axis, keepdims=True))
            weights = e / e.sum(axis, keepdims=True)
    context = weights @ vh
    if mistake == "merge-no-transpose":
        merged = context.reshape(T, C)
    elif mistake == "heads-interleaved":
        merged = context.transpose(1, 2, 0).reshape(T, C)  # undo the interleaved split
    else:
        merged = context.transpose(1, 0, 2).reshape(T, C)
    if mistake == "output-missing":
        output = merged
    elif mistake in ("output-transposed", "w-transposed"):
        output = merged @ Wo.T
    else:
        output = merged @ Wo
    out.update({"weights": weights, "context": context, "merged": merged, "output": output})
    return out


def main():
    attn, spec = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    return 1 if diagnose_students(attn, spec, student, MISTAKES, "numpy students", width=20, expect=EXPECT) else 0


if __name__ == "__main__":
    sys.exit(main())
