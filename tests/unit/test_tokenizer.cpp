// Tokenizers of hub checkpoint directories, on small hand-written files: exact ids, byte fallback,
// add_prefix_space, added tokens, and each refusal's message.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "attn/error.hpp"
#include "attn/model/tokenizer.hpp"

namespace fs = std::filesystem;
using attn::model::load_tokenizer;
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
  // Added tokens are not matched in the text: "<" is not in this vocabulary at all.
  CHECK_THROWS_WITH(t->encode("<|x|>"), Catch::Contains("no token for \"<\""));

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
  dir.write("tokenizer.json", tokenizer_json(R"({"type": "WordPiece", "vocab": {"a": 0}})"));
  CHECK_THAT(error_of(dir.str()), Catch::StartsWith(file + ": model.type: is \"WordPiece\"; attn reads BPE models only"));
  dir.write("tokenizer.json", tokenizer_json(R"({"type": "Unigram", "vocab": [["a", 0.0]]})"));
  CHECK_THAT(error_of(dir.str()), Catch::StartsWith(file + ": model.type: is \"Unigram\""));
  dir.write("tokenizer.json", tokenizer_json(byte_level_model, "null", R"({"type": "Whitespace"})"));
  CHECK_THAT(error_of(dir.str()), Catch::StartsWith(file + ": pre_tokenizer.type: is \"Whitespace\"; attn reads the pre-tokenizers ByteLevel"));
  dir.write("tokenizer.json",
            tokenizer_json(sp_model, R"({"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"}, {"type": "NFKC"}]})"));
  CHECK_THAT(error_of(dir.str()), Catch::StartsWith(file + ": normalizer.normalizers[1].type: is \"NFKC\""));
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
