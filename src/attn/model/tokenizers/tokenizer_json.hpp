// The parts of a tokenizer.json as attn runs them, shared by the files that read and run them
// (tokenizer_json.cpp, hf_normalizers.cpp, hf_pre_tokenizers.cpp, hf_models.cpp, added_tokens.cpp,
// precompiled.cpp, unicode_text.cpp). Internal to src/attn/model; callers use tokenizer.hpp.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "attn/model/tokenizers/byte_bpe.hpp"

namespace attn::model::hf {

using nlohmann::json;

// ---- reading the file -------------------------------------------------------------------------

// s as a JSON-like quoted string, cut after `limit` bytes.
std::string quote_text(std::string_view s, std::size_t limit = 60);
// What a JSON value is, for messages: null, true, 3, "text", an array, an object.
std::string kind_of(const json& j);
// The file's bytes, or an InputError naming it.
std::string read_text(const std::string& path);
// The file's JSON, or an InputError with the line and column where it stops being JSON.
json parse_json_file(const std::string& path);
// tokenizer_config.json's name of a special token (its key "cls_token", "bos_token"), a string or
// an AddedToken object {"content": ...}; `fallback` (the slow tokenizer's default) when absent.
std::string config_token(const json& config, const char* key, const std::string& fallback);
// Every "piece": id of `vocab` into `model`; `where` names it in errors.
void read_vocab(const json& vocab, bpe::Model& model, const std::string& where);
// Why a merge cannot be registered ("\"x\" is not in model.vocab").
std::string merge_problem(bpe::Model::MergeResult r, std::string_view left, std::string_view right, std::string_view vocab_name);

// Typed access to the fields of one tokenizer.json; every refusal is "<file>: <JSON path>: <what>".
class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}
  [[noreturn]] void fail(const std::string& where, const std::string& what) const;
  const json& field(const json& obj, const std::string& where, const char* key) const;
  std::string string_field(const json& obj, const std::string& where, const char* key) const;
  bool bool_field(const json& obj, const std::string& where, const char* key, bool fallback) const;
  // obj["type"], where obj must be an object.
  std::string type_of(const json& obj, const std::string& where) const;
  // obj[key] as an array (a missing key is a refusal).
  const json& array_field(const json& obj, const std::string& where, const char* key) const;
  // fn(element, its JSON path) for each element of the array obj[key] (a Sequence's parts).
  template <typename Fn>
  void each(const json& obj, const std::string& where, const char* key, const Fn& fn) const {
    const json& list = array_field(obj, where, key);
    for (std::size_t i = 0; i < list.size(); ++i) fn(list[i], where + "." + key + "[" + std::to_string(i) + "]");
  }
  // where.type: "\"Foo\" is not supported (the <what> attn reads: A, B, C)".
  [[noreturn]] void unsupported(const std::string& where, const std::string& type, const std::string& what,
                                const std::vector<std::string_view>& supported) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// ---- Unicode ----------------------------------------------------------------------------------

// ICU's general categories (UCharCategory), as attn's Unicode module reports them.
enum Category : std::uint8_t {
  kUnassigned = 0, kUppercaseLetter, kLowercaseLetter, kTitlecaseLetter, kModifierLetter, kOtherLetter, kNonspacingMark,
  kEnclosingMark, kSpacingMark, kDecimalNumber, kLetterNumber, kOtherNumber, kSpaceSeparator, kLineSeparator,
  kParagraphSeparator, kControl, kFormat, kPrivateUse, kSurrogate, kDashPunctuation, kOpenPunctuation, kClosePunctuation,
  kConnectorPunctuation, kOtherPunctuation, kMathSymbol, kCurrencySymbol, kModifierSymbol, kOtherSymbol,
  kInitialPunctuation, kFinalPunctuation
};

// One character's classes: its category, and whether it is White_Space or a word character (\w).
struct CharClass {
  std::uint8_t bits = 0;
  Category category() const { return static_cast<Category>(bits & 0x1F); }
  bool white_space() const { return (bits & 0x20) != 0; }
  bool word() const { return (bits & 0x40) != 0; }
  bool punctuation() const;  // P*: Pc, Pd, Ps, Pe, Pi, Pf, Po
  bool other() const;        // C*: Cc, Cf, Cn, Co, Cs
  bool mark() const;         // M*: Mn, Mc, Me
  bool number() const;       // N*: Nd, Nl, No
};

// Unicode's data through attn_unicode.so (Debian's ICU); every call is on valid UTF-8.
class UnicodeText {
 public:
  enum class Form { nfc = 0, nfd = 1, nfkc = 2, nfkd = 3 };
  virtual ~UnicodeText() = default;
  virtual std::string normalize(std::string_view text, Form form) const = 0;
  virtual std::vector<CharClass> classes(std::string_view text) const = 0;  // one per character
  virtual std::string lower(std::string_view text) const = 0;               // each character on its own
  virtual std::vector<std::size_t> grapheme_ends(std::string_view text) const = 0;
  // BERT's BasicTokenizer on `text`: its words, each followed by '\n' (wordpiece.cpp).
  virtual std::string bert_words(std::string_view text, bool lower, bool strip_accents, bool chinese) const = 0;
};
// The module, loaded at its first use; an InputError naming `who` (the file and JSON path that needs
// it) when it cannot be.
const UnicodeText& unicode_text(const std::string& who);

// The code point at byte i of valid UTF-8 text, and i moved past it.
char32_t next_char(std::string_view text, std::size_t& i);
void append_utf8(std::string& out, char32_t c);
// Unicode's White_Space property (25 characters, fixed since Unicode 6.3).
bool is_white_space(char32_t c);

// ---- the pipeline -----------------------------------------------------------------------------

// A part of the text on its way to the model; at_start: it begins where the text begins (Metaspace's
// prepend_scheme "first").
struct Piece {
  std::string text;
  bool at_start = false;
};

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void apply(std::string& text) const = 0;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // piece's words, appended to out (empty ones left out).
  virtual void apply(Piece& piece, std::vector<Piece>& out) const = 0;
  virtual bool byte_level() const { return false; }
};

class Model {
 public:
  virtual ~Model() = default;
  // The ids of one pre-token, appended to out.
  virtual void encode_word(std::string_view word, std::vector<std::int64_t>& out) const = 0;
  virtual std::optional<std::int64_t> id_of(std::string_view piece) const = 0;
  virtual std::string piece(std::int64_t id) const = 0;  // "" for an id it does not have
  virtual std::int64_t vocab_size() const = 0;            // largest id + 1
  // "byte-level BPE", "WordPiece", "Unigram" (given whether a pre-tokenizer is ByteLevel).
  virtual std::string kind(bool byte_level) const = 0;
};

// normalizer / pre_tokenizer / model at JSON path `where` (a Sequence read as its parts in order).
void read_normalizers(const Reader& r, const json& n, const std::string& where, std::vector<std::unique_ptr<Normalizer>>& out);
void read_pre_tokenizers(const Reader& r, const json& p, const std::string& where, std::vector<std::unique_ptr<PreTokenizer>>& out);
std::unique_ptr<Model> read_model(const Reader& r, const json& m);

// Splits `text` into the parts [begin, end) between the pieces of `spans`, grouped as HF's
// SplitDelimiterBehavior says (pre-tokenizers and normalizers share it).
enum class Behavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };
std::vector<std::pair<std::size_t, std::size_t>> split_spans(std::size_t size, const std::vector<std::pair<std::size_t, std::size_t>>& spans,
                                                             Behavior behavior, bool invert);

// WordPiece on one word: the longest piece of `vocab` from the start, then from where it ended the
// longest `prefix` + piece, appended to out; the whole word as unk when it cannot be spelled so or
// has more than max_chars characters (BertTokenizer and HF's WordPiece model alike).
void wordpiece_word(std::string_view word, const std::unordered_map<std::string, std::int64_t>& vocab, std::string_view prefix,
                    std::size_t max_chars, std::int64_t unk, std::vector<std::int64_t>& out);

// ---- added tokens -----------------------------------------------------------------------------

struct AddedToken {
  std::string content;
  std::int64_t id = 0;
  bool special = false, lstrip = false, rstrip = false, normalized = false, single_word = false;
};

// tokenizer.json's added_tokens, matched in the text before the model as HF's AddedVocabulary does:
// at each place the leftmost, then longest, token; lstrip / rstrip take the white space beside it,
// single_word needs no word character beside it. Tokens with normalized false are matched in the
// text as written, those with normalized true in the normalized text.
class AddedTokens {
 public:
  void add(const AddedToken& token);
  bool empty() const { return tokens_.empty(); }
  // A part of a text: a token (id ≥ 0) or text for the model (id −1).
  struct Part {
    std::size_t begin, end;
    std::int64_t id;
  };
  // The parts of `text`, matching the tokens whose `normalized` is as given; special tokens are
  // left in the text when split_special.
  std::vector<Part> split(std::string_view text, bool normalized, bool split_special) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  struct Node {
    std::vector<std::pair<unsigned char, std::int32_t>> next;  // sorted by byte
    std::int32_t token = -1;                                  // index into tokens_ ending here
  };
  std::int32_t child(std::int32_t node, unsigned char byte) const;
  std::vector<AddedToken> tokens_;
  std::vector<Node> trie_{Node{}};
};

// ---- SentencePiece's precompiled character map (T5's normalizer) --------------------------------

// spm's normalizer rules as a double-array trie over UTF-8 bytes with a pool of replacements; applied
// as HF's Precompiled normalizer does: each grapheme cluster shorter than 6 bytes replaced whole when
// the map has a rule for a prefix of it, else each character by its own rule.
class PrecompiledCharsmap {
 public:
  // `blob`: the decoded precompiled_charsmap; `where` names it in errors.
  PrecompiledCharsmap(std::string blob, const Reader& r, const std::string& where);
  void apply(std::string& text, const UnicodeText& unicode) const;

 private:
  std::optional<std::string_view> transform(std::string_view chunk) const;  // the first (shortest) prefix rule
  std::vector<std::uint32_t> units_;
  std::string pool_;
};

}  // namespace attn::model::hf
