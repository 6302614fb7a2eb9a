// The pieces the BPE tokenizers share (tokenizer.cpp reads the files, this does the work): UTF-8
// checks, GPT-2's byte-to-unicode alphabet, PCRE2 splitting, and the merge loop over token ids
// (HF tokenizers' Word::merge_all: the lowest-ranked adjacent pair first, leftmost on ties; the
// same result as OpenAI's encoder.py, which merges every occurrence of the best pair at once).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace attn::model::bpe {

// GPT-2's pre-tokenisation pattern (OpenAI encoder.py, HF ByteLevel with use_regex).
inline constexpr std::string_view gpt2_pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// InputError "<what>: invalid UTF-8 at byte N" unless `text` is valid UTF-8 (no surrogates, no
// overlong forms, nothing above U+10FFFF).
void check_utf8(std::string_view text, std::string_view what);
// The byte length of the UTF-8 character that starts with `lead` (1 for a stray byte).
std::size_t utf8_length(unsigned char lead);

// GPT-2's bytes_to_unicode(): byte b's character, UTF-8 encoded ("Ġ" for ' ').
const std::string& byte_char(unsigned char b);
// Every byte of `bytes` as its character.
std::string to_byte_chars(std::string_view bytes);

// A compiled PCRE2 pattern (UTF, UCP, JIT where the library has it).
class Regex {
 public:
  // `what` names the pattern in errors ("tokenizer.json: pre_tokenizer.pretokenizers[0].pattern.Regex").
  Regex(std::string_view pattern, std::string_view what, bool literal = false);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  // Successive non-overlapping matches as [begin, end) byte offsets; an empty match advances one
  // character, as Oniguruma's and Python's find-all do.
  std::vector<std::pair<std::size_t, std::size_t>> matches(std::string_view text) const;
  // The matched substrings only (GPT-2's findall).
  std::vector<std::string_view> findall(std::string_view text) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A BPE model over ids: vocabulary, merges by rank, and the byte fallback of SentencePiece-style
// vocabularies (a character not in the vocabulary becomes its bytes' "<0xNN>" tokens).
class Model {
 public:
  // `source` names the files in errors ("ckpt/vocab.json").
  explicit Model(std::string source) : source_(std::move(source)) {}

  // Room for `tokens` tokens and `merges` merges (a real vocabulary's 100,000s load faster).
  void reserve(std::size_t tokens, std::size_t merges);
  // Ids must be in [0, 2^31). A piece named twice keeps its first id.
  void add_token(const std::string& piece, std::int64_t id);
  // Registers merge `left right` with the next rank, unless either side or the concatenation is
  // not in the vocabulary (the caller names the line or entry). A pair listed twice takes its last
  // rank, as both encoder.py's dict and HF's map do.
  enum class MergeResult { ok, left_missing, right_missing, result_missing };
  MergeResult add_merge(std::string_view left, std::string_view right);

  bool byte_fallback = false;
  bool ignore_merges = false;
  std::optional<std::int64_t> unk_id;
  bool fuse_unk = false;

  std::optional<std::int64_t> id_of(std::string_view piece) const;
  // The ids of one pre-token (already in the vocabulary's alphabet: byte characters or ▁ text),
  // appended to `out`. A character with no token, no byte fallback and no unk token: InputError.
  void encode_word(std::string_view word, std::vector<std::int64_t>& out) const;

  std::string piece(std::int64_t id) const;
  std::int64_t vocab_size() const { return size_; }
  const std::string& source() const { return source_; }

 private:
  void set_piece(std::int64_t id, const std::string& piece);
  void merge_word(std::string_view word, std::vector<std::int64_t>& out) const;

  struct PairHash {
    std::size_t operator()(std::uint64_t k) const noexcept { return std::hash<std::uint64_t>{}(k * 0x9E3779B97F4A7C15ull); }
  };
  struct Merge {
    std::int32_t rank;
    std::int64_t id;
  };
  std::string source_;
  struct StringHash {  // lookups by string_view, without a string made for each
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::int64_t, StringHash, std::equal_to<>> vocab_;
  std::unordered_map<std::int64_t, std::string> pieces_;  // by id (ids may have gaps)
  std::int64_t size_ = 0;                                 // max id + 1
  std::unordered_map<std::uint64_t, Merge, PairHash> merges_;  // (left id, right id) -> rank, result
  std::int32_t next_rank_ = 0;
  // Per-word results: words repeat a lot in real text.
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<std::int64_t>> cache_;
};

// "50,257"
std::string with_commas(std::int64_t n);

}  // namespace attn::model::bpe
