// Edit distance (case-insensitive) with prefixes counted as close.
#include "attn/suggest.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>

namespace attn {

std::string count_of(std::size_t n, std::string_view noun) { return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s"); }
namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const auto ca = static_cast<char>(std::tolower(static_cast<unsigned char>(a[i - 1])));
      const auto cb = static_cast<char>(std::tolower(static_cast<unsigned char>(b[j - 1])));
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca == cb ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::optional<std::string_view> closest(std::string_view given, const std::vector<std::string_view>& candidates) {
  std::string_view best;
  std::size_t best_d = std::numeric_limits<std::size_t>::max();
  for (auto c : candidates) {
    const bool prefix = given.size() >= 2 && (c.starts_with(given) || given.starts_with(c));
    const auto d = prefix ? 1 : edit_distance(given, c);
    if (d < best_d) best_d = d, best = c;
  }
  const std::size_t limit = std::max<std::size_t>(2, given.size() / 3);
  if (best_d > limit) return std::nullopt;
  return best;
}

std::string did_you_mean(std::string_view given, const std::vector<std::string_view>& candidates) {
  const auto best = closest(given, candidates);
  return best ? fmt::format(" (did you mean \"{}\"?)", *best) : "";
}

}  // namespace attn
