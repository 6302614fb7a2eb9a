// Unicode's data for the tokenizers: attn's Unicode module (attn_unicode.so, Debian's ICU) loaded at
// the first use and called through its C ABI (unicode_module.cpp), and the UTF-8 steps that need no
// data (decoding, White_Space). The module is looked for as attn's other modules are.
#include <dlfcn.h>

#include <fmt/format.h>

#include <mutex>

#include "attn/core/error.hpp"
#include "attn/model/tokenizers/tokenizer_json.hpp"
#include "attn/io/module_path.hpp"

namespace attn::model::hf {

namespace {

constexpr int unicode_abi = 2;

using TextFn = std::int64_t (*)(const char*, std::size_t, char*, std::size_t);
using NormalizeFn = std::int64_t (*)(const char*, std::size_t, int, char*, std::size_t);
using ClassesFn = std::int64_t (*)(const char*, std::size_t, unsigned char*, std::size_t);
using GraphemesFn = std::int64_t (*)(const char*, std::size_t, std::uint64_t*, std::size_t);
using WordsFn = std::int64_t (*)(const char*, std::size_t, int, int, int, char*, std::size_t);

// Calls fn(capacity) with a buffer of `guess` elements, then again with what it asked for.
template <typename T, typename Fn>
std::vector<T> call_sized(std::size_t guess, const Fn& fn) {
  std::vector<T> out(guess);
  for (int attempt = 0; attempt < 2; ++attempt) {
    const std::int64_t n = fn(out.data(), out.size());
    if (n < 0) throw InputError("attn's Unicode module could not read the text (ICU reported an error)");
    const bool fits = static_cast<std::size_t>(n) <= out.size();
    out.resize(static_cast<std::size_t>(n));
    if (fits) return out;
  }
  throw InternalError("attn's Unicode module: the size of a result changed between two calls");
}

class IcuText final : public UnicodeText {
 public:
  explicit IcuText(void* lib)
      : normalize_(reinterpret_cast<NormalizeFn>(dlsym(lib, "attn_unicode_normalize"))),
        classes_(reinterpret_cast<ClassesFn>(dlsym(lib, "attn_unicode_classes"))),
        lower_(reinterpret_cast<TextFn>(dlsym(lib, "attn_unicode_lower"))),
        graphemes_(reinterpret_cast<GraphemesFn>(dlsym(lib, "attn_unicode_graphemes"))),
        words_(reinterpret_cast<WordsFn>(dlsym(lib, "attn_unicode_bert_words"))) {}
  bool complete() const { return normalize_ && classes_ && lower_ && graphemes_ && words_; }

  std::string normalize(std::string_view text, Form form) const override {
    const auto out = call_sized<char>(text.size() * 3 + 16, [&](char* buf, std::size_t cap) {
      return normalize_(text.data(), text.size(), static_cast<int>(form), buf, cap);
    });
    return std::string(out.begin(), out.end());
  }
  std::vector<CharClass> classes(std::string_view text) const override {
    const auto bits = call_sized<unsigned char>(text.size(), [&](unsigned char* buf, std::size_t cap) { return classes_(text.data(), text.size(), buf, cap); });
    std::vector<CharClass> out(bits.size());
    for (std::size_t i = 0; i < bits.size(); ++i) out[i].bits = bits[i];
    return out;
  }
  std::string lower(std::string_view text) const override {
    const auto out = call_sized<char>(text.size() * 2 + 16, [&](char* buf, std::size_t cap) { return lower_(text.data(), text.size(), buf, cap); });
    return std::string(out.begin(), out.end());
  }
  std::vector<std::size_t> grapheme_ends(std::string_view text) const override {
    const auto ends = call_sized<std::uint64_t>(text.size(), [&](std::uint64_t* buf, std::size_t cap) { return graphemes_(text.data(), text.size(), buf, cap); });
    return std::vector<std::size_t>(ends.begin(), ends.end());
  }
  std::string bert_words(std::string_view text, bool lower, bool strip_accents, bool chinese) const override {
    const auto out = call_sized<char>(text.size() * 4 + 16, [&](char* buf, std::size_t cap) {
      return words_(text.data(), text.size(), lower, strip_accents, chinese, buf, cap);
    });
    return std::string(out.begin(), out.end());
  }

 private:
  NormalizeFn normalize_;
  ClassesFn classes_;
  TextFn lower_;
  GraphemesFn graphemes_;
  WordsFn words_;
};

}  // namespace

const UnicodeText& unicode_text(const std::string& who) {
  static std::mutex mutex;
  static std::unique_ptr<IcuText> text;
  std::lock_guard lock(mutex);
  if (text) return *text;
#ifdef ATTN_UNICODE_MODULE
  const std::string_view build_path = ATTN_UNICODE_MODULE;
#else
  const std::string_view build_path;
#endif
  std::string tried;
  std::unique_ptr<IcuText> found;
  void* lib = open_module("attn_unicode.so", build_path, tried, [&found](void* l) -> std::string {
    auto abi = reinterpret_cast<int (*)()>(dlsym(l, "attn_unicode_abi_version"));
    if (!abi || abi() != unicode_abi) return fmt::format("not attn's Unicode module (ABI {})", unicode_abi);
    found = std::make_unique<IcuText>(l);
    return found->complete() ? "" : "attn's Unicode module without all of its functions";
  });
  if (lib == nullptr) {
    throw InputError(fmt::format("{}: needs attn's Unicode module (attn_unicode.so, built with Debian's libicu-dev), which could not be "
                                 "loaded ({}); give \"token_ids\" instead of \"sentence\" to skip tokenizing",
                                 who, tried.empty() ? "no place to look" : tried));
  }
  text = std::move(found);
  return *text;
}

bool CharClass::punctuation() const {
  switch (category()) {
    case kDashPunctuation: case kOpenPunctuation: case kClosePunctuation: case kConnectorPunctuation:
    case kOtherPunctuation: case kInitialPunctuation: case kFinalPunctuation: return true;
    default: return false;
  }
}
bool CharClass::other() const {
  const auto c = category();
  return c == kUnassigned || c == kControl || c == kFormat || c == kPrivateUse || c == kSurrogate;
}
bool CharClass::mark() const {
  const auto c = category();
  return c == kNonspacingMark || c == kEnclosingMark || c == kSpacingMark;
}
bool CharClass::number() const {
  const auto c = category();
  return c == kDecimalNumber || c == kLetterNumber || c == kOtherNumber;
}

char32_t next_char(std::string_view text, std::size_t& i) {
  const auto lead = static_cast<unsigned char>(text[i]);
  const std::size_t n = std::min(bpe::utf8_length(lead), text.size() - i);
  char32_t c = n == 1 ? lead : n == 2 ? (lead & 0x1F) : n == 3 ? (lead & 0x0F) : (lead & 0x07);
  for (std::size_t k = 1; k < n; ++k) c = (c << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
  i += n;
  return c;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

bool is_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

}  // namespace attn::model::hf
