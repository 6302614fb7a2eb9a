// The tokenizers of hub checkpoint directories: tokenizer.json (HF tokenizers, BPE), vocab.json +
// merges.txt (GPT-2), and tokenizer.model (SentencePiece: sentencepiece_tokenizer.cpp).
#include "attn/model/tokenizer.hpp"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <variant>

#include "attn/error.hpp"
#include "attn/model/byte_bpe.hpp"

namespace attn::model {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open the file", path));
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) throw InputError(fmt::format("{}: cannot read the file", path));
  return s.str();
}

json parse_json(const std::string& path) {
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

std::string quote_text(std::string_view s, std::size_t limit = 60) {
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

// ---- GPT-2: vocab.json + merges.txt -----------------------------------------------------------

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

class Gpt2FilesTokenizer final : public Tokenizer {
 public:
  Gpt2FilesTokenizer(const std::string& vocab_path, const std::string& merges_path)
      : model_(vocab_path), regex_(bpe::gpt2_pattern, "GPT-2's pre-tokenizer pattern") {
    read_vocab(parse_json(vocab_path), model_, vocab_path);
    const std::string text = read_text(merges_path);
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
        throw InputError(fmt::format("{}:{}: {}", merges_path, line_no, merge_problem(r, left, right, "vocab.json")));
    }
  }

  std::vector<std::int64_t> encode(std::string_view text) const override {
    bpe::check_utf8(text, "the text to tokenize");
    std::vector<std::int64_t> ids;
    for (const auto word : regex_.findall(text)) model_.encode_word(bpe::to_byte_chars(word), ids);
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
};

// ---- tokenizer.json ---------------------------------------------------------------------------

struct Piece {
  std::string text;
  bool at_start;  // begins at offset 0 of the normalized text (Metaspace's prepend_scheme "first")
};

struct PrependStep {
  std::string prefix;
};
struct ReplaceStep {
  std::string from, to;
};
using NormalizeStep = std::variant<PrependStep, ReplaceStep>;

enum class Behavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

// One pre-tokenizer (a Sequence is flattened into several).
struct PreStep {
  enum Kind { split, byte_level, metaspace } kind = split;
  std::shared_ptr<bpe::Regex> regex;        // Split's pattern; ByteLevel's (null: use_regex false)
  Behavior behavior = Behavior::isolated;   // Split
  bool invert = false;                      // Split
  bool add_prefix_space = false;            // ByteLevel
  std::string replacement;                  // Metaspace
  enum Prepend { always, first, never } prepend = always;  // Metaspace
  bool split_words = true;                  // Metaspace
};

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  if (from.empty()) return s;
  std::string out;
  std::size_t at = 0;
  for (std::size_t hit; (hit = s.find(from, at)) != std::string::npos; at = hit + from.size()) out.append(s, at, hit - at).append(to);
  out.append(s, at);
  return out;
}

// HF's NormalizedString::split: the pieces of `text` around `spans`, as `behavior` groups them.
std::vector<std::pair<std::size_t, std::size_t>> split_spans(std::size_t size, const std::vector<std::pair<std::size_t, std::size_t>>& spans,
                                                             Behavior behavior, bool invert) {
  std::vector<std::pair<std::pair<std::size_t, std::size_t>, bool>> all;  // covering [0, size), match flag
  std::size_t at = 0;
  for (const auto& [b, e] : spans) {
    if (b > at) all.push_back({{at, b}, invert});
    all.push_back({{b, e}, !invert});
    at = e;
  }
  if (at < size) all.push_back({{at, size}, invert});

  std::vector<std::pair<std::size_t, std::size_t>> out;
  bool previous = false;
  switch (behavior) {
    case Behavior::removed:
      for (const auto& [o, m] : all)
        if (!m) out.push_back(o);
      break;
    case Behavior::isolated:
      for (const auto& [o, m] : all) out.push_back(o);
      break;
    case Behavior::merged_with_previous:
      for (const auto& [o, m] : all) {
        if (m && !previous && !out.empty()) out.back().second = o.second;
        else out.push_back(o);
        previous = m;
      }
      break;
    case Behavior::merged_with_next:
      for (auto it = all.rbegin(); it != all.rend(); ++it) {
        if (it->second && !previous && !out.empty()) out.back().first = it->first.first;
        else out.push_back(it->first);
        previous = it->second;
      }
      std::reverse(out.begin(), out.end());
      break;
    case Behavior::contiguous:
      for (std::size_t i = 0; i < all.size(); ++i) {
        if (i > 0 && all[i].second == previous) out.back().second = all[i].first.second;
        else out.push_back(all[i].first);
        previous = all[i].second;
      }
      break;
  }
  return out;
}

void prepend(std::string& s, std::string_view prefix) {
  if (!s.empty()) s.insert(0, prefix);  // HF prepends nothing to an empty string
}

class JsonTokenizer final : public Tokenizer {
 public:
  explicit JsonTokenizer(const std::string& path) : path_(path), model_(path) {
    const json doc = parse_json(path);
    if (!doc.is_object()) throw InputError(fmt::format("{}: expected a JSON object (HF tokenizers' tokenizer.json), got {}", path, kind_of(doc)));
    read_model(doc);
    if (doc.contains("normalizer")) read_normalizer(doc["normalizer"], "normalizer");
    if (doc.contains("pre_tokenizer")) read_pre_tokenizer(doc["pre_tokenizer"], "pre_tokenizer");
    if (const auto it = doc.find("added_tokens"); it != doc.end() && !it->is_null()) {
      if (!it->is_array()) fail("added_tokens", fmt::format("expected an array of {{\"id\", \"content\"}}, got {}", kind_of(*it)));
      for (std::size_t i = 0; i < it->size(); ++i) {
        const json& t = (*it)[i];
        const std::string where = fmt::format("added_tokens[{}]", i);
        if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer() || !t.contains("content") || !t["content"].is_string())
          fail(where, fmt::format("expected {{\"id\": integer, \"content\": string}}, got {}", kind_of(t)));
        model_.add_extra_piece(t["content"].get<std::string>(), t["id"].get<std::int64_t>());
      }
    }
    bool byte_level = false;
    for (const auto& s : pre_) byte_level = byte_level || s.kind == PreStep::byte_level;
    byte_level_ = byte_level;
    kind_ = byte_level           ? "byte-level BPE"
            : model_.byte_fallback ? "SentencePiece-style BPE (byte fallback)"
                                   : "BPE";
  }

  std::vector<std::int64_t> encode(std::string_view text) const override {
    bpe::check_utf8(text, "the text to tokenize");
    std::string normalized(text);
    for (const auto& step : normalize_) {
      if (const auto* p = std::get_if<PrependStep>(&step)) prepend(normalized, p->prefix);
      else if (const auto* r = std::get_if<ReplaceStep>(&step)) normalized = replace_all(std::move(normalized), r->from, r->to);
    }
    std::vector<Piece> pieces{{std::move(normalized), true}};
    for (const auto& step : pre_) {
      std::vector<Piece> next;
      for (auto& piece : pieces) apply(step, piece, next);
      pieces = std::move(next);
    }
    std::vector<std::int64_t> ids;
    for (const auto& p : pieces) model_.encode_word(p.text, ids);
    return ids;
  }
  std::string piece(std::int64_t id) const override { return model_.piece(id); }
  bool byte_level() const override { return byte_level_; }
  std::int64_t vocab_size() const override { return model_.vocab_size(); }
  std::string describe() const override { return fmt::format("{} from tokenizer.json ({} tokens)", kind_, bpe::with_commas(vocab_size())); }

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw InputError(fmt::format("{}: {}: {}", path_, where, what));
  }

  const json& field(const json& obj, const std::string& where, const char* key) const {
    const auto it = obj.find(key);
    if (it == obj.end()) fail(where, fmt::format("missing \"{}\"", key));
    return *it;
  }
  std::string string_field(const json& obj, const std::string& where, const char* key) const {
    const json& v = field(obj, where, key);
    if (!v.is_string()) fail(where + "." + key, fmt::format("expected a string, got {}", kind_of(v)));
    return v.get<std::string>();
  }
  bool bool_field(const json& obj, const std::string& where, const char* key, bool fallback) const {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) fail(where + "." + key, fmt::format("expected true or false, got {}", kind_of(*it)));
    return it->get<bool>();
  }
  std::string type_of(const json& obj, const std::string& where) const {
    if (!obj.is_object()) fail(where, fmt::format("expected an object with a \"type\", got {}", kind_of(obj)));
    return string_field(obj, where, "type");
  }

  void read_model(const json& doc) {
    const json& m = field(doc, "(top level)", "model");
    const std::string type = type_of(m, "model");
    if (type != "BPE")
      fail("model.type", fmt::format("is {}; attn reads BPE models only (GPT-2 / Llama 3 byte-level, Llama 2 / Mistral SentencePiece-style)", quote_text(type)));
    if (const auto it = m.find("dropout"); it != m.end() && !it->is_null() && !(it->is_number() && it->get<double>() == 0.0))
      fail("model.dropout", fmt::format("is {}; attn reads BPE without dropout (null)", kind_of(*it)));
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
      if (const auto it = m.find(key); it != m.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty()))
        fail(std::string("model.") + key, fmt::format("is {}; attn reads BPE models without one (null)", kind_of(*it)));
    }
    read_vocab(field(m, "model", "vocab"), model_, path_ + ": model.vocab");
    const json& merges = field(m, "model", "merges");
    if (!merges.is_array()) fail("model.merges", fmt::format("expected an array, got {}", kind_of(merges)));
    for (std::size_t i = 0; i < merges.size(); ++i) {
      const json& e = merges[i];
      const std::string where = fmt::format("model.merges[{}]", i);
      std::string left, right;
      if (e.is_string()) {
        const std::string s = e.get<std::string>();
        const auto space = s.find(' ');
        if (space == std::string::npos || space == 0 || space + 1 == s.size() || s.find(' ', space + 1) != std::string::npos)
          fail(where, fmt::format("expected \"left right\" (two tokens separated by a space) or [\"left\", \"right\"], got {}", quote_text(s)));
        left = s.substr(0, space), right = s.substr(space + 1);
      } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
        left = e[0].get<std::string>(), right = e[1].get<std::string>();
      } else {
        fail(where, fmt::format("expected \"left right\" or [\"left\", \"right\"], got {}", e.is_array() ? e.dump() : kind_of(e)));
      }
      const auto r = model_.add_merge(left, right);
      if (r != bpe::Model::MergeResult::ok) fail(where, merge_problem(r, left, right, "model.vocab"));
    }
    model_.byte_fallback = bool_field(m, "model", "byte_fallback", false);
    model_.fuse_unk = bool_field(m, "model", "fuse_unk", false);
    model_.ignore_merges = bool_field(m, "model", "ignore_merges", false);
    if (const auto it = m.find("unk_token"); it != m.end() && !it->is_null()) {
      if (!it->is_string()) fail("model.unk_token", fmt::format("expected a string or null, got {}", kind_of(*it)));
      const auto id = model_.id_of(it->get<std::string>());
      if (!id) fail("model.unk_token", fmt::format("{} is not in model.vocab", quote_text(it->get<std::string>())));
      model_.unk_id = *id;
    }
  }

  void read_normalizer(const json& n, const std::string& where) {
    if (n.is_null()) return;
    const std::string type = type_of(n, where);
    if (type == "Sequence") {
      const json& list = field(n, where, "normalizers");
      if (!list.is_array()) fail(where + ".normalizers", fmt::format("expected an array, got {}", kind_of(list)));
      for (std::size_t i = 0; i < list.size(); ++i) read_normalizer(list[i], fmt::format("{}.normalizers[{}]", where, i));
    } else if (type == "Prepend") {
      normalize_.push_back(PrependStep{string_field(n, where, "prepend")});
    } else if (type == "Replace") {
      const json& pattern = field(n, where, "pattern");
      if (!pattern.is_object() || !pattern.contains("String") || !pattern["String"].is_string())
        fail(where + ".pattern", fmt::format("is {}; attn reads a {{\"String\": ...}} pattern here, not a regex", pattern.dump()));
      normalize_.push_back(ReplaceStep{pattern["String"].get<std::string>(), string_field(n, where, "content")});
    } else {
      fail(where + ".type", fmt::format("is {}; attn reads the normalizers Sequence, Prepend and Replace (with a String pattern), as Llama 2 "
                                        "and Mistral use them",
                                        quote_text(type)));
    }
  }

  void read_pre_tokenizer(const json& p, const std::string& where) {
    if (p.is_null()) return;
    const std::string type = type_of(p, where);
    if (type == "Sequence") {
      const json& list = field(p, where, "pretokenizers");
      if (!list.is_array()) fail(where + ".pretokenizers", fmt::format("expected an array, got {}", kind_of(list)));
      for (std::size_t i = 0; i < list.size(); ++i) read_pre_tokenizer(list[i], fmt::format("{}.pretokenizers[{}]", where, i));
    } else if (type == "ByteLevel") {
      PreStep step;
      step.kind = PreStep::byte_level;
      step.add_prefix_space = bool_field(p, where, "add_prefix_space", true);
      if (bool_field(p, where, "use_regex", true)) step.regex = std::make_shared<bpe::Regex>(bpe::gpt2_pattern, "GPT-2's pre-tokenizer pattern");
      pre_.push_back(std::move(step));
    } else if (type == "Split") {
      const json& pattern = field(p, where, "pattern");
      std::shared_ptr<bpe::Regex> regex;
      if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string())
        regex = std::make_shared<bpe::Regex>(pattern["Regex"].get<std::string>(), fmt::format("{}: {}.pattern.Regex", path_, where));
      else if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string())
        regex = std::make_shared<bpe::Regex>(pattern["String"].get<std::string>(), fmt::format("{}: {}.pattern.String", path_, where), true);
      else
        fail(where + ".pattern", fmt::format("expected {{\"Regex\": ...}} or {{\"String\": ...}}, got {}", pattern.dump()));
      const std::string behavior = string_field(p, where, "behavior");
      Behavior b = Behavior::isolated;
      if (behavior == "Removed") b = Behavior::removed;
      else if (behavior == "Isolated") b = Behavior::isolated;
      else if (behavior == "MergedWithPrevious") b = Behavior::merged_with_previous;
      else if (behavior == "MergedWithNext") b = Behavior::merged_with_next;
      else if (behavior == "Contiguous") b = Behavior::contiguous;
      else
        fail(where + ".behavior",
             fmt::format("is {}; expected Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous", quote_text(behavior)));
      PreStep step;
      step.kind = PreStep::split;
      step.regex = std::move(regex);
      step.behavior = b;
      step.invert = bool_field(p, where, "invert", false);
      pre_.push_back(std::move(step));
    } else if (type == "Metaspace") {
      PreStep step;
      step.kind = PreStep::metaspace;
      step.replacement = string_field(p, where, "replacement");
      step.split_words = bool_field(p, where, "split", true);
      if (const auto it = p.find("prepend_scheme"); it != p.end() && !it->is_null()) {
        const std::string scheme = it->is_string() ? it->get<std::string>() : "";
        if (scheme == "always") step.prepend = PreStep::always;
        else if (scheme == "first") step.prepend = PreStep::first;
        else if (scheme == "never") step.prepend = PreStep::never;
        else fail(where + ".prepend_scheme", fmt::format("is {}; expected \"always\", \"first\" or \"never\"", kind_of(*it)));
      } else if (!bool_field(p, where, "add_prefix_space", true)) {
        step.prepend = PreStep::never;
      }
      if (step.replacement.empty()) fail(where + ".replacement", "is empty");
      pre_.push_back(std::move(step));
    } else {
      fail(where + ".type", fmt::format("is {}; attn reads the pre-tokenizers ByteLevel, Split and Metaspace (and a Sequence of them), as "
                                        "GPT-2, Llama 2 and Llama 3 use them",
                                        quote_text(type)));
    }
  }

  static void push_spans(const Piece& piece, const std::vector<std::pair<std::size_t, std::size_t>>& spans, std::vector<Piece>& out) {
    for (const auto& [b, e] : spans)
      if (e > b) out.push_back({piece.text.substr(b, e - b), piece.at_start && b == 0});
  }

  static void apply(const PreStep& step, Piece& piece, std::vector<Piece>& out) {
    switch (step.kind) {
      case PreStep::split:
        push_spans(piece, split_spans(piece.text.size(), step.regex->matches(piece.text), step.behavior, step.invert), out);
        return;
      case PreStep::byte_level: {
        if (step.add_prefix_space && !piece.text.starts_with(' ')) prepend(piece.text, " ");
        std::vector<Piece> parts;
        if (step.regex) push_spans(piece, split_spans(piece.text.size(), step.regex->matches(piece.text), Behavior::isolated, false), parts);
        else if (!piece.text.empty()) parts.push_back(piece);
        for (auto& part : parts) out.push_back({bpe::to_byte_chars(part.text), part.at_start});
        return;
      }
      case PreStep::metaspace: {
        piece.text = replace_all(std::move(piece.text), " ", step.replacement);
        if ((step.prepend == PreStep::always || (step.prepend == PreStep::first && piece.at_start)) && !piece.text.starts_with(step.replacement))
          prepend(piece.text, step.replacement);
        if (!step.split_words) {
          if (!piece.text.empty()) out.push_back(std::move(piece));
          return;
        }
        std::vector<std::pair<std::size_t, std::size_t>> spans;
        for (std::size_t at = 0; (at = piece.text.find(step.replacement, at)) != std::string::npos; at += step.replacement.size())
          spans.emplace_back(at, at + step.replacement.size());
        push_spans(piece, split_spans(piece.text.size(), spans, Behavior::merged_with_next, false), out);
        return;
      }
    }
  }

  std::string path_;
  bpe::Model model_;
  std::vector<NormalizeStep> normalize_;
  std::vector<PreStep> pre_;
  std::string kind_;
  bool byte_level_ = false;
};

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir) {
  const fs::path d(dir);
  if (is_file(d / "source.spm") && is_file(d / "vocab.json")) return open_marian(dir, "source.spm");
  if (is_file(d / "spiece.model")) return open_sentencepiece((d / "spiece.model").string());  // T5's, beside a Unigram tokenizer.json
  if (is_file(d / "vocab.txt") && !is_file(d / "vocab.json")) return open_wordpiece(dir);  // BERT's, whatever its tokenizer.json says
  if (is_file(d / "tokenizer.json")) return std::make_unique<JsonTokenizer>((d / "tokenizer.json").string());
  const bool vocab = is_file(d / "vocab.json"), merges = is_file(d / "merges.txt");
  if (vocab && merges) return std::make_unique<Gpt2FilesTokenizer>((d / "vocab.json").string(), (d / "merges.txt").string());
  if (is_file(d / "tokenizer.model")) return open_sentencepiece((d / "tokenizer.model").string());
  if (vocab != merges)
    throw InputError(fmt::format("{}: has {} but no {}; GPT-2's tokenizer needs both (or a tokenizer.json)", dir, vocab ? "vocab.json" : "merges.txt",
                                 vocab ? "merges.txt" : "vocab.json"));
  return nullptr;
}

}  // namespace attn::model
