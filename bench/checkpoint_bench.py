#!/usr/bin/env python3
"""Real-size checkpoints, traced as a learner would: attn as a whole process beside PyTorch as a whole
process doing the same forward pass to the same layer in float32 (Python's start, `import torch` and
reading the weights included), best of 3 each, in one run; and attn's memory beyond the mapped file.

- GPT-2 small's shape (C 768, 12 layers × 12 heads, vocabulary 50,257, F32): layer 11 on 64 tokens.
- Llama-3.2-1B's shape (C 2048, 16 layers, 32 heads on 8 kv heads, head_dim 64, MLP 8192, vocabulary
  128,256, tied embeddings, BF16, Llama 3's RoPE scaling): layer 15 on 128 tokens.

Random weights in the real names, shapes and dtypes (the values do not change the work). attn runs
`attn run SPEC --steps weights` (the traced layer's attention weights, printed); PyTorch computes the
same layers (embeddings, norms, projections, RoPE, grouped heads, causal softmax, MLP) in float32
with its weights read from the same file (memory-mapped, BF16 converted by torch), and the traced
layer's weights. The limit is the FLOPs of that forward pass ÷ the sgemm rate PyTorch measures in
the same run. bench/run.py calls measure() and rows(); run alone this prints them.

Usage: /usr/bin/python3 bench/checkpoint_bench.py [--build build] [--threads N] [--only gpt2|llama]
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = "/usr/bin/python3"

MODELS = {
    "gpt2": dict(kind="gpt2", label="GPT-2 small shape (F32)", C=768, H=12, Hkv=12, hd=64, L=12, I=3072, V=50257, T=64,
                 layer=11, dtype="F32"),
    "llama": dict(kind="llama", label="Llama-3.2-1B shape (BF16)", C=2048, H=32, Hkv=8, hd=64, L=16, I=8192, V=128256,
                  T=128, layer=15, dtype="BF16"),
}

# PyTorch's whole process: read the safetensors header, map the file, convert each tensor to float32
# as it is used, and run the forward pass to the layer (the published architectures' steps).
ANCHOR = r'''
import json, math, mmap, struct, sys, warnings
cfg = json.loads(sys.argv[1])
warnings.filterwarnings("ignore", "The given buffer is not writable")  # torch.frombuffer on the read-only map: read, never written
import torch
torch.set_num_threads(cfg["threads"])
if cfg.get("sgemm"):
    import time
    n = cfg["sgemm"]; a = torch.randn(n, n); b = torch.randn(n, n); a @ b
    best = min((lambda t0: (a @ b, time.perf_counter() - t0)[1])(time.perf_counter()) for _ in range(5))
    print(json.dumps({"rate": 2 * n ** 3 / best})); sys.exit(0)
f = open(cfg["file"], "rb"); m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
n = struct.unpack("<Q", m[:8])[0]; header = json.loads(m[8:8 + n]); base = 8 + n
def W(name):
    h = header[name]; b, e = h["data_offsets"]
    raw = torch.frombuffer(m, dtype=torch.bfloat16 if h["dtype"] == "BF16" else torch.float32, count=(e - b) // (2 if h["dtype"] == "BF16" else 4), offset=base + b)
    return raw.float().view(h["shape"])
ids = torch.tensor(cfg["ids"]); T = len(cfg["ids"]); C, H, Hkv, hd, layer = cfg["C"], cfg["H"], cfg["Hkv"], cfg["hd"], cfg["layer"]
causal = torch.ones(T, T, dtype=torch.bool).tril()
def attend(q, k, v):
    s = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
    w = torch.softmax(s.masked_fill(~causal, float("-inf")), dim=-1)
    return w, w @ v
with torch.no_grad():
    if cfg["kind"] == "gpt2":
        h = W("wte.weight")[ids] + W("wpe.weight")[:T]
        ln = lambda x, p: torch.nn.functional.layer_norm(x, (C,), W(p + ".weight"), W(p + ".bias"), 1e-5)
        for i in range(layer + 1):
            p = f"h.{i}."
            a = ln(h, p + "ln_1")
            q, k, v = (a @ W(p + "attn.c_attn.weight") + W(p + "attn.c_attn.bias")).split(C, dim=-1)
            heads = lambda t: t.view(T, H, hd).transpose(0, 1)
            w, ctx = attend(heads(q), heads(k), heads(v))
            if i == layer: break
            h = h + ctx.transpose(0, 1).reshape(T, C) @ W(p + "attn.c_proj.weight") + W(p + "attn.c_proj.bias")
            m2 = torch.nn.functional.gelu(ln(h, p + "ln_2") @ W(p + "mlp.c_fc.weight") + W(p + "mlp.c_fc.bias"), approximate="tanh")
            h = h + m2 @ W(p + "mlp.c_proj.weight") + W(p + "mlp.c_proj.bias")
    else:
        lin = torch.nn.functional.linear
        def rms(x, name):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * W(name)
        inv = 1.0 / (500000.0 ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
        wl = 2 * math.pi / inv  # Llama 3's scaling: factor 32, low 1, high 4, original 8192
        smooth = (8192 / wl - 1) / (4 - 1)
        inv = torch.where(wl > 8192, inv / 32, torch.where(wl < 8192 / 4, inv, (1 - smooth) * inv / 32 + smooth * inv))
        ang = torch.outer(torch.arange(T, dtype=torch.float64), inv); ang = torch.cat((ang, ang), -1)
        cos, sin = ang.cos().float(), ang.sin().float()
        rot = lambda x: torch.cat((-x[..., hd // 2:], x[..., :hd // 2]), -1)
        h = W("model.embed_tokens.weight")[ids]
        for i in range(layer + 1):
            p = f"model.layers.{i}."
            a = rms(h, p + "input_layernorm.weight")
            q = lin(a, W(p + "self_attn.q_proj.weight")).view(T, H, hd).transpose(0, 1)
            k = lin(a, W(p + "self_attn.k_proj.weight")).view(T, Hkv, hd).transpose(0, 1)
            v = lin(a, W(p + "self_attn.v_proj.weight")).view(T, Hkv, hd).transpose(0, 1)
            q, k = q * cos + rot(q) * sin, k * cos + rot(k) * sin
            k, v = k.repeat_interleave(H // Hkv, 0), v.repeat_interleave(H // Hkv, 0)
            w, ctx = attend(q, k, v)
            if i == layer: break
            h = h + lin(ctx.transpose(0, 1).reshape(T, H * hd), W(p + "self_attn.o_proj.weight"))
            g = rms(h, p + "post_attention_layernorm.weight")
            h = h + lin(torch.nn.functional.silu(lin(g, W(p + "mlp.gate_proj.weight"))) * lin(g, W(p + "mlp.up_proj.weight")),
                        W(p + "mlp.down_proj.weight"))
    print(json.dumps({"weights_sum": float(w.sum())}))
'''


def names_and_shapes(m):
    """(name, shape) in the hub's names, state-dict order."""
    C, I, V, hd = m["C"], m["I"], m["V"], m["hd"]
    out = []
    if m["kind"] == "gpt2":
        out += [("wte.weight", [V, C]), ("wpe.weight", [1024, C])]
        for i in range(m["L"]):
            p = f"h.{i}."
            out += [(p + "ln_1.weight", [C]), (p + "ln_1.bias", [C]), (p + "attn.c_attn.weight", [C, 3 * C]), (p + "attn.c_attn.bias", [3 * C]),
                    (p + "attn.c_proj.weight", [C, C]), (p + "attn.c_proj.bias", [C]), (p + "ln_2.weight", [C]), (p + "ln_2.bias", [C]),
                    (p + "mlp.c_fc.weight", [C, I]), (p + "mlp.c_fc.bias", [I]), (p + "mlp.c_proj.weight", [I, C]), (p + "mlp.c_proj.bias", [C])]
        return out + [("ln_f.weight", [C]), ("ln_f.bias", [C])]
    out.append(("model.embed_tokens.weight", [V, C]))
    for i in range(m["L"]):
        p = f"model.layers.{i}."
        out += [(p + "input_layernorm.weight", [C]), (p + "self_attn.q_proj.weight", [m["H"] * hd, C]),
                (p + "self_attn.k_proj.weight", [m["Hkv"] * hd, C]), (p + "self_attn.v_proj.weight", [m["Hkv"] * hd, C]),
                (p + "self_attn.o_proj.weight", [C, m["H"] * hd]), (p + "post_attention_layernorm.weight", [C]),
                (p + "mlp.gate_proj.weight", [I, C]), (p + "mlp.up_proj.weight", [I, C]), (p + "mlp.down_proj.weight", [C, I])]
    return out + [("model.norm.weight", [C])]


def config(m):
    if m["kind"] == "gpt2":
        return {"model_type": "gpt2", "n_embd": m["C"], "n_head": m["H"], "n_layer": m["L"], "n_positions": 1024, "vocab_size": m["V"],
                "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new", "n_inner": None}
    # as meta-llama/Llama-3.2-1B's config.json
    return {"architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": 128000,
            "eos_token_id": 128001, "head_dim": m["hd"], "hidden_act": "silu", "hidden_size": m["C"], "initializer_range": 0.02,
            "intermediate_size": m["I"], "max_position_embeddings": 131072, "mlp_bias": False, "model_type": "llama",
            "num_attention_heads": m["H"], "num_hidden_layers": m["L"], "num_key_value_heads": m["Hkv"], "pretraining_tp": 1,
            "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                                    "original_max_position_embeddings": 8192, "rope_type": "llama3"},
            "rope_theta": 500000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16", "transformers_version": "4.45.0.dev0",
            "use_cache": True, "vocab_size": m["V"]}


def write_checkpoint(directory, m):
    """config.json and model.safetensors, streamed: N(0, 0.02) values (norm weights near 1), one random
    block tiled at a different offset per tensor; returns the file's bytes and one layer's float32 bytes."""
    rng = np.random.default_rng(0)
    block = (rng.standard_normal(1 << 22, dtype=np.float32) * 0.02)
    bf16 = m["dtype"] == "BF16"
    size = 2 if bf16 else 4
    base = ((block.view(np.uint32) + 0x8000) >> 16).astype("<u2") if bf16 else block.astype("<f4")
    items = names_and_shapes(m)
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in items:
        n = int(np.prod(shape)) * size
        header[name] = {"dtype": m["dtype"], "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    path = os.path.join(directory, "model.safetensors")
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for k, (name, shape) in enumerate(items):
            count = int(np.prod(shape))
            if len(shape) == 1:  # norms and biases
                v = np.full(count, 1.0 if "norm" in name or "ln_" in name and name.endswith("weight") else 0.0, np.float32)
                f.write(((v.view(np.uint32) + 0x8000) >> 16).astype("<u2").tobytes() if bf16 else v.astype("<f4").tobytes())
                continue
            rolled = np.roll(base, 7919 * k)
            for start in range(0, count, rolled.size):
                f.write(rolled[:min(rolled.size, count - start)].tobytes())
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config(m), f, indent=2)
    layer = [s for n, s in items if (".0." in n and n.startswith(("h.", "model.layers.")))]
    return os.path.getsize(path), 4 * sum(int(np.prod(s)) for s in layer)


def flops(m):
    """Multiply-adds × 2 of the forward pass PyTorch runs: the layers below the traced one in full, and
    the traced layer's projections and scores (its q, k and v, qkᵀ, the softmax's product with v)."""
    C, I, T, H, Hkv, hd = m["C"], m["I"], m["T"], m["H"], m["Hkv"], m["hd"]
    qkv = C * (H + 2 * Hkv) * hd
    attention = 2 * H * T * T * hd  # qkᵀ and w·v (full T², as PyTorch computes them)
    below = 2 * T * (qkv + H * hd * C + (2 if m["kind"] == "gpt2" else 3) * C * I) + 2 * attention
    return m["layer"] * below + 2 * T * qkv + 2 * attention


def peak_memory(cmd, env):
    """(peak anonymous, peak resident) bytes of one run, from /proc/PID/status every 0.5 ms (anonymous:
    what the process allocated; resident also counts the mapped file's pages it read)."""
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, cwd=ROOT)
    anon = hwm = 0
    while p.poll() is None:
        try:
            for line in open(f"/proc/{p.pid}/status"):
                if line.startswith("RssAnon:"):
                    anon = max(anon, int(line.split()[1]) * 1024)
                elif line.startswith("VmHWM:"):
                    hwm = max(hwm, int(line.split()[1]) * 1024)
        except (FileNotFoundError, ProcessLookupError):
            break
        time.sleep(0.0005)
    if p.wait() != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {p.returncode}")
    return anon, hwm


def best_of(cmd, env, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True, cwd=ROOT)
        times.append(time.perf_counter() - t0)
    return min(times)


def measure_one(attn, threads, name, reps=3):
    m = MODELS[name]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = os.path.join(tmp, name)
        os.mkdir(ckpt)
        file_bytes, layer_bytes = write_checkpoint(ckpt, m)
        ids = [int(i) for i in np.random.default_rng(1).integers(0, m["V"], m["T"])]
        spec = os.path.join(tmp, "spec.json")
        json.dump({"checkpoint": {"path": name, "layer": m["layer"]}, "token_ids": ids}, open(spec, "w"))
        cmd = [attn, "run", spec, "--steps", "weights", "--threads", str(threads)]
        anchor = [PY, "-c", ANCHOR, json.dumps(dict(m, threads=threads, file=os.path.join(ckpt, "model.safetensors"), ids=ids))]
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)  # the file in the page cache, for both sides
        attn_s = best_of(cmd, env, reps)
        torch_s = best_of(anchor, env, reps)
        anon, hwm = peak_memory(cmd, env)
        base_anon, _ = peak_memory([attn, "run", os.path.join(ROOT, "examples", "cat_sat.json")], env)
    return dict(name=name, attn_s=attn_s, torch_s=torch_s, anon=anon, base_anon=base_anon, hwm=hwm, layer_bytes=layer_bytes,
                file_bytes=file_bytes, flops=flops(m))


def sgemm_rate(threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    out = subprocess.run([PY, "-c", ANCHOR, json.dumps({"threads": threads, "sgemm": 2048})], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)["rate"]


def measure(attn, threads, reps=3, only=None):
    rate = sgemm_rate(threads)
    return [dict(measure_one(attn, threads, name, reps), rate=rate) for name in MODELS if only in (None, name)]


def rows(results):
    """(label, measured, target, met) rows for bench/run.py's table."""
    out = []
    for r in results:
        m = MODELS[r["name"]]
        limit = r["flops"] / r["rate"]
        extra = r["anon"] - r["base_anon"]
        out.append((f"{m['label']}, layer {m['layer']} on {m['T']} tokens ({r['file_bytes'] / 1e9:.2f} GB file): whole process, best of 3",
                    f"attn {r['attn_s']:.2f} s, PyTorch {r['torch_s']:.2f} s: {r['attn_s'] / r['torch_s']:.2f}×; limit "
                    f"{r['flops'] / 1e9:.0f} GFLOP ÷ {r['rate'] / 1e9:.0f} GFLOP/s (the anchor's sgemm) = {limit:.2f} s, attn / limit "
                    f"{r['attn_s'] / limit:.2f}× (attn's own kernels: {r['flops'] / r['attn_s'] / 1e9:.0f} GFLOP/s over the whole process)",
                    "≤ 0.5× PyTorch", r["attn_s"] <= 0.5 * r["torch_s"]))
        out.append((f"{m['label']}: attn's memory beyond the mapped file (peak anonymous, less a cat/sat run's)",
                    f"{extra / 1e6:.0f} MB = {extra / r['layer_bytes']:.2f}× one layer's float32 weights ({r['layer_bytes'] / 1e6:.0f} MB); "
                    f"peak resident with the file's pages: {r['hwm'] / 1e6:.0f} MB", "≤ 2× one layer", extra <= 2 * r["layer_bytes"]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--only", choices=sorted(MODELS))
    args = ap.parse_args()
    results = measure(os.path.join(args.build, "attn"), args.threads, only=args.only)
    for label, measured, target, ok in rows(results):
        print(f"{label}: {measured} (target {target}: {'met' if ok else 'NOT met'})", flush=True)
    return 0 if all(ok for *_, ok in rows(results)) else 1


if __name__ == "__main__":
    sys.exit(main())
