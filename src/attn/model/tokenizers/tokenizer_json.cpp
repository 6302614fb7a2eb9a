// A tokenizer.json run as the hub's tokenizers library runs it: added tokens found first, each stretch
// between them normalized, cut into words and spelled by the model; the post-processor read for the
// special tokens it adds. Components attn does not run are refused by JSON path; the decoder is not read.
#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "attn/core/error.hpp"
#include "attn/model/tokenizers/tokenizer.hpp"
#include "attn/model/tokenizers/tokenizer_json.hpp"

namespace attn::model {

namespace hf {

// ---- Reader -------------------------------------------------------------------------------------

void Reader::fail(const std::string& where, const std::string& what) const { throw InputError(fmt::format("{}: {}: {}", path_, where, what)); }

const json& Reader::field(const json& obj, const std::string& where, const char* key) const {
  const auto it = obj.find(key);
  if (it == obj.end()) fail(where, fmt::format("missing \"{}\"", key));
  return *it;
}

std::string Reader::string_field(const json& obj, const std::string& where, const char* key) const {
  const json& v = field(obj, where, key);
  if (!v.is_string()) fail(where + "." + key, fmt::format("expected a string, got {}", kind_of(v)));
  return v.get<std::string>();
}

bool Reader::bool_field(const json& obj, const std::string& where, const char* key, bool fallback) const {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) fail(where + "." + key, fmt::format("expected true or false, got {}", kind_of(*it)));
  return it->get<bool>();
}

std::string Reader::type_of(const json& obj, const std::string& where) const {
  if (!obj.is_object()) fail(where, fmt::format("expected an object with a \"type\", got {}", kind_of(obj)));
  return string_field(obj, where, "type");
}

const json& Reader::array_field(const json& obj, const std::string& where, const char* key) const {
  const json& v = field(obj, where, key);
  if (!v.is_array()) fail(where + "." + key, fmt::format("expected an array, got {}", kind_of(v)));
  return v;
}

void Reader::unsupported(const std::string& where, const std::string& type, const std::string& what,
                         const std::vector<std::string_view>& supported) const {
  std::string list;
  for (std::size_t i = 0; i < supported.size(); ++i) list += (i == 0 ? "" : ", ") + std::string(supported[i]);
  fail(where + ".type", fmt::format("{} is not supported (the {} attn reads: {})", quote_text(type), what, list));
}

namespace {

// ---- the post-processor: the special tokens around one text ------------------------------------

struct Around {
  std::vector<std::int64_t> first, last;
};

// A [token, id] pair (BertProcessing's and RobertaProcessing's cls and sep).
std::int64_t pair_id(const Reader& r, const json& p, const std::string& where, const char* key) {
  const json& v = r.field(p, where, key);
  if (!v.is_array() || v.size() != 2 || !v[0].is_string() || !v[1].is_number_integer())
    r.fail(where + "." + key, fmt::format("expected [\"token\", id], got {}", v.is_array() ? v.dump() : kind_of(v)));
  return v[1].get<std::int64_t>();
}

// TemplateProcessing's "single": the special tokens before and after the sequence $A.
void read_template(const Reader& r, const json& p, const std::string& where, Around& out) {
  const json& single = r.array_field(p, where, "single");
  const json& specials = p.contains("special_tokens") ? p["special_tokens"] : json::object();
  bool after = false;
  for (std::size_t i = 0; i < single.size(); ++i) {
    const json& item = single[i];
    const std::string at = fmt::format("{}.single[{}]", where, i);
    if (item.is_object() && item.contains("Sequence")) {
      after = true;
      continue;
    }
    if (!item.is_object() || !item.contains("SpecialToken") || !item["SpecialToken"].is_object())
      r.fail(at, fmt::format("expected {{\"SpecialToken\": ...}} or {{\"Sequence\": ...}}, got {}", item.dump()));
    const std::string name = r.string_field(item["SpecialToken"], at + ".SpecialToken", "id");
    const auto it = specials.find(name);
    if (it == specials.end() || !it->is_object() || !it->contains("ids") || !(*it)["ids"].is_array())
      r.fail(at, fmt::format("names the special token {}, which {}.special_tokens does not give with its \"ids\"", quote_text(name), where));
    for (const json& id : (*it)["ids"]) {
      if (!id.is_number_integer()) r.fail(where + ".special_tokens", fmt::format("{}: expected integer ids, got {}", quote_text(name), kind_of(id)));
      (after ? out.last : out.first).push_back(id.get<std::int64_t>());
    }
  }
}

void read_post_processor(const Reader& r, const json& p, const std::string& where, Around& out) {
  if (p.is_null()) return;
  const std::string type = r.type_of(p, where);
  if (type == "Sequence") {
    r.each(p, where, "processors", [&](const json& part, const std::string& at) { read_post_processor(r, part, at, out); });
  } else if (type == "TemplateProcessing") {
    read_template(r, p, where, out);
  } else if (type == "BertProcessing" || type == "RobertaProcessing") {
    out.first.push_back(pair_id(r, p, where, "cls"));
    out.last.push_back(pair_id(r, p, where, "sep"));
  } else if (type != "ByteLevel") {  // ByteLevel only trims offsets
    r.unsupported(where, type, "post-processors", {"Sequence", "TemplateProcessing", "BertProcessing", "RobertaProcessing", "ByteLevel"});
  }
}

std::vector<AddedToken> read_added_tokens(const Reader& r, const json& doc) {
  std::vector<AddedToken> out;
  const auto it = doc.find("added_tokens");
  if (it == doc.end() || it->is_null()) return out;
  if (!it->is_array()) r.fail("added_tokens", fmt::format("expected an array of {{\"id\", \"content\"}}, got {}", kind_of(*it)));
  for (std::size_t i = 0; i < it->size(); ++i) {
    const json& t = (*it)[i];
    const std::string where = fmt::format("added_tokens[{}]", i);
    if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer() || !t.contains("content") || !t["content"].is_string())
      r.fail(where, fmt::format("expected {{\"id\": integer, \"content\": string}}, got {}", kind_of(t)));
    AddedToken a;
    a.content = t["content"].get<std::string>();
    a.id = t["id"].get<std::int64_t>();
    if (a.id < 0 || a.id >= (std::int64_t{1} << 31)) r.fail(where + ".id", fmt::format("expected an id in [0, 2^31), got {}", a.id));
    a.special = r.bool_field(t, where, "special", false);
    a.normalized = r.bool_field(t, where, "normalized", !a.special);  // HF's default
    a.lstrip = r.bool_field(t, where, "lstrip", false);
    a.rstrip = r.bool_field(t, where, "rstrip", false);
    a.single_word = r.bool_field(t, where, "single_word", false);
    out.push_back(std::move(a));
  }
  return out;
}

class JsonTokenizer final : public Tokenizer {
 public:
  explicit JsonTokenizer(const std::string& path) : reader_(path) {
    const json doc = parse_json_file(path);
    if (!doc.is_object()) reader_.fail("(top level)", fmt::format("expected a JSON object (the hub's tokenizer.json), got {}", kind_of(doc)));
    model_ = read_model(reader_, reader_.field(doc, "(top level)", "model"));
    if (doc.contains("normalizer")) read_normalizers(reader_, doc["normalizer"], "normalizer", normalizers_);
    if (doc.contains("pre_tokenizer")) read_pre_tokenizers(reader_, doc["pre_tokenizer"], "pre_tokenizer", pre_);
    if (doc.contains("post_processor")) read_post_processor(reader_, doc["post_processor"], "post_processor", around_);
    for (AddedToken t : read_added_tokens(reader_, doc)) {
      added_pieces_.try_emplace(t.id, t.content);
      // a normalized token is looked for in the normalized text as the normalizer writes it (HF's
      // AddedVocabulary normalizes its content too: Llama 2's "▁x" is matched as "▁▁x")
      if (t.normalized)
        for (const auto& n : normalizers_) n->apply(t.content);
      added_.add(t);
      size_ = std::max(size_, t.id + 1);
    }
    size_ = std::max(size_, model_->vocab_size());
    for (const auto& p : pre_) byte_level_ = byte_level_ || p->byte_level();
  }

  std::vector<std::int64_t> encode(std::string_view text, bool split_special_tokens) const override {
    bpe::check_utf8(text, "the text to tokenize");
    std::vector<std::int64_t> ids;
    // the tokens matched as written, then in each stretch between them, normalized, those matched so
    for (const auto& part : added_.split(text, false, split_special_tokens)) {
      if (part.id >= 0) {
        ids.push_back(part.id);
        continue;
      }
      std::string normalized(text.substr(part.begin, part.end - part.begin));
      for (const auto& n : normalizers_) n->apply(normalized);
      for (const auto& inner : added_.split(normalized, true, split_special_tokens)) {
        if (inner.id >= 0) ids.push_back(inner.id);
        else encode_words(Piece{normalized.substr(inner.begin, inner.end - inner.begin), part.begin == 0 && inner.begin == 0}, ids);
      }
    }
    return ids;
  }
  std::string piece(std::int64_t id) const override {
    if (id < 0 || id >= size_) reader_.fail("model.vocab", fmt::format("token id {} is outside the vocabulary ({} tokens)", id, bpe::with_commas(size_)));
    std::string p = model_->piece(id);
    if (p.empty()) {
      if (const auto it = added_pieces_.find(id); it != added_pieces_.end()) p = it->second;
    }
    return p;
  }
  bool byte_level() const override { return byte_level_; }
  std::int64_t vocab_size() const override { return size_; }
  std::vector<std::int64_t> special_first() const override { return around_.first; }
  std::vector<std::int64_t> special_last() const override { return around_.last; }
  std::string describe() const override {
    return fmt::format("{} from tokenizer.json ({} tokens)", model_->kind(byte_level_), bpe::with_commas(size_));
  }

 private:
  // The pre-tokenizers in order, then the model on each word.
  void encode_words(Piece piece, std::vector<std::int64_t>& ids) const {
    std::vector<Piece> pieces{std::move(piece)};
    for (const auto& step : pre_) {
      std::vector<Piece> next;
      for (auto& p : pieces) step->apply(p, next);
      pieces = std::move(next);
    }
    for (const auto& p : pieces) model_->encode_word(p.text, ids);
  }

  Reader reader_;
  std::unique_ptr<Model> model_;
  std::vector<std::unique_ptr<Normalizer>> normalizers_;
  std::vector<std::unique_ptr<PreTokenizer>> pre_;
  Around around_;
  AddedTokens added_;
  std::unordered_map<std::int64_t, std::string> added_pieces_;
  std::int64_t size_ = 0;
  bool byte_level_ = false;
};

}  // namespace

}  // namespace hf

std::unique_ptr<Tokenizer> open_tokenizer_json(const std::string& path) { return std::make_unique<hf::JsonTokenizer>(path); }

}  // namespace attn::model
