#!/usr/bin/env python3
"""Checkpoint check: attn's trace of one layer of a hub checkpoint against a PyTorch forward pass
written from the published architectures (model_reference.py), on tiny random checkpoints in the
hub's exact layout (make_checkpoints.py): GPT-2 F32 / F16 sharded, Llama BF16 sharded, Llama with
head_dim ≠ hidden/heads, Mistral's sliding window, Qwen2's q/k/v biases, a lone .safetensors file with
the config given inline; a sentence through each checkpoint's tokenizer (when tiny_tokenizers.py is
there); and broken checkpoints that must be refused with exit 2 and a message naming the file, the
tensor or the input key.

Usage: checkpoint_check.py PATH_TO_ATTN [--keep DIR]
Exit 0: every layer's "x", "weights" and "output" agree within 1e-4 and every refusal is right.
1: a difference or a wrong refusal. 77: skipped (torch not importable).
"""
import json
import math
import re
import os
import shutil
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as e:  # ctest reports 77 as "skipped"
    print(f"SKIPPED: PyTorch or numpy is not importable here ({e}); install python3-torch (scripts/setup.sh --tests)")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_checkpoints  # noqa: E402
import wordpiece_reference  # noqa: E402
import model_reference  # noqa: E402
import seq2seq_reference  # noqa: E402
import safetensors_io as st  # noqa: E402

TOL = 1e-4
SENTENCES = ["The cat sat on the mat", "Zoë's café at 7:30 ☕ — don't!"]  # the second: multi-byte, byte fallback
torch.set_num_threads(1)


def _flatten(x):
    if isinstance(x, list):
        out = []
        for v in x:
            out.extend(_flatten(v))
        return out
    return [float(x)]


class Run:
    def __init__(self, rc, stdout, stderr, doc=None):
        self.rc, self.stdout, self.stderr, self.doc = rc, stdout, stderr, doc

    def step(self, sid):
        for s in self.doc["steps"]:
            if s["id"] == sid:
                return np.array(_flatten(s["data"]), dtype=np.float64).reshape(s["shape"])
        return None


def run_attn(attn, input_path, timeout=120, extra=()):
    p = subprocess.run([attn, "run", input_path, "--format", "json", *extra], capture_output=True, text=True,
                       timeout=timeout)
    doc = None
    if p.returncode == 0:
        try:
            doc = json.loads(p.stdout)
        except json.JSONDecodeError as e:
            return Run(p.returncode, p.stdout, p.stderr + f"\n(check: stdout is not JSON: {e})")
    return Run(p.returncode, p.stdout, p.stderr, doc)


def write_input(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1)
    return path


class Report:
    def __init__(self):
        self.failures = []
        self.groups = []

    def fail(self, what):
        self.failures.append(what)
        print("  FAIL " + what)


def token_sequences(name, vocab):
    rng = np.random.RandomState(make_checkpoints._seed(name) ^ 0x5EED)
    return [[int(rng.randint(0, vocab))], [int(i) for i in rng.randint(0, vocab, size=7)]]


def layer_input(checkpoint, layer, config, ids=None, sentence=None):
    """The input for one layer: token_ids or a sentence; an encoder-decoder's (BART's) encoder reads
    them as source_ids or source, with "stack": "encoder"."""
    encdec = config.get("model_type") in model_reference.SEQ2SEQ_TYPES
    ck = dict(checkpoint, layer=layer, **({"stack": "encoder"} if encdec else {}))
    if ids is not None:
        return {"checkpoint": ck, ("source_ids" if encdec else "token_ids"): ids}
    return {"checkpoint": ck, ("source" if encdec else "sentence"): sentence}


def compare_layers(report, attn, work, label, checkpoint, config, tensors, ids, layers, worst):
    """Runs attn on every layer in `layers` for `ids` and compares x, weights and output."""
    ref = model_reference.forward(config, tensors, ids, torch.float64)
    ok = True
    for layer in layers:
        inp = layer_input(checkpoint, layer, config, ids)
        path = write_input(os.path.join(work, f"in-{label}-L{layer}-T{len(ids)}.json"), inp)
        r = run_attn(attn, path)
        where = f"{label} layer {layer} T={len(ids)}"
        if r.rc != 0 or r.doc is None:
            report.fail(f"{where}: attn exited {r.rc}: {r.stderr.strip()[:400]}")
            ok = False
            continue
        for sid in ("x", "weights", "output"):
            want = ref[layer][sid].numpy()
            got = r.step(sid)
            if got is None:
                report.fail(f"{where}: the trace has no step {sid!r}")
                ok = False
                continue
            if list(got.shape) != list(want.shape):
                report.fail(f"{where}: {sid} has shape {list(got.shape)}, the reference {list(want.shape)}")
                ok = False
                continue
            d = float(np.abs(got - want).max()) if got.size else 0.0
            if not np.isfinite(got).all():
                d = float("inf")
            worst[sid] = max(worst.get(sid, 0.0), d)
            if not d <= TOL:
                idx = np.unravel_index(int(np.nanargmax(np.abs(got - want))), got.shape)
                report.fail(f"{where}: {sid} differs by {d:.3g} at {list(map(int, idx))} "
                            f"(attn {got[idx]:.6g}, reference {want[idx]:.6g})")
                ok = False
    return ok


def scaling_matters(report, attn, work, name, checkpoint, config, tensors, ids):
    """The RoPE scaling is visible in the weights: the reference without it (plain RoPE at the config's
    theta, and for rope_parameters also at the 10000 a reader that misses that form would take) differs
    from attn's weights by far more than the tolerance, so a reader that skipped it would fail."""
    layer = model_reference.num_layers(config) - 1
    r = run_attn(attn, write_input(os.path.join(work, f"in-{name}-scaling.json"), {"checkpoint": dict(checkpoint, layer=layer), "token_ids": ids}))
    if r.rc != 0:
        report.fail(f"{name}: attn exited {r.rc}: {r.stderr.strip()[:400]}")
        return False
    theta, _ = model_reference.rope_settings(config)
    plain = {k: v for k, v in config.items() if k not in ("rope_scaling", "rope_parameters")}
    variants = [("unscaled", dict(plain, rope_theta=theta))]
    if "rope_parameters" in config:
        variants.append(("theta 10000, unscaled", dict(plain, rope_theta=10000.0)))
    ok = True
    for what, c in variants:
        d = float(np.abs(r.step("weights") - model_reference.forward(c, tensors, ids, torch.float64)[layer]["weights"].numpy()).max())
        print(f"       {name}: the reference {what} differs from attn's weights by {d:.2g} (must be > 1e-3)")
        if not d > 1e-3:
            report.fail(f"{name}: the RoPE scaling changes the weights by only {d:.3g}: the check could not tell it was skipped")
            ok = False
    return ok


# Each family's distinctive parts, as variants of the reference that skip or misplace one of them: attn
# must differ from every variant by more than the tolerance, so a reader that made that mistake would fail.
DISTINCT = {
    "qwen3": [("without q_norm and k_norm", {"_skip_qk_norm": True})],
    "gemma2": [("with the norms' weight read as w, not 1 + w", {"_plain_norm": True}),
               ("with the soft-cap after the mask", {"_softcap_after_mask": True}),
               ("with the odd layers sliding, not the even ones", {"_wrong_sliding": True}),
               ("with √C unrounded (not rounded to BF16)", {"_unrounded_scale": True})],
    "gemma3_text": [("with the q/k norms after RoPE", {"_qk_norm_after_rope": True}),
                    ("with the other layers sliding", {"_wrong_sliding": True}),
                    ("with rope_theta on the sliding layers too", {"_no_local_theta": True}),
                    ("without the full layers' linear RoPE scaling", {"rope_scaling": None}),
                    ("with the norms' weight read as w, not 1 + w", {"_plain_norm": True})],
    "gemma3": [("with the other layers sliding", {"_wrong_sliding": True})],
    "olmo2": [("with q_norm and k_norm per head, not over the whole width", {"_qk_norm_per_head": True})],
    "bart": [("with positions from row 0, not BART's offset of 2", {"_no_offset": True})],
    "t5": [("with scores scaled by 1/√d_kv (T5 has no scale)", {"_scaled": True}),
           ("with the bidirectional buckets' sides swapped", {"_sides_swapped": True})],
    "marian": [("with sines and cosines interleaved, not in halves", {"_interleaved": True})],
    "bert": [("without the token type embedding", {"_no_token_types": True}),
             ("with the tanh GELU, not the erf one", {"_gelu_tanh": True})],
    "roberta": [("with positions from 0, not from pad_token_id + 1", {"_no_offset": True})],
}


def distinct_matters(report, attn, work, name, checkpoint, config, tensors, ids):
    """attn's last layer (weights and output) against each variant of DISTINCT[model_type]."""
    layer = model_reference.num_layers(config) - 1
    r = run_attn(attn, write_input(os.path.join(work, f"in-{name}-distinct.json"), layer_input(checkpoint, layer, config, ids)))
    if r.rc != 0:
        report.fail(f"{name}: attn exited {r.rc}: {r.stderr.strip()[:400]}")
        return False
    ok = True
    for what, change in DISTINCT[config["model_type"]]:
        ref = model_reference.forward(dict(config, **change), tensors, ids, torch.float64)[layer]
        d = max(float(np.abs(r.step(sid) - ref[sid].numpy()).max()) for sid in ("weights", "output"))
        print(f"       {name}: the reference {what} differs from attn by {d:.2g} (must be > {TOL:g})")
        if not d > TOL:
            report.fail(f"{name}: the reference {what} differs by only {d:.3g}: the check could not tell that mistake")
            ok = False
    return ok


def check_many_rows(report, attn, work, made):
    """T = 40 tokens, more than the CPU backend's few-row products take: the products read each
    checkpoint weight by its stored rows (the column path). Every layer against the reference, and the
    JSON trace byte for byte the same with 1 and 2 threads."""
    print("== 40 tokens: the products' column path, against the reference and across thread counts")
    ok_all = []
    for name in ("llama-bf16-sharded", "mistral-window", "gemma2", "phi3-fused", "olmo2"):
        d, config = made[name]
        _, tensors = model_reference.load(d)
        ids = [int(i) for i in np.random.RandomState(40).randint(0, model_reference.vocab_size(config), size=40)]
        worst = {}
        ok = compare_layers(report, attn, work, name + "-T40", {"path": os.path.relpath(d, work)}, config, tensors, ids,
                            range(model_reference.num_layers(config)), worst)
        path = os.path.join(work, f"in-{name}-T40-L{model_reference.num_layers(config) - 1}-T40.json")
        one, two = run_attn(attn, path, extra=("--threads", "1")), run_attn(attn, path, extra=("--threads", "2"))
        same = one.rc == 0 and one.stdout == two.stdout
        if not same:
            report.fail(f"{name}, T = 40: the JSON trace differs between --threads 1 and --threads 2")
        figures = ", ".join(f"{k} {v:.2g}" for k, v in worst.items())
        print(f"  {'ok  ' if ok and same else 'FAIL'} {name} T = 40: largest |diff| {figures}; threads 1 and 2 "
              f"{'byte-identical' if same else 'DIFFERENT'}")
        ok_all.append(ok and same)
    report.groups.append(("40 tokens", sum(ok_all), len(ok_all)))


def check_numbers(report, attn, work, made):
    print("== layers of each checkpoint against the reference (token ids, T = 1 and 7)")
    summary = []
    for name, (d, config) in made.items():
        spec = make_checkpoints.CHECKPOINTS[name]
        if spec.get("lone_file"):
            checkpoint = {"path": os.path.relpath(os.path.join(d, spec["lone_file"]), work), "config": config}
            _, tensors = model_reference.load(os.path.join(d, spec["lone_file"]), config)
        else:
            checkpoint = {"path": os.path.relpath(d, work)}
            _, tensors = model_reference.load(d)
        L = model_reference.num_layers(config)
        worst, ok = {}, True
        vocab = model_reference.vocab_size(config)
        for ids in token_sequences(name, vocab):
            ok &= compare_layers(report, attn, work, name, checkpoint, config, tensors, ids, range(L), worst)
        if spec.get("model_type") in DISTINCT:
            ok &= distinct_matters(report, attn, work, name, checkpoint, config, tensors, token_sequences(name, vocab)[-1])
        if spec.get("rope") and not spec["model_type"].startswith("gemma"):
            ok &= scaling_matters(report, attn, work, name, checkpoint, config, tensors, token_sequences(name, vocab)[-1])
        figures = ", ".join(f"{k} {v:.2g}" for k, v in worst.items())
        line = f"  {'ok  ' if ok else 'FAIL'} {name} ({spec['dtype']}, {L} layers): largest |diff| {figures or '-'}"
        print(line)
        summary.append(ok)
    if "single-file" in made:  # the input.json make_checkpoints wrote beside the lone file, as a user would
        d, config = made["single-file"]
        r = run_attn(attn, os.path.join(d, "input.json"))
        if r.rc != 0:
            report.fail(f"single-file/input.json: attn exited {r.rc}: {r.stderr.strip()[:400]}")
            summary.append(False)
        else:
            with open(os.path.join(d, "input.json")) as f:
                inp = json.load(f)
            _, tensors = model_reference.load(os.path.join(d, inp["checkpoint"]["path"]), config)
            ref = model_reference.forward(config, tensors, inp["token_ids"], torch.float64)[inp["checkpoint"]["layer"]]
            dd = max(float(np.abs(r.step(s) - ref[s].numpy()).max()) for s in ("weights", "output"))
            print(f"  {'ok  ' if dd <= TOL else 'FAIL'} single-file/input.json (path relative to the input's own "
                  f"directory, inline config): largest |diff| {dd:.2g}")
            if dd > TOL:
                report.fail(f"single-file/input.json differs by {dd:.3g}")
            summary.append(dd <= TOL)
    report.groups.append(("numbers", sum(summary), len(summary)))


# ---- sentences through the tokenizers -------------------------------------------------------------------


def reference_pieces(directory, text):
    """(pieces, ids) of text by a reference tokenizer for the files in directory, or None:
    vocab.json + merges.txt and byte-level tokenizer.json: tiny_tokenizers.Gpt2Encoder (OpenAI's
    encoder.py) over the same vocabulary and merges; tokenizer.model: the sentencepiece library;
    ▁-style tokenizer.json: the sentencepiece model it was converted from (tiny_tokenizers), same ids."""
    tt = make_checkpoints.tiny_tokenizers
    tj = os.path.join(directory, "tokenizer.json")
    vj, mt = os.path.join(directory, "vocab.json"), os.path.join(directory, "merges.txt")
    if os.path.exists(tj):
        doc = json.load(open(tj, encoding="utf-8"))
        m = doc["model"]
        if m.get("type") != "BPE":
            return None
        if "ByteLevel" in json.dumps(doc.get("pre_tokenizer")):
            with tempfile.TemporaryDirectory() as tmp:
                with open(os.path.join(tmp, "vocab.json"), "w", encoding="utf-8") as f:
                    json.dump(m["vocab"], f, ensure_ascii=False)
                with open(os.path.join(tmp, "merges.txt"), "w", encoding="utf-8") as f:
                    f.write("#version: 0.2\n" + "".join((mm if isinstance(mm, str) else " ".join(mm)) + "\n"
                                                        for mm in m["merges"]))
                ids = tt.Gpt2Encoder(tmp).encode(text)
            inv = {v: k for k, v in m["vocab"].items()}
            return [inv[i] for i in ids], ids
        import sentencepiece
        sp = sentencepiece.SentencePieceProcessor(model_proto=tt.sentencepiece_model_bytes())
        ids = sp.encode(text)
        inv = {v: k for k, v in m["vocab"].items()}
        return [inv[i] for i in ids], ids
    if os.path.exists(os.path.join(directory, "source.spm")):  # Marian's: the pieces' ids from vocab.json (MarianTokenizer)
        import sentencepiece
        vocab = json.load(open(vj, encoding="utf-8"))
        pieces = sentencepiece.SentencePieceProcessor(model_file=os.path.join(directory, "source.spm")).encode(text, out_type=str)
        return [p if p in vocab else "<unk>" for p in pieces], [vocab.get(p, vocab["<unk>"]) for p in pieces]
    if os.path.exists(vj) and os.path.exists(mt):
        vocab = json.load(open(vj, encoding="utf-8"))
        ids = tt.Gpt2Encoder(directory).encode(text)
        inv = {v: k for k, v in vocab.items()}
        return [inv[i] for i in ids], ids
    if os.path.exists(os.path.join(directory, "vocab.txt")) and not os.path.exists(vj):
        return wordpiece_reference.encode(directory, text)
    tm = os.path.join(directory, "tokenizer.model")
    if os.path.exists(os.path.join(directory, "spiece.model")):  # T5's
        tm = os.path.join(directory, "spiece.model")
    if os.path.exists(tm):
        import sentencepiece
        sp = sentencepiece.SentencePieceProcessor(model_file=tm)
        ids = sp.encode(text)
        return [sp.id_to_piece(i) for i in ids], ids
    return None


def piece_ids(directory):
    """piece -> id of a directory's vocabulary (vocab.txt or vocab.json)."""
    if os.path.exists(os.path.join(directory, "vocab.txt")):
        return wordpiece_reference.read_vocab(directory)
    return json.load(open(os.path.join(directory, "vocab.json"), encoding="utf-8"))


def piece_of(directory, i):
    """The vocabulary's spelling of id i (for the BOS label)."""
    tj = os.path.join(directory, "tokenizer.json")
    if os.path.exists(tj):
        doc = json.load(open(tj, encoding="utf-8"))
        for a in doc.get("added_tokens", []):
            if a["id"] == i:
                return a["content"]
        return {v: k for k, v in doc["model"]["vocab"].items()}.get(i)
    vj = os.path.join(directory, "vocab.json")
    if os.path.exists(vj):
        return {v: k for k, v in json.load(open(vj, encoding="utf-8")).items()}.get(i)
    tm = os.path.join(directory, "tokenizer.model")
    if os.path.exists(tm):
        import sentencepiece
        return sentencepiece.SentencePieceProcessor(model_file=tm).id_to_piece(i)
    return None


def expects_bos(directory, config):
    """HF's behaviour: Llama's, Mistral's and Gemma's tokenizers put BOS first (add_bos_token, default true);
    GPT-2's, Qwen's, Phi-3's and OLMo 2's add nothing."""
    if config.get("model_type") not in ("llama", "mistral", "gemma2", "gemma3_text", "gemma3") or config.get("bos_token_id") is None:
        return False
    tc = os.path.join(directory, "tokenizer_config.json")
    if os.path.exists(tc):
        v = json.load(open(tc, encoding="utf-8")).get("add_bos_token")
        if isinstance(v, bool):
            return v
    return True


def tokenizer_is_byte_level(directory):
    """GPT-2's vocab.json + merges.txt, or a tokenizer.json with a ByteLevel pre-tokenizer."""
    tj = os.path.join(directory, "tokenizer.json")
    if os.path.exists(tj):
        return "ByteLevel" in open(tj, encoding="utf-8").read()
    return os.path.exists(os.path.join(directory, "vocab.json")) and not os.path.exists(os.path.join(directory, "source.spm"))


def _gpt2_byte_decoder():
    """The inverse of GPT-2's bytes_to_unicode (OpenAI's encoder.py, as tiny_tokenizers.py writes it)."""
    import tiny_tokenizers
    return {ch: b for b, ch in tiny_tokenizers.bytes_to_unicode().items()}


def readable(piece, byte_level):
    """A piece as attn labels it: its bytes (GPT-2's characters mapped back, or SentencePiece's ▁ and
    <0xNN>) decoded as UTF-8, a space as ␣, a newline ⏎, a tab ⇥, a byte that is no whole character <0xNN>."""
    if byte_level:
        dec = _gpt2_byte_decoder()
        raw = b"".join(bytes([dec[ch]]) if ch in dec else ch.encode("utf-8") for ch in piece)
    else:
        m = re.fullmatch(r"<0x([0-9A-Fa-f]{2})>", piece)
        raw = bytes([int(m.group(1), 16)]) if m else piece.replace("▁", " ").encode("utf-8")
    out, i = "", 0
    while i < len(raw):
        b = raw[i]
        n = 1 if b < 0x80 else 2 if b >> 5 == 6 else 3 if b >> 4 == 14 else 4 if b >> 3 == 30 else 1
        chunk = raw[i:i + n]
        if n > 1 and 0xC2 <= b <= 0xF4 and len(chunk) == n and all(c >> 6 == 2 for c in chunk[1:]):
            out += chunk.decode("utf-8", errors="replace")
            i += n
            continue
        out += {32: "␣", 10: "⏎", 9: "⇥"}.get(b, chr(b) if 0x20 <= b < 0x7F else f"<0x{b:02X}>")
        i += 1
    return out or piece


def check_sentences(report, attn, work, made):
    print(f"== sentences through each checkpoint's tokenizer: {SENTENCES}")
    if make_checkpoints.tiny_tokenizers is None:
        print("  skipped: tiny_tokenizers.py is not importable, so the checkpoints have no tokenizer")
        return
    results = []
    for name, (d, config) in made.items():
        spec = make_checkpoints.CHECKPOINTS[name]
        if not spec.get("tokenizer"):
            continue
        for si, sentence in enumerate(SENTENCES):
            where = f"{name} sentence {si + 1}"
            layer = model_reference.num_layers(config) - 1
            path = write_input(os.path.join(work, f"in-{name}-sentence{si + 1}.json"),
                               layer_input({"path": os.path.relpath(d, work)}, layer, config, sentence=sentence))
            r = run_attn(attn, path)
            if r.rc != 0 or r.doc is None:
                report.fail(f"{where}: attn exited {r.rc}: {r.stderr.strip()[:400]}")
                results.append(False)
                continue
            tokens = r.doc["config"].get("token_pieces")  # the vocabulary's spellings; "tokens" hold the text
            labels = r.doc["config"].get("tokens") or []
            if labels and isinstance(labels[0], list):  # one list per batch row
                labels = labels[0]
            ref = reference_pieces(d, sentence)
            ok = True
            how = "no reference tokenizer: labels not compared"
            if ref is not None:
                pieces, ids = ref
                if config.get("model_type") in ("t5", "marian"):  # … </s>
                    eos = config["eos_token_id"]
                    ids, pieces = ids + [eos], pieces + ["</s>"]
                    how = "</s> after the reference pieces"
                elif config.get("model_type") in model_reference.ENCODER_TYPES:  # [CLS] … [SEP], <s> … </s>
                    first, last = ("<s>", "</s>") if config["model_type"] in ("roberta", "bart") else ("[CLS]", "[SEP]")
                    vocab = piece_ids(d)
                    ids, pieces = [vocab[first]] + ids + [vocab[last]], [first] + pieces + [last]
                    how = f"{first} and {last} around the reference pieces"
                elif expects_bos(d, config):
                    ids = [config["bos_token_id"]] + ids
                    pieces = [piece_of(d, config["bos_token_id"])] + pieces
                    how = f"BOS {pieces[0]!r} first, then the reference pieces"
                else:
                    how = "labels equal the reference pieces"
                want_labels = [readable(p, byte_level=tokenizer_is_byte_level(d)) for p in pieces]
                if tokens != pieces:
                    report.fail(f"{where}: trace tokens {tokens} ≠ reference pieces {pieces}"
                                + (" (BOS expected first)" if expects_bos(d, config) else ""))
                    ok = False
                elif labels != want_labels:
                    report.fail(f"{where}: labels {labels} ≠ the pieces read as text {want_labels}")
                    ok = False
                else:  # the numbers of the sentence's ids, at the last layer
                    _, tensors = model_reference.load(d)
                    refl = model_reference.forward(config, tensors, ids, torch.float64)[layer]
                    dd = max(float(np.abs(r.step(s) - refl[s].numpy()).max()) for s in ("weights", "output"))
                    how += f"; layer {layer}: largest |diff| {dd:.2g}"
                    if dd > TOL:
                        report.fail(f"{where}: differs by {dd:.3g} from the reference on ids {ids}")
                        ok = False
            print(f"  {'ok  ' if ok else 'FAIL'} {where}: {len(tokens or [])} tokens {tokens}, labelled {labels} ({how})")
            results.append(ok)
    report.groups.append(("sentences", sum(results), len(results)))


# ---- broken checkpoints ------------------------------------------------------------------------------

def _rewrite_header(path, edit):
    """Loads a file's header, lets edit(header) change it, writes it back with the same data bytes."""
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    edit(header)
    hb = st.header_bytes(header)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb + raw[8 + n:])


def _drop_tensor(path, name):
    ts = st.load_file(path)
    del ts[name]
    st.save_file(ts, path)


def _replace_tensor(path, name, tensor):
    ts = st.load_file(path)
    ts[name] = tensor
    st.save_file(ts, path)


def _truncate(path, keep):
    raw = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(raw[:keep(len(raw))])


def _edit_config(path, **kv):
    with open(path) as f:
        c = json.load(f)
    c.update(kv)
    make_checkpoints.write_json(path, c)


def bad_cases(made):
    """(name, source checkpoint, mutate(dir), input fields, substrings the message must hold)."""
    gpt2_vocab = made["gpt2-f32"][1]["vocab_size"]

    def past_end(d):
        def edit(h):  # the last tensor's [begin, end) moved 64 bytes on: same length, past the data's end
            last = max((k for k in h if k != "__metadata__"), key=lambda k: h[k]["data_offsets"][1])
            b, e = h[last]["data_offsets"]
            h[last]["data_offsets"] = [b + 64, e + 64]
        _rewrite_header(os.path.join(d, "model.safetensors"), edit)

    def overlap(d):
        def edit(h):
            h["h.0.ln_1.bias"]["data_offsets"] = list(h["h.0.ln_1.weight"]["data_offsets"])
        _rewrite_header(os.path.join(d, "model.safetensors"), edit)

    def shard_lacks(d):
        idx = json.load(open(os.path.join(d, "model.safetensors.index.json")))
        name = "model.layers.1.self_attn.o_proj.weight"
        _drop_tensor(os.path.join(d, idx["weight_map"][name]), name)

    def shard_of(made_name, tensor):
        d = made[made_name][0]
        return json.load(open(os.path.join(d, "model.safetensors.index.json")))["weight_map"][tensor]

    last_tensor = None
    with open(os.path.join(made["gpt2-f32"][0], "model.safetensors"), "rb") as f:
        raw = f.read()
        (n,) = struct.unpack("<Q", raw[:8])
        h = json.loads(raw[8:8 + n])
        last_tensor = max((k for k in h if k != "__metadata__"), key=lambda k: h[k]["data_offsets"][1])
    ms = "model.safetensors"
    return [
        ("missing tensor (h.1.attn.c_proj.weight deleted)", "gpt2-f32",
         lambda d: _drop_tensor(os.path.join(d, ms), "h.1.attn.c_proj.weight"),
         {"layer": 1}, [ms, "h.1.attn.c_proj.weight"]),
        ("missing q_norm tensor (Qwen3)", "qwen3-qk-norm",
         lambda d: _drop_tensor(os.path.join(d, ms), "model.layers.0.self_attn.q_norm.weight"),
         {"layer": 1}, [ms, "model.layers.0.self_attn.q_norm.weight", "Qwen3"]),
        ("layer_types of the wrong length (Gemma 2: 2 entries for 3 layers)", "gemma2",
         lambda d: _edit_config(os.path.join(d, "config.json"), layer_types=["sliding_attention", "full_attention"]),
         {"layer": 0}, ["config.json", "layer_types", "num_hidden_layers = 3"]),
        ("unknown rope_type in a Gemma 3's rope_scaling (yarn)", "gemma3-text",
         lambda d: _edit_config(os.path.join(d, "config.json"), rope_scaling={"rope_type": "yarn", "factor": 8.0}),
         {"layer": 0}, ["config.json", "rope_scaling", "yarn"]),
        ("missing k_norm tensor (OLMo 2)", "olmo2",
         lambda d: _drop_tensor(os.path.join(d, ms), "model.layers.1.self_attn.k_norm.weight"),
         {"layer": 1}, [ms, "model.layers.1.self_attn.k_norm.weight", "OLMo 2"]),
        ("missing post_feedforward_layernorm (Gemma 2, a layer below the traced one)", "gemma2",
         lambda d: _drop_tensor(os.path.join(d, ms), "model.layers.0.post_feedforward_layernorm.weight"),
         {"layer": 2}, [ms, "model.layers.0.post_feedforward_layernorm.weight", "Gemma 2"]),
        ("missing tensor named by the index but not in its shard", "llama-bf16-sharded", shard_lacks,
         {"layer": 1}, [shard_of("llama-bf16-sharded", "model.layers.1.self_attn.o_proj.weight"),
                        "model.layers.1.self_attn.o_proj.weight"]),
        ("wrong shape (c_attn.weight stored [3C, C] as nn.Linear would)", "gpt2-f32",
         lambda d: _replace_tensor(os.path.join(d, ms), "h.0.attn.c_attn.weight",
                                   st.Tensor.of(np.zeros((48, 16), np.float32))),
         {"layer": 0}, [ms, "h.0.attn.c_attn.weight"]),
        ("wrong shape (k_proj.weight [32, 32] where 2 kv heads × 8 = 16 rows)", "llama-bf16-sharded",
         lambda d: _replace_tensor(os.path.join(d, shard_of("llama-bf16-sharded", "model.layers.0.self_attn.k_proj.weight")),
                                   "model.layers.0.self_attn.k_proj.weight", st.Tensor.bf16(np.zeros((32, 32), np.float32))),
         {"layer": 0}, [shard_of("llama-bf16-sharded", "model.layers.0.self_attn.k_proj.weight"),
                        "model.layers.0.self_attn.k_proj.weight"]),
        ("truncated file (60% of its bytes)", "gpt2-f32",
         lambda d: _truncate(os.path.join(d, ms), lambda n: n * 6 // 10), {"layer": 0}, [ms]),
        ("truncated file (5 bytes: not even the header length)", "gpt2-f32",
         lambda d: _truncate(os.path.join(d, ms), lambda n: 5), {"layer": 0}, [ms]),
        ("header: data_offsets past the end of the data", "gpt2-f32", past_end, {"layer": 0}, [ms, last_tensor]),
        ("header: two tensors' data_offsets overlap", "gpt2-f32", overlap, {"layer": 0}, [ms, "h.0.ln_1."]),
        ("unknown model_type (gpt_neox)", "gpt2-f32",
         lambda d: _edit_config(os.path.join(d, "config.json"), model_type="gpt_neox"), {"layer": 0},
         ["config.json", "gpt_neox"]),
        ("layer out of range (2 of a 2-layer model)", "gpt2-f32", None, {"layer": 2}, ["checkpoint.layer"]),
        ("layer out of range (-1)", "gpt2-f32", None, {"layer": -1}, ["checkpoint.layer"]),
        ("layer out of range (3 of a 2-layer Llama)", "llama-bf16-sharded", None, {"layer": 3}, ["checkpoint.layer"]),
        (f"token id past the vocabulary ({gpt2_vocab} of {gpt2_vocab})", "gpt2-f32", None,
         {"layer": 0, "token_ids": [1, gpt2_vocab]}, ["token_ids"]),
        ("token id negative", "gpt2-f32", None, {"layer": 0, "token_ids": [1, -1]}, ["token_ids"]),
        ("33 tokens for GPT-2's n_positions = 32", "gpt2-f32", None, {"layer": 0, "token_ids": [1] * 33},
         ["token_ids"]),
        ("a weight in a dtype attn does not read (ln_1.weight as F64)", "gpt2-f32",
         lambda d: _replace_tensor(os.path.join(d, ms), "h.0.ln_1.weight", st.Tensor.of(np.ones(16, np.float64))),
         {"layer": 0}, [ms, "h.0.ln_1.weight", "F64"]),
        ("missing relative-attention table (T5's encoder block 0)", "t5-f32",
         lambda d: _drop_tensor(os.path.join(d, ms), "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"),
         {"layer": 1, "_ck": {"stack": "encoder"}, "_ids_key": "source_ids"},
         [ms, "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", "T5"]),
        ("missing relative-attention table (T5's decoder block 0)", "t5-f32",
         lambda d: _drop_tensor(os.path.join(d, ms), "decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"),
         {"layer": 0, "_ck": {"stack": "decoder"}, "_ids_key": "source_ids", "_extra": {"token_ids": [0, 5]}},
         [ms, "decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", "T5"]),
        ("T5's is_gated_act disagreeing with feed_forward_proj", "t5-f32",
         lambda d: _edit_config(os.path.join(d, "config.json"), is_gated_act=True),
         {"layer": 0, "_ck": {"stack": "encoder"}, "_ids_key": "source_ids"}, ["config.json", "is_gated_act", "feed_forward_proj"]),
        ("T5's feed_forward_proj of an activation attn does not compute", "t5-f32",
         lambda d: _edit_config(os.path.join(d, "config.json"), feed_forward_proj="gated-softplus", is_gated_act=None, dense_act_fn=None),
         {"layer": 0, "_ck": {"stack": "encoder"}, "_ids_key": "source_ids"}, ["config.json", "feed_forward_proj", "softplus"]),
        ("missing config.json", "gpt2-f32", lambda d: os.remove(os.path.join(d, "config.json")), {"layer": 0},
         ["config.json"]),
        ("missing model.safetensors (nothing to read)", "gpt2-f32", lambda d: os.remove(os.path.join(d, ms)),
         {"layer": 0}, [ms]),
    ]


def check_refusals(report, attn, work, made):
    print("== broken checkpoints: exit 2, a message naming the file / tensor / key")
    results = []
    for i, (what, src, mutate, fields, needles) in enumerate(bad_cases(made)):
        d = os.path.join(work, f"bad-{i:02d}")
        shutil.copytree(made[src][0], d)
        if mutate:
            mutate(d)
        ids = fields.get("token_ids", [1, 2, 3])
        inp = {"checkpoint": dict({"path": os.path.basename(d), "layer": fields["layer"]}, **fields.get("_ck", {})),
               fields.get("_ids_key", "token_ids"): ids, **fields.get("_extra", {})}
        r = run_attn(attn, write_input(os.path.join(work, f"in-bad-{i:02d}.json"), inp))
        msg = r.stderr.strip()
        missing = [s for s in needles if s not in msg]
        ok = r.rc == 2 and not missing and msg != ""
        first = msg.splitlines()[0] if msg else "(nothing on stderr)"
        print(f"  {'ok  ' if ok else 'FAIL'} {what}: exit {r.rc}: {first[:300]}")
        if not ok:
            why = f"exit {r.rc} (want 2)" if r.rc != 2 else f"message lacks {missing}"
            report.fail(f"refusal '{what}': {why}; stderr: {msg[:500]!r}")
        results.append(ok)
        if "layer out of range" in what:  # attn heads (which draws every layer) and decode refuse it too
            for cmd in ("heads", "decode"):
                p = subprocess.run([attn, cmd, os.path.join(work, f"in-bad-{i:02d}.json")], capture_output=True, text=True, timeout=120)
                ok = p.returncode == 2 and all(s in p.stderr for s in needles)
                print(f"  {'ok  ' if ok else 'FAIL'} {what}, attn {cmd}: exit {p.returncode}: {p.stderr.strip()[:200]}")
                if not ok:
                    report.fail(f"refusal '{what}' by attn {cmd}: exit {p.returncode}; stderr: {p.stderr[:300]!r}")
                results.append(ok)
    report.groups.append(("refusals", sum(results), len(results)))


def check_decoders(report, attn, work, made):
    """The encoder-decoders' decoders (BART, Marian, T5 and T5 v1.1): every layer's self-attention
    (causal; T5's with its causal buckets) and cross-attention (to the encoder's output over the
    source), x, weights and output, against model_reference.forward_bart_decoder and
    seq2seq_reference, for two source and decoder lengths; the decoder's tokens from a sentence."""
    for name in ("bart-f32", "marian-f32", "t5-f32", "t5v11-bf16"):
        if name not in made:
            continue
        d, config = made[name]
        _, tensors = model_reference.load(d)
        mt = config["model_type"]
        start = config["decoder_start_token_id"]
        rng = np.random.RandomState(make_checkpoints._seed(name) ^ 0xDEC)
        rand = lambda n: [int(i) for i in rng.randint(3, min(config["vocab_size"], 150), size=n)]  # noqa: E731
        ok_all, worst = [], {}
        layers = config.get("decoder_layers") or config.get("num_decoder_layers") or config["num_layers"]
        for source, ids in ((rand(5), [start] + rand(2)), (rand(8), [start] + rand(6))):
            ref = seq2seq_reference.forward_decoder(config, tensors, source, ids, torch.float64)
            for layer in range(layers):
                for att in ("self", "cross"):
                    inp = {"checkpoint": {"path": os.path.relpath(d, work), "layer": layer, "stack": "decoder", "attention": att},
                           "source_ids": source, "token_ids": ids}
                    r = run_attn(attn, write_input(os.path.join(work, f"in-{name}-dec-{att}-L{layer}-T{len(ids)}.json"), inp))
                    where = f"{name} decoder layer {layer} {att}-attention T={len(ids)} S={len(source)}"
                    if r.rc != 0 or r.doc is None:
                        report.fail(f"{where}: attn exited {r.rc}: {r.stderr.strip()[:300]}")
                        ok_all.append(False)
                        continue
                    ok = True
                    for sid in ("x", "weights", "output"):
                        want, got = ref[layer][att][sid].numpy(), r.step(sid)
                        dd = float(np.abs(got - want).max()) if got is not None and list(got.shape) == list(want.shape) else float("inf")
                        worst[att + " " + sid] = max(worst.get(att + " " + sid, 0.0), dd)
                        if not dd <= TOL:
                            report.fail(f"{where}: {sid} differs by {dd:.3g}")
                            ok = False
                    ok_all.append(ok)
        print(f"  {'ok  ' if all(ok_all) else 'FAIL'} {name} decoder: {len(ok_all)} traces (self and cross, every layer, 2 lengths); "
              "largest |diff| " + ", ".join(f"{k} {v:.2g}" for k, v in worst.items()))
        # the decoder's tokens from a sentence: decoder_start_token_id (BART's <s> after it), then the sentence's
        if make_checkpoints.tiny_tokenizers is not None and make_checkpoints.CHECKPOINTS[name].get("tokenizer"):
            inp = {"checkpoint": {"path": os.path.relpath(d, work), "layer": 0, "stack": "decoder"}, "source": "the cat sat", "sentence": "the mat"}
            r = run_attn(attn, write_input(os.path.join(work, f"in-{name}-dec-sentence.json"), inp))
            labels = (r.doc or {}).get("config", {}).get("tokens") or [[]]
            labels = labels[0] if labels and isinstance(labels[0], list) else labels
            first = {"bart": ["</s>", "<s>"], "marian": ["<pad>"], "t5": ["<pad>"]}[mt]
            ok = r.rc == 0 and labels[:len(first)] == first and "".join(labels[len(first):]) == "␣the␣mat"[mt == "bart":]
            if mt == "marian":  # cut by target.spm, not source.spm: the pieces its own model gives
                import sentencepiece
                want = sentencepiece.SentencePieceProcessor(model_file=os.path.join(d, "target.spm")).encode("the mat", out_type=str)
                ok = ok and (r.doc or {}).get("config", {}).get("token_pieces", [])[1:] == want
            print(f"  {'ok  ' if ok else 'FAIL'} {name} decoder tokens of \"the mat\": {labels}")
            if not ok:
                report.fail(f"{name} decoder sentence: exit {r.rc}, tokens {labels}: {r.stderr.strip()[:200]}")
            ok_all.append(ok)
        report.groups.append((f"{name}'s decoder", sum(ok_all), len(ok_all)))
    # attn heads on an encoder-decoder with the decoder's tokens: three views, every weight against the
    # reference, and the cross-attention's patterns recomputed here
    results = []
    for name in ("bart-f32", "marian-f32", "t5-f32"):
        d, config = made[name]
        _, tensors = model_reference.load(d)
        rng = np.random.RandomState(7)
        source = [int(i) for i in rng.randint(3, 100, size=6)] + [config["eos_token_id"]]
        ids = [config["decoder_start_token_id"]] + [int(i) for i in rng.randint(3, 100, size=4)]
        inp = {"checkpoint": {"path": os.path.relpath(d, work)}, "source_ids": source, "token_ids": ids}
        p = subprocess.run([attn, "heads", write_input(os.path.join(work, f"in-{name}-heads.json"), inp), "--format", "json"],
                           capture_output=True, text=True, cwd=work)
        doc = json.loads(p.stdout) if p.returncode == 0 else {}
        parts = {q.get("part"): q for q in doc.get("parts", [])}
        ok = p.returncode == 0 and list(parts) == ["encoder", "decoder", "cross"]
        dd, wrong = 0.0, []
        if ok:
            enc = (seq2seq_reference.forward_encoder if config["model_type"] != "bart" else model_reference.forward_bart_encoder)(
                config, tensors, source, torch.float64)
            dec = seq2seq_reference.forward_decoder(config, tensors, source, ids, torch.float64)
            want = {"encoder": np.stack([r["weights"].numpy() for r in enc]),
                    "decoder": np.stack([r["self"]["weights"].numpy() for r in dec]),
                    "cross": np.stack([r["cross"]["weights"].numpy() for r in dec])}
            for part, w in want.items():
                got = np.array(parts[part]["weights"], dtype=np.float64)
                dd = max(dd, float(np.abs(got - w).max()) if got.shape == w.shape else float("inf"))
            # the cross heads' patterns: diagonal, the source's first token (or <s>), its </s>, as heads.cpp names them
            S, T = len(source), len(ids)
            ends = [k for k, t in enumerate(source) if t == config["eos_token_id"]]
            for l, layer in enumerate(want["cross"]):
                for h, w in enumerate(layer):
                    diag = np.mean([w[i, int(round(i * (S - 1) / (T - 1)))] for i in range(T)])
                    means = {"diagonal": diag, "first": np.mean(w[:, 0]), "end token": np.mean(w[:, ends].sum(axis=1))}
                    best = max(means, key=means.get)
                    ent = float(np.mean([-(r[r > 0] * np.log2(r[r > 0])).sum() for r in w]))
                    pattern = best if means[best] >= 0.5 else "broad" if ent >= 0.8 * math.log2(S) else "mixed"
                    sm = parts["cross"]["summaries"][l][h]
                    got_pattern = {"first token": "first", "start token": "first"}.get(sm["pattern"], sm["pattern"])
                    if got_pattern != pattern or abs(sm["entropy"] - ent) > 1e-4:
                        wrong.append(f"L{l} h{h}: {sm['pattern']} / {sm['entropy']:.4f}, here {pattern} / {ent:.4f}")
            ok = dd <= TOL and not wrong and parts["cross"]["S"] == S and len(parts["cross"]["source_tokens"]) == S
        print(f"  {'ok  ' if ok else 'FAIL'} attn heads {name}: encoder, decoder and cross views, every weight within {dd:.2g}; "
              f"the cross heads' patterns as recomputed here")
        if not ok:
            report.fail(f"attn heads {name}: exit {p.returncode}, parts {list(parts)}, |diff| {dd:.3g}, {wrong[:3]} {p.stderr.strip()[:200]}")
        results.append(ok)
    report.groups.append(("heads of the encoder-decoders", sum(results), len(results)))


def check_t5_buckets(report, attn, work, made):
    """T5's buckets over every distance up to 299 in both directions, with T5's own 32 buckets up to
    128 (the logarithmic part's float32 arithmetic, and the last bucket past max_distance): the encoder's
    bidirectional rel.bucket and the decoder's causal one against _relative_position_bucket."""
    if "t5v11-bf16" not in made:
        return
    d, config = made["t5v11-bf16"]
    ids = [int(i) for i in np.random.RandomState(300).randint(2, 100, size=300)]
    ok_all = []
    for stack, inp in (("encoder", {"source_ids": ids}), ("decoder", {"source_ids": ids[:3], "token_ids": [0] + ids[:299]})):
        inp = dict(inp, checkpoint={"path": os.path.relpath(d, work), "layer": 1, "stack": stack})
        r = run_attn(attn, write_input(os.path.join(work, f"in-t5-buckets-{stack}.json"), inp), extra=("--steps", "rel.bucket"))
        _, want = seq2seq_reference.t5_bias(config, torch.zeros(config["relative_attention_num_buckets"], 1), 300, 300, stack == "encoder")
        got = r.step("rel.bucket")
        ok = r.rc == 0 and got is not None and np.array_equal(got, want.numpy().astype(np.float32))
        print(f"  {'ok  ' if ok else 'FAIL'} t5v11-bf16 {stack}: rel.bucket over distances −299 .. 299 equals _relative_position_bucket's "
              f"({len(np.unique(want.numpy()))} buckets used)")
        if not ok:
            report.fail(f"T5 buckets ({stack}): exit {r.rc}; {r.stderr.strip()[:200]}")
        ok_all.append(ok)
    report.groups.append(("T5's buckets", sum(ok_all), len(ok_all)))


def check_pairs(report, attn, work, made):
    """The encoders' sentence pairs and token types: [CLS] a [SEP] b [SEP] with types 0…0 1…1 (RoBERTa's
    <s> a </s></s> b </s>, one type), given token_type_ids, against the reference; and the refusals."""
    print("== the encoders: sentence pairs and token types")
    results = []

    def run(name, inp, tag):
        return run_attn(attn, write_input(os.path.join(work, f"in-{name}-{tag}.json"), inp))

    for name in ("bert-f32", "roberta-f32"):
        if name not in made or make_checkpoints.tiny_tokenizers is None:
            continue
        d, config = made[name]
        layer = model_reference.num_layers(config) - 1
        ck = {"path": os.path.relpath(d, work), "layer": layer}
        r = run(name, {"checkpoint": ck, "sentence": "the cat sat", "sentence_b": "on the mat"}, "pair")
        if r.rc != 0:
            report.fail(f"{name} pair: attn exited {r.rc}: {r.stderr.strip()[:300]}")
            results.append(False)
            continue
        vocab = piece_ids(d)
        a, b = reference_pieces(d, "the cat sat")[1], reference_pieces(d, "on the mat")[1]
        if config["model_type"] == "roberta":
            ids, types = [vocab["<s>"]] + a + [vocab["</s>"]] * 2 + b + [vocab["</s>"]], None
        else:
            ids = [vocab["[CLS]"]] + a + [vocab["[SEP]"]] + b + [vocab["[SEP]"]]
            types = [0] * (len(a) + 2) + [1] * (len(b) + 1)
        _, tensors = model_reference.load(d)
        ref = model_reference.forward(config, tensors, ids, torch.float64, types=types)[layer]
        got_ids = [vocab[p] for p in r.doc["config"]["token_pieces"]]
        dd = max(float(np.abs(r.step(s) - ref[s].numpy()).max()) for s in ("x", "weights", "output"))
        ok = got_ids == ids and dd <= TOL
        print(f"  {'ok  ' if ok else 'FAIL'} {name}: a pair, {r.doc['config']['token_pieces']}, types "
              f"{types or 'all 0'}: largest |diff| {dd:.2g}")
        if not ok:
            report.fail(f"{name} pair: ids {got_ids} (want {ids}), largest |diff| {dd:.3g}")
        results.append(ok)
        if types:  # the same ids with the types given, and the types changing the numbers
            r2 = run(name, {"checkpoint": ck, "token_ids": ids, "token_type_ids": types}, "types")
            r0 = run(name, {"checkpoint": ck, "token_ids": ids}, "types0")
            same = r2.rc == 0 and float(np.abs(r2.step("output") - r.step("output")).max()) == 0.0
            differs = r0.rc == 0 and float(np.abs(r0.step("output") - r.step("output")).max()) > TOL
            print(f"  {'ok  ' if same and differs else 'FAIL'} {name}: token_type_ids given give the pair's numbers; all 0 give others")
            if not (same and differs):
                report.fail(f"{name}: token_type_ids: same as the pair {same}, types 0 differ {differs}")
            results.append(same and differs)
    refusals = [
        ("gpt2-f32", {"sentence": "the cat", "sentence_b": "sat"}, "sentence_b: is for the encoders"),
        ("bert-f32", {"token_ids": [4, 9, 5], "token_type_ids": [0, 2, 0]}, "token_type_ids[1]: expected a token type 0 .. 1 (type_vocab_size = 2)"),
        ("bert-f32", {"token_ids": [4, 9, 5], "token_type_ids": [0, 1]}, "token_type_ids: expected 3 token types"),
        ("distilbert-f32", {"token_ids": [4, 9, 5], "token_type_ids": [0, 0, 0]}, "token_type_ids: DistilBERT has no token types"),
        ("bert-f32", {"token_ids": [4] * 41}, "41 tokens, but BERT has learned positions for max_position_embeddings = 40"),
        ("roberta-f32", {"token_ids": [5] * 33}, "counted from pad_token_id + 1 = 2"),
        ("bert-f32", {"sentence_b": "sat", "token_ids": [4, 5]}, "sentence_b: is the second sentence of a pair"),
        # the encoder-decoders: which stack and attention, and their inputs (_ck: keys of "checkpoint")
        ("gpt2-f32", {"_ck": {"stack": "encoder"}, "token_ids": [4, 5]}, "checkpoint.stack: is for the encoder-decoders (BART, Marian, T5): GPT-2 has one stack"),
        ("bert-f32", {"_ck": {"attention": "cross"}, "token_ids": [4, 5]}, "checkpoint.attention: is for the encoder-decoders"),
        ("gpt2-f32", {"source": "the cat"}, "source: is the encoder's input of an encoder-decoder (BART, Marian, T5); GPT-2 reads"),
        ("bart-f32", {"source_ids": [0, 5, 2]}, "checkpoint.stack: BART has an encoder and a decoder: give \"stack\": \"encoder\" or \"decoder\""),
        ("bart-f32", {"_ck": {"stack": "decoder"}, "source_ids": [0, 5, 2]}, "sentence: BART's decoder reads \"sentence\""),
        ("bart-f32", {"_ck": {"stack": "encoder", "attention": "cross"}, "source_ids": [0, 5, 2]}, "checkpoint.attention: BART's encoder has self-attention only"),
        ("bart-f32", {"_ck": {"stack": "decoder", "layer": 2}, "source_ids": [0, 5, 2], "token_ids": [2, 0]}, "checkpoint.layer: expected 0 .. 1 (BART's decoder has 2 layers), got 2"),
        ("bart-f32", {"_ck": {"stack": "middle"}, "source_ids": [0, 5, 2]}, "checkpoint.stack: expected \"encoder\" or \"decoder\", got \"middle\""),
        ("bart-f32", {"_ck": {"stack": "encoder"}, "sentence": "the cat"}, "sentence: BART's encoder reads \"source\""),
        ("bart-f32", {"_ck": {"stack": "encoder"}, "source": "the cat", "sentence_b": "sat"}, "sentence_b: is for the encoders (BERT, RoBERTa, DistilBERT)"),
        ("bart-f32", {"_ck": {"stack": "decoder"}, "source_ids": [0, 5, 2], "token_ids": [2, 0], "token_type_ids": [0, 0, 0]},
         "token_type_ids: is for the encoders (BERT, RoBERTa, DistilBERT), whose tokens come in pairs; BART's encoder reads one \"source\""),
        ("bart-f32", {"_ck": {"stack": "encoder"}, "source_ids": [0] * 41}, "41 tokens, but BART has learned positions for max_position_embeddings = 40"),
        ("t5-f32", {"_ck": {"stack": "decoder", "attention": "cross"}, "token_ids": [0, 5]}, "source: give \"source\""),
        ("t5-f32", {"_ck": {"stack": "decoder", "attention": "self"}, "source_ids": [5, 1], "token_ids": [0, 5], "sentence": "the"},
         "token_ids: T5's decoder reads \"sentence\""),
        ("marian-f32", {"_ck": {"stack": "encoder"}, "source_ids": [3] * 65}, "65 source tokens, but Marian has sinusoidal positions for max_position_embeddings = 64"),
        ("marian-f32", {"_ck": {"stack": "decoder"}, "source_ids": [3, 0], "token_ids": [172] * 65}, "65 decoder tokens, but Marian has sinusoidal positions for max_position_embeddings = 64"),
    ]
    for name, fields, needle in refusals:
        if name not in made:
            continue
        d, _ = made[name]
        fields = dict(fields)
        ck = dict({"path": os.path.relpath(d, work), "layer": 0}, **fields.pop("_ck", {}))
        r = run(name, dict({"checkpoint": ck}, **fields), "refusal")
        ok = r.rc == 2 and needle in r.stderr
        print(f"  {'ok  ' if ok else 'FAIL'} {name} refuses {sorted(fields)}: exit {r.rc}: {r.stderr.strip()[:160]}")
        if not ok:
            report.fail(f"{name} {fields}: exit {r.rc} (want 2 and {needle!r}): {r.stderr.strip()[:300]}")
        results.append(ok)
    # attn heads on an encoder: every layer's weights against the reference (later keys included), and
    # each head's pattern recomputed here from the reference's weights
    for name in ("bert-f32", "roberta-f32", "distilbert-f32"):
        if name not in made or make_checkpoints.tiny_tokenizers is None:
            continue
        d, config = made[name]
        inp = {"checkpoint": {"path": d}, "sentence": "the cat sat", "sentence_b": "on the mat"}
        if name == "distilbert-f32":
            inp.pop("sentence_b")
        p = subprocess.run([attn, "heads", write_input(os.path.join(work, f"in-heads-{name}.json"), inp), "--format", "json"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            report.fail(f"attn heads {name}: exit {p.returncode}: {p.stderr.strip()[:300]}")
            results.append(False)
            continue
        doc = json.loads(p.stdout)
        vocab = piece_ids(d)
        ids = [vocab[x] for x in doc["pieces"]]
        types = None
        if name == "bert-f32":
            first_sep = doc["pieces"].index("[SEP]")
            types = [0] * (first_sep + 1) + [1] * (len(ids) - first_sep - 1)
        _, tensors = model_reference.load(d)
        ref = model_reference.forward(config, tensors, ids, torch.float64, types=types)
        got = np.array(doc["weights"], dtype=np.float64)
        want = np.stack([r["weights"].numpy() for r in ref])
        dd = float(np.abs(got - want).max())
        start_name, end_name = ("<s>", "</s>") if config["model_type"] == "roberta" else ("[CLS]", "[SEP]")
        ends = [i for i, x in enumerate(doc["pieces"]) if x == end_name]
        wrong = []
        T = len(ids)
        for l in range(len(ref)):
            for h in range(want.shape[1]):
                w = want[l, h]
                means = {"previous token": np.mean([w[i, i - 1] for i in range(1, T)]), "next token": np.mean([w[i, i + 1] for i in range(T - 1)]),
                         "start token": np.mean(w[:, 0]), "end token": np.mean(w[:, ends].sum(axis=1)), "same token": np.mean(np.diag(w))}
                best = max(means, key=means.get)  # (no ties in random weights)
                ent = float(np.mean([-(r[r > 0] * np.log2(r[r > 0])).sum() for r in w]))
                pattern = best if means[best] >= 0.5 else "broad" if ent >= 0.8 * math.log2(T) else "mixed"
                s = doc["summaries"][l][h]
                if s["pattern"] != pattern or abs(s["entropy"] - ent) > 1e-4:
                    wrong.append(f"L{l} h{h}: {s['pattern']} / {s['entropy']:.4f}, here {pattern} / {ent:.4f}")
        ok = doc.get("bidirectional") is True and dd <= TOL and not wrong and doc["pieces"][0] == start_name
        print(f"  {'ok  ' if ok else 'FAIL'} attn heads {name}: every layer's weights (later keys too) within {dd:.2g}, "
              f"{len(ref) * want.shape[1]} heads' patterns and entropies as recomputed here")
        if not ok:
            report.fail(f"attn heads {name}: bidirectional {doc.get('bidirectional')}, |diff| {dd:.3g}, {wrong[:3]}")
        results.append(ok)
    report.groups.append(("encoders", sum(results), len(results)))


def main(argv):
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--keep"):
        print(__doc__, file=sys.stderr)
        return 2
    attn = os.path.abspath(argv[1])
    keep = argv[3] if len(argv) == 4 else None
    work = keep or tempfile.mkdtemp(prefix="attn-checkpoints-")
    if keep:
        shutil.rmtree(keep, ignore_errors=True)
        os.makedirs(keep)
    try:
        made = make_checkpoints.make_all(work)
        report = Report()
        check_numbers(report, attn, work, made)
        check_many_rows(report, attn, work, made)
        check_sentences(report, attn, work, made)
        check_refusals(report, attn, work, made)
        check_pairs(report, attn, work, made)
        check_decoders(report, attn, work, made)
        check_t5_buckets(report, attn, work, made)
        print("== summary")
        for g, ok, n in report.groups:
            print(f"  {g}: {ok} of {n} passed")
        if report.failures:
            print(f"{len(report.failures)} failure(s)")
            return 1
        print("all passed")
        return 0
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
