// A token's piece as a learner reads it (the labels of a checkpoint's trace): the bytes it stands for
// decoded as text, with one visible marker for a space whatever the tokenizer wrote ("Ġ", "▁").
#include <fmt/format.h>

#include <map>
#include <string>

#include "attn/model/tokenizers/byte_bpe.hpp"
#include "attn/model/tokenizers/tokenizer.hpp"

namespace attn::model {

namespace {

// The bytes a byte-level piece spells: each character of GPT-2's bytes_to_unicode table back to its
// byte; a character outside the table (an added token's) stays as its own UTF-8 bytes.
std::string byte_level_bytes(const std::string& piece) {
  static const std::map<std::string, unsigned char> kByte = [] {
    std::map<std::string, unsigned char> m;
    for (int b = 0; b < 256; ++b) m[bpe::byte_char(static_cast<unsigned char>(b))] = static_cast<unsigned char>(b);
    return m;
  }();
  std::string out;
  for (std::size_t i = 0; i < piece.size();) {
    const std::size_t n = std::min(bpe::utf8_length(static_cast<unsigned char>(piece[i])), piece.size() - i);
    const auto it = kByte.find(piece.substr(i, n));
    if (it != kByte.end()) out += static_cast<char>(it->second);
    else out += piece.substr(i, n);
    i += n;
  }
  return out;
}

// The bytes a SentencePiece-style piece spells: "<0xNN>" one byte, "▁" a space.
std::string sentencepiece_bytes(const std::string& piece) {
  if (piece.size() == 6 && piece.starts_with("<0x") && piece.back() == '>') {
    const auto hex = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
    const int hi = hex(piece[3]), lo = hex(piece[4]);
    if (hi >= 0 && lo >= 0) return std::string(1, static_cast<char>(hi * 16 + lo));
  }
  std::string out;
  for (std::size_t i = 0; i < piece.size();) {
    if (piece.compare(i, 3, "\xE2\x96\x81") == 0) {  // ▁
      out += ' ';
      i += 3;
    } else {
      out += piece[i++];
    }
  }
  return out;
}

// Whether bytes[i, i + n) is one whole multi-byte UTF-8 character: a lead byte C2..F4 and its
// continuation bytes (a piece that holds part of a character does not).
bool whole_character(const std::string& bytes, std::size_t i, std::size_t n) {
  const auto lead = static_cast<unsigned char>(bytes[i]);
  if (n < 2 || lead < 0xC2 || lead > 0xF4 || i + n > bytes.size()) return false;
  for (std::size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(bytes[i + k]) & 0xC0) != 0x80) return false;
  return true;
}

}  // namespace

std::string Tokenizer::label(std::int64_t id) const {
  const std::string p = piece(id);
  const std::string bytes = byte_level() ? byte_level_bytes(p) : sentencepiece_bytes(p);
  std::string out;
  for (std::size_t i = 0; i < bytes.size();) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    const std::size_t n = bpe::utf8_length(c);
    if (c >= 0x80 && whole_character(bytes, i, n)) {
      out += bytes.substr(i, n);
      i += n;
      continue;
    }
    if (c == ' ') out += "␣";
    else if (c == '\n') out += "⏎";
    else if (c == '\t') out += "⇥";
    else if (c < 0x20 || c >= 0x7F) out += fmt::format("<0x{:02X}>", c);  // a control byte, or part of a character
    else out += static_cast<char>(c);
    ++i;
  }
  return out.empty() ? p : out;
}

std::int64_t Tokenizer::id_of(std::string_view piece) const {
  for (std::int64_t id = 0; id < vocab_size(); ++id)
    if (this->piece(id) == piece) return id;
  return -1;
}

}  // namespace attn::model
