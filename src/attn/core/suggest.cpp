// Edit distance (case-insensitive, a swap of neighbours one edit) with prefixes counted as close.
#include "attn/core/suggest.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>

namespace attn {

std::string count_of(std::size_t n, std::string_view noun) { return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s"); }
namespace {

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

// Optimal string alignment: insertions, deletions, substitutions and swaps of two neighbours
// ("stesp" is one edit from "steps"), each one edit.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> before(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const char ca = lower(a[i - 1]), cb = lower(b[j - 1]);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca == cb ? 0 : 1)});
      if (i > 1 && j > 1 && ca == lower(b[j - 2]) && lower(a[i - 2]) == cb) cur[j] = std::min(cur[j], before[j - 2] + 1);
    }
    std::swap(before, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::vector<std::string_view> closest_all(std::string_view given, const std::vector<std::string_view>& candidates) {
  std::vector<std::string_view> best;
  std::size_t best_d = std::numeric_limits<std::size_t>::max();
  for (auto c : candidates) {
    const bool prefix = given.size() >= 2 && (c.starts_with(given) || given.starts_with(c));
    const auto d = prefix ? 1 : edit_distance(given, c);
    if (d < best_d) best_d = d, best.clear();
    if (d == best_d && std::find(best.begin(), best.end(), c) == best.end()) best.push_back(c);
  }
  const std::size_t limit = std::max<std::size_t>(2, given.size() / 3);
  if (best_d > limit) best.clear();
  // a typo that keeps the length (a swap, a wrong letter) first: "stesp" names steps before step
  const auto length_gap = [&](std::string_view c) { return c.size() > given.size() ? c.size() - given.size() : given.size() - c.size(); };
  std::stable_sort(best.begin(), best.end(), [&](std::string_view a, std::string_view b) { return length_gap(a) < length_gap(b); });
  return best;
}

std::optional<std::string_view> closest(std::string_view given, const std::vector<std::string_view>& candidates) {
  const auto best = closest_all(given, candidates);
  if (best.empty()) return std::nullopt;
  return best.front();
}

std::string either(const std::vector<std::string_view>& names, std::string_view quote_left, std::string_view quote_right) {
  std::string words;
  for (std::size_t i = 0; i < names.size(); ++i)
    words += fmt::format("{}{}{}{}", i == 0 ? "" : i + 1 == names.size() ? " or " : ", ", quote_left, names[i], quote_right);
  return words;
}

std::string did_you_mean(std::string_view given, const std::vector<std::string_view>& candidates) {
  const auto best = closest_all(given, candidates);
  return best.empty() ? "" : fmt::format(" (did you mean {}?)", either(best, "\"", "\""));
}

}  // namespace attn
