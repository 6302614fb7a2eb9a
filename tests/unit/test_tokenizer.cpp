// Tokenizers of hub checkpoint directories, on small hand-written files: exact ids, byte fallback,
// add_prefix_space, added tokens matched in the text, the normalizers, pre-tokenizers and models of
// tokenizer.json (each expectation here was checked against HF's tokenizers library), and each
// refusal's message. The published files are checked in tests/reference/hub_tokenizer_check.py.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "attn/core/error.hpp"
#include "attn/model/tokenizers/tokenizer.hpp"

namespace fs = std::filesystem;
using attn::model::load_tokenizer;
using attn::model::load_tokenizer_file;
using Ids = std::vector<std::int64_t>;

namespace {

// A fresh directory under the system's temp dir, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("attn-tokenizer-test-" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string str() const { return path.string(); }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
  }
};

// Ġ is the byte-level character of ' '.
const std::string gpt2_vocab = R"({"a": 0, "b": 1, "c": 2, "Ġ": 3, "ab": 4, "Ġab": 5, "abc": 6, "!": 7, "'": 8, "s": 9, "'s": 10})";
const std::string gpt2_merges = "#version: 0.2\na b\nĠ ab\nab c\n' s\n";

std::string error_of(const std::string& dir, const std::string& text = "ab") {
  try {
    auto t = load_tokenizer(dir);
    if (!t) return "(no tokenizer)";
    t->encode(text);
  } catch (const attn::InputError& e) {
    return e.what();
  }
  return "";
}

// A tokenizer.json around `model`, with the given normalizer and pre-tokenizer (JSON texts).
std::string tokenizer_json(const std::string& model, const std::string& normalizer = "null", const std::string& pre = "null",
                           const std::string& added = "[]") {
  return R"({"version": "1.0", "added_tokens": )" + added + R"(, "normalizer": )" + normalizer + R"(, "pre_tokenizer": )" + pre +
         R"(, "post_processor": null, "decoder": null, "model": )" + model + "}";
}

const std::string byte_level_model =
    R"({"type": "BPE", "dropout": null, "unk_token": null, "byte_fallback": false, "vocab": )" + gpt2_vocab +
    R"(, "merges": ["a b", ["Ġ", "ab"], "ab c", "' s"]})";

// SentencePiece-style: ▁ words, bytes as <0xNN>.
const std::string sp_model = R"({"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true,
  "vocab": {"<unk>": 0, "▁": 1, "h": 2, "i": 3, "hi": 4, "▁hi": 5, "<0x0A>": 6, "<0xC3>": 7, "<0xA9>": 8},
  "merges": ["h i", "▁ hi"]})";
const std::string llama2_normalizer =
    R"({"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]})";

// Unigram: a Viterbi over these scores; "abb" sets the lowest score (an unknown piece costs 10 less).
const std::string unigram_model = R"({"type": "Unigram", "unk_id": 0, "byte_fallback": false, "vocab": [["<unk>", 0.0], ["▁", -2.0],
  ["a", -3.0], ["b", -3.0], ["c", -3.0], ["ab", -4.0], ["▁ab", -1.0], ["abb", -10.0], ["\u0301", -3.0]]})";
const std::string metaspace = R"({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true})";

std::string base64(const std::string& bytes) {
  static const char* digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t left = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t v = 0;
    for (std::size_t k = 0; k < 3; ++k) v = (v << 8) | (k < left ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    for (std::size_t k = 0; k < 4; ++k) out += k <= left ? digits[(v >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

// A SentencePiece precompiled character map with the one rule "a" -> "b": a darts-clone double
// array (the root's children at offset 1, "a" at 1 ^ 'a' with a leaf, its value at 97: pool offset 0).
std::string charsmap_a_to_b() {
  std::vector<std::uint32_t> units(256, 0);
  units[0] = 1u << 10;
  units[96] = 97u | (1u << 8) | (1u << 10);
  units[97] = 0;
  std::string blob;
  auto put = [&](std::uint32_t v) {
    for (int k = 0; k < 4; ++k) blob += static_cast<char>((v >> (8 * k)) & 0xFF);
  };
  put(static_cast<std::uint32_t>(units.size() * 4));
  for (const auto u : units) put(u);
  return blob + std::string("b\0", 2);
}

}  // namespace

TEST_CASE("vocab.json + merges.txt: exact ids, pieces and description", "[tokenizer]") {
  TempDir dir;
  dir.write("vocab.json", gpt2_vocab);
  dir.write("merges.txt", gpt2_merges);
  const auto t = load_tokenizer(dir.str());
  REQUIRE(t);
  CHECK(t->encode("ab") == Ids{4});
  CHECK(t->encode("abc ab") == Ids{6, 5});    // pre-tokens "abc", " ab"
  CHECK(t->encode("abab") == Ids{4, 4});      // one word: both "a b" merge, "ab ab" is no merge
  CHECK(t->encode(" c") == Ids{3, 2});        // " c": Ġ then c (no merge)
  CHECK(t->encode("ab's!") == Ids{4, 10, 7});  // the contraction is its own pre-token
  CHECK(t->encode("ab  ab") == Ids{4, 3, 5});  // double space: "Ġ" alone, then "Ġab"
  CHECK(t->encode("").empty());
  CHECK(t->vocab_size() == 11);
  CHECK(t->piece(5) == "Ġab");
  CHECK(t->describe() == "byte-level BPE from vocab.json + merges.txt (11 tokens)");
  CHECK_THROWS_AS(t->piece(11), attn::InputError);
}

TEST_CASE("vocab.json + merges.txt: <|endoftext|> in the text is one token, as GPT2Tokenizer's added special token", "[tokenizer]") {
  TempDir dir;
  dir.write("vocab.json", R"({"a": 0, "b": 1, "c": 2, "Ġ": 3, "ab": 4, "Ġab": 5, "abc": 6, "!": 7, "'": 8, "s": 9, "'s": 10, "<|endoftext|>": 11,
    "<": 12, "|": 13, "e": 14, "n": 15, "d": 16, "o": 17, "f": 18, "t": 19, "x": 20, ">": 21})");
  dir.write("merges.txt", gpt2_merges);
  const auto t = load_tokenizer(dir.str());
  CHECK(t->encode("ab<|endoftext|> ab") == Ids{4, 11, 5});
  CHECK(t->encode("<|endoftext|>", true) == Ids{12, 13, 14, 15, 16, 17, 18, 19, 14, 20, 19, 13, 21});  // --split-special-tokens
  CHECK(t->special_first().empty());  // GPT2Tokenizer adds no BOS (add_bos_token false)
  CHECK(t->special_last().empty());
}

TEST_CASE("invalid UTF-8 names the byte offset", "[tokenizer]") {
  TempDir dir;
  dir.write("vocab.json", gpt2_vocab);
  dir.write("merges.txt", gpt2_merges);
  const auto t = load_tokenizer(dir.str());
  REQUIRE(t);
  CHECK_THROWS_WITH(t->encode("ab\xff"), Catch::Contains("invalid UTF-8 at byte 2"));
  CHECK_THROWS_WITH(t->encode("a\xc3"), Catch::Contains("invalid UTF-8 at byte 1"));
  CHECK_THROWS_WITH(t->encode("\xed\xa0\x80"), Catch::Contains("invalid UTF-8 at byte 0"));  // a surrogate
}

TEST_CASE("merges.txt refusals name the line", "[tokenizer]") {
  TempDir dir;
  dir.write("vocab.json", gpt2_vocab);
  dir.write("merges.txt", "#version: 0.2\na b\nĠt\n");
  CHECK(error_of(dir.str()) == dir.str() + "/merges.txt:3: expected two tokens separated by a space, got \"Ġt\"");
  dir.write("merges.txt", "a b\nb c\n");
  CHECK(error_of(dir.str()) == dir.str() + "/merges.txt:2: the merge of \"b\" and \"c\" makes \"bc\", which is not in vocab.json");
  dir.write("merges.txt", "a z\n");
  CHECK(error_of(dir.str()) == dir.str() + "/merges.txt:1: \"z\" is not in vocab.json");
  dir.write("vocab.json", R"({"a": "zero"})");
  CHECK(error_of(dir.str()) == dir.str() + "/vocab.json: \"a\": expected an integer id, got \"zero\"");
}

TEST_CASE("a character outside a byte-level vocabulary is refused, not dropped", "[tokenizer]") {
  TempDir dir;
  dir.write("vocab.json", gpt2_vocab);
  dir.write("merges.txt", gpt2_merges);
  CHECK_THROWS_WITH(load_tokenizer(dir.str())->encode("abd"), Catch::Contains("no token for \"d\""));
}

TEST_CASE("which files a directory has", "[tokenizer]") {
  TempDir dir;
  CHECK(load_tokenizer(dir.str()) == nullptr);
  dir.write("vocab.json", gpt2_vocab);
  CHECK(error_of(dir.str()) == dir.str() + ": has vocab.json but no merges.txt; GPT-2's tokenizer needs both (or a tokenizer.json)");
  // tokenizer.json comes first.
  dir.write("merges.txt", gpt2_merges);
  dir.write("tokenizer.json", tokenizer_json(byte_level_model, "null", R"({"type": "ByteLevel", "add_prefix_space": true})"));
  CHECK(load_tokenizer(dir.str())->describe() == "byte-level BPE from tokenizer.json (11 tokens)");
}

TEST_CASE("tokenizer.json byte-level: same ids as the GPT-2 files, add_prefix_space, added tokens", "[tokenizer]") {
  TempDir dir;
  const std::string added = R"([{"id": 20, "content": "<|x|>", "special": true}])";
  dir.write("tokenizer.json", tokenizer_json(byte_level_model, "null", R"({"type": "ByteLevel", "add_prefix_space": false})", added));
  auto t = load_tokenizer(dir.str());
  REQUIRE(t);
  CHECK(t->encode("abc ab") == Ids{6, 5});
  CHECK(t->encode("ab's!") == Ids{4, 10, 7});
  CHECK(t->vocab_size() == 21);
  CHECK(t->piece(20) == "<|x|>");
  CHECK(t->piece(15).empty());  // a gap in the ids
  // Added tokens are matched in the text, as the hub's tokenizers match them...
  CHECK(t->encode("<|x|>") == Ids{20});
  CHECK(t->encode("ab<|x|>abc") == Ids{4, 20, 6});
  // ...unless split_special_tokens: then "<" is cut as text, and this vocabulary has no "<" at all.
  CHECK_THROWS_WITH(t->encode("<|x|>", true), Catch::Contains("no token for \"<\""));

  dir.write("tokenizer.json", tokenizer_json(byte_level_model, "null", R"({"type": "ByteLevel", "add_prefix_space": true})"));
  t = load_tokenizer(dir.str());
  CHECK(t->encode("ab") == Ids{5});       // " ab"
  CHECK(t->encode(" ab") == Ids{5});      // already starts with a space
  CHECK(t->encode("ab ab") == Ids{5, 5});

  // Llama 3's form: Split(regex, Isolated) then ByteLevel without its own regex.
  dir.write("tokenizer.json",
            tokenizer_json(byte_level_model, "null",
                           R"({"type": "Sequence", "pretokenizers": [
                                {"type": "Split", "pattern": {"Regex": " ?\\p{L}+|\\s+"}, "behavior": "Isolated", "invert": false},
                                {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]})"));
  t = load_tokenizer(dir.str());
  CHECK(t->encode("abc ab") == Ids{6, 5});
  CHECK(t->encode("abab") == Ids{4, 4});
}

TEST_CASE("tokenizer.json SentencePiece-style: ▁ words and byte fallback", "[tokenizer]") {
  TempDir dir;
  dir.write("tokenizer.json", tokenizer_json(sp_model, llama2_normalizer));
  auto t = load_tokenizer(dir.str());
  REQUIRE(t);
  CHECK(t->describe() == "SentencePiece-style BPE (byte fallback) from tokenizer.json (9 tokens)");
  CHECK(t->encode("hi") == Ids{5});
  CHECK(t->encode("hi hi") == Ids{5, 5});
  CHECK(t->encode("hi\n") == Ids{5, 6});   // \n -> <0x0A>
  CHECK(t->encode("é") == Ids{1, 7, 8});   // ▁ then é's two bytes
  CHECK(t->encode("").empty());            // nothing prepended to nothing
  CHECK(t->piece(6) == "<0x0A>");
  // No byte for "x": the unknown token, fused.
  CHECK(t->encode("xx") == Ids{1, 0});

  // The newer form: Metaspace instead of the normalizer.
  dir.write("tokenizer.json", tokenizer_json(sp_model, "null", R"({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false})"));
  t = load_tokenizer(dir.str());
  CHECK(t->encode("hi hi") == Ids{5, 5});
  CHECK(t->encode(" hi") == Ids{5});  // HF prepends no second ▁

  // ignore_merges: a word in the vocabulary is taken whole.
  const std::string ignore = R"({"type": "BPE", "ignore_merges": true, "vocab": {"a": 0, "b": 1, "ab": 2, "abb": 3}, "merges": ["a b"]})";
  dir.write("tokenizer.json", tokenizer_json(ignore));
  CHECK(load_tokenizer(dir.str())->encode("abb") == Ids{3});
  dir.write("tokenizer.json", tokenizer_json(R"({"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "abb": 3}, "merges": ["a b"]})"));
  CHECK(load_tokenizer(dir.str())->encode("abb") == Ids{2, 1});
}

TEST_CASE("tokenizer.json refusals name the JSON path", "[tokenizer]") {
  TempDir dir;
  const std::string file = dir.str() + "/tokenizer.json";
  dir.write("tokenizer.json", tokenizer_json(R"({"type": "WordLevel", "vocab": {"a": 0}})"));
  CHECK(error_of(dir.str()) == file + ": model.type: \"WordLevel\" is not supported (the models attn reads: BPE, WordPiece, Unigram)");
  dir.write("tokenizer.json", tokenizer_json(byte_level_model, "null", R"({"type": "UnicodeScripts"})"));
  CHECK_THAT(error_of(dir.str()), Catch::StartsWith(file + ": pre_tokenizer.type: \"UnicodeScripts\" is not supported (the pre-tokenizers "
                                                           "attn reads: Sequence, ByteLevel, Split, Metaspace, BertPreTokenizer"));
  dir.write("tokenizer.json",
            tokenizer_json(sp_model, R"({"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"}, {"type": "Foo"}]})"));
  CHECK_THAT(error_of(dir.str()), Catch::StartsWith(file + ": normalizer.normalizers[1].type: \"Foo\" is not supported (the normalizers "
                                                           "attn reads: Sequence, Prepend, Replace, NFC, NFD, NFKC, NFKD"));
  dir.write("tokenizer.json", R"({"model": )" + sp_model + R"(, "post_processor": {"type": "Foo"}})");
  CHECK_THAT(error_of(dir.str()), Catch::StartsWith(file + ": post_processor.type: \"Foo\" is not supported (the post-processors attn reads: "));
  dir.write("tokenizer.json",
            tokenizer_json(byte_level_model, "null",
                           R"({"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "(?<"}, "behavior": "Isolated"}]})"));
  CHECK_THAT(error_of(dir.str()), Catch::StartsWith(file + ": pre_tokenizer.pretokenizers[0].pattern.Regex: the pattern does not compile"));
  dir.write("tokenizer.json", tokenizer_json(R"({"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b c"]})"));
  CHECK(error_of(dir.str()) ==
        file + ": model.merges[0]: expected \"left right\" (two tokens separated by a space) or [\"left\", \"right\"], got \"a b c\"");
  dir.write("tokenizer.json", tokenizer_json(R"({"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": [["a", "b"]]})"));
  CHECK(error_of(dir.str()) == file + ": model.merges[0]: the merge of \"a\" and \"b\" makes \"ab\", which is not in model.vocab");
  dir.write("tokenizer.json", tokenizer_json(R"({"type": "BPE", "vocab": {"a": 0}, "merges": [], "dropout": 0.1})"));
  CHECK_THAT(error_of(dir.str()), Catch::StartsWith(file + ": model.dropout: is 0.1"));
  dir.write("tokenizer.json", tokenizer_json(R"({"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["a"]]})"));
  CHECK(error_of(dir.str()) == file + ": model.vocab[1]: expected [\"piece\", score], got [\"a\"]");
  dir.write("tokenizer.json", tokenizer_json(R"({"type": "Unigram", "vocab": [["a", -1.0]]})"));
  CHECK(error_of(dir.str(), "ab") == file + ": the vocabulary has no piece for \"b\", and neither byte fallback nor an unk_id to use instead");
  dir.write("tokenizer.json", tokenizer_json(R"({"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"a": 0}})"));
  CHECK(error_of(dir.str()) == file + ": model.unk_token: \"[UNK]\" is not in model.vocab; WordPiece gives it to a word it cannot spell");
  dir.write("tokenizer.json", tokenizer_json(unigram_model, R"({"type": "Precompiled", "precompiled_charsmap": "AAE="})"));
  CHECK(error_of(dir.str()) == file + ": normalizer.precompiled_charsmap: is 2 bytes; a precompiled character map starts with its trie's 4-byte size");
  dir.write("tokenizer.json", tokenizer_json(unigram_model, R"({"type": "Precompiled", "precompiled_charsmap": "A*=="})"));
  CHECK(error_of(dir.str()) == file + ": normalizer.precompiled_charsmap: expected base64 text, got the character \"*\"");
  dir.write("tokenizer.json", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},)");
  CHECK_THAT(error_of(dir.str()), Catch::StartsWith(file + ":1:") && Catch::Contains("invalid JSON"));
}

TEST_CASE("a tokenizer.model that is not one is an InputError naming it", "[tokenizer]") {
  TempDir dir;
  dir.write("tokenizer.model", "not a protobuf");
  const std::string e = error_of(dir.str());
  // Without the module: how to get it; with it: SentencePiece's own reason.
  CHECK_THAT(e, Catch::StartsWith(dir.str() + "/tokenizer.model: "));
  CHECK_THAT(e, Catch::Contains("not a SentencePiece model") || Catch::Contains("needs attn's SentencePiece module"));
}

TEST_CASE("tokenizer.json's Split on a String pattern compiles (Gemma's form: PCRE2_LITERAL takes no PCRE2_UCP)", "[tokenizer]") {
  TempDir dir;
  dir.write("tokenizer.json", tokenizer_json(byte_level_model, "null", R"({"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious", "invert": false},
    {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]})"));
  CHECK(load_tokenizer(dir.str())->encode("ab ab") == Ids{4, 3, 4});  // "ab " (ab, Ġ) and "ab"
  // Gemma's own form: spaces made ▁ first, so the Split finds none and the model takes the whole text
  dir.write("tokenizer.json", tokenizer_json(sp_model, R"({"type": "Replace", "pattern": {"String": " "}, "content": "▁"})",
                                             R"({"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious", "invert": false})"));
  CHECK(load_tokenizer(dir.str())->encode("hi hi") == Ids{4, 5});
}

TEST_CASE("tokenizer.json's Unicode normalizers: NFC (Qwen's), NFKC, Lowercase, Strip", "[tokenizer]") {
  TempDir dir;
  const std::string nfc = R"({"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Prepend", "prepend": "▁"},
                                                                  {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]})";
  dir.write("tokenizer.json", tokenizer_json(sp_model, nfc));
  auto t = load_tokenizer(dir.str());
  CHECK(t->encode("e\u0301") == Ids{1, 7, 8});  // composed to é, then its bytes
  CHECK(t->encode("é") == Ids{1, 7, 8});
  dir.write("tokenizer.json", tokenizer_json(sp_model, llama2_normalizer));
  CHECK(load_tokenizer(dir.str())->encode("e\u0301") != Ids{1, 7, 8});  // without NFC: e, then U+0301
  const std::string others = R"({"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"},
                                                                     {"type": "Strip", "strip_left": true, "strip_right": true}]})";
  dir.write("tokenizer.json", tokenizer_json(sp_model, others, metaspace));
  CHECK(load_tokenizer(dir.str())->encode(" \tＨＩ\u00A0") == Ids{5});  // fullwidth to ASCII, lower case, no spaces around
}

TEST_CASE("added tokens: leftmost longest, lstrip, rstrip, single_word, normalized, split_special_tokens", "[tokenizer]") {
  TempDir dir;
  const std::string added = R"([{"id": 20, "content": "ab!", "special": true, "normalized": false},
    {"id": 21, "content": "[m]", "lstrip": true, "special": true, "normalized": false},
    {"id": 22, "content": "{r}", "rstrip": true, "special": false, "normalized": false},
    {"id": 23, "content": "c!", "single_word": true, "special": false, "normalized": false},
    {"id": 24, "content": "'s", "special": false, "normalized": false}])";
  dir.write("tokenizer.json", tokenizer_json(byte_level_model, "null", R"({"type": "ByteLevel", "add_prefix_space": false})", added));
  const auto t = load_tokenizer(dir.str());
  CHECK(t->encode("ab!'s") == Ids{20, 24});
  CHECK(t->encode("ab [m] ab") == Ids{4, 21, 5});  // lstrip takes the space before [m]
  CHECK(t->encode("ab{r}  ab") == Ids{4, 22, 4});  // rstrip the spaces after {r}
  CHECK(t->encode("abc!") == Ids{6, 7});           // single_word: not inside a word
  CHECK(t->encode("ab c!") == Ids{4, 3, 23});
  CHECK(t->encode("ab!ab!") == Ids{20, 20});
  // split_special_tokens: the special ones are text, the others still matched
  CHECK(t->encode("ab!'s", true) == Ids{4, 7, 24});
  // normalized: matched in the normalized text, as the normalizer writes the token too ("▁x" -> "▁▁x")
  dir.write("tokenizer.json", tokenizer_json(R"({"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true,
    "vocab": {"<unk>": 0, "▁": 1, "h": 2, "i": 3, "hi": 4, "▁hi": 5, "x": 6}, "merges": ["h i", "▁ hi"]})",
                                             llama2_normalizer, "null",
                                             R"([{"id": 7, "content": "▁x", "normalized": true, "special": false},
                                                 {"id": 8, "content": "<s>", "normalized": false, "special": true}])"));
  const auto n = load_tokenizer(dir.str());
  CHECK(n->encode("x") == Ids{1, 6});
  CHECK(n->encode("▁x") == Ids{7});
  CHECK(n->encode("hi<s>hi") == Ids{5, 8, 5});  // the normalizer prepends ▁ to each stretch between tokens
}

TEST_CASE("Metaspace's prepend_scheme first: no ▁ after a leading special token", "[tokenizer]") {
  TempDir dir;
  dir.write("tokenizer.json", tokenizer_json(sp_model, "null", R"({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false})",
                                             R"([{"id": 9, "content": "<s>", "special": true, "normalized": false}])"));
  const auto t = load_tokenizer(dir.str());
  CHECK(t->encode("<s>hi") == Ids{9, 4});
  CHECK(t->encode("hi<s>hi") == Ids{5, 9, 4});
}

TEST_CASE("tokenizer.json WordPiece (BERT's): BertNormalizer, BertPreTokenizer, [CLS] ... [SEP]", "[tokenizer]") {
  TempDir dir;
  const std::string model = R"({"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 9,
    "vocab": {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "un": 3, "##aff": 4, "##able": 5, "the": 6, ",": 7, "cafe": 8, "!": 9}})";
  const std::string post = R"({"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
    {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
    "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [1], "tokens": ["[CLS]"]}, "[SEP]": {"id": "[SEP]", "ids": [2], "tokens": ["[SEP]"]}}})";
  dir.write("tokenizer.json", R"({"added_tokens": [{"id": 1, "content": "[CLS]", "special": true, "normalized": false}],
    "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
    "pre_tokenizer": {"type": "BertPreTokenizer"}, "post_processor": )" + post + R"(, "model": )" + model + "}");
  dir.write("vocab.txt", "[UNK]\n");  // tokenizer.json comes first, as the hub's fast tokenizer reads it
  const auto t = load_tokenizer(dir.str());
  CHECK(t->describe() == "WordPiece from tokenizer.json (10 tokens)");
  CHECK(t->encode("Unaffable, THE Café!") == Ids{3, 4, 5, 7, 6, 8, 9});
  CHECK(t->encode("unaffables") == Ids{0});   // no spelling: the whole word [UNK]
  CHECK(t->encode("unaffable1") == Ids{0});   // 10 characters > max_input_chars_per_word
  CHECK(t->encode("[CLS]the") == Ids{1, 6});  // the added token, before the normalizer lower-cases it
  CHECK(t->special_first() == Ids{1});
  CHECK(t->special_last() == Ids{2});
}

TEST_CASE("vocab.txt (BertTokenizer): special tokens in the text are one token, [CLS] ... [SEP] around it", "[tokenizer]") {
  TempDir dir;
  dir.write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\n[\n]\nc\n##l\n##s\n<s>\n");
  const auto t = load_tokenizer(dir.str());
  CHECK(t->encode("[CLS] the cat [SEP]") == Ids{2, 5, 6, 3});
  CHECK(t->encode("The [MASK][PAD]cat") == Ids{5, 4, 0, 6});     // matched as written, before lower-casing
  CHECK(t->encode("[cls]") == Ids{7, 9, 10, 11, 8});              // a special token is matched in its own case only
  CHECK(t->encode("[CLS]", true) == Ids{7, 9, 10, 11, 8});        // --split-special-tokens: cut as text
  CHECK(t->special_first() == Ids{2});
  CHECK(t->special_last() == Ids{3});
  // tokenizer_config.json renames them, as either form
  dir.write("tokenizer_config.json", R"({"cls_token": "<s>", "sep_token": {"content": "[MASK]", "special": true}})");
  const auto renamed = load_tokenizer(dir.str());
  CHECK(renamed->encode("<s> cat") == Ids{12, 6});
  CHECK(renamed->special_first() == Ids{12});
  CHECK(renamed->special_last() == Ids{4});
}

TEST_CASE("a tokenizer file given directly: tokenizer.json, vocab.txt with its tokenizer_config.json", "[tokenizer]") {
  TempDir dir;
  dir.write("vocab.txt", "[UNK]\n[CLS]\n[SEP]\nthe\nThe\n");
  dir.write("tokenizer_config.json", R"({"do_lower_case": false})");
  const auto wordpiece = load_tokenizer_file((dir.path / "vocab.txt").string());
  CHECK(wordpiece->encode("The") == Ids{4});  // cased, as the config beside it says
  dir.write("tokenizer.json", tokenizer_json(byte_level_model));
  CHECK(load_tokenizer_file((dir.path / "tokenizer.json").string())->describe() == load_tokenizer(dir.str())->describe());
  const std::string other = (dir.path / "config.json").string();
  dir.write("config.json", "{}");
  CHECK_THROWS_WITH(load_tokenizer_file(other), other + ": expected a checkpoint directory, or a tokenizer file named tokenizer.json, "
                                                       "tokenizer.model, spiece.model or vocab.txt");
}

TEST_CASE("tokenizer.json Unigram (T5's): the best-scoring segmentation, unknown pieces fused, byte fallback", "[tokenizer]") {
  TempDir dir;
  dir.write("tokenizer.json", tokenizer_json(unigram_model, "null", metaspace));
  auto t = load_tokenizer(dir.str());
  CHECK(t->describe() == "Unigram from tokenizer.json (9 tokens)");
  CHECK(t->encode("ab") == Ids{6});         // ▁ab (−1) beats ▁ + ab (−6)
  CHECK(t->encode("abab") == Ids{6, 5});    // ▁ab + ab (−5)
  CHECK(t->encode("abb") == Ids{6, 3});     // ▁ab + b (−4) beats ▁ + abb (−12)
  CHECK(t->encode("xx ab") == Ids{1, 0, 6});  // x x unknown, fused into one <unk>
  const std::string bytes = R"({"type": "Unigram", "unk_id": 0, "byte_fallback": true, "vocab": [["<unk>", 0.0], ["▁", -2.0], ["<0x78>", -5.0]]})";
  dir.write("tokenizer.json", tokenizer_json(bytes, "null", metaspace));
  CHECK(load_tokenizer(dir.str())->encode("xx") == Ids{1, 2, 2});
  CHECK(load_tokenizer(dir.str())->encode("é") == Ids{1, 0});  // no bytes for é: <unk>
}

TEST_CASE("tokenizer.json Precompiled (SentencePiece's charsmap), per grapheme cluster as HF applies it", "[tokenizer]") {
  TempDir dir;
  const std::string normalizer = R"({"type": "Precompiled", "precompiled_charsmap": ")" + base64(charsmap_a_to_b()) + R"("})";
  dir.write("tokenizer.json", tokenizer_json(unigram_model, normalizer, metaspace));
  const auto t = load_tokenizer(dir.str());
  CHECK(t->encode("cab") == Ids{1, 4, 3, 3});  // c b b
  CHECK(t->encode("ab") == Ids{1, 3, 3});      // b b: no "ab" any more
  CHECK(t->encode("a\u0301") == Ids{1, 3});    // the cluster a + U+0301 starts with a rule: replaced whole
  CHECK(t->encode("c\u0301") == Ids{1, 4, 8}); // no rule: kept
}

TEST_CASE("post-processors: the special tokens around a text", "[tokenizer]") {
  TempDir dir;
  dir.write("tokenizer.json", R"({"model": )" + sp_model + R"(, "post_processor": {"type": "Sequence", "processors": [
    {"type": "ByteLevel"}, {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0]}]}})");
  auto t = load_tokenizer(dir.str());
  CHECK(t->special_first() == Ids{0});
  CHECK(t->special_last() == Ids{2});
  dir.write("tokenizer.json", R"({"model": )" + sp_model + R"(, "post_processor": {"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}], "special_tokens": {}}})");
  CHECK(error_of(dir.str()) == dir.str() + "/tokenizer.json: post_processor.single[0]: names the special token \"<s>\", which "
                                           "post_processor.special_tokens does not give with its \"ids\"");
}
