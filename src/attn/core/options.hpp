// The values of the options that every door into the library takes (attn's flags, attn_tracer's
// keywords): their ranges and the one check of each, naming the option as its door spells it. Values
// only: which options go together is each command's business, a value's type its door's. Header-only.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "attn/core/door.hpp"
#include "attn/core/error.hpp"

namespace attn {

// "--summary-threshold" from the CLI, "summary_threshold" from Python; key is Python's spelling.
inline std::string option_name(Door door, std::string_view key) {
  if (door == Door::Python) return std::string(key);
  std::string flag = "--";
  for (const char c : key) flag += c == '_' ? '-' : c;
  return flag;
}

// The option with the value given, as the user wrote it: "--head 5" or "head=5"; a text value
// "--flash 2x" or "flash=\"2x\"".
inline std::string option_with(Door door, std::string_view key, std::int64_t value) {
  return door == Door::Python ? fmt::format("{}={}", key, value) : fmt::format("{} {}", option_name(door, key), value);
}
inline std::string option_with(Door door, std::string_view key, std::string_view value) {
  return door == Door::Python ? fmt::format("{}=\"{}\"", key, value) : fmt::format("{} {}", option_name(door, key), value);
}

// A switch as it is turned on: "--fused" or "fused=True" (for "run without ...").
inline std::string switch_on(Door door, std::string_view key) {
  return door == Door::Python ? fmt::format("{}=True", key) : option_name(door, key);
}

// A command: "attn backward" or "attn_tracer.backward".
inline std::string command_name(Door door, std::string_view command) {
  return fmt::format("{}{}", door == Door::Python ? "attn_tracer." : "attn ", command);
}

// An integer option's inclusive range.
struct IntRange {
  std::int64_t lo, hi;
};
inline constexpr std::int64_t kNoLimit = std::numeric_limits<std::int64_t>::max();
inline constexpr IntRange kPrecisionRange{0, 12};         // decimals of every printed number
inline constexpr IntRange kWidthRange{20, 1000};          // display columns of a text
inline constexpr IntRange kTokensRange{1, 4096};          // decode: tokens the model writes
inline constexpr IntRange kTopRange{1, 100};              // decode: next-token candidates shown a step
inline constexpr IntRange kDecodeHeadRange{0, 4096};      // decode: the one head shown (the model's H checked later)
inline constexpr IntRange kPositiveRange{1, kNoLimit};    // counts and sizes: --summary-threshold, --threads, a byte limit

// A value outside r refused, without the option's name (CLI11 puts its own before a check's words):
// "expected 0 .. 12, got 99". value is its text, so that one beyond 64 bits is quoted as given.
inline std::string range_refusal(std::string_view value, IntRange r) {
  if (r.hi == kNoLimit) return fmt::format("expected {} or more, got {}", r.lo, value);
  return fmt::format("expected {} .. {}, got {}", r.lo, r.hi, value);
}
// range_refusal when value is outside r, else "".
inline std::string range_problem(std::int64_t value, IntRange r) {
  return value >= r.lo && value <= r.hi ? "" : range_refusal(std::to_string(value), r);
}

// InputError "precision: expected 0 .. 12, got 99" unless value is in r.
inline void check_range(Door door, std::string_view key, std::int64_t value, IntRange r) {
  if (const auto problem = range_problem(value, r); !problem.empty()) throw InputError(fmt::format("{}: {}", option_name(door, key), problem));
}
inline void check_range(Door door, std::string_view key, const std::optional<std::int64_t>& value, IntRange r) {
  if (value) check_range(door, key, *value, r);
}

// A tolerance (atol, rtol): a finite number, 0 or more. "" when it is one.
inline std::string tolerance_problem(double value) {
  if (std::isfinite(value) && value >= 0) return "";
  return fmt::format("expected a finite number, 0 or more, got {}", value);
}
inline void check_tolerance(Door door, std::string_view key, double value) {
  if (const auto problem = tolerance_problem(value); !problem.empty()) throw InputError(fmt::format("{}: {}", option_name(door, key), problem));
}

}  // namespace attn
