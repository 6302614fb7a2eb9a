// The one JSON text codec of the project's writers and readers: string literals, and the strings
// that stand for non-finite numbers ("-inf", "inf", "nan"), which JSON numbers cannot hold.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace attn {

// A JSON string literal, quotes and escapes included.
std::string json_quote(std::string_view s);
// "nan", "inf" or "-inf" for a non-finite value; nullopt for a finite one.
std::optional<std::string_view> nonfinite_name(double v);
// The value of "nan", "inf" or "-inf"; nullopt for any other text.
std::optional<double> nonfinite_value(std::string_view text);

}  // namespace attn
