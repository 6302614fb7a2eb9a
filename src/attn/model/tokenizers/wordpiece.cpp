// BERT's tokenizer (and DistilBERT's): BasicTokenizer, then WordPiece, from vocab.txt and
// tokenizer_config.json, as the model hub's BertTokenizer does it. The Unicode part (categories,
// lower case, accents) runs in attn's Unicode module (unicode_module.cpp, Debian's ICU), loaded only
// here; the WordPiece part (hf_models.cpp, shared with tokenizer.json's WordPiece): each word the
// longest vocabulary piece first, then "##" pieces, or [UNK] for the whole word when it cannot be
// spelled or is longer than 100 characters. The special tokens ([CLS], [SEP], [PAD], [MASK], [UNK])
// written in the text are one token each and [CLS] ... [SEP] go around a text, as BertTokenizer does.
#include <fmt/format.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "attn/core/error.hpp"
#include "attn/model/tokenizers/byte_bpe.hpp"
#include "attn/model/tokenizers/tokenizer.hpp"
#include "attn/model/tokenizers/tokenizer_json.hpp"

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
    const auto unk = ids_.find(special_tokens_[kUnk]);
    if (unk == ids_.end()) throw InputError(fmt::format("{}: vocab.txt has no {} token, which WordPiece gives a word it cannot spell", dir, special_tokens_[kUnk]));
    unk_ = unk->second;
    for (const auto& token : special_tokens_)
      if (const auto it = ids_.find(token); it != ids_.end()) specials_.add({.content = token, .id = it->second, .special = true});
    unicode_ = &hf::unicode_text(dir + ": BERT's tokenizer");
  }

  // A special token written in the text is matched as written (before lower-casing, as
  // BertTokenizer's no-split tokens are), unless split_special_tokens; the rest is BasicTokenizer's.
  std::vector<std::int64_t> encode(std::string_view text, bool split_special_tokens) const override {
    bpe::check_utf8(text, "the text to tokenize");
    std::vector<std::int64_t> ids;
    for (const auto& part : specials_.split(text, false, split_special_tokens)) {
      if (part.id >= 0) ids.push_back(part.id);
      else encode_words(text.substr(part.begin, part.end - part.begin), ids);
    }
    return ids;
  }
  // BertTokenizer's build_inputs_with_special_tokens: [CLS] text [SEP].
  std::vector<std::int64_t> special_first() const override { return id_list(special_tokens_[kCls]); }
  std::vector<std::int64_t> special_last() const override { return id_list(special_tokens_[kSep]); }

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
    const char* keys[] = {"unk_token", "sep_token", "pad_token", "cls_token", "mask_token"};
    for (std::size_t k = 0; k < special_tokens_.size(); ++k) special_tokens_[k] = hf::config_token(c, keys[k], special_tokens_[k]);
  }

  // BasicTokenizer's words of text (no special token in it), each cut by WordPiece, appended to ids.
  void encode_words(std::string_view text, std::vector<std::int64_t>& ids) const {
    const std::string words = unicode_->bert_words(text, lower_, strip_accents_, chinese_);
    for (std::size_t from = 0; from < words.size();) {
      const std::size_t end = words.find('\n', from);
      hf::wordpiece_word(std::string_view(words).substr(from, end - from), ids_, "##", kMaxWordChars, unk_, ids);
      from = end + 1;
    }
  }
  std::vector<std::int64_t> id_list(const std::string& token) const {
    const auto it = ids_.find(token);
    return it == ids_.end() ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{it->second};
  }

  std::string dir_;
  std::vector<std::string> pieces_;
  std::unordered_map<std::string, std::int64_t> ids_;
  bool lower_ = true, strip_accents_ = true, chinese_ = true;
  // BertTokenizer's special tokens and their defaults, as tokenizer_config.json may rename them
  static constexpr std::size_t kUnk = 0, kSep = 1, kCls = 3;
  std::array<std::string, 5> special_tokens_{"[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"};
  hf::AddedTokens specials_;
  std::int64_t unk_ = 0;
  const hf::UnicodeText* unicode_ = nullptr;
};

}  // namespace

std::unique_ptr<Tokenizer> open_wordpiece(const std::string& dir) { return std::make_unique<WordPieceTokenizer>(dir); }

}  // namespace attn::model
