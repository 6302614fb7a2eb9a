// attn exercise's draws, variant codes, ties and key. A draw is a number, not a state: the code a
// student's handout prints is the whole of what regenerates their values from the template.
#include "attn/tools/exercise.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>

#include "attn/core/error.hpp"
#include "attn/core/suggest.hpp"
#include "attn/core/text.hpp"

namespace attn {

namespace {

constexpr int kCodeLetters = 8;  // 8 letters of base 32: 7 of the draw (35 bits), then a check letter
constexpr std::uint64_t kDrawMask = (std::uint64_t{1} << (5 * (kCodeLetters - 1))) - 1;
constexpr std::string_view kCrockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

// The steps whose rows a student compares (which key a query attends to most): a tie there makes the
// question ambiguous.
const std::set<std::string> kRowSteps = {"scores", "scaled", "biased", "capped", "masked", "weights"};

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t fnv1a64(const std::string& s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// A uniform integer in [0, n), by rejection (the standard's distributions differ between libraries).
std::uint64_t uniform_below(std::mt19937_64& gen, std::uint64_t n) {
  const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % n;
  std::uint64_t x = gen();
  while (x >= limit) x = gen();
  return x % n;
}

// "weights[0, 1] (query "sat")": a row of a step, the row's labels named as the tables name them.
std::string row_label(const Trace& trace, const Step& step, std::int64_t row) {
  Dims dims(step.dims.begin(), step.dims.end() - 1);
  Shape shape(step.value.shape().begin(), step.value.shape().end() - 1);
  std::string at = position_label(trace.config, dims, shape, row);
  // a row of scores or weights is one query's (its columns the keys)
  if (const auto token = at.find("token \""); token != std::string::npos) at.replace(token, 5, "query");
  return step.id + at;
}

// Whether a row's two largest unblocked entries are within tol of each other.
bool row_tied(const Step& step, const Step* masked, std::int64_t first, std::int64_t n, double tol) {
  double top = -INFINITY, second = -INFINITY;
  int finite = 0;
  for (std::int64_t j = first; j < first + n; ++j) {
    const double v = step.value.at(j);
    if (blocked(masked, j) || !std::isfinite(v)) continue;
    ++finite;
    if (v > top) {
      second = top;
      top = v;
    } else if (v > second) {
      second = v;
    }
  }
  return finite >= 2 && top - second <= tol;
}

}  // namespace

double ExerciseSettings::tolerance() const { return 0.5 * std::pow(10.0, -decimals); }

std::int64_t ExerciseSettings::levels() const {
  const double unit = std::pow(10.0, value_decimals);
  return std::llround((high - low) * unit) + 1;
}

std::uint64_t first_draw(std::uint64_t seed, const std::string& student_id) {
  return splitmix64(splitmix64(seed) ^ fnv1a64(student_id)) & kDrawMask;
}

std::uint64_t next_draw(std::uint64_t draw) { return splitmix64(draw ^ 0x5bd1e995ULL) & kDrawMask; }

// The check letter of a draw's 7 letters (their values v_i): Σ (i + 1)·v_i mod 31. A prime modulus and
// weights 1 … 7 catch every mistyped letter and every swap of two neighbours (but 0 and Z, 31 apart).
char check_letter(std::uint64_t draw) {
  std::uint64_t sum = 0;
  for (int i = kCodeLetters - 2; i >= 0; --i, draw >>= 5) sum += static_cast<std::uint64_t>(i + 1) * (draw & 31);
  return kCrockford[sum % 31];
}

std::string variant_code(std::uint64_t draw) {
  draw &= kDrawMask;
  std::string code(kCodeLetters, '0');
  code.back() = check_letter(draw);
  for (int i = kCodeLetters - 2; i >= 0; --i, draw >>= 5) code[static_cast<std::size_t>(i)] = kCrockford[draw & 31];
  return code.substr(0, kCodeLetters / 2) + "-" + code.substr(kCodeLetters / 2);
}

std::optional<std::uint64_t> parse_variant_code(const std::string& code) {
  const auto letters = variant_code_letters(code);
  if (!letters) return std::nullopt;
  const std::uint64_t body = *letters >> 5;
  if (kCrockford[*letters & 31] != check_letter(body)) return std::nullopt;  // a mistyped letter
  return body;
}

std::optional<std::uint64_t> variant_code_letters(const std::string& code) {
  std::uint64_t draw = 0;
  int letters = 0;
  for (char c : code) {
    if (c == '-') continue;
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (c == 'I' || c == 'L') c = '1';
    if (c == 'O') c = '0';
    const auto at = kCrockford.find(c);
    if (at == std::string_view::npos || ++letters > kCodeLetters) return std::nullopt;
    draw = draw << 5 | at;
  }
  if (letters != kCodeLetters) return std::nullopt;
  return draw;
}

std::vector<double> draw_values(std::uint64_t draw, std::size_t count, const ExerciseSettings& s) {
  std::mt19937_64 gen(draw);
  const double unit = std::pow(10.0, s.value_decimals);
  const auto low = static_cast<double>(std::llround(s.low * unit));
  const auto levels = static_cast<std::uint64_t>(s.levels());
  std::vector<double> values(count);
  for (auto& v : values) {
    v = (low + static_cast<double>(uniform_below(gen, levels))) / unit;
    if (v == 0) v = 0;  // never -0
  }
  return values;
}

std::optional<std::string> tie_in(const Trace& trace, const ExerciseSettings& s) {
  for (const auto& id : s.ask) {
    const Step* step = trace.find(id);
    if (step == nullptr || !kRowSteps.contains(id) || step->value.rank() == 0) continue;
    const Step* masked = blocking_step(trace, *step);
    const std::int64_t n = step->value.shape().back();
    for (std::int64_t row = 0; row * n < step->value.size(); ++row)
      if (row_tied(*step, masked, row * n, n, s.tolerance())) return row_label(trace, *step, row);
  }
  return std::nullopt;
}

void check_asked_steps(const Trace& trace, const ExerciseSettings& s) {
  std::vector<std::string_view> ids;
  for (const auto& step : trace.steps) ids.push_back(step.id);
  for (std::size_t i = 0; i < s.ask.size(); ++i) {
    const std::string path = fmt::format("exercise.ask[{}]", i);
    if (trace.find(s.ask[i]) == nullptr) {
      throw InputError(fmt::format("{}: no step \"{}\"{}; this template's steps: {}", path, s.ask[i], did_you_mean(s.ask[i], ids),
                                   fmt::join(ids, ", ")));
    }
    if (std::find(s.ask.begin(), s.ask.begin() + static_cast<std::ptrdiff_t>(i), s.ask[i]) != s.ask.begin() + static_cast<std::ptrdiff_t>(i))
      throw InputError(fmt::format("{}: \"{}\" is asked twice", path, s.ask[i]));
  }
}

std::vector<KeyStep> exercise_key(const Trace& trace, const ExerciseSettings& s) {
  std::vector<KeyStep> key;
  for (const auto& id : s.ask) {
    const Step* step = trace.find(id);
    if (step == nullptr) throw InternalError(fmt::format("exercise_key: the trace has no step {}", id));
    KeyStep k{step, {}};
    k.values.reserve(static_cast<std::size_t>(step->value.size()));
    for (std::int64_t i = 0; i < step->value.size(); ++i) k.values.push_back(format_fixed(step->value.at(i), s.decimals));
    key.push_back(std::move(k));
  }
  return key;
}

ClassDraw draw_class(std::uint64_t seed, const std::vector<std::string>& ids, std::size_t count, const ExerciseSettings& s,
                     const std::function<bool(std::uint64_t, const std::vector<double>&)>& acceptable) {
  // levels^count possible variants, counted up to the class's size
  std::uint64_t possible = 1;
  for (std::size_t i = 0; i < count && possible < ids.size(); ++i) possible *= static_cast<std::uint64_t>(s.levels());
  if (possible < ids.size()) {
    throw InputError(fmt::format("exercise.values: {} students need as many different variants, and the template's {} drawn "
                                 "values, each one of {}, give only {}; widen \"values\" or draw more values",
                                 ids.size(), count, s.levels(), possible));
  }
  ClassDraw out;
  std::set<std::vector<double>> seen;
  for (const auto& id : ids) {
    std::uint64_t draw = first_draw(seed, id);
    for (int tries = 0;; ++tries, ++out.redraws, draw = next_draw(draw)) {
      if (tries == kMaxRedraws) {
        throw InputError(fmt::format("student {}: no variant without a repeat or a tie in {} draws; widen exercise.values, "
                                     "ask other steps, or give the answers more decimals", id, kMaxRedraws));
      }
      auto values = draw_values(draw, count, s);
      if (seen.contains(values) || !acceptable(draw, values)) continue;
      seen.insert(std::move(values));
      break;
    }
    out.draws.push_back(draw);
  }
  return out;
}

}  // namespace attn
