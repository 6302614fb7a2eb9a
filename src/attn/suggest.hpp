// "Did you mean" hints for names the user mistyped (JSON keys, choices, step ids).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace attn {

// "1 step", "3 steps": a count with its noun.
std::string count_of(std::size_t n, std::string_view noun);

// " (did you mean "x"?)" when one candidate is close enough to be a likely typo (or a prefix), else "".
std::string did_you_mean(std::string_view given, const std::vector<std::string_view>& candidates);

}  // namespace attn
