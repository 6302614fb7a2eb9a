#!/usr/bin/env python3
"""Trains examples/checkpoints/induction: a small GPT-2 whose heads learned something to look at.

attn's other example checkpoints have random weights, so `attn heads` shows noise on them. This one
is trained, by this script, on data it makes itself, until two heads do what heads in trained language
models do: a previous-token head in layer 0 (each token looks at the one before it) and an induction
head in layer 1 (in a repeated passage, each token looks at the token that followed its earlier
occurrence, which is the token that comes next). The induction head can only find that key because
the previous-token head below it has written "the word before me" into every position.

The data: sequences of 64 random words (100 words, uniform). In each, a segment of 4 to 24 of its
words is copied once, 0 to 16 words after the segment ends. Only the copy is predictable, and only by
looking back to where the current word occurred before and taking the word after it. The loss is
next-token cross-entropy, weighted 1 on the copy's predictable positions and 0.1 elsewhere.
Where the copy starts relative to the segment varies (the gap), so no fixed offset solves it: with
the copy always right after the segment, the model learns positional shortcuts instead (found in a
sweep of 32 settings on a GPU; this setting gave both heads in every seed and batch size tried).

The model is GPT-2's layout with the MLPs left out (attention-only, the form in which induction heads
were first described): 2 layers, 4 heads, width 64, 64 positions, tied embeddings. The checkpoint
still carries GPT-2's MLP tensors, all zero, so that any GPT-2 reader loads it; a zero MLP adds
nothing to the residual stream. The tokenizer is GPT-2's byte-level BPE as a tokenizer.json: the 256
byte tokens and merges that make each word, with the space before it, one token; it adds that
space before the first word too (add_prefix_space), so every word is the same token wherever it is.

Deterministic: seeded (torch.manual_seed and one generator for the data), two intra-op threads
fixed. About five minutes on 2 CPU cores. The same PyTorch build gives the same bits; another build
or CPU may round differently and land on slightly different weights, with the same two heads.

Usage:
  scripts/train_induction.py OUT_DIR [--force] [--steps N]
      writes OUT_DIR/{config.json, model.safetensors, tokenizer.json, train_log.txt}; an existing,
      non-empty OUT_DIR is refused (exit 2) unless --force, which replaces those four files only.
  scripts/train_induction.py --words      the 100 words, one per line
"""
import argparse
import json
import math
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
from tiny_tokenizers import bytes_to_unicode  # noqa: E402  (GPT-2's table of the 256 bytes; standard library only)

np = None  # NumPy, imported by main() once it is needed (--words needs nothing but the standard library)

WORDS = (
    "ant bat bee cat cow dog eel elk fox hen jay owl pig ram rat yak ape cod doe emu "
    "fly hog gnu koi eagle mole newt crab crow dove frog goat hare lion mouse seal swan toad wolf zebra "
    "red blue green pink gold gray black white brown tan "
    "cup pan pot jar box bag hat cap map pen "
    "oak elm fig ash pine rose lily moss fern reed "
    "sun moon star rain snow wind fog hill lake sea "
    "bread milk rice soup cake salt corn bean plum pear "
    "bus car van ship boat kite drum bell ring key").split()
LAYERS, HEADS, WIDTH, POSITIONS = 2, 4, 64, 64
SEGMENT = (4, 24)   # the copied segment's length, at least and at most
GAP = (0, 16)       # words between the segment and its copy, at least and at most
OTHER_WEIGHT = 0.1  # the loss weight of positions nothing predicts
LR, WEIGHT_DECAY, BATCH, STEPS = 1e-3, 0.01, 64, 2000
EMBED_STD = 0.1     # token and position embeddings start as N(0, 0.1²); the linear layers as nn.Linear's default
SEED = 1
THREADS = 2


# ---- the tokenizer: GPT-2's byte-level BPE with a merge chain per word ----------------------------

def bpe(symbols, ranks):
    """The BPE of one pre-token: the lowest-ranked adjacent pair merged until none is left."""
    parts = list(symbols)
    while len(parts) > 1:
        r, i = min((ranks.get((a, b), math.inf), i) for i, (a, b) in enumerate(zip(parts, parts[1:])))
        if r == math.inf:
            break
        parts[i:i + 2] = [parts[i] + parts[i + 1]]
    return parts


def tokenizer():
    """(vocab, merges, the token id of each word): the 256 byte tokens, then for each word (with the
    space before it) merges joining its pieces left to right where the merges so far leave it split,
    then <|endoftext|>. Every word must come out as one token (checked)."""
    table = bytes_to_unicode()
    vocab = {table[b]: i for i, b in enumerate(sorted(table))}
    merges, ranks = [], {}
    texts = [[table[b] for b in (" " + w).encode()] for w in WORDS]
    for _ in range(10):
        split = False
        for text in texts:
            parts = bpe(text, ranks)
            left = parts[0]
            for piece in parts[1:]:
                split = True
                merges.append((left, piece))
                ranks[(left, piece)] = len(merges) - 1
                left += piece
                vocab.setdefault(left, len(vocab))
        if not split:
            break
    vocab["<|endoftext|>"] = len(vocab)
    ids = []
    for w, text in zip(WORDS, texts):
        got = bpe(text, ranks)
        if len(got) != 1:
            raise SystemExit(f"train_induction: {w!r} is not one token: {got}")
        ids.append(vocab[got[0]])
    return vocab, merges, ids


def tokenizer_json(vocab, merges):
    """HF tokenizers' tokenizer.json for GPT-2's byte-level BPE, with a space added before the text."""
    eot = vocab["<|endoftext|>"]
    byte_level = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": eot, "content": "<|endoftext|>", "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": True, "special": True}],
        "normalizer": None, "pre_tokenizer": byte_level, "post_processor": byte_level, "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "", "end_of_word_suffix": "",
                  "fuse_unk": False, "byte_fallback": False, "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]},
    }


# ---- the data --------------------------------------------------------------------------------------

def batch(torch, gen, word_ids, size):
    """size sequences of POSITIONS + 1 word tokens (inputs are the first POSITIONS, targets the last),
    each with one segment copied, and the loss weight of each target."""
    P = POSITIONS
    x = torch.randint(0, len(word_ids), (size, P + 1), generator=gen)
    L = torch.randint(SEGMENT[0], SEGMENT[1] + 1, (size, 1), generator=gen)
    gap = torch.randint(GAP[0], GAP[1] + 1, (size, 1), generator=gen)
    room = (P + 1 - 2 * L - gap).clamp(min=0)
    start = (torch.rand(size, 1, generator=gen) * (room + 1).float()).floor().long()
    pos = torch.arange(P + 1)[None]
    copy = start + L + gap  # where the copy begins
    in_copy = (pos >= copy) & (pos < copy + L)
    x = x.gather(1, torch.where(in_copy, pos - L - gap, pos))
    w = torch.full((size, P), OTHER_WEIGHT)
    t = torch.arange(P)[None] + 1  # the target's position
    w[(t > copy) & (t < copy + L)] = 1.0  # a copied word after the copy's first: predictable
    x = torch.as_tensor(word_ids)[x]
    return x[:, :P], x[:, 1:], w


# ---- the model: GPT-2 without MLPs -----------------------------------------------------------------

def build_model(torch, vocab_size):
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(WIDTH, eps=1e-5)
            self.c_attn = nn.Linear(WIDTH, 3 * WIDTH)
            self.c_proj = nn.Linear(WIDTH, WIDTH)

        def forward(self, x, causal):
            B, T, C = x.shape
            hs = C // HEADS
            q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=-1)
            q, k, v = (t.view(B, T, HEADS, hs).transpose(1, 2) for t in (q, k, v))
            w = (q @ k.transpose(-2, -1) / math.sqrt(hs)).masked_fill(causal[:T, :T], float("-inf")).softmax(-1)
            return x + self.c_proj((w @ v).transpose(1, 2).reshape(B, T, C)), w

    class GPT2(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab_size, WIDTH)
            self.wpe = nn.Embedding(POSITIONS, WIDTH)
            nn.init.normal_(self.wte.weight, std=EMBED_STD)
            nn.init.normal_(self.wpe.weight, std=EMBED_STD)
            self.h = nn.ModuleList([Block() for _ in range(LAYERS)])
            self.ln_f = nn.LayerNorm(WIDTH, eps=1e-5)
            self.register_buffer("causal", torch.ones(POSITIONS, POSITIONS, dtype=torch.bool).triu(1))

        def forward(self, ids):
            x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1]))
            weights = []
            for block in self.h:
                x, w = block(x, self.causal)
                weights.append(w)
            return self.ln_f(x) @ self.wte.weight.T, weights

    return GPT2()


# ---- measuring the heads, as attn heads does -------------------------------------------------------

def probe_sequences(rng, word_ids, count=16):
    """Repeated random sequences: 8 random words, then n random words twice, for n = 6, 10, 16, 24."""
    out = []
    for n in (6, 10, 16, 24):
        for _ in range(count):
            seg = rng.randint(0, len(word_ids), n)
            out.append(np.asarray(word_ids)[np.concatenate([rng.randint(0, len(word_ids), 8), seg, seg])])
    return out


def head_scores(torch, model, sequences):
    """[layer][head] = (previous, induction), means over the sequences: previous = mean over queries
    i ≥ 1 of w[i, i−1]; induction = mean over the queries whose word occurred before of w[i, j + 1],
    j its most recent earlier occurrence (attn heads' two measures)."""
    total = np.zeros((LAYERS, HEADS, 2))
    with torch.no_grad():
        for ids in sequences:
            _, weights = model(torch.as_tensor(ids)[None])
            T = len(ids)
            last, pairs = {}, []
            for i, t in enumerate(ids):
                if t in last:
                    pairs.append((i, last[t] + 1))
                last[t] = i
            qi, kj = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
            for layer, w in enumerate(weights):
                w = w[0].numpy()
                total[layer, :, 0] += w[:, np.arange(1, T), np.arange(T - 1)].mean(-1)
                total[layer, :, 1] += w[:, qi, kj].mean(-1)
    return total / len(sequences)


def describe(scores):
    prev = max((scores[l, h, 0], l, h) for l in range(LAYERS) for h in range(HEADS))
    ind = max((scores[l, h, 1], l, h) for l in range(LAYERS) for h in range(HEADS))
    return f"previous-token {prev[0]:.2f} (L{prev[1]} h{prev[2]})  induction {ind[0]:.2f} (L{ind[1]} h{ind[2]})"


# ---- the checkpoint --------------------------------------------------------------------------------

def gpt2_tensors(model):
    """The hub's GPT-2 names and layouts (Conv1D weights are [in, out], nn.Linear's transposed); the
    MLP tensors zero, ln_2 the identity."""
    t = {"wte.weight": model.wte.weight, "wpe.weight": model.wpe.weight,
         "ln_f.weight": model.ln_f.weight, "ln_f.bias": model.ln_f.bias}
    import torch
    inner = 4 * WIDTH
    for i, b in enumerate(model.h):
        p = f"h.{i}."
        t.update({p + "ln_1.weight": b.ln_1.weight, p + "ln_1.bias": b.ln_1.bias,
                  p + "attn.c_attn.weight": b.c_attn.weight.T, p + "attn.c_attn.bias": b.c_attn.bias,
                  p + "attn.c_proj.weight": b.c_proj.weight.T, p + "attn.c_proj.bias": b.c_proj.bias,
                  p + "ln_2.weight": torch.ones(WIDTH), p + "ln_2.bias": torch.zeros(WIDTH),
                  p + "mlp.c_fc.weight": torch.zeros(WIDTH, inner), p + "mlp.c_fc.bias": torch.zeros(inner),
                  p + "mlp.c_proj.weight": torch.zeros(inner, WIDTH), p + "mlp.c_proj.bias": torch.zeros(WIDTH)})
    return {k: np.ascontiguousarray(v.detach().numpy().astype(np.float32)) for k, v in t.items()}


def config(vocab_size, eot):
    return {"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.0,
            "bos_token_id": eot, "embd_pdrop": 0.0, "eos_token_id": eot, "initializer_range": 0.02,
            "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": POSITIONS, "n_embd": WIDTH,
            "n_head": HEADS, "n_inner": None, "n_layer": LAYERS, "n_positions": POSITIONS,
            "resid_pdrop": 0.0, "scale_attn_by_inverse_layer_idx": False, "scale_attn_weights": True,
            "tie_word_embeddings": True, "torch_dtype": "float32", "use_cache": True, "vocab_size": vocab_size}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__[__doc__.index("Usage:"):])
    ap.add_argument("out", nargs="?", help="the checkpoint directory to write")
    ap.add_argument("--steps", type=int, default=STEPS, help=f"training steps (default {STEPS})")
    ap.add_argument("--force", action="store_true", help="replace the model files of an existing OUT_DIR")
    ap.add_argument("--words", action="store_true", help="print the word list and stop")
    args = ap.parse_args()
    if args.words:
        print("\n".join(WORDS))
        return 0
    if not args.out:
        ap.error("OUT_DIR is required")
    if os.path.isdir(args.out) and os.listdir(args.out) and not args.force:
        print(f"train_induction: {args.out} exists and is not empty; --force replaces its model files", file=sys.stderr)
        return 2
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        print(f"train_induction: {args.out} exists and is not a directory", file=sys.stderr)
        return 2
    global np
    import numpy as np
    import safetensors_io as st
    import torch
    torch.manual_seed(SEED)
    torch.set_num_threads(THREADS)
    gen = torch.Generator().manual_seed(SEED + 1000)
    vocab, merges, word_ids = tokenizer()
    model = build_model(torch, len(vocab))
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    probes = probe_sequences(np.random.RandomState(SEED + 2), word_ids)
    log, loss = [], None
    start = time.time()
    for step in range(args.steps + 1):
        if step % 250 == 0 or step == args.steps:
            line = f"step {step:5d}  {describe(head_scores(torch, model, probes))}  {time.time() - start:4.0f} s"
            if loss is not None:  # (the last step's batch loss)
                line += f"  loss {loss.item():.3f}"
            print(line, flush=True)
            log.append(line)
        if step == args.steps:
            break
        x, y, w = batch(torch, gen, word_ids, BATCH)
        logits, _ = model(x)
        ce = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="none")
        loss = (ce * w.reshape(-1)).sum() / w.sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    scores = head_scores(torch, model, probes)
    os.makedirs(args.out, exist_ok=True)
    st.save_file(gpt2_tensors(model), os.path.join(args.out, "model.safetensors"))
    with open(os.path.join(args.out, "config.json"), "w") as f:
        f.write(json.dumps(config(len(vocab), vocab["<|endoftext|>"]), indent=2, sort_keys=True) + "\n")
    with open(os.path.join(args.out, "tokenizer.json"), "w") as f:
        f.write(json.dumps(tokenizer_json(vocab, merges), ensure_ascii=False, indent=1) + "\n")
    table = "\n".join(f"  L{l} h{h}  previous-token {scores[l, h, 0]:.2f}  induction {scores[l, h, 1]:.2f}"
                      for l in range(LAYERS) for h in range(HEADS))
    with open(os.path.join(args.out, "train_log.txt"), "w") as f:
        f.write(f"scripts/train_induction.py --steps {args.steps}: PyTorch {torch.__version__}, seed {SEED}, "
                f"{THREADS} threads\n" + "\n".join(log) + "\nheads on the probe (8 random words, then n random words twice, "
                "n = 6, 10, 16, 24; 16 sequences each):\n" + table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
