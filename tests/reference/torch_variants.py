#!/usr/bin/env python3
"""Reference check of the attention variants of today's models against PyTorch, written from the
papers and the well-known conventions (not from attn's code).

Legend: B batch, T queries, S keys, C model width, H heads, hs = C/H.

Variants checked so far:
  rope:      rotary position embedding on q and k per head (RoFormer, Su et al. 2021), in the two
             conventions: "half", HF Llama's rotate_half / apply_rotary_pos_emb (GPT-NeoX's pairs
             (i, i + R/2)), and "interleaved", GPT-J's rotate_every_two (pairs (2i, 2i + 1)); partial
             rotary (GPT-NeoX's rotary_pct: the first R features of a head); an offset for the first
             query; keys from position 0 in cross mode.
  window:    Mistral's sliding window with causal: query i sees key j iff i − W < j ≤ i (HF Mistral's
             mask: blocked where j ≤ i − sliding_window), top-left and bottom-right aligned, with
             padding.
  alibi:     Press et al.'s linear biases, −m_h · (i − j) added to the scaled scores, with the slopes of
             their get_slopes (powers of two and the interpolation between them) or given ones.
  softcap:   Gemma 2's logit soft-capping, c · tanh(logits / c), after ALiBi and before the mask.
  kv_heads:  grouped-query attention (Ainslie et al. 2023; Hkv = 1 is Shazeer's multi-query): W_k and
             W_v Hkv·hs and Hkv·hv wide, the kv heads lined up with the query heads by HF Llama's
             repeat_kv (expand then reshape: query head h reads kv head h // (H / Hkv)), combined
             with RoPE, windows, cross mode, a fused W_qkv, given q/k/v, odd T and other value widths.
  positions: "sinusoidal" (Vaswani et al. 2017, section 3.5: PE[p, 2i] = sin(p / 10000^(2i/C)),
             PE[p, 2i+1] = cos(...)) and {"learned": table} (GPT-2's wpe: row p added to token p),
             added to x before the projections.

Each problem is a seeded random input sent to `ATTN run - --format json`; the steps a variant adds
and the attention's output are compared with a float64 torch computation of the same formulas. Any
value more than 1e-5 away fails; a variant step that is missing fails. Bad variant inputs must be
refused with exit code 2 and a message naming the JSON path.

Usage: torch_variants.py ATTN_BINARY     (exit 0 pass, 1 fail, 77 skipped)
"""
import json
import math
import subprocess
import sys

try:
    import numpy as np
    import torch
except ImportError as e:  # ctest reports 77 as "skipped"
    print(f"SKIPPED: NumPy or PyTorch is not importable here ({e}); install python3-numpy and "
          f"python3-torch (scripts/setup.sh --tests)")
    sys.exit(77)

TOL = 1e-5
SEED = 20261123
torch.set_num_threads(1)


def sinusoidal(L, C):
    """Vaswani et al. 2017, 3.5, in float64."""
    pe = torch.zeros(L, C, dtype=torch.float64)
    pos = torch.arange(L, dtype=torch.float64)[:, None]
    for i2 in range(0, C, 2):
        angle = pos[:, 0] / (10000.0 ** (i2 / C))
        pe[:, i2] = torch.sin(angle)
        if i2 + 1 < C:
            pe[:, i2 + 1] = torch.cos(angle)
    return pe


def rope_tables(positions, R, theta):
    """inv_freq = 1 / theta^(2i/R) (HF's _compute_default_rope_parameters), in float64."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, R, 2, dtype=torch.float64) / R))
    freqs = torch.outer(positions.to(torch.float64), inv_freq)
    return torch.cos(freqs), torch.sin(freqs)


def rotate_half(x):
    """HF Llama: cat(-x2, x1) of the two halves."""
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rotate_every_two(x):
    """GPT-J: (-x_{2i+1}, x_{2i}) in place of (x_{2i}, x_{2i+1})."""
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def apply_rope(x, cos, sin, R, style):
    """x (..., L, hs), cos and sin (L, R/2): the first R features rotated, the rest passed (GPT-NeoX's partial rotary)."""
    rot, rest = x[..., :R], x[..., R:]
    if style == "half":   # HF apply_rotary_pos_emb: cos = cat(freqs, freqs)
        c, s = torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)
        rot = rot * c + rotate_half(rot) * s
    else:                 # GPT-J apply_rotary_pos_emb: sin, cos repeated interleaved
        c, s = cos.repeat_interleave(2, dim=-1), sin.repeat_interleave(2, dim=-1)
        rot = rot * c + rotate_every_two(rot) * s
    return torch.cat((rot, rest), dim=-1)


def repeat_kv(x, n_rep):
    """HF Llama's repeat_kv: (B, Hkv, L, d) -> (B, Hkv·n_rep, L, d), each kv head n_rep times in a row."""
    B, Hkv, L, d = x.shape
    if n_rep == 1:
        return x
    return x[:, :, None, :, :].expand(B, Hkv, n_rep, L, d).reshape(B, Hkv * n_rep, L, d)


def get_slopes(n):
    """Press et al., 'Train Short, Test Long', their repository's get_slopes."""
    def power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + get_slopes(2 * closest)[0::2][: n - closest]


def attention(x, wq, wk, wv, H, causal):
    """Multi-head attention in float64: x (B, T, C), W in x@W form."""
    B, T, _ = x.shape
    q, k, v = x @ wq, x @ wk, x @ wv
    hs, hv = q.shape[-1] // H, v.shape[-1] // H
    q = q.view(B, T, H, hs).transpose(1, 2)
    k = k.view(B, T, H, hs).transpose(1, 2)
    v = v.view(B, T, H, hv).transpose(1, 2)
    scores = q @ k.transpose(-2, -1) / hs ** 0.5
    if causal:
        scores = scores.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return (weights @ v).transpose(1, 2).reshape(B, T, H * hv)


def run(attn, problem):
    p = subprocess.run([attn, "run", "-", "--format", "json"], input=json.dumps(problem), capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def numbers(data):
    """The trace's nested lists, its "-inf", "inf" and "nan" strings read as floats."""
    if isinstance(data, list):
        return [numbers(d) for d in data]
    return float(data) if isinstance(data, str) else data


def steps_of(stdout):
    return {s["id"]: torch.tensor(numbers(s["data"]), dtype=torch.float64) for s in json.loads(stdout)["steps"]}


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    attn = sys.argv[1]
    rng = np.random.default_rng(SEED)
    failures, checked, worst = [], 0, {}

    def compare(name, variant, got, want):
        nonlocal checked
        checked += 1
        if got is None:
            failures.append(f"{name}: step missing")
            return
        if tuple(got.shape) != tuple(want.shape):
            failures.append(f"{name}: shape {tuple(got.shape)}, reference {tuple(want.shape)}")
            return
        d = float((got - want).abs().max()) if got.numel() else 0.0
        worst[variant] = max(worst.get(variant, 0.0), d)
        if d > TOL:
            failures.append(f"{name}: differs by {d:.3g}")

    def traced(name, problem):
        """The problem's trace, its steps by id; None (a failure noted) when attn refuses it."""
        rc, out, err = run(attn, problem)
        if rc != 0:
            failures.append(f"{name}: exit {rc}: {err.strip()}")
            return None
        return steps_of(out)

    # ---- positions ------------------------------------------------------------------------------
    for case in range(24):
        B = [None, 1, 2][case % 3]
        T = [1, 2, 3, 5, 8, 13][case % 6]
        H = [1, 2, 3][case % 3]
        C = H * [2, 3, 4][(case // 3) % 3]
        causal = case % 2 == 1
        learned = case % 4 >= 2
        P = T + (case % 3)
        x = rng.standard_normal((B or 1, T, C)).astype(np.float32)
        w = {n: rng.standard_normal((C, C)).astype(np.float32) / np.sqrt(C) for n in ("W_q", "W_k", "W_v")}
        table = rng.standard_normal((P, C)).astype(np.float32) if learned else None
        problem = {"mode": "causal" if causal else ("multi-head" if H > 1 else "self"), "heads": H,
                   "embeddings": (x if B else x[0]).tolist(), "weights": {n: m.tolist() for n, m in w.items()},
                   "positions": {"learned": table.tolist()} if learned else "sinusoidal"}
        name = f"positions case {case} ({'learned' if learned else 'sinusoidal'}, B={B}, T={T}, C={C}, H={H}, causal={causal})"
        got = traced(name, problem)
        if got is None:
            continue
        pe = torch.tensor(table[:T], dtype=torch.float64) if learned else sinusoidal(T, C)
        xs = torch.tensor(x, dtype=torch.float64)
        want_x = xs + pe
        want_out = attention(want_x, *(torch.tensor(w[n], dtype=torch.float64) for n in ("W_q", "W_k", "W_v")), H, causal)
        last = "merged" if H > 1 else "context"
        compare(name + " positions", "positions", got.get("positions"), pe)
        compare(name + " x.pos", "positions", got.get("x.pos"), want_x if B else want_x[0])
        ctx = got.get(last)
        compare(name + " " + last, "positions", ctx, want_out if B else want_out[0])

    # ---- rope -----------------------------------------------------------------------------------
    for case in range(48):
        B = [None, 1, 2][case % 3]
        H = [1, 2, 4][(case // 3) % 3]
        hs = [2, 4, 6, 8][case % 4]
        mode = ["self", "causal", "cross"][(case // 2) % 3]
        T = [1, 3, 4, 7][(case // 5) % 4]
        S = [2, 5, 3][case % 3] if mode == "cross" else T
        R = [hs, 2, hs // 2 if hs % 4 == 0 else hs][(case // 4) % 3]
        style = ["half", "interleaved"][case % 2 if case < 24 else (case // 7) % 2]
        offset = [0, 0, 3, 17][(case // 6) % 4]
        theta = [10000.0, 10000.0, 500000.0, 100.0][(case // 12) % 4]
        given = case % 5 == 4 and mode != "cross"   # q, k, v given directly
        C = H * hs
        rope = {"style": style, "offset": offset, "theta": theta}
        if R != hs or case % 7 == 0:
            rope["dims"] = R
        problem = {"mode": mode, "heads": H, "rope": rope}
        bt = lambda L, W: rng.standard_normal((B or 1, L, W)).astype(np.float32)
        unb = lambda a: (a if B else a[0]).tolist()
        if given:
            q, k, v = bt(T, C), bt(S, C), bt(S, C)
            problem.update({"q": unb(q), "k": unb(k), "v": unb(v)})
            qt, kt, vt = (torch.tensor(a, dtype=torch.float64) for a in (q, k, v))
        else:
            x = bt(T, C)
            src = bt(S, C) if mode == "cross" else x
            w = {n: rng.standard_normal((C, C)).astype(np.float32) / np.sqrt(C) for n in ("W_q", "W_k", "W_v")}
            problem.update({"embeddings": unb(x), "weights": {n: m.tolist() for n, m in w.items()}})
            if mode == "cross":
                problem["source"] = {"embeddings": unb(src)}
            xt, st = torch.tensor(x, dtype=torch.float64), torch.tensor(src, dtype=torch.float64)
            qt, kt, vt = xt @ torch.tensor(w["W_q"], dtype=torch.float64), st @ torch.tensor(w["W_k"], dtype=torch.float64), \
                st @ torch.tensor(w["W_v"], dtype=torch.float64)
        name = f"rope case {case} ({style}, B={B}, H={H}, hs={hs}, R={R}, T={T}, S={S}, {mode}, offset={offset}, theta={theta:g}{', given q k v' if given else ''})"
        got = traced(name, problem)
        if got is None:
            continue
        Bn = B or 1
        key_first = 0 if mode == "cross" else offset + T - S
        first = min(offset, key_first)
        end = max(offset + T, key_first + S)
        cos, sin = rope_tables(torch.arange(first, end), R, theta)
        qh = qt.view(Bn, T, H, hs).transpose(1, 2)
        kh = kt.view(Bn, S, H, hs).transpose(1, 2)
        vh = vt.view(Bn, S, H, hs).transpose(1, 2)
        qr = apply_rope(qh, cos[offset - first: offset - first + T], sin[offset - first: offset - first + T], R, style)
        kr = apply_rope(kh, cos[key_first - first: key_first - first + S], sin[key_first - first: key_first - first + S], R, style)
        scores = qr @ kr.transpose(-2, -1) / hs ** 0.5
        if mode == "causal":
            scores = scores.masked_fill(~torch.ones(T, S, dtype=torch.bool).tril(), float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        ctx = weights @ vh

        def shaped(t):  # drop B and H as the trace does
            if H == 1:
                t = t[:, 0]
            return t if B else t[0]
        compare(name + " rope.cos", "rope", got.get("rope.cos"), cos)
        compare(name + " rope.sin", "rope", got.get("rope.sin"), sin)
        compare(name + " q.rope", "rope", got.get("q.rope"), shaped(qr))
        compare(name + " k.rope", "rope", got.get("k.rope"), shaped(kr))
        compare(name + " weights", "rope", got.get("weights"), shaped(weights))
        compare(name + " context", "rope", got.get("context"), shaped(ctx))

    # ---- window ---------------------------------------------------------------------------------
    for case in range(24):
        B = [None, 1, 3][case % 3]
        H = [1, 2][(case // 3) % 2]
        hs = 4
        T = [1, 4, 7, 9][(case // 2) % 4]
        W = [1, 2, 3, 100][case % 4]
        bottom_right = case % 6 == 5
        S = T + 3 if bottom_right else T
        padded = B == 3 and case % 2 == 0
        Bn = B or 1
        q, k, v = (rng.standard_normal((Bn, L, H * hs)).astype(np.float32) for L in (T, S, S))
        unb = lambda a: (a if B else a[0]).tolist()
        problem = {"mode": "causal", "heads": H, "window": W, "q": unb(q), "k": unb(k), "v": unb(v), "masked_row": "zeros"}
        if bottom_right:
            problem["causal_align"] = "bottom-right"
        lengths = [S, max(1, S - 2), max(1, S // 2)] if padded else None
        if lengths:
            problem["padding"] = {"lengths": lengths}
        name = f"window case {case} (W={W}, B={B}, H={H}, T={T}, S={S}{', bottom-right' if bottom_right else ''}{', padded' if padded else ''})"
        got = traced(name, problem)
        if got is None:
            continue
        off = S - T if bottom_right else 0
        i = torch.arange(T)[:, None] + off
        j = torch.arange(S)[None, :]
        keep = (j <= i) & ~(j <= i - W)              # HF Mistral: sliding_attend_mask = j <= i - W is blocked
        keep = keep[None].expand(Bn, T, S).clone()
        if lengths:
            keep &= torch.arange(S)[None, None, :] < torch.tensor(lengths)[:, None, None]
        qh, kh, vh = (torch.tensor(a, dtype=torch.float64).view(Bn, -1, H, hs).transpose(1, 2) for a in (q, k, v))
        scores = (qh @ kh.transpose(-2, -1) / hs ** 0.5).masked_fill(~keep[:, None], float("-inf"))
        weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)   # masked_row "zeros"
        ctx = weights @ vh

        def shaped(t):
            if H == 1:
                t = t[:, 0]
            return t if B else t[0]
        # the mask step: [T, S] when every batch row shares it, [B, T, S] with padding
        compare(name + " mask", "window", got.get("mask"), (keep if lengths else keep[0]).to(torch.float64))
        compare(name + " weights", "window", got.get("weights"), shaped(weights))
        compare(name + " context", "window", got.get("context"), shaped(ctx))

    # ---- alibi and softcap -----------------------------------------------------------------------
    for case in range(36):
        B = [None, 2][case % 2]
        H = [1, 2, 3, 5, 6, 8][case % 6]
        hs = 2
        T = [1, 3, 6, 9][(case // 3) % 4]
        bottom_right = case % 9 == 8
        S = T + 2 if bottom_right else T
        mode = "causal" if case % 3 != 0 or bottom_right else "self"
        use_alibi = case % 4 != 3
        given = use_alibi and case % 5 == 2
        cap = [None, 1.0, 5.0, 50.0][(case // 2) % 4] if case % 4 != 0 else 20.0
        Bn = B or 1
        q, k, v = (rng.standard_normal((Bn, L, H * hs)).astype(np.float32) * 2 for L in (T, S, S))
        unb = lambda a: (a if B else a[0]).tolist()
        slopes = [float(np.float32(rng.uniform(-0.5, 1.0))) for _ in range(H)] if given else get_slopes(H)
        problem = {"mode": mode, "heads": H, "q": unb(q), "k": unb(k), "v": unb(v)}
        if use_alibi:
            problem["alibi"] = {"slopes": slopes} if given else True
        if cap is not None:
            problem["softcap"] = cap
        if bottom_right:
            problem["causal_align"] = "bottom-right"
        name = f"alibi/softcap case {case} (H={H}, B={B}, T={T}, S={S}, {mode}, alibi={'given' if given else use_alibi}, cap={cap})"
        got = traced(name, problem)
        if got is None:
            continue
        off = S - T if bottom_right else 0
        qh, kh, vh = (torch.tensor(a, dtype=torch.float64).view(Bn, -1, H, hs).transpose(1, 2) for a in (q, k, v))
        logits = qh @ kh.transpose(-2, -1) / hs ** 0.5
        bias = None
        if use_alibi:
            dist = (torch.arange(T)[:, None] + off - torch.arange(S)[None, :]).to(torch.float64)
            bias = -torch.tensor(slopes, dtype=torch.float64)[:, None, None] * dist
            logits = logits + bias
        biased = logits
        if cap is not None:
            logits = cap * torch.tanh(logits / cap)
        if mode == "causal":
            logits = logits.masked_fill(~(torch.arange(S)[None, :] <= torch.arange(T)[:, None] + off), float("-inf"))
        weights = torch.softmax(logits, dim=-1)
        ctx = weights @ vh

        def shaped(t):
            if H == 1:
                t = t[:, 0]
            return t if B else t[0]
        if use_alibi:
            compare(name + " alibi", "alibi", got.get("alibi"), bias[0] if H == 1 else bias)
            compare(name + " biased", "alibi", got.get("biased"), shaped(biased))
        if cap is not None:
            capped = cap * torch.tanh(biased / cap)
            compare(name + " capped", "softcap", got.get("capped"), shaped(capped))
        compare(name + " weights", "alibi" if use_alibi else "softcap", got.get("weights"), shaped(weights))
        compare(name + " context", "alibi" if use_alibi else "softcap", got.get("context"), shaped(ctx))


    # ---- kv_heads (grouped-query attention) -------------------------------------------------------
    for case in range(48):
        B = [None, 2][case % 2]
        H = [2, 4, 6, 8][(case // 2) % 4]
        Hkv = [1, 2, H][case % 3] if H % [1, 2, H][case % 3] == 0 else 1
        hs = [2, 4, 6][(case // 3) % 3]
        hv = hs if case % 5 != 3 else hs + 1
        entry = ["separate", "fused", "given"][(case // 4) % 3]
        mode = ["self", "causal", "cross"][(case // 6) % 3] if entry != "fused" else ["self", "causal"][(case // 6) % 2]
        T = [1, 3, 5, 6, 7][case % 5]
        S = [2, 5, 4][case % 3] if mode == "cross" else T
        use_rope = case % 4 != 1
        style = ["half", "interleaved"][(case // 5) % 2]
        R = hs if case % 7 != 2 else 2
        offset = [0, 4][(case // 8) % 2]
        W = [None, 1, 2, 3][(case // 3) % 4] if mode == "causal" else None
        C, Bn = H * hs, B or 1
        problem = {"mode": mode, "heads": H, "kv_heads": Hkv}
        if use_rope:
            problem["rope"] = {"style": style, "dims": R, "offset": offset}
        if W:
            problem["window"] = W
        unb = lambda a: (a if B else a[0]).tolist()
        f64 = lambda a: torch.tensor(a, dtype=torch.float64)
        if entry == "given":
            q = rng.standard_normal((Bn, T, H * hs)).astype(np.float32)
            k = rng.standard_normal((Bn, S, Hkv * hs)).astype(np.float32)
            v = rng.standard_normal((Bn, S, Hkv * hv)).astype(np.float32)
            problem.update({"q": unb(q), "k": unb(k), "v": unb(v)})
            qt, kt, vt = f64(q), f64(k), f64(v)
        else:
            Cs = C + 1 if mode == "cross" and case % 2 == 0 else C
            x = rng.standard_normal((Bn, T, C)).astype(np.float32)
            src = rng.standard_normal((Bn, S, Cs)).astype(np.float32) if mode == "cross" else x
            wq = rng.standard_normal((C, H * hs)).astype(np.float32) / np.sqrt(C)
            wk = rng.standard_normal((Cs, Hkv * hs)).astype(np.float32) / np.sqrt(C)
            wv = rng.standard_normal((Cs, Hkv * hv)).astype(np.float32) / np.sqrt(C)
            problem["embeddings"] = unb(x)
            if mode == "cross":
                problem["source"] = {"embeddings": unb(src)}
            if entry == "fused":
                problem["weights"] = {"W_qkv": np.concatenate([wq, wk, wv], axis=1).tolist()}
                if hv != hs:
                    problem["dv"] = H * hv
            else:
                problem["weights"] = {"W_q": wq.tolist(), "W_k": wk.tolist(), "W_v": wv.tolist()}
            qt, kt, vt = f64(x) @ f64(wq), f64(src) @ f64(wk), f64(src) @ f64(wv)
        name = (f"kv_heads case {case} (H={H}, Hkv={Hkv}, hs={hs}, hv={hv}, {entry}, {mode}, B={B}, T={T}, S={S}"
                f"{f', rope {style} R={R} offset={offset}' if use_rope else ''}{f', window {W}' if W else ''})")
        got = traced(name, problem)
        if got is None:
            continue
        qh = qt.view(Bn, T, H, hs).transpose(1, 2)
        kh = kt.view(Bn, S, Hkv, hs).transpose(1, 2)
        vh = vt.view(Bn, S, Hkv, hv).transpose(1, 2)
        if use_rope:
            key_first = 0 if mode == "cross" else offset + T - S
            first = min(offset, key_first)
            cos, sin = rope_tables(torch.arange(first, max(offset + T, key_first + S)), R, 10000.0)
            qh = apply_rope(qh, cos[offset - first: offset - first + T], sin[offset - first: offset - first + T], R, style)
            kh = apply_rope(kh, cos[key_first - first: key_first - first + S], sin[key_first - first: key_first - first + S], R, style)
        kr, vr = repeat_kv(kh, H // Hkv), repeat_kv(vh, H // Hkv)
        scores = qh @ kr.transpose(-2, -1) / hs ** 0.5
        if mode == "causal":
            i, j = torch.arange(T)[:, None], torch.arange(S)[None, :]
            keep = (j <= i) & ~(j <= i - W) if W else (j <= i)
            scores = scores.masked_fill(~keep, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        ctx = weights @ vr
        merged = ctx.transpose(1, 2).reshape(Bn, T, H * hv)
        unbatch = lambda t: t if B else t[0]
        if Hkv != H:
            compare(name + " k.repeat", "kv_heads", got.get("k.repeat"), unbatch(kr))
            compare(name + " v.repeat", "kv_heads", got.get("v.repeat"), unbatch(vr))
        elif "k.repeat" in got:
            failures.append(name + ": k.repeat shown with Hkv = H (nothing is repeated)")
        if use_rope:
            compare(name + " k.rope", "kv_heads", got.get("k.rope"), unbatch(kh[:, 0] if Hkv == 1 else kh))
        compare(name + " weights", "kv_heads", got.get("weights"), unbatch(weights))
        compare(name + " merged", "kv_heads", got.get("merged"), unbatch(merged))

    # refused inputs: exit 2 and the JSON path
    base = {"mode": "self", "embeddings": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
            "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}}
    refusals = [
        ({"positions": "rotary"}, "positions"),
        ({"positions": {"learned": [[0.0, 0.0]]}}, "positions.learned"),
        ({"positions": {"learned": [[0.0, 0.0, 0.0]] * 3}}, "positions.learned"),
        ({"positions": {"table": [[0.0, 0.0]] * 3}}, "positions.table"),
        ({"positions": 3}, "positions"),
        ({"rope": {"style": "neox"}}, "rope.style"),
        ({"rope": {"dims": 3}}, "rope.dims"),
        ({"rope": {"dims": 4}}, "rope.dims"),
        ({"rope": {"theta": 0}}, "rope.theta"),
        ({"rope": {"offset": -1}}, "rope.offset"),
        ({"rope": {"offset": 1.5}}, "rope.offset"),
        ({"rope": {"base": 10000}}, "rope.base"),
        ({"rope": True}, "rope"),
        ({"window": 2}, "window"),
        ({"mode": "causal", "window": 0}, "window"),
        ({"mode": "causal", "window": 1.5}, "window"),
        ({"alibi": False}, "alibi"),
        ({"alibi": {"slopes": [0.5, 0.25]}}, "alibi.slopes"),
        ({"alibi": {"slopes": ["0.5"]}}, "alibi.slopes[0]"),
        ({"alibi": {"slope": [0.5]}}, "alibi.slope"),
        ({"softcap": 0}, "softcap"),
        ({"softcap": "50"}, "softcap"),
        ({"heads": 2, "kv_heads": 3, "embeddings": [[1.0, 0.0, 1.0, 0.0]]}, "kv_heads"),
        ({"heads": 2, "kv_heads": 0}, "kv_heads"),
        ({"heads": 2, "kv_heads": "1"}, "kv_heads"),
        ({"heads": 2, "kv_heads": 1, "weights": {"W_q": "identity", "W_k": "identity", "W_v": [[1.0], [0.0]]}}, "weights.W_k"),
        ({"heads": 4, "kv_heads": 2, "embeddings": [[1.0, 0.0, 1.0, 0.0]],
          "weights": {"W_q": "identity", "W_k": [[1.0, 0.0]] * 4, "W_v": [[1.0, 0.0, 0.0]] * 4}}, "weights.W_v"),
        ({"heads": 2, "kv_heads": 1, "weights": {"W_qkv": [[1.0] * 5] * 2}}, "weights.W_qkv"),
        ({"heads": 2, "kv_heads": 1, "weights": {"W_q": "identity", "W_k": [[1.0], [0.0]], "W_v": [[1.0], [0.0]], "b_k": [0.0, 0.0]}}, "weights.b_k"),
    ]
    for extra, path in refusals:
        rc, _, err = run(attn, {**base, **extra})
        checked += 1
        if rc != 2 or not err.startswith(f"attn: {path}"):
            failures.append(f"refusal {extra}: exit {rc}, message {err.strip()!r} (wanted exit 2 naming {path})")
    rc, _, err = run(attn, {"mode": "self", "scores": [[1.0, 0.0], [0.0, 1.0]], "rope": {}})
    checked += 1
    if rc != 2 or not err.startswith("attn: rope"):
        failures.append(f"rope with scores given: exit {rc}, {err.strip()!r}")
    for problem, path in [({"mode": "self", "scores": [[1.0, 0.0], [0.0, 1.0]], "heads": 1, "kv_heads": 1}, "kv_heads"),
                          ({"mode": "self", "heads": 2, "kv_heads": 1, "q": [[1.0, 0.0]], "k": [[1.0, 0.0]]}, "k"),
                          ({"mode": "self", "heads": 4, "kv_heads": 2, "q": [[1.0, 0.0, 1.0, 0.0]], "k": [[1.0, 0.0]], "v": [[1.0, 2.0, 3.0]]}, "v")]:
        rc, _, err = run(attn, problem)
        checked += 1
        if rc != 2 or not err.startswith(f"attn: {path}"):
            failures.append(f"refusal {problem}: exit {rc}, {err.strip()!r} (wanted exit 2 naming {path})")
    rc, _, err = run(attn, {"mode": "self", "q": [[1.0]], "k": [[1.0]], "v": [[1.0]], "positions": "sinusoidal"})
    checked += 1
    if rc != 2 or "positions" not in err:
        failures.append(f"positions with q, k, v given: exit {rc}, {err.strip()!r}")

    for f in failures[:30]:
        print("FAIL", f)
    for variant, d in sorted(worst.items()):
        print(f"{variant}: largest difference {d:.3g} (tolerance {TOL})")
    print(f"{checked} checks, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
