#!/usr/bin/env python3
"""The sweep that found scripts/train_induction.py's setting: one training run per process, on a GPU
when there is one, logging how far a previous-token head and an induction head have formed.

Data: 64 random tokens (--V of them); a segment of --Lmin to --Lmax tokens at a random place, copied
0 to --gapmax tokens after it ends; loss weight 1 on the copy's predictable positions, --wother
elsewhere. Model: GPT-2's attention blocks (--mlp 1 adds the MLPs), --layers × --H heads, width --d.
Probe (the issue's measure): 8 random tokens, then n random tokens twice, n = 6, 10, 16, 24;
prev = mean w[i, i−1]; ind = mean over the second copy's queries of the weight on the key after the
query token's earlier occurrence. A "hit" is the first probe with some head at prev ≥ 0.4 and a
layer-1 head at ind ≥ 0.4 for every n. Logs: OUT/NAME.log, a JSON line per probe.

Usage: induction_sweep.py --name NAME --out DIR [--seconds S] [options below]

Run of 2026-11-26 on one H100 (16 processes side by side; defaults: V 100, d 64, H 4, lr 1e-3,
batch 128, L 4..24, gapmax 0, wother 1, LayerNorm, no MLP, seed 1). Final maxprev / maxind at n = 16:
  first run, 400 s each (about 17,000 steps), no gap:
    c01 defaults 0.34 / 0.29          c02 lr 3e-3 0.28 / 0.07          c03 lr 3e-3 H 2 0.13 / 0.01
    c04 d 128 0.51 / 0.35             c05 d 128 H 2 batch 256 0.46 / 0.01
    c08 wother 0 0.12 / 0.01          c09 no LayerNorm 0.10 / 0.06     c10 V 300 0.27 / 0.00
    c11 MLP 0.18 / 0.07               c12 batch 32 0.21 / 0.00         c13 lr 1e-2 warmup 500 0.51 / 0.09
    c14 L 2..30 lr 3e-3 H 2 0.04 / 0.01   c15 V 50 0.16 / 0.01         c16 lr 3e-3 seed 2 0.31 / 0.01
  with a gap:
    c06 gapmax 16: hit at step 1,750; 0.99 / 0.98
    c07 gapmax 16 lr 3e-3 H 2: 0.05 / 0.00
  second run, 170 s each (about 8,000 steps), all gapmax 16 unless said:
    s01 seed 2 hit 1,625   s02 seed 3 hit 1,875   s03 seed 4 hit 1,500   s04 batch 32 hit 3,375
    s05 batch 64 hit 2,250   s06 batch 64 seed 2 hit 2,125   s08 gapmax 32 L 4..16 hit 2,125
    s11 wother 0.1 hit 750   s13 V 200 hit 1,625   s14 batch 32 seed 2 hit 3,500
    no hit: s07 gapmax 8 (0.19 / 0.02), s09 lr 2e-3 (0.25 / 0.03), s10 H 2 (0.24 / 0.01),
            s12 MLP (0.24 / 0.02), s15 batch 64 lr 2e-3 (0.44 / 0.55 at n = 16, not at every n),
            s16 L 2..20 (0.05 / 0.02)
  then on 2 CPU cores (gapmax 16, wother 0.1, batch 64): hit at step 1,125, 0.90 / 0.88 by 1,875.
scripts/train_induction.py uses that last setting.
"""
import argparse, json, math, os, time
import torch

ap = argparse.ArgumentParser(description="one run of the induction sweep (see the docstring)")
ap.add_argument("--name", required=True)
ap.add_argument("--V", type=int, default=100)
ap.add_argument("--P", type=int, default=64)
ap.add_argument("--d", type=int, default=64)
ap.add_argument("--H", type=int, default=4)
ap.add_argument("--layers", type=int, default=2)
ap.add_argument("--lr", type=float, default=1e-3)
ap.add_argument("--wd", type=float, default=0.01)
ap.add_argument("--warmup", type=int, default=0)
ap.add_argument("--batch", type=int, default=128)
ap.add_argument("--steps", type=int, default=1000000)
ap.add_argument("--seconds", type=float, default=480)
ap.add_argument("--Lmin", type=int, default=4)
ap.add_argument("--Lmax", type=int, default=24)
ap.add_argument("--gapmax", type=int, default=0)
ap.add_argument("--wother", type=float, default=1.0)
ap.add_argument("--ln", type=int, default=1)
ap.add_argument("--mlp", type=int, default=0)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--every", type=int, default=250)
ap.add_argument("--out", default=".")
ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
ap.add_argument("--threads", type=int, default=1)
a = ap.parse_args()
torch.set_num_threads(a.threads)
dev = torch.device(a.device)
torch.manual_seed(a.seed)
gen = torch.Generator(device="cpu").manual_seed(a.seed + 1000)
V, P, C, H = a.V, a.P, a.d, a.H


def batch(B):
    x = torch.randint(0, V, (B, P + 1), generator=gen)
    L = torch.randint(a.Lmin, a.Lmax + 1, (B, 1), generator=gen)
    gap = torch.randint(0, a.gapmax + 1, (B, 1), generator=gen)
    room = (P + 1 - 2 * L - gap).clamp(min=0)
    start = (torch.rand(B, 1, generator=gen) * (room + 1).float()).floor().long()
    pos = torch.arange(P + 1)[None]
    s2 = start + L + gap
    second = (pos >= s2) & (pos < s2 + L)
    src = torch.where(second, pos - L - gap, pos)
    x = x.gather(1, src)
    w = torch.full((B, P), a.wother)
    t = torch.arange(P)[None]
    pred = (t + 1 > s2) & (t + 1 < s2 + L)  # target x[t+1] inside the copy, not its first token
    w[pred] = 1.0
    return x[:, :P].to(dev), x[:, 1:].to(dev), w.to(dev)


class Block(torch.nn.Module):
    def __init__(s):
        super().__init__()
        s.ln1 = torch.nn.LayerNorm(C) if a.ln else torch.nn.Identity()
        s.qkv = torch.nn.Linear(C, 3 * C); s.o = torch.nn.Linear(C, C)
        if a.mlp:
            s.ln2 = torch.nn.LayerNorm(C) if a.ln else torch.nn.Identity()
            s.fc = torch.nn.Linear(C, 4 * C); s.proj = torch.nn.Linear(4 * C, C)

    def forward(s, h, mask):
        B, T, _ = h.shape
        q, k, v = s.qkv(s.ln1(h)).split(C, -1)
        sh = lambda t: t.view(B, T, H, C // H).transpose(1, 2)
        q, k, v = sh(q), sh(k), sh(v)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(C // H)
        att = att.masked_fill(mask[:T, :T], float("-inf")).softmax(-1)
        h = h + s.o((att @ v).transpose(1, 2).reshape(B, T, C))
        if a.mlp:
            h = h + s.proj(torch.nn.functional.gelu(s.fc(s.ln2(h)), approximate="tanh"))
        return h, att


class Model(torch.nn.Module):
    def __init__(s):
        super().__init__()
        s.wte = torch.nn.Embedding(V, C); s.wpe = torch.nn.Embedding(P, C)
        torch.nn.init.normal_(s.wte.weight, std=0.02 * math.sqrt(64 / C) * 5)
        torch.nn.init.normal_(s.wpe.weight, std=0.02 * math.sqrt(64 / C) * 5)
        s.blocks = torch.nn.ModuleList([Block() for _ in range(a.layers)])
        s.lnf = torch.nn.LayerNorm(C) if a.ln else torch.nn.Identity()
        s.register_buffer("mask", torch.ones(P, P, dtype=torch.bool).triu(1))

    def forward(s, x):
        h = s.wte(x) + s.wpe(torch.arange(x.shape[1], device=x.device))
        atts = []
        for b in s.blocks:
            h, att = b(h, s.mask); atts.append(att)
        return s.lnf(h) @ s.wte.weight.T, atts


m = Model().to(dev)
opt = torch.optim.AdamW(m.parameters(), lr=a.lr, weight_decay=a.wd)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda st: min(1.0, (st + 1) / a.warmup) if a.warmup else 1.0)

pg = torch.Generator(device="cpu").manual_seed(99)
probes = []
for n in (6, 10, 16, 24):
    xs = []
    for _ in range(16):
        seg = torch.randint(0, V, (n,), generator=pg)
        xs.append(torch.cat([torch.randint(0, V, (8,), generator=pg), seg, seg]))
    probes.append((n, torch.stack(xs).to(dev)))


@torch.no_grad()
def probe():
    out = {}
    for n, x in probes:
        logits, atts = m(x)
        T = x.shape[1]
        qs = torch.arange(8 + n, T, device=dev)
        acc = (logits[:, 8 + n:T - 1].argmax(-1) == x[:, 8 + n + 1:T]).float().mean().item()  # the second copy predicted
        prev, ind = [], []
        for att in atts:
            i = torch.arange(1, T, device=dev)
            prev.append(att[:, :, i, i - 1].mean((0, 2)).tolist())
            ind.append(att[:, :, qs, qs - n + 1].mean((0, 2)).tolist())
        out[n] = {"acc": round(acc, 3), "prev": [[round(v, 2) for v in r] for r in prev],
                  "ind": [[round(v, 2) for v in r] for r in ind]}
    return out


t0 = time.time()
log = open(os.path.join(a.out, a.name + ".log"), "w")
print(json.dumps(vars(a)), file=log, flush=True)
first_hit = None
for step in range(a.steps + 1):
    x, y, w = batch(a.batch)
    logits, _ = m(x)
    ce = torch.nn.functional.cross_entropy(logits.reshape(-1, V), y.reshape(-1), reduction="none")
    loss = (ce * w.reshape(-1)).sum() / w.sum()
    opt.zero_grad(set_to_none=True); loss.backward(); opt.step(); sched.step()
    if step % a.every == 0:
        r = probe()
        maxprev = max(max(row) for row in r[16]["prev"])
        maxind = max(max(row) for row in r[16]["ind"][1:]) if a.layers > 1 else 0
        hit = all(max(max(row) for row in r[n]["ind"][1:]) >= 0.4 for n, _ in probes) and maxprev >= 0.4
        if hit and first_hit is None:
            first_hit = step
        el = time.time() - t0
        print(f"{step} {el:.0f}s loss {loss.item():.3f} maxprev16 {maxprev:.2f} maxind16 {maxind:.2f} hit {first_hit} "
              + json.dumps(r), file=log, flush=True)
        if el > a.seconds:
            break
torch.save(m.state_dict(), os.path.join(a.out, a.name + ".pt"))
print(f"done {a.name} step {step} first_hit {first_hit}", file=log, flush=True)
