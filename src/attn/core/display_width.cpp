// How many terminal columns a string takes: East Asian wide and fullwidth characters and emoji take
// two, combining marks, zero-width joiners and variation selectors none, everything else one. A
// fixed table (not the C library's wcwidth, which depends on the locale and its version), so every
// machine pads and clips the same.
#include <algorithm>
#include <array>
#include <string_view>

#include "attn/core/text.hpp"

namespace attn {

namespace {

struct Range {
  char32_t lo, hi;
};

// Combining marks (Mn, Me) of the common scripts, zero-width characters, variation selectors.
constexpr std::array<Range, 24> kZero = {{{0x0300, 0x036F}, {0x0483, 0x0489}, {0x0591, 0x05BD}, {0x0610, 0x061A}, {0x064B, 0x065F},
                                          {0x0670, 0x0670}, {0x06D6, 0x06DC}, {0x0900, 0x0902}, {0x093C, 0x093C}, {0x0941, 0x0948},
                                          {0x0E31, 0x0E31}, {0x0E34, 0x0E3A}, {0x0E47, 0x0E4E}, {0x1AB0, 0x1AFF}, {0x1DC0, 0x1DFF},
                                          {0x200B, 0x200F}, {0x2060, 0x2064}, {0x20D0, 0x20FF}, {0x302A, 0x302D}, {0x3099, 0x309A},
                                          {0xFE00, 0xFE0F}, {0xFE20, 0xFE2F}, {0xFEFF, 0xFEFF}, {0xE0100, 0xE01EF}}};

// East Asian Wide (W) and Fullwidth (F), and the emoji presented wide.
constexpr std::array<Range, 42> kWide = {{{0x1100, 0x115F}, {0x231A, 0x231B}, {0x2329, 0x232A}, {0x23E9, 0x23EC}, {0x23F0, 0x23F0},
                                          {0x23F3, 0x23F3}, {0x25FD, 0x25FE}, {0x2614, 0x2615}, {0x2648, 0x2653}, {0x267F, 0x267F},
                                          {0x2693, 0x2693}, {0x26A1, 0x26A1}, {0x26AA, 0x26AB}, {0x26BD, 0x26BE}, {0x26C4, 0x26C5},
                                          {0x26CE, 0x26CE}, {0x26D4, 0x26D4}, {0x26EA, 0x26EA}, {0x26F2, 0x26F5}, {0x26FA, 0x26FD},
                                          {0x2705, 0x2705}, {0x270A, 0x270B}, {0x2728, 0x2728}, {0x274C, 0x274E}, {0x2753, 0x2757},
                                          {0x2795, 0x2797}, {0x27B0, 0x27BF}, {0x2B1B, 0x2B1C}, {0x2B50, 0x2B55}, {0x2E80, 0x303E},
                                          {0x3041, 0x33FF}, {0x3400, 0x4DBF}, {0x4E00, 0x9FFF}, {0xA000, 0xA4CF}, {0xA960, 0xA97F},
                                          {0xAC00, 0xD7A3}, {0xF900, 0xFAFF}, {0xFE30, 0xFE4F}, {0xFF00, 0xFF60}, {0xFFE0, 0xFFE6},
                                          {0x1F000, 0x1FAFF}, {0x20000, 0x3FFFD}}};

bool in(const auto& table, char32_t c) {
  const auto it = std::upper_bound(table.begin(), table.end(), c, [](char32_t v, const Range& r) { return v < r.lo; });
  return it != table.begin() && c <= std::prev(it)->hi;
}

}  // namespace

int char_width(char32_t c) {
  if (c < 0x300) return c < 0x20 || (c >= 0x7F && c < 0xA0) ? 0 : 1;
  if (in(kZero, c)) return 0;
  return in(kWide, c) ? 2 : 1;
}

std::size_t cells(std::string_view s) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size();) {
    const auto [c, len] = decode_utf8(s, i);
    n += static_cast<std::size_t>(char_width(c));
    i += len;
  }
  return n;
}

std::pair<char32_t, std::size_t> decode_utf8(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  const std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
  if (len == 1 || i + len > s.size()) return {c < 0x80 ? c : 0xFFFD, 1};  // a stray byte counts as one replacement character
  char32_t v = c & (0x7F >> len);
  for (std::size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return {0xFFFD, 1};
    v = (v << 6) | (b(i + k) & 0x3F);
  }
  return {v, len};
}

}  // namespace attn
