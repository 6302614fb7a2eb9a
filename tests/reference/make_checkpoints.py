#!/usr/bin/env python3
"""Tiny random checkpoints in the model hub's layout, with the hub's exact tensor names, config keys,
dtypes and sharding, for testing attn's checkpoint reading. Deterministic: the same bytes every run
(numpy RandomState seeded per checkpoint; configs written as transformers writes them:
json.dumps(config, indent=2, sort_keys=True) + "\\n").

Usage:
  make_checkpoints.py OUT_DIR            every test checkpoint (below) into OUT_DIR/NAME/
  make_checkpoints.py --example DEST     DEST/tiny-gpt2 (F32) and DEST/tiny-llama (BF16), with tokenizers,
                                         each ≤ 100 KB, meant to be committed as examples
  make_checkpoints.py --list             the names and what each one tests

Tokenizer files come from tiny_tokenizers.py (beside this file) when it is there: gpt2 directories get
vocab.json + merges.txt (or tokenizer.json), llama directories tokenizer.model (or tokenizer.json), and
vocab_size in config.json is that tokenizer's size. Without it vocab_size is 512 and no tokenizer is
written (token_ids inputs work the same).

Weights: N(0, σ) with σ from 0.05 to 0.45, q/k larger than v/o so that the attention is far from uniform
(score standard deviations of about 3), norms' weights 1 + N(0, 0.1).
"""
import json
import os
import sys
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import safetensors_io as st  # noqa: E402

try:
    import tiny_tokenizers  # written by another helper; optional
except Exception:  # ImportError, or a half-written file
    tiny_tokenizers = None

FALLBACK_VOCAB = 512

# name -> spec. kind "gpt2" or "llama"; dtype of the float weights; prefix of every name; shards (1 = a
# lone model.safetensors); tokenizer: "gpt2-files" (vocab.json + merges.txt), "gpt2-json"
# (tokenizer.json, byte-level BPE), "gpt2-split-json" (the same as Llama 3 / Qwen2 write it: Split + ByteLevel),
# "sp-model" (tokenizer.model), "sp-json" (tokenizer.json, Llama 2's), "metaspace-json" (the newer Metaspace form).
CHECKPOINTS = {
    "gpt2-f32": dict(kind="gpt2", dtype="F32", C=16, H=4, L=2, npos=32, prefix="", shards=1,
                     buffers=True, tokenizer="gpt2-files",
                     what="GPT-2, F32, names without prefix as the real gpt2's model.safetensors, "
                          "h.{i}.attn.bias mask buffers, one file"),
    "gpt2-f16-sharded": dict(kind="gpt2", dtype="F16", C=16, H=4, L=3, npos=32, prefix="transformer.", shards=2,
                             buffers=True, masked_bias=True, tokenizer="gpt2-json",
                             what="GPT-2, F16, 'transformer.' prefix, 2 shards + index, 3 layers, "
                                  "attn.bias and scalar attn.masked_bias buffers (older conversions)"),
    "llama-bf16-sharded": dict(kind="llama", model_type="llama", dtype="BF16", C=32, H=4, Hkv=2, hd=8, I=64, L=2,
                               theta=10000.0, prefix="model.", shards=2, lm_head=True, tokenizer="sp-model",
                               tokenizer_config={"add_bos_token": True, "add_eos_token": False, "bos_token": "<s>",
                                                 "eos_token": "</s>", "unk_token": "<unk>",
                                                 "tokenizer_class": "LlamaTokenizer", "model_max_length": 64},
                               what="Llama, BF16, 2 shards + index, GQA 4/2, head_dim 8, lm_head.weight"),
    "llama-f32-headdim": dict(kind="llama", model_type="llama", dtype="F32", C=32, H=4, Hkv=1, hd=12, I=64, L=2,
                              theta=500000.0, prefix="", shards=1, lm_head=False, tokenizer="sp-json",
                              what="Llama, F32, head_dim 12 ≠ hidden/heads (Llama-3-style theta 500000), "
                                   "one kv head, names without 'model.', tied embeddings"),
    "mistral-window": dict(kind="llama", model_type="mistral", dtype="F16", C=32, H=4, Hkv=2, hd=None, I=64, L=2,
                           theta=10000.0, prefix="model.", shards=1, lm_head=True, window=3,
                           tokenizer="metaspace-json",
                           what="Mistral, F16, sliding_window 3, no head_dim key"),
    "qwen2-bias": dict(kind="llama", model_type="qwen2", dtype="BF16", C=32, H=4, Hkv=2, hd=None, I=64, L=2,
                       theta=1000000.0, prefix="model.", shards=1, lm_head=False, qkv_bias=True,
                       tokenizer="gpt2-split-json",
                       what="Qwen2, BF16, q/k/v biases, use_sliding_window false, tied embeddings"),
    # RoPE scaling as Llama 3.1 / 3.2 write it, with head_dim 16 and original_max_position_embeddings 64 so
    # that the pairs fall in all three bands (wavelength 6 < 64/4: kept; 33: smoothed; 169 and up > 64/1: ÷ factor)
    "llama3-rope-scaling": dict(kind="llama", model_type="llama", dtype="BF16", C=32, H=2, Hkv=1, hd=16, I=64, L=2,
                                theta=500000.0, prefix="model.", shards=1, lm_head=False, tokenizer=None,
                                rope={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                      "original_max_position_embeddings": 64},
                                what="Llama 3.1-style rope_scaling (rope_type llama3), all three frequency bands"),
    "llama3-rope-parameters": dict(kind="llama", model_type="llama", dtype="F32", C=32, H=2, Hkv=1, hd=16, I=64, L=2,
                                   theta=500000.0, prefix="model.", shards=1, lm_head=False, tokenizer=None,
                                   rope={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                         "original_max_position_embeddings": 64},
                                   rope_form="parameters",
                                   what="the newer config form: rope_parameters holds rope_theta and the llama3 keys, no "
                                        "top-level rope_theta"),
    "llama-linear-type": dict(kind="llama", model_type="llama", dtype="F32", C=32, H=2, Hkv=2, hd=16, I=64, L=1,
                              theta=10000.0, prefix="model.", shards=1, lm_head=False, tokenizer=None,
                              rope={"type": "linear", "factor": 4.0},
                              what="linear RoPE scaling under the older key \"type\""),
    "qwen3-qk-norm": dict(kind="llama", model_type="qwen3", dtype="BF16", C=32, H=4, Hkv=2, hd=16, I=64, L=2,
                          theta=1000000.0, prefix="model.", shards=1, lm_head=False, tokenizer="gpt2-split-json",
                          what="Qwen3, BF16, q_norm and k_norm per head before RoPE, head_dim 16 (H·hd = 64 ≠ hidden 32), GQA 4/2"),
    "phi3-fused": dict(kind="llama", model_type="phi3", dtype="BF16", C=32, H=4, Hkv=2, hd=None, I=48, L=2,
                       theta=10000.0, prefix="model.", shards=1, lm_head=True, window=4, tokenizer="sp-json",
                       what="Phi-3, BF16, fused qkv_proj and gate_up_proj, GQA 4/2, sliding_window 4"),
    # Gemma 2: head_dim 16 (H·hd = 64 ≠ hidden 48, so √48 rounds in BF16: 6.9282 → 6.9375), a small soft-cap
    # so that capping after the mask would show, window 3 on layers 0 and 2, query_pre_attn_scalar 24 ≠ hd
    "gemma2": dict(kind="llama", model_type="gemma2", dtype="BF16", C=48, H=4, Hkv=2, hd=16, I=64, L=3,
                   theta=10000.0, prefix="model.", shards=1, lm_head=False, window=3, softcap=4.0, qpas=24,
                   tokenizer="sp-json",
                   what="Gemma 2, BF16, (1 + w) norms, four per layer, √C rounded to BF16, soft-cap 4 before the mask, "
                        "window 3 on even layers, gelu_pytorch_tanh"),
    # Gemma 3 text: 5 of 6 layers slide (pattern 3 here: layers 0, 1, 3 slide, 2 does not), θ 10000 on those,
    # θ 1e6 with linear scaling 8 on the full ones, per-head (1 + w) q/k norms, sharded
    "gemma3-text": dict(kind="llama", model_type="gemma3_text", dtype="BF16", C=48, H=4, Hkv=1, hd=16, I=64, L=4,
                        theta=1000000.0, prefix="model.", shards=2, lm_head=False, window=3, qpas=16, pattern=3,
                        rope={"rope_type": "linear", "factor": 8.0}, tokenizer="sp-json",
                        what="Gemma 3 text, BF16, 2 shards, q/k norms per head, sliding_window_pattern 3, two RoPE θ, "
                             "linear scaling on the full layers"),
    # a multimodal Gemma 3: its language model in text_config, tensors under language_model.model., layer_types
    "gemma3-multimodal": dict(kind="llama", model_type="gemma3", dtype="F32", C=32, H=2, Hkv=2, hd=16, I=48, L=3,
                              theta=1000000.0, prefix="language_model.model.", shards=1, lm_head=False, window=2, qpas=16,
                              layer_types=["sliding_attention", "full_attention", "sliding_attention"], tokenizer=None,
                              what="Gemma 3 (model_type gemma3) with text_config, F32, language_model.model. prefix, layer_types"),
    "olmo2": dict(kind="llama", model_type="olmo2", dtype="F32", C=32, H=4, Hkv=4, hd=None, I=64, L=2,
                  theta=500000.0, prefix="model.", shards=1, lm_head=True, tokenizer="gpt2-split-json",
                  what="OLMo 2, F32, q/k norms over the whole width before the head split, norms after attention and MLP"),
    # the encoders: BERT (with the task head's prefix, pooler and MLM head stored and ignored), BERT with
    # the older gamma/beta LayerNorm names and no prefix in BF16 (cased), RoBERTa (positions from
    # pad_token_id + 1, one token type, byte-level BPE with <s> </s>), DistilBERT (no token types)
    "bert-f32": dict(kind="bert", model_type="bert", dtype="F32", C=32, H=4, I=64, L=2, npos=40, types=2, prefix="bert.",
                     shards=1, heads=True, tokenizer="wordpiece",
                     what="BERT, F32, 'bert.' prefix with pooler and cls.predictions tensors, 2 token types, uncased WordPiece"),
    "bert-gamma-bf16": dict(kind="bert", model_type="bert", dtype="BF16", C=32, H=2, I=48, L=3, npos=24, types=2, prefix="",
                            shards=1, gamma=True, tokenizer="wordpiece-cased",
                            what="BERT, BF16, no prefix, LayerNorm.gamma/beta (TensorFlow-converted names), cased WordPiece"),
    "roberta-f32": dict(kind="bert", model_type="roberta", dtype="F32", C=32, H=4, I=64, L=2, npos=34, types=1, prefix="roberta.",
                        shards=1, pad=1, tokenizer="roberta-files",
                        what="RoBERTa, F32, positions from pad_token_id + 1 = 2, type_vocab_size 1, <s> … </s> byte-level BPE"),
    "distilbert-f32": dict(kind="bert", model_type="distilbert", dtype="F32", C=32, H=4, I=64, L=2, npos=32, types=0,
                           prefix="distilbert.", shards=1, tokenizer="wordpiece",
                           what="DistilBERT, F32, transformer.layer names (q_lin … out_lin), no token types"),
    "bart-f32": dict(kind="bart", model_type="bart", dtype="F32", C=32, H=4, I=64, L=2, npos=40, prefix="model.", shards=1,
                     tokenizer="roberta-files",
                     what="BART, F32, encoder and decoder tensors (attn reads the encoder), positions from row 2, layernorm_embedding, "
                          "<s> … </s> byte-level BPE"),
    # the encoder-decoders without learned positions: Marian (sinusoidal positions, computed; swish; × √C;
    # its SentencePiece models cut the text, vocab.json numbers the pieces) and T5 (RMS norms, no scale, a
    # relative position bias; few buckets and a short max_distance so that short inputs reach the
    # logarithmic buckets): T5 with relu, tied, more decoder layers than encoder layers; T5 v1.1's gated
    # gelu in BF16 with H·d_kv ≠ d_model and an untied lm_head
    "marian-f32": dict(kind="marian", model_type="marian", dtype="F32", C=32, H=4, I=64, L=2, npos=64, prefix="model.", shards=1,
                       tokenizer="marian",
                       what="Marian, F32, sinusoidal positions (not stored), swish, scale_embedding, source.spm / target.spm + vocab.json"),
    "t5-f32": dict(kind="t5", model_type="t5", dtype="F32", C=32, H=4, dkv=8, I=64, L=2, Ldec=3, buckets=8, max_distance=12, prefix="",
                   shards=1, ff="relu", tied=True, tokenizer="t5-spm",
                   what="T5, F32, relu MLP, 2 encoder and 3 decoder layers, 8 buckets up to distance 12, tied, spiece.model"),
    "t5v11-bf16": dict(kind="t5", model_type="t5", dtype="BF16", C=32, H=3, dkv=12, I=48, L=2, Ldec=2, buckets=32, max_distance=128,
                       prefix="", shards=1, ff="gated-gelu", tied=False, tokenizer=None,
                       what="T5 v1.1 / Flan-T5, BF16, gated-gelu, H·d_kv = 36 ≠ d_model 32, 32 buckets up to 128, lm_head.weight"),
    "single-file": dict(kind="gpt2", dtype="F32", C=16, H=4, L=2, npos=32, prefix="", shards=1, buffers=True,
                        tokenizer=None, lone_file="tiny-gpt2-weights.safetensors",
                        what="a lone .safetensors file (GPT-2) with no config.json beside it; "
                             "input.json gives the config inline"),
}

EXAMPLES = {
    "tiny-gpt2": dict(kind="gpt2", dtype="F32", C=16, H=4, L=2, npos=32, prefix="", shards=1, buffers=True,
                      tokenizer="gpt2-files", what="example: GPT-2 F32"),
    "tiny-llama": dict(kind="llama", model_type="llama", dtype="BF16", C=32, H=4, Hkv=2, hd=8, I=64, L=2,
                       theta=10000.0, prefix="model.", shards=1, lm_head=False, tokenizer="sp-json",
                       what="example: Llama BF16, GQA 4/2, tied embeddings, Llama 2's tokenizer.json"),
    "tiny-bert": dict(kind="bert", model_type="bert", dtype="BF16", C=32, H=4, I=64, L=2, npos=40, types=2, prefix="bert.",
                      shards=1, tokenizer="wordpiece", what="example: BERT BF16, 2 token types, uncased WordPiece"),
    "tiny-t5": dict(kind="t5", model_type="t5", dtype="BF16", C=32, H=4, dkv=8, I=32, L=2, Ldec=2, buckets=32, max_distance=128,
                    prefix="", shards=1, ff="relu", tied=True, tokenizer="t5-spm-small",
                    what="example: T5 BF16, relu, T5's 32 buckets up to 128, spiece.model (identity normalisation, to stay small)"),
}


def _seed(name):
    return zlib.crc32(name.encode("utf-8")) & 0x7FFFFFFF


# ---- tokenizers ------------------------------------------------------------------------------------

def write_tokenizer(kind, directory):
    """Writes the tokenizer files; returns the vocabulary size (None when no tokenizer was written)."""
    if kind is None or tiny_tokenizers is None:
        return None
    if kind == "gpt2-files":
        tiny_tokenizers.write_gpt2_files(directory)
    elif kind == "gpt2-json":
        tiny_tokenizers.write_gpt2_tokenizer_json(directory)
    elif kind == "sp-model":
        tiny_tokenizers.write_sentencepiece_model(directory)
    elif kind == "gpt2-split-json":
        tiny_tokenizers.write_gpt2_split_tokenizer_json(directory)
    elif kind == "sp-json":
        tiny_tokenizers.write_sentencepiece_tokenizer_json(directory)
    elif kind == "metaspace-json":
        tiny_tokenizers.write_metaspace_tokenizer_json(directory)
    elif kind in ("wordpiece", "wordpiece-cased"):
        return write_wordpiece(directory, cased=kind == "wordpiece-cased")
    elif kind == "roberta-files":
        return write_roberta_files(directory)
    elif kind == "t5-spm":
        return write_t5_spm(directory)
    elif kind == "t5-spm-small":
        return write_t5_spm(directory, normalization_rule_name="identity")
    elif kind == "marian":
        return write_marian_spm(directory)
    else:
        raise ValueError(kind)
    return tokenizer_vocab_size(directory)


# BERT's vocab.txt: the special tokens, the words of a small corpus (lower-cased unless cased), their
# first letters and "##" continuations of every letter, so that any word of letters has a spelling;
# punctuation, digits and a few CJK characters and accented letters; [unused] rows as BERT's own.
WORDPIECE_WORDS = ("the cat sat on mat dog dogs ran fast and a an is was it of to in that this he she they "
                   "un ##aff ##able play ##ing ##ed ##s walk talk ##er bank river money café zoe don ' t").split()


def write_wordpiece(directory, cased=False):
    letters = "abcdefghijklmnopqrstuvwxyz"
    if cased:
        letters += letters.upper()
    vocab = ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    for w in WORDPIECE_WORDS + list(letters) + ["##" + c for c in letters] + list("0123456789") + ["##" + d for d in "0123456789"]:
        for form in ([w, w.capitalize()] if cased and not w.startswith("##") else [w]):
            if form not in vocab:
                vocab.append(form)
    vocab += list(".,!?;:'\"-()[]{}☕—") + ["北", "京", "é", "##é", "ë", "##ë", "ö", "##ö"]
    with open(os.path.join(directory, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("".join(v + "\n" for v in vocab))
    write_json(os.path.join(directory, "tokenizer_config.json"),
               {"do_lower_case": not cased, "model_max_length": 512, "tokenizer_class": "BertTokenizer", "unk_token": "[UNK]",
                "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "mask_token": "[MASK]"})
    return len(vocab)


def write_roberta_files(directory):
    """GPT-2's tiny byte-level BPE with RoBERTa's specials first: <s> 0, <pad> 1, </s> 2, <unk> 3."""
    vocab, merges = tiny_tokenizers.gpt2_vocab_and_merges()
    ordered = ["<s>", "<pad>", "</s>", "<unk>"] + [k for k, _ in sorted(vocab.items(), key=lambda kv: kv[1]) if k != "<|endoftext|>"]
    with open(os.path.join(directory, "vocab.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps({k: i for i, k in enumerate(ordered)}, ensure_ascii=False))
    with open(os.path.join(directory, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
    return len(ordered)


def unigram_model_bytes(lines, vocab, **ids):
    """A SentencePiece unigram model (as T5's and Marian's are) trained on lines, one thread, deterministic."""
    import io
    import sentencepiece as spm
    if hasattr(spm, "set_random_generator_seed"):
        spm.set_random_generator_seed(1)
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, model_type="unigram", vocab_size=vocab, hard_vocab_limit=False,
        num_threads=1, character_coverage=1.0, input_sentence_size=0, shuffle_input_sentence=False, minloglevel=2, **ids)
    return model.getvalue()


def _text_lines():
    return [line for line in tiny_tokenizers.TEXT.split("\n") if line]


def write_t5_spm(directory, **options):
    """T5's spiece.model: pad 0, </s> 1, <unk> 2, no BOS; vocab_size is 4 more (T5's extra ids)."""
    import sentencepiece as spm
    data = unigram_model_bytes(_text_lines(), 300, pad_id=0, eos_id=1, unk_id=2, bos_id=-1, **options)
    with open(os.path.join(directory, "spiece.model"), "wb") as f:
        f.write(data)
    return spm.SentencePieceProcessor(model_proto=data).vocab_size() + 4


def write_marian_spm(directory):
    """Marian's source.spm (the text's first half) and target.spm (its second half), and vocab.json:
    </s> 0, <unk> 1, every piece of either model, <pad> last (pad_token_id and decoder_start_token_id)."""
    import sentencepiece as spm
    lines = _text_lines()
    vocab = {"</s>": 0, "<unk>": 1}
    for name, part, size in (("source.spm", lines[: len(lines) // 2], 200), ("target.spm", lines[len(lines) // 2:], 160)):
        data = unigram_model_bytes(part, size, unk_id=0, bos_id=-1, eos_id=-1)
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data)
        sp = spm.SentencePieceProcessor(model_proto=data)
        for i in range(sp.vocab_size()):
            p = sp.id_to_piece(i)
            if p not in vocab and not sp.is_unknown(i):
                vocab[p] = len(vocab)
    vocab["<pad>"] = len(vocab)
    with open(os.path.join(directory, "vocab.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(vocab, ensure_ascii=False, indent=2))
    return len(vocab)


def tokenizer_vocab_size(directory):
    """The number of ids the tokenizer files in directory can produce (the largest id + 1)."""
    tj = os.path.join(directory, "tokenizer.json")
    if os.path.exists(tj):
        with open(tj, encoding="utf-8") as f:
            doc = json.load(f)
        ids = list(doc["model"]["vocab"].values()) if isinstance(doc["model"]["vocab"], dict) else \
            list(range(len(doc["model"]["vocab"])))
        ids += [a["id"] for a in doc.get("added_tokens", [])]
        return max(ids) + 1
    vj = os.path.join(directory, "vocab.json")
    if os.path.exists(vj):
        with open(vj, encoding="utf-8") as f:
            return max(json.load(f).values()) + 1
    tm = os.path.join(directory, "tokenizer.model")
    if os.path.exists(tm):
        import sentencepiece
        return sentencepiece.SentencePieceProcessor(model_file=tm).vocab_size()
    return None


# ---- weights -----------------------------------------------------------------------------------------

def gpt2_tensors(spec, vocab, rng):
    """State-dict order of GPT2LMHeadModel.transformer (lm_head is tied and not saved)."""
    C, L, npos = spec["C"], spec["L"], spec["npos"]
    f = lambda *s, sc: (rng.standard_normal(s) * sc).astype(np.float32)  # noqa: E731
    t = {"wte.weight": f(vocab, C, sc=0.3), "wpe.weight": f(npos, C, sc=0.2)}
    mask = np.tril(np.ones((npos, npos), np.float32)).reshape(1, 1, npos, npos)
    for i in range(L):
        p = f"h.{i}."
        t[p + "ln_1.weight"] = 1 + f(C, sc=0.1)
        t[p + "ln_1.bias"] = f(C, sc=0.05)
        if spec.get("buffers"):
            t[p + "attn.bias"] = mask
        if spec.get("masked_bias"):
            t[p + "attn.masked_bias"] = np.array(-1e4, np.float32)
        t[p + "attn.c_attn.weight"] = np.concatenate([f(C, C, sc=0.45), f(C, C, sc=0.45), f(C, C, sc=0.25)], axis=1)
        t[p + "attn.c_attn.bias"] = np.concatenate([f(C, sc=0.2), f(C, sc=0.2), f(C, sc=0.05)])
        t[p + "attn.c_proj.weight"] = f(C, C, sc=0.2)
        t[p + "attn.c_proj.bias"] = f(C, sc=0.05)
        t[p + "ln_2.weight"] = 1 + f(C, sc=0.1)
        t[p + "ln_2.bias"] = f(C, sc=0.05)
        t[p + "mlp.c_fc.weight"] = f(C, 4 * C, sc=0.2)
        t[p + "mlp.c_fc.bias"] = f(4 * C, sc=0.05)
        t[p + "mlp.c_proj.weight"] = f(4 * C, C, sc=0.1)
        t[p + "mlp.c_proj.bias"] = f(C, sc=0.05)
    t["ln_f.weight"] = 1 + f(C, sc=0.1)
    t["ln_f.bias"] = f(C, sc=0.05)
    return t


def gpt2_config(spec, vocab):
    return {
        "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
        "bos_token_id": vocab - 1, "embd_pdrop": 0.1, "eos_token_id": vocab - 1, "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": spec["npos"], "n_embd": spec["C"],
        "n_head": spec["H"], "n_inner": None, "n_layer": spec["L"], "n_positions": spec["npos"],
        "reorder_and_upcast_attn": False, "resid_pdrop": 0.1, "scale_attn_by_inverse_layer_idx": False,
        "scale_attn_weights": True, "summary_activation": None, "summary_first_dropout": 0.1,
        "summary_proj_to_labels": True, "summary_type": "cls_index", "summary_use_proj": True,
        "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[spec["dtype"]],
        "transformers_version": "4.44.2", "use_cache": True, "vocab_size": vocab,
    }


def llama_tensors(spec, vocab, rng):
    """State-dict order of LlamaForCausalLM / MistralForCausalLM / Qwen2ForCausalLM."""
    C, H, Hkv, I, L = spec["C"], spec["H"], spec["Hkv"], spec["I"], spec["L"]
    hd = spec["hd"] or C // H
    f = lambda *s, sc: (rng.standard_normal(s) * sc).astype(np.float32)  # noqa: E731
    t = {"embed_tokens.weight": f(vocab, C, sc=0.5)}
    for i in range(L):
        p = f"layers.{i}."
        if spec["model_type"] == "phi3":  # Phi3ForCausalLM: one qkv_proj and one gate_up_proj
            t[p + "self_attn.qkv_proj.weight"] = np.concatenate([f(H * hd, C, sc=0.3), f(Hkv * hd, C, sc=0.3), f(Hkv * hd, C, sc=0.2)])
            t[p + "self_attn.o_proj.weight"] = f(C, H * hd, sc=0.15)
            t[p + "mlp.gate_up_proj.weight"] = f(2 * I, C, sc=0.15)
            t[p + "mlp.down_proj.weight"] = f(C, I, sc=0.15)
            t[p + "input_layernorm.weight"] = 1 + f(C, sc=0.1)
            t[p + "post_attention_layernorm.weight"] = 1 + f(C, sc=0.1)
            continue
        t[p + "self_attn.q_proj.weight"] = f(H * hd, C, sc=0.3)
        if spec.get("qkv_bias"):
            t[p + "self_attn.q_proj.bias"] = f(H * hd, sc=0.3)
        t[p + "self_attn.k_proj.weight"] = f(Hkv * hd, C, sc=0.3)
        if spec.get("qkv_bias"):
            t[p + "self_attn.k_proj.bias"] = f(Hkv * hd, sc=0.3)
        t[p + "self_attn.v_proj.weight"] = f(Hkv * hd, C, sc=0.2)
        if spec.get("qkv_bias"):
            t[p + "self_attn.v_proj.bias"] = f(Hkv * hd, sc=0.1)
        if spec["model_type"] == "qwen3":  # per-head norms, far from 1 so that skipping them shows
            t[p + "self_attn.q_norm.weight"] = 1 + f(hd, sc=0.8)
            t[p + "self_attn.k_norm.weight"] = 1 + f(hd, sc=0.8)
        if spec["model_type"] in ("gemma3_text", "gemma3"):  # stored as w, multiplied by 1 + w: near 0, and far from it
            t[p + "self_attn.q_norm.weight"] = f(hd, sc=0.8)
            t[p + "self_attn.k_norm.weight"] = f(hd, sc=0.8)
        if spec["model_type"] == "olmo2":  # over the whole width: one weight per feature of every head
            t[p + "self_attn.q_norm.weight"] = 1 + f(H * hd, sc=0.8)
            t[p + "self_attn.k_norm.weight"] = 1 + f(Hkv * hd, sc=0.8)
        t[p + "self_attn.o_proj.weight"] = f(C, H * hd, sc=0.15)
        t[p + "mlp.gate_proj.weight"] = f(I, C, sc=0.15)
        t[p + "mlp.up_proj.weight"] = f(I, C, sc=0.15)
        t[p + "mlp.down_proj.weight"] = f(C, I, sc=0.15)
        if spec["model_type"].startswith("gemma"):  # Gemma2DecoderLayer's four norms, stored as w of (1 + w)
            for n in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"):
                t[p + n + ".weight"] = f(C, sc=0.3)
            continue
        if spec["model_type"] == "olmo2":  # Olmo2DecoderLayer: no input norm
            t[p + "post_attention_layernorm.weight"] = 1 + f(C, sc=0.3)
            t[p + "post_feedforward_layernorm.weight"] = 1 + f(C, sc=0.3)
            continue
        t[p + "input_layernorm.weight"] = 1 + f(C, sc=0.1)
        t[p + "post_attention_layernorm.weight"] = 1 + f(C, sc=0.1)
    t["norm.weight"] = (0 if spec["model_type"].startswith("gemma") else 1) + f(C, sc=0.1)
    out = {spec["prefix"] + k: v for k, v in t.items()}
    if spec.get("lm_head"):
        out["lm_head.weight"] = f(vocab, C, sc=0.1)
    return out


def llama_config(spec, vocab):
    mt = spec["model_type"]
    dtype = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[spec["dtype"]]
    c = {
        "architectures": [{"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM",
                           "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM", "phi3": "Phi3ForCausalLM",
                           "gemma2": "", "gemma3_text": "", "gemma3": "", "olmo2": "Olmo2ForCausalLM"}[mt]],
        "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
        "hidden_size": spec["C"], "initializer_range": 0.02, "intermediate_size": spec["I"],
        "max_position_embeddings": 64, "model_type": mt, "num_attention_heads": spec["H"],
        "num_hidden_layers": spec["L"], "num_key_value_heads": spec["Hkv"], "rms_norm_eps": 1e-05,
        "rope_theta": spec["theta"], "tie_word_embeddings": not spec.get("lm_head"), "torch_dtype": dtype,
        "transformers_version": "4.44.2", "use_cache": True, "vocab_size": vocab,
    }
    if mt == "llama":
        c.update({"attention_bias": False, "mlp_bias": False, "pretraining_tp": 1, "rope_scaling": None})
    if spec.get("rope"):
        if spec.get("rope_form") == "parameters":  # the model library's newer form: no top-level rope_theta
            del c["rope_theta"]
            c.pop("rope_scaling", None)
            c["rope_parameters"] = dict(spec["rope"], rope_theta=spec["theta"])
        else:
            c["rope_scaling"] = dict(spec["rope"])
    if spec["hd"] is not None:
        c["head_dim"] = spec["hd"]
    if mt == "mistral":
        c["sliding_window"] = spec["window"]
    if mt == "phi3":  # as Phi-3-mini-4k-instruct's config.json has them (its window is 2047; here 4 so that it shows)
        c.update({"embd_pdrop": 0.0, "resid_pdrop": 0.0, "original_max_position_embeddings": 64, "sliding_window": spec["window"],
                  "rope_scaling": None, "pad_token_id": 0})
    if mt == "qwen3":  # as Qwen3-0.6B's config.json has them
        c.update({"attention_bias": False, "head_dim": spec["hd"], "max_window_layers": spec["L"], "sliding_window": None,
                  "use_sliding_window": False, "rms_norm_eps": 1e-06, "rope_scaling": None,
                  "layer_types": ["full_attention"] * spec["L"]})
    if mt in ("gemma2", "gemma3_text", "gemma3"):  # as gemma-2-2b's and gemma-3-1b-pt's config.json have them
        c["architectures"] = [{"gemma2": "Gemma2ForCausalLM", "gemma3_text": "Gemma3ForCausalLM",
                               "gemma3": "Gemma3ForConditionalGeneration"}[mt]]
        del c["hidden_act"]
        c.update({"hidden_activation": "gelu_pytorch_tanh", "head_dim": spec["hd"], "query_pre_attn_scalar": spec["qpas"],
                  "sliding_window": spec["window"], "rms_norm_eps": 1e-06, "attention_bias": False,
                  "cache_implementation": "hybrid", "pad_token_id": 0, "final_logit_softcapping": 30.0 if mt == "gemma2" else None,
                  "attn_logit_softcapping": spec.get("softcap")})
        if spec.get("pattern"):
            c["sliding_window_pattern"] = spec["pattern"]
            c["rope_local_base_freq"] = 10000.0
        if spec.get("layer_types"):
            c["layer_types"] = spec["layer_types"]
            c["rope_local_base_freq"] = 10000.0
        if mt == "gemma3":  # Gemma3ForConditionalGeneration: the text model's keys inside text_config
            text = dict(c, model_type="gemma3_text")
            for k in ("architectures", "torch_dtype", "transformers_version"):
                text.pop(k)
            c = {"architectures": c["architectures"], "model_type": "gemma3", "text_config": text, "torch_dtype": dtype,
                 "transformers_version": "4.50.0", "boi_token_index": 255999, "eoi_token_index": 256000,
                 "image_token_index": 262144, "mm_tokens_per_image": 256, "initializer_range": 0.02,
                 "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152, "image_size": 896,
                                   "num_hidden_layers": 27, "patch_size": 14}}
    if mt == "olmo2":  # as OLMo-2-0425-1B's config.json has them
        c.update({"attention_bias": False, "rope_scaling": None, "rms_norm_eps": 1e-06, "pad_token_id": vocab - 1,
                  "bos_token_id": None, "eos_token_id": vocab - 1})
    if mt == "qwen2":
        c.update({"bos_token_id": vocab - 2, "eos_token_id": vocab - 1, "max_window_layers": spec["L"],
                  "sliding_window": 32768, "use_sliding_window": False, "rms_norm_eps": 1e-06})
    return c


def bert_tensors(spec, vocab, rng):
    """BertModel / RobertaModel / DistilBertModel state-dict names (with BertForPreTraining's extra
    pooler and cls.predictions tensors under a prefix, which attn must ignore)."""
    C, I, L, npos, types = spec["C"], spec["I"], spec["L"], spec["npos"], spec["types"]
    f = lambda *s, sc: (rng.standard_normal(s) * sc).astype(np.float32)  # noqa: E731
    distil = spec["model_type"] == "distilbert"
    w_, b_ = ("gamma", "beta") if spec.get("gamma") else ("weight", "bias")
    t = {"embeddings.word_embeddings.weight": f(vocab, C, sc=0.5), "embeddings.position_embeddings.weight": f(npos, C, sc=0.3)}
    if types:
        t["embeddings.token_type_embeddings.weight"] = f(types, C, sc=0.3)
    t[f"embeddings.LayerNorm.{w_}"] = 1 + f(C, sc=0.1)
    t[f"embeddings.LayerNorm.{b_}"] = f(C, sc=0.05)
    for i in range(L):
        if distil:
            p = f"transformer.layer.{i}."
            names = {"q": "attention.q_lin", "k": "attention.k_lin", "v": "attention.v_lin", "o": "attention.out_lin",
                     "ln1": "sa_layer_norm", "up": "ffn.lin1", "down": "ffn.lin2", "ln2": "output_layer_norm"}
        else:
            p = f"encoder.layer.{i}."
            names = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value", "o": "attention.output.dense",
                     "ln1": "attention.output.LayerNorm", "up": "intermediate.dense", "down": "output.dense", "ln2": "output.LayerNorm"}
        for n, sc in (("q", 0.45), ("k", 0.45), ("v", 0.25), ("o", 0.2)):
            t[p + names[n] + ".weight"] = f(C, C, sc=sc)
            t[p + names[n] + ".bias"] = f(C, sc=0.1)
        t[p + names["up"] + ".weight"] = f(I, C, sc=0.2)
        t[p + names["up"] + ".bias"] = f(I, sc=0.05)
        t[p + names["down"] + ".weight"] = f(C, I, sc=0.1)
        t[p + names["down"] + ".bias"] = f(C, sc=0.05)
        for ln in ("ln1", "ln2"):
            suffix = (w_, b_) if not distil else ("weight", "bias")
            t[p + names[ln] + "." + suffix[0]] = 1 + f(C, sc=0.1)
            t[p + names[ln] + "." + suffix[1]] = f(C, sc=0.05)
    t = {spec["prefix"] + k: v for k, v in t.items()}
    if spec.get("heads"):  # a pre-training checkpoint's heads, beside the encoder
        t["bert.pooler.dense.weight"] = f(C, C, sc=0.1)
        t["bert.pooler.dense.bias"] = f(C, sc=0.1)
        t["cls.predictions.bias"] = f(vocab, sc=0.1)
        t["cls.predictions.transform.dense.weight"] = f(C, C, sc=0.1)
    return t


def bert_config(spec, vocab):
    dtype = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[spec["dtype"]]
    if spec["model_type"] == "distilbert":
        return {"activation": "gelu", "architectures": ["DistilBertForMaskedLM"], "attention_dropout": 0.1, "dim": spec["C"],
                "dropout": 0.1, "hidden_dim": spec["I"], "initializer_range": 0.02, "max_position_embeddings": spec["npos"],
                "model_type": "distilbert", "n_heads": spec["H"], "n_layers": spec["L"], "pad_token_id": 0, "qa_dropout": 0.1,
                "seq_classif_dropout": 0.2, "sinusoidal_pos_embds": False, "tie_weights_": True, "torch_dtype": dtype,
                "transformers_version": "4.44.2", "vocab_size": vocab}
    c = {"architectures": ["BertForPreTraining" if spec["model_type"] == "bert" else "RobertaForMaskedLM"],
         "attention_probs_dropout_prob": 0.1, "classifier_dropout": None, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
         "hidden_size": spec["C"], "initializer_range": 0.02, "intermediate_size": spec["I"], "layer_norm_eps": 1e-12,
         "max_position_embeddings": spec["npos"], "model_type": spec["model_type"], "num_attention_heads": spec["H"],
         "num_hidden_layers": spec["L"], "pad_token_id": spec.get("pad", 0), "position_embedding_type": "absolute",
         "torch_dtype": dtype, "transformers_version": "4.44.2", "type_vocab_size": spec["types"], "use_cache": True,
         "vocab_size": vocab}
    if spec["model_type"] == "roberta":
        c.update({"bos_token_id": 0, "eos_token_id": 2, "layer_norm_eps": 1e-05})
    return c


def bart_tensors(spec, vocab, rng):
    """BartForConditionalGeneration's names: model.shared, the encoder's and the decoder's layers
    (self_attn, the decoder's encoder_attn, fc1, fc2 and their LayerNorms), embed_positions with
    max_position_embeddings + 2 rows, layernorm_embedding, final_logits_bias."""
    C, I, L, npos = spec["C"], spec["I"], spec["L"], spec["npos"]
    f = lambda *s, sc: (rng.standard_normal(s) * sc).astype(np.float32)  # noqa: E731
    t = {"shared.weight": f(vocab, C, sc=0.5)}
    for stack in ("encoder", "decoder"):
        t[f"{stack}.embed_positions.weight"] = f(npos + 2, C, sc=0.3)
        t[f"{stack}.layernorm_embedding.weight"] = 1 + f(C, sc=0.1)
        t[f"{stack}.layernorm_embedding.bias"] = f(C, sc=0.05)
        for i in range(L):
            p = f"{stack}.layers.{i}."
            for att in ("self_attn", "encoder_attn") if stack == "decoder" else ("self_attn",):
                for n, sc in (("q_proj", 0.45), ("k_proj", 0.45), ("v_proj", 0.25), ("out_proj", 0.2)):
                    t[f"{p}{att}.{n}.weight"] = f(C, C, sc=sc)
                    t[f"{p}{att}.{n}.bias"] = f(C, sc=0.1)
                t[f"{p}{att}_layer_norm.weight"] = 1 + f(C, sc=0.1)
                t[f"{p}{att}_layer_norm.bias"] = f(C, sc=0.05)
            t[p + "fc1.weight"], t[p + "fc1.bias"] = f(I, C, sc=0.2), f(I, sc=0.05)
            t[p + "fc2.weight"], t[p + "fc2.bias"] = f(C, I, sc=0.1), f(C, sc=0.05)
            t[p + "final_layer_norm.weight"], t[p + "final_layer_norm.bias"] = 1 + f(C, sc=0.1), f(C, sc=0.05)
    t = {"model." + k: v for k, v in t.items()}
    t["final_logits_bias"] = np.zeros((1, vocab), dtype=np.float32)
    return t


def bart_config(spec, vocab):
    return {"activation_dropout": 0.1, "activation_function": "gelu", "add_bias_logits": False, "add_final_layer_norm": False,
            "architectures": ["BartForConditionalGeneration"], "attention_dropout": 0.1, "bos_token_id": 0, "classif_dropout": 0.1,
            "classifier_dropout": 0.0, "d_model": spec["C"], "decoder_attention_heads": spec["H"], "decoder_ffn_dim": spec["I"],
            "decoder_layerdrop": 0.0, "decoder_layers": spec["L"], "decoder_start_token_id": 2, "dropout": 0.1,
            "encoder_attention_heads": spec["H"], "encoder_ffn_dim": spec["I"], "encoder_layerdrop": 0.0, "encoder_layers": spec["L"],
            "eos_token_id": 2, "forced_eos_token_id": 2, "init_std": 0.02, "is_encoder_decoder": True,
            "max_position_embeddings": spec["npos"], "model_type": "bart", "normalize_before": False, "normalize_embedding": True,
            "num_hidden_layers": spec["L"], "pad_token_id": 1, "scale_embedding": False, "torch_dtype": "float32",
            "transformers_version": "4.44.2", "use_cache": True, "vocab_size": vocab}


def marian_tensors(spec, vocab, rng):
    """MarianMTModel's names: model.shared (tied), the encoder's and decoder's layers as BART's, no
    embed_positions (sinusoidal, computed) and no layernorm_embedding; final_logits_bias."""
    t = bart_tensors(spec, vocab, rng)
    return {k: v for k, v in t.items() if "embed_positions" not in k and "layernorm_embedding" not in k}


def marian_config(spec, vocab):
    c = bart_config(spec, vocab)
    for k in ("add_bias_logits", "add_final_layer_norm", "classif_dropout", "normalize_before", "normalize_embedding", "num_hidden_layers"):
        c.pop(k, None)
    c.update({"activation_function": "swish", "architectures": ["MarianMTModel"], "model_type": "marian", "scale_embedding": True,
              "pad_token_id": vocab - 1, "decoder_start_token_id": vocab - 1, "eos_token_id": 0, "forced_eos_token_id": 0,
              "bos_token_id": 0, "decoder_vocab_size": vocab, "share_encoder_decoder_embeddings": True, "static_position_embeddings": True})
    return c


def t5_tensors(spec, vocab, rng):
    """T5ForConditionalGeneration's names: shared, encoder.block.{i}.layer.0.SelfAttention.{q,k,v,o},
    block 0's relative_attention_bias, layer.0/1.layer_norm, layer.1.DenseReluDense.{wi | wi_0, wi_1, wo};
    the decoder's blocks with layer.1.EncDecAttention and layer.2 the MLP; both final_layer_norms;
    lm_head.weight when untied. q and k small: T5 does not scale the scores."""
    C, H, dkv, I = spec["C"], spec["H"], spec["dkv"], spec["I"]
    inner = H * dkv
    f = lambda *s, sc: (rng.standard_normal(s) * sc).astype(np.float32)  # noqa: E731
    t = {"shared.weight": f(vocab, C, sc=1.0)}
    for stack, L in (("encoder", spec["L"]), ("decoder", spec["Ldec"])):
        for i in range(L):
            p = f"{stack}.block.{i}.layer."
            atts = [("0.", "SelfAttention")] + ([("1.", "EncDecAttention")] if stack == "decoder" else [])
            for q, att in atts:
                for n, sc in (("q", 0.12), ("k", 0.12), ("v", 0.25)):
                    t[f"{p}{q}{att}.{n}.weight"] = f(inner, C, sc=sc)
                t[f"{p}{q}{att}.o.weight"] = f(C, inner, sc=0.2)
                t[f"{p}{q}layer_norm.weight"] = 1 + f(C, sc=0.1)
            m = "2." if stack == "decoder" else "1."
            if spec["ff"].startswith("gated"):
                t[f"{p}{m}DenseReluDense.wi_0.weight"], t[f"{p}{m}DenseReluDense.wi_1.weight"] = f(I, C, sc=0.2), f(I, C, sc=0.2)
            else:
                t[f"{p}{m}DenseReluDense.wi.weight"] = f(I, C, sc=0.2)
            t[f"{p}{m}DenseReluDense.wo.weight"] = f(C, I, sc=0.1)
            t[f"{p}{m}layer_norm.weight"] = 1 + f(C, sc=0.1)
        t[f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"] = f(spec["buckets"], H, sc=1.0)
        t[f"{stack}.final_layer_norm.weight"] = 1 + f(C, sc=0.1)
    if not spec["tied"]:
        t["lm_head.weight"] = f(vocab, C, sc=0.3)
    return t


def t5_config(spec, vocab):
    gated = spec["ff"].startswith("gated")
    return {"architectures": ["T5ForConditionalGeneration"], "classifier_dropout": 0.0, "d_ff": spec["I"], "d_kv": spec["dkv"],
            "d_model": spec["C"], "decoder_start_token_id": 0, "dense_act_fn": "gelu_new" if gated else "relu", "dropout_rate": 0.1,
            "eos_token_id": 1, "feed_forward_proj": spec["ff"], "initializer_factor": 1.0, "is_encoder_decoder": True,
            "is_gated_act": gated, "layer_norm_epsilon": 1e-06, "model_type": "t5", "n_positions": 512, "num_decoder_layers": spec["Ldec"],
            "num_heads": spec["H"], "num_layers": spec["L"], "output_past": True, "pad_token_id": 0,
            "relative_attention_max_distance": spec["max_distance"], "relative_attention_num_buckets": spec["buckets"],
            "tie_word_embeddings": spec["tied"], "torch_dtype": {"F32": "float32", "BF16": "bfloat16"}[spec["dtype"]],
            "transformers_version": "4.44.2", "use_cache": True, "vocab_size": vocab}


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(obj, indent=2, sort_keys=True) + "\n")


def make(name, spec, out_dir):
    """Writes one checkpoint into out_dir/name; returns (directory, config)."""
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    vocab = write_tokenizer(spec.get("tokenizer"), d) or FALLBACK_VOCAB
    if spec.get("tokenizer_config") and tiny_tokenizers is not None:
        write_json(os.path.join(d, "tokenizer_config.json"), spec["tokenizer_config"])
    rng = np.random.RandomState(_seed(name))
    if spec["kind"] == "gpt2":
        tensors = gpt2_tensors(spec, vocab, rng)
        if spec["prefix"]:
            tensors = {spec["prefix"] + k: v for k, v in tensors.items()}
        config = gpt2_config(spec, vocab)
    elif spec["kind"] == "bert":
        tensors = bert_tensors(spec, vocab, rng)
        config = bert_config(spec, vocab)
    elif spec["kind"] == "bart":
        tensors = bart_tensors(spec, vocab, rng)
        config = bart_config(spec, vocab)
    elif spec["kind"] == "marian":
        tensors = marian_tensors(spec, vocab, rng)
        config = marian_config(spec, vocab)
    elif spec["kind"] == "t5":
        tensors = t5_tensors(spec, vocab, rng)
        config = t5_config(spec, vocab)
    else:
        tensors = llama_tensors(spec, vocab, rng)
        config = llama_config(spec, vocab)
    stored = {k: st.Tensor.of(v, spec["dtype"]) for k, v in tensors.items()}
    if spec.get("lone_file"):
        st.save_file(stored, os.path.join(d, spec["lone_file"]))
        write_json(os.path.join(d, "input.json"),
                   {"checkpoint": {"path": spec["lone_file"], "config": config, "layer": spec["L"] - 1},
                    "token_ids": [5, 17, 3, 5, 9]})
    elif spec["shards"] == 1:
        st.save_file(stored, os.path.join(d, "model.safetensors"))
        write_json(os.path.join(d, "config.json"), config)
    else:
        st.save_sharded(stored, d, shards=spec["shards"])
        write_json(os.path.join(d, "config.json"), config)
    return d, config


def make_all(out_dir, specs=None):
    specs = specs or CHECKPOINTS
    return {name: make(name, spec, out_dir) for name, spec in specs.items()}


def _dir_bytes(d):
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))


def main(argv):
    if len(argv) == 2 and argv[1] == "--list":
        for name, spec in CHECKPOINTS.items():
            print(f"{name}: {spec['what']}")
        return 0
    if len(argv) == 3 and argv[1] == "--example":
        made = make_all(argv[2], EXAMPLES)
        for name, (d, _) in made.items():
            size = _dir_bytes(d)
            print(f"{d}: {size} bytes ({', '.join(sorted(os.listdir(d)))})")
            if size > 100 * 1024:
                print("  over 100 KB", file=sys.stderr)
                return 1
        if tiny_tokenizers is None:
            print("note: tiny_tokenizers.py is not importable; no tokenizer files written", file=sys.stderr)
        return 0
    if len(argv) != 2 or argv[1].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    for name, (d, config) in make_all(argv[1]).items():
        print(f"{d}: {_dir_bytes(d)} bytes, {config['model_type']}, vocab {config.get('vocab_size', config.get('text_config', {}).get('vocab_size'))}")
    if tiny_tokenizers is None:
        print("note: tiny_tokenizers.py is not importable; vocab_size 512, no tokenizer files", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
