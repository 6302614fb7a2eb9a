// BERT's tokenizer (and DistilBERT's): BasicTokenizer, then WordPiece, from vocab.txt and
// tokenizer_config.json, as the model hub's BertTokenizer does it. The Unicode part (categories,
// lower case, accents) runs in attn's Unicode module (unicode_module.cpp, Debian's ICU), loaded only
// here; the WordPiece part (hf_models.cpp, shared with tokenizer.json's WordPiece): each word the
// longest vocabulary piece first, then "##" pieces, or [UNK] for the whole word when it cannot be
// spelled or is longer than 100 characters.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "attn/error.hpp"
#include "attn/model/byte_bpe.hpp"
#include "attn/model/tokenizer.hpp"
#include "attn/model/tokenizer_json.hpp"

namespace attn::model {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr std::size_t kMaxWordChars = 100;  // BertTokenizer's max_input_chars_per_word

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
    unicode_ = &hf::unicode_text(dir + ": BERT's tokenizer");
  }

  // Special tokens written in the text are cut as text here (vocab.txt has no list of them; a
  // tokenizer.json beside it is read instead, and matches them).
  std::vector<std::int64_t> encode(std::string_view text, bool) const override {
    bpe::check_utf8(text, "the text to tokenize");
    const std::string words = unicode_->bert_words(text, lower_, strip_accents_, chinese_);
    std::vector<std::int64_t> ids;
    for (std::size_t from = 0; from < words.size();) {
      const std::size_t end = words.find('\n', from);
      hf::wordpiece_word(std::string_view(words).substr(from, end - from), ids_, "##", kMaxWordChars, unk_, ids);
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

  std::string dir_;
  std::vector<std::string> pieces_;
  std::unordered_map<std::string, std::int64_t> ids_;
  bool lower_ = true, strip_accents_ = true, chinese_ = true;
  std::string unk_token_ = "[UNK]";
  std::int64_t unk_ = 0;
  const hf::UnicodeText* unicode_ = nullptr;
};

}  // namespace

std::unique_ptr<Tokenizer> open_wordpiece(const std::string& dir) { return std::make_unique<WordPieceTokenizer>(dir); }

}  // namespace attn::model
