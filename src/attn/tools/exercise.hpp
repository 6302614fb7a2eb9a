// attn exercise's arithmetic: a student's draw from (seed, id), the variant code that names it, the
// values a draw gives, the class drawn without repeats or ties, and the key (the asked steps rounded).
// It reads traces and numbers only; the template's JSON is spec/exercise's, the files render/'s.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "attn/core/trace.hpp"

namespace attn {

// What the template's "exercise" block sets (spec/exercise.cpp reads it).
struct ExerciseSettings {
  std::vector<std::string> ask;  // the step ids the student computes, in the block's order
  double low = -2, high = 2;     // "values": the drawn inputs lie on low, low + 10^-value_decimals, ..., high
  int value_decimals = 0;
  int decimals = 2;              // the answers' decimals
  // Half a unit of the answers' last decimal (check's rule): 0.005 for 2 decimals.
  double tolerance() const;
  // How many values one drawn entry can take: (high − low)·10^value_decimals + 1.
  std::int64_t levels() const;
};

// A draw is a 35-bit number: the variant code writes it in 7 letters of Crockford's base 32 and a
// check letter ("7KQ2-MX4N"), and the template plus the code regenerate the variant. A code with a
// mistyped letter or two neighbours swapped does not check, and is refused.
std::uint64_t first_draw(std::uint64_t seed, const std::string& student_id);
std::uint64_t next_draw(std::uint64_t draw);  // the redraw after a repeat or a tie
std::string variant_code(std::uint64_t draw);
// The draw a code names; nullopt when it is not one, or its check letter does not match (case and the
// dash are free; I, L, O read as 1, 1, 0).
std::optional<std::uint64_t> parse_variant_code(const std::string& code);
// The 8 letters' value, check letter last, when `code` is written as one (checked or not); else nullopt.
std::optional<std::uint64_t> variant_code_letters(const std::string& code);

// `count` values drawn from `draw` (the standard's mt19937_64, so every machine draws the same).
std::vector<double> draw_values(std::uint64_t draw, std::size_t count, const ExerciseSettings& s);

// The first asked row of a tie-sensitive step (scores, scaled, masked, capped, weights) whose two largest
// unblocked entries are within the tolerance: "weights[1] (query "sat")"; nullopt when none.
std::optional<std::string> tie_in(const Trace& trace, const ExerciseSettings& s);

// Refuses an asked step the trace does not have: "exercise.ask[1]: no step "weigths" (did you mean
// "weights"?) ...", and an id asked twice.
void check_asked_steps(const Trace& trace, const ExerciseSettings& s);

// One asked step's answers: its value rounded to the decimals, as text ("0.64", "-inf"), row-major.
struct KeyStep {
  const Step* step;  // in the trace the key was taken from
  std::vector<std::string> values;
};
std::vector<KeyStep> exercise_key(const Trace& trace, const ExerciseSettings& s);

// The class drawn: each student's draw, in roster order. A candidate is redrawn (next_draw) while its
// values repeat an earlier student's or `acceptable` refuses them (a tie); after kMaxRedraws the class
// is refused, naming the student. A template with fewer possible variants than students is refused.
constexpr int kMaxRedraws = 1000;
struct ClassDraw {
  std::vector<std::uint64_t> draws;
  int redraws = 0;  // candidates refused, all students together
};
ClassDraw draw_class(std::uint64_t seed, const std::vector<std::string>& ids, std::size_t count, const ExerciseSettings& s,
                     const std::function<bool(std::uint64_t draw, const std::vector<double>& values)>& acceptable);

}  // namespace attn
