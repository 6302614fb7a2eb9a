// Text for people (text.hpp): the number format, wrapping, clipping, padding and markup escapes.
// The display widths they measure with are display_width.cpp's table.
#include "attn/core/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <system_error>

namespace attn {

std::string format_fixed(Scalar v, int precision) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // Beyond ten integer digits, fixed notation is a row of digits nobody reads (3e38 has 39): the same
  // decimals in scientific notation, 3.0000e+38
  if (std::fabs(v) >= 1e10F) {
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific, std::max(precision, 0));
    return std::string(buf, r.ptr);
  }
  // The exact value rounded to `precision` decimals (as "{:.Nf}" prints it). Up to 12 decimals, and
  // while the digits fit 2^53, in integers: v · 10^p is exact in double (v's 24-bit significand
  // times 5^p's at most 29 bits), so rounding it to an integer (ties to even, as the exact decimal
  // expansion is rounded) gives the digits.
  constexpr double kPow10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12};
  if (precision >= 0 && precision <= 12) {
    const double scaled = std::nearbyint(std::fabs(static_cast<double>(v)) * kPow10[precision]);
    if (scaled < 0x1p53) {
      char digits[32];
      const auto n = static_cast<std::uint64_t>(scaled);
      auto r = std::to_chars(digits, digits + sizeof digits, n);
      auto len = static_cast<int>(r.ptr - digits);
      std::string s;
      s.reserve(static_cast<std::size_t>(std::max(len, precision + 1) + 3));
      if (std::signbit(v) && n != 0) s += '-';  // "-0.0000" would be a rounding artefact, not a negative number
      if (len <= precision) {  // 0.00ddd
        s += "0.";
        s.append(static_cast<std::size_t>(precision - len), '0');
        s.append(digits, r.ptr);
      } else {
        s.append(digits, digits + (len - precision));
        if (precision > 0) s += '.', s.append(digits + (len - precision), r.ptr);
      }
      return s;
    }
  }
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, precision);
  std::string s = r.ec == std::errc{} ? std::string(buf, r.ptr) : fmt::format("{:.{}f}", v, precision);
  // "-0.0000" is a rounding artefact, not a negative number.
  if (s.front() == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

std::string markup_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// Word-wraps a paragraph to `width` cells, the prefixes included: the first line starts with
// `first`, the others with `rest` (a hanging indent). A word longer than a line stands alone.
std::string wrap(const std::string& text, std::size_t width, const std::string& first, const std::string& rest) {
  // words, with "=" glued to its neighbours ("C = 32" is never broken)
  std::vector<std::string> words;
  {
    std::istringstream in(text);
    for (std::string w; in >> w;) {
      if (words.size() >= 2 && words.back() == "=") {
        words.pop_back();
        words.back() += " = " + w;
      } else {
        words.push_back(w);
      }
    }
  }
  std::string line, out;
  for (std::string word : words) {
    // a word wider than a whole line (a long path) is cut, at whole characters, where the line ends
    for (;;) {
      const std::size_t prefix = cells(out.empty() ? first : rest);
      const std::size_t room = width > prefix + 1 ? width - prefix : 1;
      if (!line.empty() && prefix + cells(line) + 1 + cells(word) > width) {
        out += (out.empty() ? first : rest) + line + "\n";
        line.clear();
        continue;
      }
      if (!line.empty() || cells(word) <= room) break;
      std::size_t n = 0, i = 0;
      while (i < word.size()) {
        const auto [c, len] = decode_utf8(word, i);
        const auto w = static_cast<std::size_t>(char_width(c));
        if (n + w > room && i > 0) break;
        n += w;
        i += len;
      }
      out += (out.empty() ? first : rest) + word.substr(0, i) + "\n";
      word.erase(0, i);
      if (word.empty()) break;
    }
    if (word.empty()) continue;
    if (!line.empty()) line += ' ';
    line += word;
  }
  if (!line.empty()) out += (out.empty() ? first : rest) + line + "\n";
  return out;
}

std::vector<std::string> split_parts(const std::string& text) {
  std::vector<std::string> out;
  for (std::size_t at = 0;;) {
    const auto next = text.find(" · ", at);
    out.push_back(text.substr(at, next == std::string::npos ? std::string::npos : next - at));
    if (next == std::string::npos) return out;
    at = next + std::string_view(" · ").size();
  }
}

std::string join_fitting(const std::vector<std::string>& parts, std::size_t width, const std::string& lead) {
  std::string out, line = lead;
  bool fresh = true;  // nothing after the line's lead yet
  for (std::size_t k = 0; k < parts.size(); ++k) {
    // (room for the " ·" that ends a line broken after this part, unless it is the last)
    if (!fresh && cells(line) + 3 + cells(parts[k]) + (k + 1 < parts.size() ? 2 : 0) > width) {
      out += line + " ·\n";
      line = lead + "  ";
      fresh = true;
    }
    line += (fresh ? "" : " · ") + parts[k];
    fresh = false;
  }
  return out + line + "\n";
}

std::string fit_lines(const std::string& text, std::size_t width) {
  std::ostringstream os;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto indent = line.find_first_not_of(' ');
    const std::string lead(indent == std::string::npos ? 0 : indent, ' ');
    const std::string body = line.substr(lead.size());
    if (cells(line) <= width || line.find('\x1b') != std::string::npos) {
      os << line << "\n";
      continue;
    }
    // "label:   value": the value wraps under itself; other runs of spaces make a table row, left whole
    if (const auto gap = body.find("  "); gap != std::string::npos) {
      const auto value = body.find_first_not_of(' ', gap);
      if (gap == 0 || body[gap - 1] != ':' || value == std::string::npos || body.find("  ", value) != std::string::npos || lead.size() + value + 20 > width) {
        os << line << "\n";
        continue;
      }
      os << wrap(body.substr(value), width, lead + body.substr(0, value), std::string(lead.size() + value, ' '));
      continue;
    }
    // between " · " parts, unless a part alone is too long for a line: then at words
    const auto parts = split_parts(body);
    const bool parts_fit = parts.size() > 1 && std::all_of(parts.begin(), parts.end(), [&](const std::string& p) {
      return cells(p) + lead.size() + 4 <= width;
    });
    os << (parts_fit ? join_fitting(parts, width, lead) : wrap(body, width, lead, lead + "  "));
  }
  return os.str();
}

std::string clip(std::string_view s, std::size_t max_cells) {
  if (cells(s) <= max_cells) return std::string(s);
  if (max_cells == 0) return {};
  // whole characters (with the marks that combine with them) up to max_cells − 1 columns, then "…"
  std::size_t n = 0, i = 0;
  while (i < s.size()) {
    const auto [c, len] = decode_utf8(s, i);
    const auto w = static_cast<std::size_t>(char_width(c));
    if (n + w > max_cells - 1) break;
    n += w;
    i += len;
  }
  return std::string(s.substr(0, i)) + "…";
}

std::string pad_left(std::string_view s, std::size_t width) {
  const auto w = cells(s);
  return std::string(width > w ? width - w : 0, ' ') + std::string(s);
}

std::string pad_right(std::string_view s, std::size_t width) {
  const auto w = cells(s);
  return std::string(s) + std::string(width > w ? width - w : 0, ' ');
}

std::vector<std::string> code_lines(const std::string& code) {
  std::vector<std::string> lines;
  std::size_t from = 0;
  for (std::size_t at; (at = code.find("; ", from)) != std::string::npos; from = at + 2) lines.push_back(code.substr(from, at - from));
  if (from < code.size()) lines.push_back(code.substr(from));
  return lines;
}

}  // namespace attn
