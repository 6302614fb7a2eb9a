// attn's Unicode module (attn_unicode.so): what the tokenizers need of Unicode's data, through Debian's
// ICU behind a plain C ABI: BERT's BasicTokenizer (categories, lower case, canonical decomposition),
// and for tokenizer.json's normalizers and pre-tokenizers the four normalization forms, each
// character's category and classes, lower case and grapheme clusters. attn links libstdc++
// statically and ICU links the shared one, so attn dlopens this module (unicode_text.cpp) only when
// a tokenizer needs it: no C++ object crosses, only C strings and caller-owned buffers. Bump
// attn_unicode_abi_version with any change here, and unicode_abi in unicode_text.cpp.
#include <unicode/ubrk.h>
#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>
#include <unicode/utext.h>
#include <unicode/utf16.h>
#include <unicode/utf8.h>

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

__attribute__((visibility("default"))) int attn_unicode_abi_version() { return 2; }

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

// `text` in Unicode normalization form `form` (0 NFC, 1 NFD, 2 NFKC, 3 NFKD), into `out`; returns the
// bytes it needs (more than `capacity`: call again with that much), -1 on an ICU error.
__attribute__((visibility("default"))) std::int64_t attn_unicode_normalize(const char* text, std::size_t n, int form, char* out,
                                                                          std::size_t capacity) {
  UErrorCode e = U_ZERO_ERROR;
  const UNormalizer2* norm = form == 0   ? unorm2_getNFCInstance(&e)
                             : form == 1 ? unorm2_getNFDInstance(&e)
                             : form == 2 ? unorm2_getNFKCInstance(&e)
                                         : unorm2_getNFKDInstance(&e);
  const std::u16string in = to_utf16(text, n, e);
  if (U_FAILURE(e)) return -1;
  std::u16string result(in.size() * 4 + 4, u'\0');  // NFKD grows a character to 18 at most; retried below
  int32_t len = unorm2_normalize(norm, reinterpret_cast<const UChar*>(in.data()), static_cast<int32_t>(in.size()),
                                 reinterpret_cast<UChar*>(result.data()), static_cast<int32_t>(result.size()), &e);
  if (e == U_BUFFER_OVERFLOW_ERROR) {
    e = U_ZERO_ERROR;
    result.assign(static_cast<std::size_t>(len), u'\0');
    len = unorm2_normalize(norm, reinterpret_cast<const UChar*>(in.data()), static_cast<int32_t>(in.size()),
                           reinterpret_cast<UChar*>(result.data()), static_cast<int32_t>(result.size()), &e);
  }
  if (U_FAILURE(e)) return -1;
  result.resize(static_cast<std::size_t>(len));
  const std::string utf8 = to_utf8(result, e);
  if (U_FAILURE(e)) return -1;
  if (utf8.size() <= capacity) std::memcpy(out, utf8.data(), utf8.size());
  return static_cast<std::int64_t>(utf8.size());
}

// One byte for each character (code point) of UTF-8 `text`: its general category (ICU's
// UCharCategory, 0 .. 29) in the low 5 bits, 0x20 when it is White_Space, 0x40 when it is a word
// character (Alphabetic, a mark, Nd, Pc or Join_Control: what \w means in Unicode regular
// expressions). Returns the number of characters (more than `capacity`: call again), -1 on an error.
__attribute__((visibility("default"))) std::int64_t attn_unicode_classes(const char* text, std::size_t n, unsigned char* out,
                                                                        std::size_t capacity) {
  std::size_t count = 0;
  for (int32_t i = 0; i < static_cast<int32_t>(n);) {
    UChar32 c;
    U8_NEXT(reinterpret_cast<const uint8_t*>(text), i, static_cast<int32_t>(n), c);
    if (c < 0) return -1;
    const int type = u_charType(c);
    const bool mark = type == U_NON_SPACING_MARK || type == U_ENCLOSING_MARK || type == U_COMBINING_SPACING_MARK;
    const bool word = u_hasBinaryProperty(c, UCHAR_ALPHABETIC) || mark || type == U_DECIMAL_DIGIT_NUMBER ||
                      type == U_CONNECTOR_PUNCTUATION || u_hasBinaryProperty(c, UCHAR_JOIN_CONTROL);
    if (count < capacity) out[count] = static_cast<unsigned char>(type | (u_isUWhiteSpace(c) ? 0x20 : 0) | (word ? 0x40 : 0));
    ++count;
  }
  return static_cast<std::int64_t>(count);
}

// Each character of `text` lower-cased on its own (full mappings, root locale, no context: "İ" is
// "i̇", a final Σ is σ), into `out`; returns the bytes it needs, -1 on an error.
__attribute__((visibility("default"))) std::int64_t attn_unicode_lower(const char* text, std::size_t n, char* out, std::size_t capacity) {
  UErrorCode e = U_ZERO_ERROR;
  const std::u16string in = to_utf16(text, n, e);
  if (U_FAILURE(e)) return -1;
  std::u16string result;
  for (int32_t i = 0; i < static_cast<int32_t>(in.size());) {
    const int32_t at = i;
    UChar32 c;
    U16_NEXT(in.data(), i, static_cast<int32_t>(in.size()), c);
    (void)c;
    char16_t lowered[8];
    const int32_t k = u_strToLower(reinterpret_cast<UChar*>(lowered), 8, reinterpret_cast<const UChar*>(in.data() + at), i - at, "", &e);
    if (U_FAILURE(e)) return -1;
    result.append(lowered, static_cast<std::size_t>(k));
  }
  const std::string utf8 = to_utf8(result, e);
  if (U_FAILURE(e)) return -1;
  if (utf8.size() <= capacity) std::memcpy(out, utf8.data(), utf8.size());
  return static_cast<std::int64_t>(utf8.size());
}

// The extended grapheme clusters of UTF-8 `text`: each one's end as a byte offset, in order, into
// `ends`; returns how many there are (more than `capacity`: call again), -1 on an ICU error.
__attribute__((visibility("default"))) std::int64_t attn_unicode_graphemes(const char* text, std::size_t n, std::uint64_t* ends,
                                                                          std::size_t capacity) {
  UErrorCode e = U_ZERO_ERROR;
  UText* ut = utext_openUTF8(nullptr, text, static_cast<int64_t>(n), &e);
  UBreakIterator* it = ubrk_open(UBRK_CHARACTER, "", nullptr, 0, &e);
  if (U_SUCCESS(e)) ubrk_setUText(it, ut, &e);
  std::int64_t count = -1;
  if (U_SUCCESS(e)) {
    count = 0;
    ubrk_first(it);
    for (int32_t end = ubrk_next(it); end != UBRK_DONE; end = ubrk_next(it)) {  // UTF-8 text: offsets are bytes
      if (static_cast<std::size_t>(count) < capacity) ends[count] = static_cast<std::uint64_t>(end);
      ++count;
    }
  }
  if (it != nullptr) ubrk_close(it);
  utext_close(ut);
  return count;
}

}  // extern "C"
