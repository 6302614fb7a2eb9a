// attn's Unicode module (attn_unicode.so): BERT's BasicTokenizer, the part that needs Unicode data
// (categories, lower case, canonical decomposition), through Debian's ICU behind a plain C ABI. attn
// links libstdc++ statically and ICU links the shared one, so attn dlopens this module (wordpiece.cpp)
// only when a WordPiece tokenizer is read: no C++ object crosses, only C strings and caller-owned
// buffers. Bump attn_unicode_abi_version with any change here, and unicode_abi in wordpiece.cpp.
#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>
#include <unicode/utf16.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

// HF's _is_whitespace: space, tab, newline, carriage return, or a space separator (Zs).
bool whitespace(UChar32 c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || u_charType(c) == U_SPACE_SEPARATOR; }
// _is_control: a control or format character (Cc, Cf), tab, newline and carriage return excepted.
bool control(UChar32 c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  const auto t = u_charType(c);
  return t == U_CONTROL_CHAR || t == U_FORMAT_CHAR;
}
// _is_punctuation: ASCII's non-alphanumeric printable characters, or any punctuation category (P*).
bool punctuation(UChar32 c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126)) return true;
  switch (u_charType(c)) {
    case U_DASH_PUNCTUATION: case U_START_PUNCTUATION: case U_END_PUNCTUATION: case U_CONNECTOR_PUNCTUATION:
    case U_OTHER_PUNCTUATION: case U_INITIAL_PUNCTUATION: case U_FINAL_PUNCTUATION: return true;
    default: return false;
  }
}
// _is_chinese_char: the CJK Unified Ideographs blocks and their extensions and compatibility forms.
bool cjk(UChar32 c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}
// What Python's str.split() splits on that the cleaning leaves: line and paragraph separators.
bool splits(UChar32 c) { return c == ' ' || c == 0x2028 || c == 0x2029; }

std::u16string to_utf16(const char* s, std::size_t n, UErrorCode& e) {
  std::u16string out(n + 1, u'\0');
  int32_t len = 0;
  u_strFromUTF8(reinterpret_cast<UChar*>(out.data()), static_cast<int32_t>(out.size()), &len, s, static_cast<int32_t>(n), &e);
  out.resize(static_cast<std::size_t>(len));
  return out;
}

std::string to_utf8(const std::u16string& s, UErrorCode& e) {
  std::string out(s.size() * 3 + 1, '\0');
  int32_t len = 0;
  u_strToUTF8(out.data(), static_cast<int32_t>(out.size()), &len, reinterpret_cast<const UChar*>(s.data()), static_cast<int32_t>(s.size()), &e);
  out.resize(static_cast<std::size_t>(len));
  return out;
}

// A word lower-cased (full mappings, root locale, as Python's str.lower) and/or without its accents
// (canonical decomposition, then every nonspacing mark, Mn, dropped).
std::u16string fold(const std::u16string& w, bool lower, bool strip, UErrorCode& e) {
  std::u16string s = w;
  if (lower) {
    std::u16string out(s.size() * 3 + 4, u'\0');
    const int32_t n = u_strToLower(reinterpret_cast<UChar*>(out.data()), static_cast<int32_t>(out.size()), reinterpret_cast<const UChar*>(s.data()),
                                   static_cast<int32_t>(s.size()), "", &e);
    out.resize(static_cast<std::size_t>(n));
    s = out;
  }
  if (strip) {
    const UNormalizer2* nfd = unorm2_getNFDInstance(&e);
    std::u16string out(s.size() * 4 + 4, u'\0');
    const int32_t n = unorm2_normalize(nfd, reinterpret_cast<const UChar*>(s.data()), static_cast<int32_t>(s.size()), reinterpret_cast<UChar*>(out.data()),
                                       static_cast<int32_t>(out.size()), &e);
    out.resize(static_cast<std::size_t>(std::max(n, 0)));
    std::u16string kept;
    for (int32_t i = 0; i < static_cast<int32_t>(out.size());) {
      UChar32 c;
      const int32_t at = i;
      U16_NEXT(out.data(), i, static_cast<int32_t>(out.size()), c);
      if (u_charType(c) != U_NON_SPACING_MARK) kept.append(out, static_cast<std::size_t>(at), static_cast<std::size_t>(i - at));
    }
    s = kept;
  }
  return s;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int attn_unicode_abi_version() { return 1; }

// BERT's BasicTokenizer on UTF-8 `text`: control characters dropped, whitespace made a space, CJK
// ideographs spaced apart, split on whitespace, each word lower-cased and/or stripped of accents,
// then split around punctuation. Writes the words into `out`, each followed by '\n' (no word holds
// one), and returns the bytes it needs (more than `capacity`: call again with that much), −1 on an
// ICU error.
__attribute__((visibility("default"))) std::int64_t attn_unicode_bert_words(const char* text, std::size_t n, int lower, int strip_accents,
                                                                           int chinese, char* out, std::size_t capacity) {
  UErrorCode e = U_ZERO_ERROR;
  const std::u16string in = to_utf16(text, n, e);
  if (U_FAILURE(e)) return -1;
  std::vector<std::u16string> words{{}};
  auto push_char = [&](UChar32 c) {
    char16_t buf[2];
    int32_t k = 0;
    U16_APPEND_UNSAFE(buf, k, c);
    words.back().append(buf, static_cast<std::size_t>(k));
  };
  for (int32_t i = 0; i < static_cast<int32_t>(in.size());) {
    UChar32 c;
    U16_NEXT(in.data(), i, static_cast<int32_t>(in.size()), c);
    if (c == 0 || c == 0xFFFD || control(c)) continue;
    if (whitespace(c) || splits(c)) {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    if (chinese && cjk(c)) {  // its own word
      if (!words.back().empty()) words.emplace_back();
      push_char(c);
      words.emplace_back();
      continue;
    }
    push_char(c);
  }
  std::string result;
  for (const auto& w : words) {
    if (w.empty()) continue;
    const std::u16string f = fold(w, lower != 0, strip_accents != 0, e);
    if (U_FAILURE(e)) return -1;
    // around punctuation: each punctuation character a word of its own
    std::u16string piece;
    auto flush = [&] {
      if (piece.empty()) return;
      result += to_utf8(piece, e);
      result += '\n';
      piece.clear();
    };
    for (int32_t i = 0; i < static_cast<int32_t>(f.size());) {
      UChar32 c;
      const int32_t at = i;
      U16_NEXT(f.data(), i, static_cast<int32_t>(f.size()), c);
      if (punctuation(c)) {
        flush();
        piece.assign(f, static_cast<std::size_t>(at), static_cast<std::size_t>(i - at));
        flush();
      } else {
        piece.append(f, static_cast<std::size_t>(at), static_cast<std::size_t>(i - at));
      }
    }
    flush();
    if (U_FAILURE(e)) return -1;
  }
  if (result.size() <= capacity) std::memcpy(out, result.data(), result.size());
  return static_cast<std::int64_t>(result.size());
}

}  // extern "C"
