#!/usr/bin/env python3
"""Tokenizer files for tiny test checkpoints, written deterministically (the same bytes every run),
and a pure-Python GPT-2 encoder to check attn's tokenizers against.

    write_gpt2_files(dir)                   vocab.json + merges.txt: byte-level BPE, 256 bytes + 200 merges
                                            learned here from TEXT, then <|endoftext|>
    write_gpt2_tokenizer_json(dir)          the same vocabulary as an HF tokenizer.json (ByteLevel)
    write_gpt2_split_tokenizer_json(dir)    the same again as Llama 3 writes it: Sequence[Split(regex,
                                            Isolated), ByteLevel(use_regex false)], merges as pairs
    write_sentencepiece_model(dir)          tokenizer.model: SentencePiece BPE with byte fallback, trained
                                            on TEXT by python3-sentencepiece (one thread)
    write_sentencepiece_tokenizer_json(dir) that model as HF's LlamaConverter writes it (Llama 2 / Mistral)
    write_metaspace_tokenizer_json(dir)     the same with the newer Metaspace(prepend_scheme "first") form
    Gpt2Encoder(dir).encode(text)           OpenAI's encoder.py algorithm over vocab.json + merges.txt

The GPT-2 pre-tokenizer pattern needs \\p{L} / \\p{N}, which Python's `re` lacks (Debian's python3-regex
may be missing): gpt2_pretokenize() implements that one pattern by hand with unicodedata, alternative
by alternative, with the same backtracking outcome.

Usage as a script: tiny_tokenizers.py OUT_DIR   (writes every kind into its own subfolder)
"""
import io
import json
import os
import sys
import unicodedata

TEXT = """\
The cat sat on the mat. The dog sat on the log. The cat saw the dog, and the dog saw the cat.
A cat is not a dog, but the cat and the dog are friends. They sat together on the mat in the sun.
The sun was warm and the mat was soft, so the cat slept and the dog slept too.

On Monday the children went to the market with their mother. They bought apples, bread, cheese and
milk for 12 dollars and 50 cents. It's a long walk, but they don't mind: they'll talk and they've
always liked the way the old town looks in the morning. "We'd better hurry," she said, "or we'll be late!"

In 1969, people watched the first landing on the moon. The numbers were large: 384400 kilometres
away, 3 days of travel, 2 men on the surface. Some of them still remember the night they saw it.

The café on the corner serves crème brûlée and a naïve little pastry. Über-sweet, people say.
The owner, Zoë, opens at 7:30 and closes at 19:00; her coffee costs 2.50 and her tea costs 1.75.

Attention lets each word look at the other words. The weights say how much each word attends to
the others, and the sum of the weights in each row is one. The cat attends to the mat; the mat
attends to the cat. When the model reads the sentence, it reads the words one by one, and each
word can only look at the words that came before it.
"""

GPT2_MERGES = 200


# ---- GPT-2's alphabet and pre-tokenizer ----------------------------------------------------------

def bytes_to_unicode():
    """OpenAI encoder.py's table: byte -> printable character."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


# Unicode White_Space (what \s means to the `regex` module, Oniguruma and PCRE2 with UCP).
_WHITE_SPACE = set(chr(c) for c in [*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F, 0x3000])


def _is_space(c):
    return c in _WHITE_SPACE


def _is_letter(c):
    return unicodedata.category(c).startswith("L")


def _is_number(c):
    return unicodedata.category(c).startswith("N")


def _is_other(c):
    return not (_is_space(c) or _is_letter(c) or _is_number(c))


_CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d"]


def gpt2_pretokenize(text):
    """re.findall of 's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+."""
    out = []
    i, n = 0, len(text)

    def run(j, pred):
        while j < n and pred(text[j]):
            j += 1
        return j

    while i < n:
        end = None
        for c in _CONTRACTIONS:
            if text.startswith(c, i):
                end = i + len(c)
                break
        if end is None:
            for pred in (_is_letter, _is_number, _is_other):
                # ` ?X+`: the optional space first, then without it
                if text[i] == " " and i + 1 < n and pred(text[i + 1]):
                    end = run(i + 1, pred)
                    break
                if pred(text[i]):
                    end = run(i, pred)
                    break
        if end is None:
            j = run(i, _is_space)  # text[i] is whitespace here
            if j == n or j - 1 > i:
                end = j if j == n else j - 1  # \s+(?!\S): give back the last space before a non-space
            else:
                end = j  # \s+
        out.append(text[i:end])
        i = end
    return out


# ---- training and writing GPT-2's files ----------------------------------------------------------

def train_byte_bpe(text, merges_wanted):
    """The most-frequent-pair algorithm over pre-tokenized words; ties go to the smallest pair."""
    b2u = bytes_to_unicode()
    counts = {}
    for word in gpt2_pretokenize(text):
        key = tuple(b2u[b] for b in word.encode("utf-8"))
        counts[key] = counts.get(key, 0) + 1
    words = sorted(counts.items())
    merges = []
    for _ in range(merges_wanted):
        pairs = {}
        for symbols, count in words:
            for a, b in zip(symbols, symbols[1:]):
                pairs[(a, b)] = pairs.get((a, b), 0) + count
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        merged = []
        for symbols, count in words:
            out, k = [], 0
            while k < len(symbols):
                if k + 1 < len(symbols) and (symbols[k], symbols[k + 1]) == best:
                    out.append(symbols[k] + symbols[k + 1])
                    k += 2
                else:
                    out.append(symbols[k])
                    k += 1
            merged.append((tuple(out), count))
        words = merged
    return merges


def gpt2_vocab_and_merges():
    b2u = bytes_to_unicode()
    vocab = {}
    for ch in b2u.values():  # GPT-2's order: printable bytes first
        vocab[ch] = len(vocab)
    merges = train_byte_bpe(TEXT, GPT2_MERGES)
    for a, b in merges:
        if a + b not in vocab:
            vocab[a + b] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    return vocab, merges


def _write(path, text):
    with open(path, "wb") as f:
        f.write(text.encode("utf-8"))


def write_gpt2_files(dir):
    os.makedirs(dir, exist_ok=True)
    vocab, merges = gpt2_vocab_and_merges()
    _write(os.path.join(dir, "vocab.json"), json.dumps(vocab, ensure_ascii=False))
    _write(os.path.join(dir, "merges.txt"), "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))


def _gpt2_json(pre_tokenizer, merges):
    vocab, _ = gpt2_vocab_and_merges()
    eot = vocab["<|endoftext|>"]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": eot, "content": "<|endoftext|>", "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": True, "special": True}],
        "normalizer": None,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "", "end_of_word_suffix": "",
                  "fuse_unk": False, "byte_fallback": False, "vocab": vocab, "merges": merges},
    }


GPT2_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"


def write_gpt2_tokenizer_json(dir):
    os.makedirs(dir, exist_ok=True)
    _, merges = gpt2_vocab_and_merges()
    doc = _gpt2_json({"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
                     [f"{a} {b}" for a, b in merges])
    _write(os.path.join(dir, "tokenizer.json"), json.dumps(doc, ensure_ascii=False, indent=2))


def write_gpt2_split_tokenizer_json(dir):
    os.makedirs(dir, exist_ok=True)
    _, merges = gpt2_vocab_and_merges()
    pre = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": GPT2_PATTERN}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
    doc = _gpt2_json(pre, [[a, b] for a, b in merges])
    doc["model"]["ignore_merges"] = False
    _write(os.path.join(dir, "tokenizer.json"), json.dumps(doc, ensure_ascii=False, indent=2))


class Gpt2Encoder:
    """OpenAI's encoder.py: pre-tokenize, bytes to the alphabet, merge the lowest-ranked pair (every
    occurrence at once) until none is left, look the pieces up."""

    def __init__(self, dir):
        with open(os.path.join(dir, "vocab.json"), encoding="utf-8") as f:
            self.encoder = json.load(f)
        with open(os.path.join(dir, "merges.txt"), encoding="utf-8") as f:
            lines = f.read().split("\n")
        if lines and lines[0].startswith("#version"):
            lines = lines[1:]
        self.ranks = {tuple(line.split(" ")): i for i, line in enumerate(l for l in lines if l)}
        self.b2u = bytes_to_unicode()
        self.cache = {}

    def bpe(self, token):
        if token in self.cache:
            return self.cache[token]
        word = tuple(token)
        while len(word) > 1:
            pairs = set(zip(word, word[1:]))
            bigram = min(pairs, key=lambda p: self.ranks.get(p, float("inf")))
            if bigram not in self.ranks:
                break
            first, second = bigram
            new_word, i = [], 0
            while i < len(word):
                try:
                    j = word.index(first, i)
                except ValueError:
                    new_word.extend(word[i:])
                    break
                new_word.extend(word[i:j])
                i = j
                if word[i] == first and i < len(word) - 1 and word[i + 1] == second:
                    new_word.append(first + second)
                    i += 2
                else:
                    new_word.append(word[i])
                    i += 1
            word = tuple(new_word)
        self.cache[token] = word
        return word

    def encode(self, text):
        ids = []
        for token in gpt2_pretokenize(text):
            token = "".join(self.b2u[b] for b in token.encode("utf-8"))
            ids.extend(self.encoder[piece] for piece in self.bpe(token))
        return ids


# ---- SentencePiece ---------------------------------------------------------------------------------

SENTENCEPIECE_VOCAB = 480  # 256 byte pieces + 3 specials + the text's characters + ~150 merges


def sentencepiece_model_bytes():
    import sentencepiece as spm
    if hasattr(spm, "set_random_generator_seed"):
        spm.set_random_generator_seed(1)
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter([line for line in TEXT.split("\n") if line]), model_writer=model,
        model_type="bpe", vocab_size=SENTENCEPIECE_VOCAB, byte_fallback=True, num_threads=1, character_coverage=1.0,
        normalization_rule_name="identity", remove_extra_whitespaces=False, add_dummy_prefix=True, split_digits=True,
        allow_whitespace_only_pieces=True, input_sentence_size=0, shuffle_input_sentence=False,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1, minloglevel=2)
    return model.getvalue()


def write_sentencepiece_model(dir):
    os.makedirs(dir, exist_ok=True)
    with open(os.path.join(dir, "tokenizer.model"), "wb") as f:
        f.write(sentencepiece_model_bytes())


def _sentencepiece_vocab_scores():
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_proto=sentencepiece_model_bytes())
    # LlamaConverter.vocab: the three specials with score 0, then the model's pieces and scores.
    pieces = [(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())]
    return [("<unk>", 0.0), ("<s>", 0.0), ("</s>", 0.0)] + pieces[3:], sp


def sentencepiece_merges(vocab_scores, vocab):
    """HF's SentencePieceExtractor.extract(vocab_scores): for each piece (in vocabulary order), every
    split into two pieces of the vocabulary, sorted by the two ids; then all of them by the piece's
    score, highest first (a stable sort, so ties keep that order)."""
    merges = []
    for merge, score in vocab_scores:
        local = []
        for index in range(1, len(merge)):
            left, right = merge[:index], merge[index:]
            if left in vocab and right in vocab:
                local.append((left, right, score))
        local.sort(key=lambda m: (vocab[m[0]], vocab[m[1]]))
        merges.extend(local)
    merges.sort(key=lambda m: m[2], reverse=True)
    return [(a, b) for a, b, _ in merges]


def _sentencepiece_json(normalizer, pre_tokenizer):
    vocab_scores, sp = _sentencepiece_vocab_scores()
    vocab = {piece: i for i, (piece, _) in enumerate(vocab_scores)}
    merges = sentencepiece_merges(vocab_scores, vocab)
    special = [{"id": i, "content": vocab_scores[i][0], "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
                "special": True} for i in range(3)]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": special,
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                                                    {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                    {"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": True, "byte_fallback": True, "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]},
    }


def write_sentencepiece_tokenizer_json(dir):
    """Llama 2 / Mistral's form: normalizer Sequence[Prepend ▁, Replace " " -> ▁], no pre-tokenizer."""
    os.makedirs(dir, exist_ok=True)
    normalizer = {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                                                      {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]}
    _write(os.path.join(dir, "tokenizer.json"), json.dumps(_sentencepiece_json(normalizer, None), ensure_ascii=False, indent=2))


def write_metaspace_tokenizer_json(dir):
    """The newer form of the same: no normalizer, Metaspace(▁, prepend_scheme first, split false)."""
    os.makedirs(dir, exist_ok=True)
    pre = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": False}
    _write(os.path.join(dir, "tokenizer.json"), json.dumps(_sentencepiece_json(None, pre), ensure_ascii=False, indent=2))


WRITERS = {
    "gpt2_files": write_gpt2_files,
    "gpt2_json": write_gpt2_tokenizer_json,
    "gpt2_split_json": write_gpt2_split_tokenizer_json,
    "sentencepiece_model": write_sentencepiece_model,
    "sentencepiece_json": write_sentencepiece_tokenizer_json,
    "metaspace_json": write_metaspace_tokenizer_json,
}


def write_all(out_dir):
    for name, writer in WRITERS.items():
        writer(os.path.join(out_dir, name))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    write_all(sys.argv[1])
