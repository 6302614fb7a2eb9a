// tokenizer.json's pre-tokenizers as HF's tokenizers library runs them (ByteLevel, Split, Metaspace,
// BertPreTokenizer, Whitespace, WhitespaceSplit, Digits, Punctuation), patterns on PCRE2, character
// classes from attn's ICU module. Any other pre-tokenizer is refused by its JSON path.
#include <fmt/format.h>

#include <functional>

#include "attn/core/error.hpp"
#include "attn/model/tokenizers/tokenizer_json.hpp"

namespace attn::model::hf {

namespace {

using Spans = std::vector<std::pair<std::size_t, std::size_t>>;

void push_spans(const Piece& piece, const Spans& spans, std::vector<Piece>& out) {
  for (const auto& [b, e] : spans)
    if (e > b) out.push_back({piece.text.substr(b, e - b), piece.at_start && b == 0});
}

void prepend(std::string& s, std::string_view prefix) {
  if (!s.empty()) s.insert(0, prefix);  // HF prepends nothing to an empty string
}

class ByteLevelPre final : public PreTokenizer {
 public:
  ByteLevelPre(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space), regex_(use_regex ? std::make_unique<bpe::Regex>(bpe::gpt2_pattern, "GPT-2's pre-tokenizer pattern") : nullptr) {}
  void apply(Piece& piece, std::vector<Piece>& out) const override {
    if (add_prefix_space_ && !piece.text.starts_with(' ')) prepend(piece.text, " ");
    std::vector<Piece> parts;
    if (regex_) push_spans(piece, split_spans(piece.text.size(), regex_->matches(piece.text), Behavior::isolated, false), parts);
    else if (!piece.text.empty()) parts.push_back(piece);
    for (auto& part : parts) out.push_back({bpe::to_byte_chars(part.text), part.at_start});
  }
  bool byte_level() const override { return true; }

 private:
  bool add_prefix_space_;
  std::unique_ptr<bpe::Regex> regex_;
};

class SplitPre final : public PreTokenizer {
 public:
  SplitPre(std::unique_ptr<bpe::Regex> regex, Behavior behavior, bool invert) : regex_(std::move(regex)), behavior_(behavior), invert_(invert) {}
  void apply(Piece& piece, std::vector<Piece>& out) const override {
    push_spans(piece, split_spans(piece.text.size(), regex_->matches(piece.text), behavior_, invert_), out);
  }

 private:
  std::unique_ptr<bpe::Regex> regex_;
  Behavior behavior_;
  bool invert_;
};

class MetaspacePre final : public PreTokenizer {
 public:
  enum Prepend { always, first, never };
  MetaspacePre(std::string replacement, Prepend prepend, bool split) : replacement_(std::move(replacement)), prepend_(prepend), split_(split) {}
  void apply(Piece& piece, std::vector<Piece>& out) const override {
    std::string text;
    for (std::size_t at = 0, hit; at < piece.text.size(); at = hit + 1) {
      hit = std::min(piece.text.find(' ', at), piece.text.size());
      text.append(piece.text, at, hit - at);
      if (hit < piece.text.size()) text += replacement_;
    }
    piece.text = std::move(text);
    if ((prepend_ == always || (prepend_ == first && piece.at_start)) && !piece.text.starts_with(replacement_)) prepend(piece.text, replacement_);
    if (!split_) {
      if (!piece.text.empty()) out.push_back(std::move(piece));
      return;
    }
    Spans spans;
    for (std::size_t at = 0; (at = piece.text.find(replacement_, at)) != std::string::npos; at += replacement_.size())
      spans.emplace_back(at, at + replacement_.size());
    push_spans(piece, split_spans(piece.text.size(), spans, Behavior::merged_with_next, false), out);
  }

 private:
  std::string replacement_;
  Prepend prepend_;
  bool split_;
};

// Splits at every character for which `match` holds (each one a span of its own), as `behavior` says.
class CharSplitPre final : public PreTokenizer {
 public:
  using Match = std::function<bool(char32_t, CharClass)>;
  CharSplitPre(const UnicodeText* unicode, std::vector<std::pair<Match, Behavior>> steps) : unicode_(unicode), steps_(std::move(steps)) {}
  void apply(Piece& piece, std::vector<Piece>& out) const override {
    std::vector<Piece> pieces{std::move(piece)};
    for (const auto& [match, behavior] : steps_) {
      std::vector<Piece> next;
      for (const Piece& p : pieces) push_spans(p, split_spans(p.text.size(), spans_of(p.text, match), behavior, false), next);
      pieces = std::move(next);
    }
    for (auto& p : pieces) out.push_back(std::move(p));
  }

 private:
  Spans spans_of(std::string_view text, const Match& match) const {
    const std::vector<CharClass> classes = unicode_ ? unicode_->classes(text) : std::vector<CharClass>{};
    Spans spans;
    std::size_t k = 0;
    for (std::size_t i = 0; i < text.size(); ++k) {
      const std::size_t at = i;
      const char32_t c = next_char(text, i);
      if (match(c, unicode_ ? classes[k] : CharClass{})) spans.emplace_back(at, i);
    }
    return spans;
  }

  const UnicodeText* unicode_;  // null: the matches need no character classes
  std::vector<std::pair<Match, Behavior>> steps_;
};

// HF's Whitespace: the runs of word characters (\w) and the runs of what is neither \w nor white space.
class WhitespacePre final : public PreTokenizer {
 public:
  explicit WhitespacePre(const UnicodeText& unicode) : unicode_(unicode) {}
  void apply(Piece& piece, std::vector<Piece>& out) const override {
    const auto classes = unicode_.classes(piece.text);
    Spans spans;
    int run = 0;  // 0 none, 1 word, 2 other
    std::size_t k = 0;
    for (std::size_t i = 0; i < piece.text.size(); ++k) {
      const std::size_t at = i;
      next_char(piece.text, i);
      const int kind = classes[k].word() ? 1 : classes[k].white_space() ? 0 : 2;
      if (kind != 0 && kind == run) spans.back().second = i;
      else if (kind != 0) spans.emplace_back(at, i);
      run = kind;
    }
    push_spans(piece, spans, out);
  }

 private:
  const UnicodeText& unicode_;
};

bool ascii_punctuation(char32_t c) { return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126); }

Behavior read_behavior(const Reader& r, const json& p, const std::string& where, Behavior fallback) {
  if (!p.contains("behavior")) return fallback;
  const std::string behavior = r.string_field(p, where, "behavior");
  if (behavior == "Removed") return Behavior::removed;
  if (behavior == "Isolated") return Behavior::isolated;
  if (behavior == "MergedWithPrevious") return Behavior::merged_with_previous;
  if (behavior == "MergedWithNext") return Behavior::merged_with_next;
  if (behavior == "Contiguous") return Behavior::contiguous;
  r.fail(where + ".behavior", fmt::format("is {}; expected Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous", quote_text(behavior)));
}

std::unique_ptr<PreTokenizer> read_split(const Reader& r, const json& p, const std::string& where) {
  const json& pattern = r.field(p, where, "pattern");
  std::unique_ptr<bpe::Regex> regex;
  if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string())
    regex = std::make_unique<bpe::Regex>(pattern["Regex"].get<std::string>(), fmt::format("{}: {}.pattern.Regex", r.path(), where));
  else if (pattern.is_object() && pattern.contains("String") && pattern["String"].is_string())
    regex = std::make_unique<bpe::Regex>(pattern["String"].get<std::string>(), fmt::format("{}: {}.pattern.String", r.path(), where), true);
  else
    r.fail(where + ".pattern", fmt::format("expected {{\"Regex\": ...}} or {{\"String\": ...}}, got {}", pattern.dump()));
  return std::make_unique<SplitPre>(std::move(regex), read_behavior(r, p, where, Behavior::isolated), r.bool_field(p, where, "invert", false));
}

std::unique_ptr<PreTokenizer> read_metaspace(const Reader& r, const json& p, const std::string& where) {
  const std::string replacement = r.string_field(p, where, "replacement");
  if (replacement.empty()) r.fail(where + ".replacement", "is empty");
  auto prepend = MetaspacePre::always;
  if (const auto it = p.find("prepend_scheme"); it != p.end() && !it->is_null()) {
    const std::string scheme = it->is_string() ? it->get<std::string>() : "";
    if (scheme == "always") prepend = MetaspacePre::always;
    else if (scheme == "first") prepend = MetaspacePre::first;
    else if (scheme == "never") prepend = MetaspacePre::never;
    else r.fail(where + ".prepend_scheme", fmt::format("is {}; expected \"always\", \"first\" or \"never\"", kind_of(*it)));
  } else if (!r.bool_field(p, where, "add_prefix_space", true)) {
    prepend = MetaspacePre::never;
  }
  return std::make_unique<MetaspacePre>(replacement, prepend, r.bool_field(p, where, "split", true));
}

// The pre-tokenizers that split at characters of a kind.
std::unique_ptr<PreTokenizer> read_char_split(const Reader& r, const json& p, const std::string& where, const std::string& type) {
  const auto space = [](char32_t c, CharClass) { return is_white_space(c); };
  const auto punctuation = [](char32_t c, CharClass k) { return ascii_punctuation(c) || k.punctuation(); };
  if (type == "WhitespaceSplit") return std::make_unique<CharSplitPre>(nullptr, std::vector<std::pair<CharSplitPre::Match, Behavior>>{{space, Behavior::removed}});
  const UnicodeText& unicode = unicode_text(r.path() + ": " + where);
  if (type == "BertPreTokenizer")
    return std::make_unique<CharSplitPre>(&unicode, std::vector<std::pair<CharSplitPre::Match, Behavior>>{{space, Behavior::removed}, {punctuation, Behavior::isolated}});
  if (type == "Punctuation")
    return std::make_unique<CharSplitPre>(&unicode, std::vector<std::pair<CharSplitPre::Match, Behavior>>{{punctuation, read_behavior(r, p, where, Behavior::isolated)}});
  // Digits: each digit alone (individual_digits) or the runs of them
  const auto digit = [](char32_t, CharClass k) { return k.number(); };
  const Behavior behavior = r.bool_field(p, where, "individual_digits", false) ? Behavior::isolated : Behavior::contiguous;
  return std::make_unique<CharSplitPre>(&unicode, std::vector<std::pair<CharSplitPre::Match, Behavior>>{{digit, behavior}});
}

}  // namespace

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

void read_pre_tokenizers(const Reader& r, const json& p, const std::string& where, std::vector<std::unique_ptr<PreTokenizer>>& out) {
  if (p.is_null()) return;
  const std::string type = r.type_of(p, where);
  if (type == "Sequence") {
    r.each(p, where, "pretokenizers", [&](const json& part, const std::string& at) { read_pre_tokenizers(r, part, at, out); });
  } else if (type == "ByteLevel") {
    out.push_back(std::make_unique<ByteLevelPre>(r.bool_field(p, where, "add_prefix_space", true), r.bool_field(p, where, "use_regex", true)));
  } else if (type == "Split") {
    out.push_back(read_split(r, p, where));
  } else if (type == "Metaspace") {
    out.push_back(read_metaspace(r, p, where));
  } else if (type == "Whitespace") {
    out.push_back(std::make_unique<WhitespacePre>(unicode_text(r.path() + ": " + where)));
  } else if (type == "WhitespaceSplit" || type == "BertPreTokenizer" || type == "Punctuation" || type == "Digits") {
    out.push_back(read_char_split(r, p, where, type));
  } else {
    r.unsupported(where, type, "pre-tokenizers",
                  {"Sequence", "ByteLevel", "Split", "Metaspace", "BertPreTokenizer", "Whitespace", "WhitespaceSplit", "Digits", "Punctuation"});
  }
}

}  // namespace attn::model::hf
