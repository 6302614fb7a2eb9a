// The tokenizers of hub checkpoint directories: which file a directory's tokenizer is read from,
// GPT-2's vocab.json + merges.txt, and the JSON reading that tokenizer.json shares (tokenizer_json.cpp
// reads that file; sentencepiece_tokenizer.cpp and wordpiece.cpp the others).
#include "attn/model/tokenizers/tokenizer.hpp"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "attn/core/error.hpp"
#include "attn/model/tokenizers/byte_bpe.hpp"
#include "attn/model/tokenizers/tokenizer_json.hpp"

namespace attn::model {

namespace hf {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open the file", path));
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw InputError(fmt::format("{}: cannot read the file", path));
  return s.str();
}

json parse_json_file(const std::string& path) {
  const std::string text = read_text(path);
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    // Line and column of the byte the parser stopped at.
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < std::min<std::size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size()); ++i) {
      if (text[i] == '\n') ++line, column = 1;
      else ++column;
    }
    std::string what = e.what();
    if (const auto colon = what.find("syntax error"); colon != std::string::npos) what = what.substr(colon);
    throw InputError(fmt::format("{}:{}:{}: invalid JSON: {}", path, line, column, what));
  }
}

std::string config_token(const json& config, const char* key, const std::string& fallback) {
  if (!config.is_object() || !config.contains(key)) return fallback;
  const json* v = &config[key];
  if (v->is_object() && v->contains("content")) v = &(*v)["content"];
  return v->is_string() ? v->get<std::string>() : fallback;
}

std::string quote_text(std::string_view s, std::size_t limit) {
  std::string out;
  for (const char c : s.substr(0, limit)) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    else out += c;
  }
  return "\"" + out + (s.size() > limit ? "...\"" : "\"");
}

std::string kind_of(const json& j) {
  if (j.is_null()) return "null";
  if (j.is_boolean()) return j.get<bool>() ? "true" : "false";
  if (j.is_number()) return j.dump();
  if (j.is_string()) return quote_text(j.get<std::string>());
  if (j.is_array()) return "an array";
  return "an object";
}

void read_vocab(const json& vocab, bpe::Model& model, const std::string& where) {
  if (!vocab.is_object()) throw InputError(fmt::format("{}: expected a JSON object of token -> id, got {}", where, kind_of(vocab)));
  for (const auto& [piece, id] : vocab.items()) {
    if (!id.is_number_integer())
      throw InputError(fmt::format("{}: {}: expected an integer id, got {}", where, quote_text(piece), kind_of(id)));
    model.add_token(piece, id.get<std::int64_t>());
  }
}

std::string merge_problem(bpe::Model::MergeResult r, std::string_view left, std::string_view right, std::string_view vocab_name) {
  switch (r) {
    case bpe::Model::MergeResult::left_missing: return fmt::format("{} is not in {}", quote_text(left), vocab_name);
    case bpe::Model::MergeResult::right_missing: return fmt::format("{} is not in {}", quote_text(right), vocab_name);
    case bpe::Model::MergeResult::result_missing:
      return fmt::format("the merge of {} and {} makes {}, which is not in {}", quote_text(left), quote_text(right),
                         quote_text(std::string(left) + std::string(right)), vocab_name);
    case bpe::Model::MergeResult::ok: break;
  }
  return "";
}

}  // namespace hf

namespace {

namespace fs = std::filesystem;
using hf::json;
using hf::quote_text;

// ---- GPT-2: vocab.json + merges.txt -----------------------------------------------------------

class Gpt2FilesTokenizer final : public Tokenizer {
 public:
  Gpt2FilesTokenizer(const std::string& vocab_path, const std::string& merges_path)
      : model_(vocab_path), regex_(bpe::gpt2_pattern, "GPT-2's pre-tokenizer pattern") {
    hf::read_vocab(hf::parse_json_file(vocab_path), model_, vocab_path);
    const std::string text = hf::read_text(merges_path);
    std::size_t line_no = 0;
    std::size_t at = 0;
    while (at < text.size()) {
      std::size_t end = text.find('\n', at);
      if (end == std::string::npos) end = text.size();
      std::string_view line(text.data() + at, end - at);
      at = end + 1;
      ++line_no;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line_no == 1 && line.starts_with("#version")) continue;
      if (line.empty()) continue;
      const auto space = line.find(' ');
      if (space == std::string_view::npos || space == 0 || space + 1 == line.size() || line.find(' ', space + 1) != std::string_view::npos)
        throw InputError(fmt::format("{}:{}: expected two tokens separated by a space, got {}", merges_path, line_no, quote_text(line)));
      const auto left = line.substr(0, space), right = line.substr(space + 1);
      const auto r = model_.add_merge(left, right);
      if (r != bpe::Model::MergeResult::ok)
        throw InputError(fmt::format("{}:{}: {}", merges_path, line_no, hf::merge_problem(r, left, right, "vocab.json")));
    }
    if (const auto eot = id_of("<|endoftext|>"); eot >= 0) specials_.add({.content = "<|endoftext|>", .id = eot, .special = true});
  }

  // "<|endoftext|>" written in the text is one token (GPT2Tokenizer's bos, eos and unk token, an
  // added special token), unless split_special_tokens; GPT2Tokenizer adds no special token around a text.
  std::vector<std::int64_t> encode(std::string_view text, bool split_special_tokens) const override {
    bpe::check_utf8(text, "the text to tokenize");
    std::vector<std::int64_t> ids;
    for (const auto& part : specials_.split(text, false, split_special_tokens)) {
      if (part.id >= 0) ids.push_back(part.id);
      else for (const auto word : regex_.findall(text.substr(part.begin, part.end - part.begin))) model_.encode_word(bpe::to_byte_chars(word), ids);
    }
    return ids;
  }
  std::string piece(std::int64_t id) const override { return model_.piece(id); }
  bool byte_level() const override { return true; }
  std::int64_t vocab_size() const override { return model_.vocab_size(); }
  std::string describe() const override {
    return fmt::format("byte-level BPE from vocab.json + merges.txt ({} tokens)", bpe::with_commas(vocab_size()));
  }

 private:
  bpe::Model model_;
  bpe::Regex regex_;
  hf::AddedTokens specials_;
};

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir) {
  const fs::path d(dir);
  if (is_file(d / "source.spm") && is_file(d / "vocab.json")) return open_marian(dir, "source.spm");
  // the hub's tokenizers read tokenizer.json where there is one (AutoTokenizer's fast tokenizer),
  // before T5's spiece.model or BERT's vocab.txt beside it
  if (is_file(d / "tokenizer.json")) return open_tokenizer_json((d / "tokenizer.json").string());
  if (is_file(d / "spiece.model")) return open_sentencepiece((d / "spiece.model").string());
  if (is_file(d / "vocab.txt") && !is_file(d / "vocab.json")) return open_wordpiece(dir);
  const bool vocab = is_file(d / "vocab.json"), merges = is_file(d / "merges.txt");
  if (vocab && merges) return std::make_unique<Gpt2FilesTokenizer>((d / "vocab.json").string(), (d / "merges.txt").string());
  if (is_file(d / "tokenizer.model")) return open_llama_sentencepiece((d / "tokenizer.model").string());
  if (vocab != merges)
    throw InputError(fmt::format("{}: has {} but no {}; GPT-2's tokenizer needs both (or a tokenizer.json)", dir, vocab ? "vocab.json" : "merges.txt",
                                 vocab ? "merges.txt" : "vocab.json"));
  return nullptr;
}

std::unique_ptr<Tokenizer> load_tokenizer_file(const std::string& path) {
  const fs::path p(path);
  const std::string name = p.filename().string();
  if (name == "tokenizer.json") return open_tokenizer_json(path);
  if (name == "tokenizer.model") return open_llama_sentencepiece(path);
  if (name == "spiece.model") return open_sentencepiece(path);
  // BertTokenizer's vocab.txt: with the tokenizer_config.json beside it, as a directory's is read
  if (name == "vocab.txt") return open_wordpiece(p.has_parent_path() ? p.parent_path().string() : ".");
  throw InputError(fmt::format("{}: expected a checkpoint directory, or a tokenizer file named tokenizer.json, tokenizer.model, "
                               "spiece.model or vocab.txt", path));
}

}  // namespace attn::model
