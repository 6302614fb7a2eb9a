// tokenizer.json's added tokens found in a text before the normalizer and model see it, as HF's
// AddedVocabulary finds them: a byte trie, the leftmost then longest match, lstrip / rstrip /
// single_word as each token asks. Nothing here reads the file (tokenizer_json.cpp does).
#include <algorithm>

#include "attn/model/tokenizers/tokenizer_json.hpp"

namespace attn::model::hf {

namespace {

// Whether the character before byte `end` (word_before) or at byte `at` (word_after) is a word
// character (\w), which keeps a single_word token from matching there.
bool word_before(std::string_view text, std::size_t end) {
  if (end == 0) return false;
  std::size_t begin = end - 1;
  while (begin > 0 && (static_cast<unsigned char>(text[begin]) & 0xC0) == 0x80) --begin;
  return unicode_text("single_word added token").classes(text.substr(begin, end - begin))[0].word();
}
bool word_after(std::string_view text, std::size_t at) {
  if (at >= text.size()) return false;
  return unicode_text("single_word added token").classes(text.substr(at, bpe::utf8_length(static_cast<unsigned char>(text[at]))))[0].word();
}

// The start of the white space that ends text[0, end).
std::size_t space_start(std::string_view text, std::size_t end) {
  std::size_t begin = end;
  while (begin > 0) {
    std::size_t at = begin - 1;
    while (at > 0 && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) --at;
    std::size_t i = at;
    if (!is_white_space(next_char(text, i))) break;
    begin = at;
  }
  return begin;
}

// The end of the white space that starts text[at, ...).
std::size_t space_end(std::string_view text, std::size_t at) {
  while (at < text.size()) {
    std::size_t i = at;
    if (!is_white_space(next_char(text, i))) break;
    at = i;
  }
  return at;
}

}  // namespace

std::int32_t AddedTokens::child(std::int32_t node, unsigned char byte) const {
  const auto& next = trie_[static_cast<std::size_t>(node)].next;
  const auto it = std::lower_bound(next.begin(), next.end(), byte, [](const auto& e, unsigned char b) { return e.first < b; });
  return it != next.end() && it->first == byte ? it->second : -1;
}

void AddedTokens::add(const AddedToken& token) {
  if (token.content.empty()) return;  // HF matches no empty token
  std::int32_t node = 0;
  for (const char c : token.content) {
    const auto byte = static_cast<unsigned char>(c);
    std::int32_t found = child(node, byte);
    if (found < 0) {
      found = static_cast<std::int32_t>(trie_.size());
      auto& next = trie_[static_cast<std::size_t>(node)].next;
      next.insert(std::lower_bound(next.begin(), next.end(), byte, [](const auto& e, unsigned char b) { return e.first < b; }),
                  {byte, found});
      trie_.emplace_back();
    }
    node = found;
  }
  // a content listed twice keeps its first entry, as HF's map of contents does
  if (trie_[static_cast<std::size_t>(node)].token < 0) {
    trie_[static_cast<std::size_t>(node)].token = static_cast<std::int32_t>(tokens_.size());
    tokens_.push_back(token);
  }
}

std::vector<AddedTokens::Part> AddedTokens::split(std::string_view text, bool normalized, bool split_special) const {
  std::vector<Part> parts;
  std::size_t done = 0;  // the text before it is in parts
  for (std::size_t at = 0; at < text.size();) {
    // the longest token of the right kind that starts here
    std::int32_t token = -1;
    std::size_t end = at;
    for (std::int32_t node = 0, i = 0; at + static_cast<std::size_t>(i) < text.size(); ++i) {
      node = child(node, static_cast<unsigned char>(text[at + static_cast<std::size_t>(i)]));
      if (node < 0) break;
      const std::int32_t t = trie_[static_cast<std::size_t>(node)].token;
      if (t >= 0 && tokens_[static_cast<std::size_t>(t)].normalized == normalized) token = t, end = at + static_cast<std::size_t>(i) + 1;
    }
    if (token < 0) {
      ++at;
      continue;
    }
    const AddedToken& t = tokens_[static_cast<std::size_t>(token)];
    // a special token left as text, or a single word touching a word character: skipped whole
    if ((split_special && t.special) || (t.single_word && (word_before(text, at) || word_after(text, end)))) {
      at = end;
      continue;
    }
    const std::size_t begin = t.lstrip ? std::max(space_start(text, at), done) : at;
    if (t.rstrip) end = space_end(text, end);
    if (begin > done) parts.push_back({done, begin, -1});
    parts.push_back({begin, end, t.id});
    done = at = end;
  }
  if (done < text.size() || parts.empty()) parts.push_back({done, text.size(), -1});
  return parts;
}

}  // namespace attn::model::hf
