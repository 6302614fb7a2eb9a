// BERT's tokenizer (and DistilBERT's): BasicTokenizer, then WordPiece, from vocab.txt and
// tokenizer_config.json, as the model hub's BertTokenizer does it. The Unicode part (categories,
// lower case, accents) runs in attn's Unicode module (unicode_module.cpp, Debian's ICU), loaded only
// here; the WordPiece part is below: each word the longest vocabulary piece first, then "##" pieces,
// or [UNK] for the whole word when it cannot be spelled or is longer than 100 characters.
#include <dlfcn.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "attn/error.hpp"
#include "attn/model/byte_bpe.hpp"
#include "attn/model/tokenizer.hpp"
#include "attn/module_path.hpp"

namespace attn::model {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr int unicode_abi = 1;
constexpr std::size_t kMaxWordChars = 100;  // BertTokenizer's max_input_chars_per_word

using WordsFn = std::int64_t (*)(const char*, std::size_t, int, int, int, char*, std::size_t);

WordsFn unicode_words(std::string& tried) {
  static std::mutex mutex;
  static WordsFn fn = nullptr;
  static std::string attempts;
  std::lock_guard lock(mutex);
  if (fn != nullptr) return fn;
#ifdef ATTN_UNICODE_MODULE
  const std::string_view build_path = ATTN_UNICODE_MODULE;
#else
  const std::string_view build_path;
#endif
  WordsFn found = nullptr;
  void* lib = open_module("attn_unicode.so", build_path, attempts, [&found](void* l) -> std::string {
    auto abi = reinterpret_cast<int (*)()>(dlsym(l, "attn_unicode_abi_version"));
    found = reinterpret_cast<WordsFn>(dlsym(l, "attn_unicode_bert_words"));
    if (!abi || !found || abi() != unicode_abi) return fmt::format("not attn's Unicode module (ABI {})", unicode_abi);
    return "";
  });
  if (lib != nullptr) return fn = found;
  tried = attempts;
  return nullptr;
}

// The number of characters (code points) of UTF-8 text.
std::size_t characters(std::string_view s) {
  std::size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

class WordPieceTokenizer final : public Tokenizer {
 public:
  explicit WordPieceTokenizer(const std::string& dir) : dir_(dir) {
    const fs::path vocab = fs::path(dir) / "vocab.txt";
    std::ifstream in(vocab, std::ios::binary);
    if (!in) throw InputError(fmt::format("{}: cannot read vocab.txt", dir));
    for (std::string line; std::getline(in, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      bpe::check_utf8(line, fmt::format("{} line {}", vocab.string(), pieces_.size() + 1));
      ids_.emplace(line, static_cast<std::int64_t>(pieces_.size()));  // a repeated line keeps its first id, as BertTokenizer's dict
      pieces_.push_back(line);
    }
    if (pieces_.empty()) throw InputError(fmt::format("{}: vocab.txt is empty", dir));
    read_config((fs::path(dir) / "tokenizer_config.json").string());
    const auto unk = ids_.find(unk_token_);
    if (unk == ids_.end()) throw InputError(fmt::format("{}: vocab.txt has no {} token, which WordPiece gives a word it cannot spell", dir, unk_token_));
    unk_ = unk->second;
    std::string tried;
    words_ = unicode_words(tried);
    if (words_ == nullptr) {
      throw InputError(fmt::format("{}: BERT's tokenizer needs attn's Unicode module (attn_unicode.so, built with Debian's libicu-dev), which could "
                                   "not be loaded ({}); give \"token_ids\" instead of \"sentence\" to skip tokenizing",
                                   dir, tried.empty() ? "no place to look" : tried));
    }
  }

  std::vector<std::int64_t> encode(std::string_view text) const override {
    bpe::check_utf8(text, "the text to tokenize");
    std::string words(text.size() * 4 + 16, '\0');
    for (int attempt = 0; attempt < 2; ++attempt) {
      const std::int64_t n = words_(text.data(), text.size(), lower_, strip_accents_, chinese_, words.data(), words.size());
      if (n < 0) throw InputError(fmt::format("{}: the Unicode module could not read the text", dir_));
      const bool fits = static_cast<std::size_t>(n) <= words.size();
      words.resize(static_cast<std::size_t>(n));
      if (fits) break;
    }
    std::vector<std::int64_t> ids;
    for (std::size_t from = 0; from < words.size();) {
      const std::size_t end = words.find('\n', from);
      wordpiece(std::string_view(words).substr(from, end - from), ids);
      from = end + 1;
    }
    return ids;
  }

  std::string piece(std::int64_t id) const override {
    if (id < 0 || id >= vocab_size()) throw InputError(fmt::format("{}: token id {} is outside the vocabulary ({} tokens)", dir_, id, pieces_.size()));
    return pieces_[static_cast<std::size_t>(id)];
  }
  std::int64_t vocab_size() const override { return static_cast<std::int64_t>(pieces_.size()); }
  bool byte_level() const override { return false; }
  std::string describe() const override {
    return fmt::format("WordPiece from vocab.txt ({} tokens){}{}", bpe::with_commas(vocab_size()), lower_ ? ", lower-cased" : ", cased",
                       strip_accents_ ? ", accents stripped" : "");
  }

 private:
  // tokenizer_config.json's do_lower_case (BertTokenizer's default: true), strip_accents (null:
  // as do_lower_case), tokenize_chinese_chars (true) and unk_token ("[UNK]").
  void read_config(const std::string& path) {
    if (!fs::exists(path)) return;
    std::ifstream in(path, std::ios::binary);
    const json c = json::parse(in, nullptr, false);
    if (c.is_discarded() || !c.is_object()) throw InputError(fmt::format("{}: not a JSON object", path));
    auto flag = [&](const char* key, bool fallback) {
      if (!c.contains(key) || c[key].is_null()) return fallback;
      if (!c[key].is_boolean()) throw InputError(fmt::format("{}: \"{}\": expected true or false, got {}", path, key, c[key].dump()));
      return c[key].get<bool>();
    };
    lower_ = flag("do_lower_case", true);
    strip_accents_ = flag("strip_accents", lower_);
    chinese_ = flag("tokenize_chinese_chars", true);
    if (c.contains("unk_token") && c["unk_token"].is_string()) unk_token_ = c["unk_token"].get<std::string>();
  }

  // One word: the longest piece of the vocabulary from the start, then from where it ended as
  // "##"-prefixed pieces; a word with no spelling, or too long, is [UNK].
  void wordpiece(std::string_view word, std::vector<std::int64_t>& ids) const {
    if (characters(word) > kMaxWordChars) {
      ids.push_back(unk_);
      return;
    }
    std::vector<std::int64_t> found;
    for (std::size_t start = 0; start < word.size();) {
      std::size_t end = word.size();
      std::int64_t id = -1;
      while (end > start) {
        const std::string piece = (start > 0 ? "##" : "") + std::string(word.substr(start, end - start));
        if (const auto it = ids_.find(piece); it != ids_.end()) {
          id = it->second;
          break;
        }
        do --end;  // back one whole character
        while (end > start && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80);
      }
      if (id < 0) {
        ids.push_back(unk_);
        return;
      }
      found.push_back(id);
      start = end;
    }
    ids.insert(ids.end(), found.begin(), found.end());
  }

  std::string dir_;
  std::vector<std::string> pieces_;
  std::unordered_map<std::string, std::int64_t> ids_;
  bool lower_ = true, strip_accents_ = true, chinese_ = true;
  std::string unk_token_ = "[UNK]";
  std::int64_t unk_ = 0;
  WordsFn words_ = nullptr;
};

}  // namespace

std::unique_ptr<Tokenizer> open_wordpiece(const std::string& dir) { return std::make_unique<WordPieceTokenizer>(dir); }

}  // namespace attn::model
