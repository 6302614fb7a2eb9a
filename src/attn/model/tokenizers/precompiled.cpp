// SentencePiece's precompiled character map (T5's normalizer): a u32 byte count, a darts-clone
// double-array trie over UTF-8 keys whose leaves point into a '\0'-separated pool of replacements,
// then the pool; applied per grapheme cluster as HF's Precompiled normalizer applies it.
#include <fmt/format.h>

#include "attn/model/tokenizers/tokenizer_json.hpp"

namespace attn::model::hf {

namespace {

// A darts-clone unit: whether the node has a leaf, its label, the offset to its children, and (for
// a leaf unit) the value.
bool has_leaf(std::uint32_t unit) { return ((unit >> 8) & 1) != 0; }
std::uint32_t value(std::uint32_t unit) { return unit & ((1u << 31) - 1); }
std::uint32_t label(std::uint32_t unit) { return unit & ((1u << 31) | 0xFF); }
std::uint32_t offset(std::uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }

std::uint32_t le32(const std::string& s, std::size_t at) {
  std::uint32_t v = 0;
  for (int k = 3; k >= 0; --k) v = (v << 8) | static_cast<unsigned char>(s[at + static_cast<std::size_t>(k)]);
  return v;
}

}  // namespace

PrecompiledCharsmap::PrecompiledCharsmap(std::string blob, const Reader& r, const std::string& where) {
  if (blob.empty()) return;  // no rules: the text as it is
  if (blob.size() < 4) r.fail(where, fmt::format("is {} bytes; a precompiled character map starts with its trie's 4-byte size", blob.size()));
  const std::uint32_t trie_bytes = le32(blob, 0);
  if (trie_bytes % 4 != 0 || trie_bytes == 0 || blob.size() - 4 < trie_bytes)
    r.fail(where, fmt::format("says its trie is {} bytes, but {} follow (a multiple of 4, at least 4, expected)", trie_bytes, blob.size() - 4));
  for (std::size_t at = 4; at < 4 + trie_bytes; at += 4) units_.push_back(le32(blob, at));
  pool_ = blob.substr(4 + trie_bytes);
  bpe::check_utf8(pool_, r.path() + ": " + where + "'s replacements");
}

std::optional<std::string_view> PrecompiledCharsmap::transform(std::string_view chunk) const {
  if (units_.empty()) return std::nullopt;
  std::size_t node = offset(units_[0]);
  for (const char ch : chunk) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == 0) break;
    node ^= c;
    if (node >= units_.size() || label(units_[node]) != c) return std::nullopt;
    const std::uint32_t unit = units_[node];
    node ^= offset(unit);
    if (node >= units_.size()) return std::nullopt;
    if (has_leaf(unit)) {  // the first (shortest) key that is a prefix of the chunk
      const std::size_t begin = value(units_[node]);
      if (begin >= pool_.size()) return std::nullopt;
      return std::string_view(pool_).substr(begin, std::min(pool_.find('\0', begin), pool_.size()) - begin);
    }
  }
  return std::nullopt;
}

// HF's order: a grapheme cluster of fewer than 6 bytes whose start has a rule is replaced whole by
// that rule's replacement; otherwise each of its characters by its own rule, or kept.
void PrecompiledCharsmap::apply(std::string& text, const UnicodeText& unicode) const {
  if (units_.empty() || text.empty()) return;
  std::string out;
  out.reserve(text.size());
  std::size_t start = 0;
  for (const std::size_t end : unicode.grapheme_ends(text)) {
    const std::string_view grapheme = std::string_view(text).substr(start, end - start);
    const auto whole = grapheme.size() < 6 ? transform(grapheme) : std::nullopt;
    if (whole) {
      out.append(*whole);
    } else {
      for (std::size_t i = 0; i < grapheme.size();) {
        const std::size_t n = std::min(bpe::utf8_length(static_cast<unsigned char>(grapheme[i])), grapheme.size() - i);
        const auto one = transform(grapheme.substr(i, n));
        out.append(one ? *one : grapheme.substr(i, n));
        i += n;
      }
    }
    start = end;
  }
  text = std::move(out);
}

}  // namespace attn::model::hf
