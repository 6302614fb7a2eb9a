// "Did you mean" hints for names the user mistyped (JSON keys, choices, step ids).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

// "1 step", "3 steps": a count with its noun.
std::string count_of(std::size_t n, std::string_view noun);

// The candidate closest to `given` (edit distance, case-insensitive; a prefix either way counts as 1)
// when it is close enough to be a likely typo, else none.
std::optional<std::string_view> closest(std::string_view given, const std::vector<std::string_view>& candidates);

// " (did you mean "x"?)" for the closest candidate when there is one, else "".
std::string did_you_mean(std::string_view given, const std::vector<std::string_view>& candidates);

}  // namespace attn
