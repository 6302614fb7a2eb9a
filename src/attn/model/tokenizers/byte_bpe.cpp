#include "attn/model/tokenizers/byte_bpe.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>
#include <fmt/format.h>
#include <queue>

#include "attn/core/error.hpp"

namespace attn::model::bpe {

std::size_t utf8_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

void check_utf8(std::string_view text, std::string_view what) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2, cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3, cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4, cp = c & 0x07;
    }
    bool ok = len != 0 && i + len <= n;
    for (std::size_t k = 1; ok && k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if (ok && len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ok = false;
    if (ok && len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ok = false;
    if (!ok) throw InputError(fmt::format("{}: invalid UTF-8 at byte {} (0x{:02x}); the text must be UTF-8", what, i, c));
    i += len;
  }
}

namespace {

std::string utf8_of(std::uint32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

const std::array<std::string, 256>& alphabet() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    std::uint32_t n = 0;
    for (std::uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      t[b] = utf8_of(printable ? b : 256 + n++);
    }
    return t;
  }();
  return table;
}

}  // namespace

const std::string& byte_char(unsigned char b) { return alphabet()[b]; }

std::string to_byte_chars(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char c : bytes) out += alphabet()[static_cast<unsigned char>(c)];
  return out;
}

// ---- PCRE2 ------------------------------------------------------------------------------------

struct Regex::Impl {
  pcre2_code* code = nullptr;
  std::string what;
};

Regex::Regex(std::string_view pattern, std::string_view what, bool literal) : impl_(std::make_unique<Impl>()) {
  impl_->what = std::string(what);
  int error = 0;
  PCRE2_SIZE offset = 0;
  // PCRE2_LITERAL takes no PCRE2_UCP (a literal has no classes for it to change): with it, the
  // compile fails with "invalid option bits with PCRE2_LITERAL" (Gemma's Split on {"String": " "})
  const std::uint32_t options = PCRE2_UTF | PCRE2_NO_UTF_CHECK | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  check_utf8(pattern, what);
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &error, &offset, nullptr);
  if (impl_->code == nullptr) {
    std::array<PCRE2_UCHAR, 256> message{};
    pcre2_get_error_message(error, message.data(), message.size());
    throw InputError(fmt::format("{}: the pattern does not compile as a PCRE2 regular expression at offset {}: {}", what, offset,
                                 reinterpret_cast<const char*>(message.data())));
  }
  std::uint32_t jit = 0;
  if (pcre2_config(PCRE2_CONFIG_JIT, &jit) >= 0 && jit != 0) pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE);  // else interpreted
}

Regex::~Regex() {
  if (impl_ && impl_->code != nullptr) pcre2_code_free(impl_->code);
}

std::vector<std::pair<std::size_t, std::size_t>> Regex::matches(std::string_view text) const {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(pcre2_match_data_create_from_pattern(impl_->code, nullptr),
                                                                          &pcre2_match_data_free);
  if (!data) throw std::bad_alloc();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t at = 0;
  while (at <= text.size()) {
    const int rc = pcre2_match(impl_->code, subject, text.size(), at, PCRE2_NO_UTF_CHECK, data.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      std::array<PCRE2_UCHAR, 256> message{};
      pcre2_get_error_message(rc, message.data(), message.size());
      throw InputError(fmt::format("{}: matching the text failed at byte {}: {}", impl_->what, at, reinterpret_cast<const char*>(message.data())));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data.get());
    const std::size_t begin = ov[0], end = ov[1];
    if (end > begin) {
      out.emplace_back(begin, end);
      at = end;
    } else {  // an empty match yields nothing; step over one character
      if (begin >= text.size()) break;
      at = begin + utf8_length(static_cast<unsigned char>(text[begin]));
    }
  }
  return out;
}

std::vector<std::string_view> Regex::findall(std::string_view text) const {
  std::vector<std::string_view> out;
  for (const auto& [b, e] : matches(text)) out.push_back(text.substr(b, e - b));
  return out;
}

// ---- the BPE model ----------------------------------------------------------------------------

namespace {

constexpr std::int64_t max_id = std::int64_t{1} << 31;

std::uint64_t pair_key(std::int64_t left, std::int64_t right) {
  return (static_cast<std::uint64_t>(left) << 32) | static_cast<std::uint64_t>(right);
}

}  // namespace

void Model::set_piece(std::int64_t id, const std::string& piece) {
  if (id < 0 || id >= max_id) throw InputError(fmt::format("{}: token id {} of \"{}\" is outside [0, 2^31)", source_, id, piece));
  pieces_.try_emplace(id, piece);
  size_ = std::max(size_, id + 1);
}

void Model::reserve(std::size_t tokens, std::size_t merges) {
  vocab_.reserve(tokens);
  pieces_.reserve(tokens);
  merges_.reserve(merges);
}

void Model::add_token(const std::string& piece, std::int64_t id) {
  set_piece(id, piece);
  vocab_.try_emplace(piece, id);
}

Model::MergeResult Model::add_merge(std::string_view left, std::string_view right) {
  const auto l = id_of(left);
  if (!l) return MergeResult::left_missing;
  const auto r = id_of(right);
  if (!r) return MergeResult::right_missing;
  std::string joined;
  joined.reserve(left.size() + right.size());
  joined.append(left).append(right);
  const auto j = id_of(joined);
  if (!j) return MergeResult::result_missing;
  merges_[pair_key(*l, *r)] = Merge{next_rank_++, *j};
  return MergeResult::ok;
}

std::optional<std::int64_t> Model::id_of(std::string_view piece) const {
  const auto it = vocab_.find(piece);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

std::string Model::piece(std::int64_t id) const {
  if (id < 0 || id >= size_)
    throw InputError(fmt::format("{}: token id {} is outside the vocabulary ({} tokens)", source_, id, with_commas(size_)));
  const auto it = pieces_.find(id);
  return it == pieces_.end() ? std::string() : it->second;
}

void Model::merge_word(std::string_view word, std::vector<std::int64_t>& out) const {
  struct Symbol {
    std::int64_t id;
    std::int64_t prev, next;
    bool alive;
  };
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  auto push = [&](std::int64_t id) {
    const auto n = static_cast<std::int64_t>(symbols.size());
    symbols.push_back({id, n - 1, n + 1, true});
  };
  std::int64_t pending_unk = -1;  // an unknown token waiting to be pushed (fused with the next ones)
  for (std::size_t i = 0; i < word.size();) {
    const std::size_t len = std::min(utf8_length(static_cast<unsigned char>(word[i])), word.size() - i);
    const std::string_view ch = word.substr(i, len);
    i += len;
    if (const auto id = id_of(ch)) {
      if (pending_unk >= 0) push(pending_unk), pending_unk = -1;
      push(*id);
      continue;
    }
    if (byte_fallback) {
      std::vector<std::int64_t> bytes;
      for (const char c : ch) {
        const auto b = id_of(fmt::format("<0x{:02X}>", static_cast<unsigned char>(c)));
        if (!b) break;
        bytes.push_back(*b);
      }
      if (bytes.size() == ch.size()) {
        if (pending_unk >= 0) push(pending_unk), pending_unk = -1;
        for (const auto b : bytes) push(b);
        continue;
      }
    }
    if (!unk_id)
      throw InputError(fmt::format("{}: the vocabulary has no token for \"{}\", and neither byte fallback nor an unknown token to use instead",
                                   source_, std::string(ch)));
    if (pending_unk >= 0 && !fuse_unk) push(pending_unk);
    pending_unk = *unk_id;
  }
  if (pending_unk >= 0) push(pending_unk);
  if (symbols.empty()) return;
  symbols.back().next = -1;

  struct Candidate {
    std::int32_t rank;
    std::int64_t pos;
    std::int64_t id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto consider = [&](std::int64_t pos) {
    if (pos < 0) return;
    const std::int64_t next = symbols[pos].next;
    if (next < 0) return;
    const auto it = merges_.find(pair_key(symbols[pos].id, symbols[next].id));
    if (it != merges_.end()) queue.push({it->second.rank, pos, it->second.id});
  };
  for (std::int64_t p = 0; p + 1 < static_cast<std::int64_t>(symbols.size()); ++p) consider(p);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    const auto it = merges_.find(pair_key(left.id, right.id));
    if (it == merges_.end() || it->second.id != top.id || it->second.rank != top.rank) continue;  // stale
    left.id = top.id;
    right.alive = false;
    left.next = right.next;
    if (left.next >= 0) symbols[left.next].prev = top.pos;
    consider(left.prev);
    consider(top.pos);
  }
  for (const Symbol& s : symbols)
    if (s.alive) out.push_back(s.id);
}

void Model::encode_word(std::string_view word, std::vector<std::int64_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges) {
    if (const auto id = id_of(word)) {
      out.push_back(*id);
      return;
    }
  }
  constexpr std::size_t cached_length = 64;  // longer "words" (whole SentencePiece texts) are not cached
  if (word.size() > cached_length) {
    merge_word(word, out);
    return;
  }
  const std::string key(word);
  {
    std::lock_guard lock(cache_mutex_);
    const auto it = cache_.find(key);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<std::int64_t> ids;
  merge_word(word, ids);
  out.insert(out.end(), ids.begin(), ids.end());
  std::lock_guard lock(cache_mutex_);
  if (cache_.size() >= 100'000) cache_.clear();
  cache_.emplace(key, std::move(ids));
}

std::string with_commas(std::int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

}  // namespace attn::model::bpe
