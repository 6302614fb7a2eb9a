// "Did you mean" hints for names the user mistyped (JSON keys, choices, step ids).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

// "1 step", "3 steps": a count with its noun.
std::string count_of(std::size_t n, std::string_view noun);

// The candidates closest to `given` (edit distance, case-insensitive, a swap of two neighbours one
// edit; a prefix either way counts as 1) when close enough to be a likely typo, in the candidates'
// order, those as long as `given` first: more than one when they are equally close. Empty when none
// is close.
std::vector<std::string_view> closest_all(std::string_view given, const std::vector<std::string_view>& candidates);

// The first of closest_all, or none.
std::optional<std::string_view> closest(std::string_view given, const std::vector<std::string_view>& candidates);

// The closest candidates as a question's words, each quoted by `quote`: "x", "x or y", "x, y or z".
std::string either(const std::vector<std::string_view>& names, std::string_view quote_left, std::string_view quote_right);

// " (did you mean "x"?)" (or "x" or "y", equally close) when a candidate is close, else "".
std::string did_you_mean(std::string_view given, const std::vector<std::string_view>& candidates);

}  // namespace attn
