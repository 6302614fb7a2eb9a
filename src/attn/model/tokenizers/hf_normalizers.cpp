// tokenizer.json's normalizers as HF's tokenizers library runs them (Prepend, Replace, NFC/NFD/NFKC/
// NFKD, Lowercase, Strip, StripAccents, BertNormalizer, Precompiled); Unicode's data from attn's ICU
// module, loaded only when a normalizer needs it. Any other normalizer is refused by its JSON path.
#include <fmt/format.h>

#include "attn/core/error.hpp"
#include "attn/model/tokenizers/tokenizer_json.hpp"

namespace attn::model::hf {

namespace {

class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  void apply(std::string& text) const override {
    if (!text.empty()) text.insert(0, prefix_);  // HF prepends nothing to an empty string
  }

 private:
  std::string prefix_;
};

class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(std::unique_ptr<bpe::Regex> regex, std::string from, std::string to)
      : regex_(std::move(regex)), from_(std::move(from)), to_(std::move(to)) {}
  void apply(std::string& text) const override {
    std::vector<std::pair<std::size_t, std::size_t>> hits;
    if (regex_) {
      hits = regex_->matches(text);
    } else if (!from_.empty()) {
      for (std::size_t at = 0; (at = text.find(from_, at)) != std::string::npos; at += from_.size()) hits.emplace_back(at, at + from_.size());
    }
    if (hits.empty()) return;
    std::string out;
    std::size_t at = 0;
    for (const auto& [b, e] : hits) out.append(text, at, b - at).append(to_), at = e;
    text = out.append(text, at);
  }

 private:
  std::unique_ptr<bpe::Regex> regex_;  // null: the literal from_
  std::string from_, to_;
};

class UnicodeFormNormalizer final : public Normalizer {
 public:
  UnicodeFormNormalizer(const UnicodeText& unicode, UnicodeText::Form form) : unicode_(unicode), form_(form) {}
  void apply(std::string& text) const override { text = unicode_.normalize(text, form_); }

 private:
  const UnicodeText& unicode_;
  UnicodeText::Form form_;
};

class LowercaseNormalizer final : public Normalizer {
 public:
  explicit LowercaseNormalizer(const UnicodeText& unicode) : unicode_(unicode) {}
  void apply(std::string& text) const override { text = unicode_.lower(text); }

 private:
  const UnicodeText& unicode_;
};

// Removes the characters for which drop(char, its classes) holds.
template <typename Drop>
std::string filter_chars(const UnicodeText& unicode, std::string_view text, const Drop& drop) {
  const auto classes = unicode.classes(text);
  std::string out;
  std::size_t k = 0;
  for (std::size_t i = 0; i < text.size(); ++k) {
    const std::size_t at = i;
    const char32_t c = next_char(text, i);
    if (!drop(c, classes[k])) out.append(text.substr(at, i - at));
  }
  return out;
}

class StripAccentsNormalizer final : public Normalizer {
 public:
  explicit StripAccentsNormalizer(const UnicodeText& unicode) : unicode_(unicode) {}
  void apply(std::string& text) const override {
    text = filter_chars(unicode_, text, [](char32_t, CharClass k) { return k.mark(); });
  }

 private:
  const UnicodeText& unicode_;
};

class StripNormalizer final : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void apply(std::string& text) const override {
    std::size_t begin = 0, end = text.size();
    if (left_) {
      for (std::size_t i = 0; i < text.size();) {
        if (!is_white_space(next_char(text, i))) break;
        begin = i;
      }
    }
    if (right_) {
      end = begin;
      for (std::size_t i = begin; i < text.size();)
        if (!is_white_space(next_char(text, i))) end = i;
    }
    text = text.substr(begin, end - begin);
  }

 private:
  bool left_, right_;
};

// HF's CJK ranges (its 0x2B920 where BERT's Python has 0x2B820).
bool is_chinese(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// BERT's cleaning in HF's order: control characters (C*, bar tab, newline, carriage return) dropped
// and white space made a space; spaces around CJK ideographs; accents stripped (NFD, then Mn
// dropped); lower case.
class BertNormalizer final : public Normalizer {
 public:
  BertNormalizer(const UnicodeText& unicode, bool clean, bool chinese, bool strip_accents, bool lowercase)
      : unicode_(unicode), clean_(clean), chinese_(chinese), strip_accents_(strip_accents), lowercase_(lowercase) {}
  void apply(std::string& text) const override {
    if (clean_) text = clean(text);
    if (chinese_) text = space_chinese(text);
    if (strip_accents_) {
      text = filter_chars(unicode_, unicode_.normalize(text, UnicodeText::Form::nfd),
                          [](char32_t, CharClass k) { return k.category() == kNonspacingMark; });
    }
    if (lowercase_) text = unicode_.lower(text);
  }

 private:
  std::string clean(std::string_view text) const {
    const auto classes = unicode_.classes(text);
    std::string out;
    std::size_t k = 0;
    for (std::size_t i = 0; i < text.size(); ++k) {
      const char32_t c = next_char(text, i);
      const bool tab_or_newline = c == '\t' || c == '\n' || c == '\r';
      if (c == 0 || c == 0xFFFD || (!tab_or_newline && classes[k].other())) continue;
      append_utf8(out, tab_or_newline || classes[k].white_space() ? U' ' : c);
    }
    return out;
  }
  static std::string space_chinese(std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size();) {
      const char32_t c = next_char(text, i);
      if (is_chinese(c)) out += ' ';
      append_utf8(out, c);
      if (is_chinese(c)) out += ' ';
    }
    return out;
  }

  const UnicodeText& unicode_;
  bool clean_, chinese_, strip_accents_, lowercase_;
};

class PrecompiledNormalizer final : public Normalizer {
 public:
  PrecompiledNormalizer(const UnicodeText& unicode, PrecompiledCharsmap map) : unicode_(unicode), map_(std::move(map)) {}
  void apply(std::string& text) const override { map_.apply(text, unicode_); }

 private:
  const UnicodeText& unicode_;
  PrecompiledCharsmap map_;
};

std::string base64_decode(const Reader& r, const std::string& where, std::string_view s) {
  std::string out;
  std::uint32_t bits = 0;
  int count = 0;
  for (const char c : s) {
    int v = c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26 : c >= '0' && c <= '9' ? c - '0' + 52 : c == '+' ? 62 : c == '/' ? 63 : -1;
    if (c == '=') break;
    if (v < 0) r.fail(where, fmt::format("expected base64 text, got the character {}", quote_text(std::string(1, c))));
    bits = (bits << 6) | static_cast<std::uint32_t>(v);
    if ((count += 6) >= 8) out += static_cast<char>((bits >> (count -= 8)) & 0xFF);
  }
  return out;
}

std::unique_ptr<Normalizer> read_replace(const Reader& r, const json& n, const std::string& where) {
  const json& pattern = r.field(n, where, "pattern");
  const std::string content = r.string_field(n, where, "content");
  if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string())
    return std::make_unique<ReplaceNormalizer>(nullptr, pattern["String"].get<std::string>(), content);
  if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string()) {
    auto regex = std::make_unique<bpe::Regex>(pattern["Regex"].get<std::string>(), fmt::format("{}: {}.pattern.Regex", r.path(), where));
    return std::make_unique<ReplaceNormalizer>(std::move(regex), "", content);
  }
  r.fail(where + ".pattern", fmt::format("expected {{\"String\": ...}} or {{\"Regex\": ...}}, got {}", pattern.dump()));
}

std::unique_ptr<Normalizer> read_bert(const Reader& r, const json& n, const std::string& where) {
  const bool lowercase = r.bool_field(n, where, "lowercase", true);
  return std::make_unique<BertNormalizer>(unicode_text(r.path() + ": " + where), r.bool_field(n, where, "clean_text", true),
                                          r.bool_field(n, where, "handle_chinese_chars", true), r.bool_field(n, where, "strip_accents", lowercase),
                                          lowercase);
}

// One normalizer that is not a Sequence.
std::unique_ptr<Normalizer> read_one(const Reader& r, const json& n, const std::string& where, const std::string& type) {
  const auto unicode = [&]() -> const UnicodeText& { return unicode_text(r.path() + ": " + where); };
  if (type == "Prepend") return std::make_unique<PrependNormalizer>(r.string_field(n, where, "prepend"));
  if (type == "Replace") return read_replace(r, n, where);
  if (type == "NFC") return std::make_unique<UnicodeFormNormalizer>(unicode(), UnicodeText::Form::nfc);
  if (type == "NFD") return std::make_unique<UnicodeFormNormalizer>(unicode(), UnicodeText::Form::nfd);
  if (type == "NFKC") return std::make_unique<UnicodeFormNormalizer>(unicode(), UnicodeText::Form::nfkc);
  if (type == "NFKD") return std::make_unique<UnicodeFormNormalizer>(unicode(), UnicodeText::Form::nfkd);
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>(unicode());
  if (type == "StripAccents") return std::make_unique<StripAccentsNormalizer>(unicode());
  if (type == "Strip") return std::make_unique<StripNormalizer>(r.bool_field(n, where, "strip_left", true), r.bool_field(n, where, "strip_right", true));
  if (type == "BertNormalizer") return read_bert(r, n, where);
  if (type == "Precompiled") {
    const std::string at = where + ".precompiled_charsmap";
    const std::string blob = base64_decode(r, at, r.string_field(n, where, "precompiled_charsmap"));
    return std::make_unique<PrecompiledNormalizer>(unicode(), PrecompiledCharsmap(blob, r, at));
  }
  r.unsupported(where, type, "normalizers",
                {"Sequence", "Prepend", "Replace", "NFC", "NFD", "NFKC", "NFKD", "Lowercase", "Strip", "StripAccents", "BertNormalizer", "Precompiled"});
}

}  // namespace

void read_normalizers(const Reader& r, const json& n, const std::string& where, std::vector<std::unique_ptr<Normalizer>>& out) {
  if (n.is_null()) return;
  const std::string type = r.type_of(n, where);
  if (type != "Sequence") {
    out.push_back(read_one(r, n, where, type));
    return;
  }
  r.each(n, where, "normalizers", [&](const json& part, const std::string& at) { read_normalizers(r, part, at, out); });
}

}  // namespace attn::model::hf
