// Comparing printed numbers with computed ones, and the check report's text and JSON forms.
#include "attn/tools/check.hpp"
#include "attn/pipeline/pipeline.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <cmath>
#include <limits>

#include "attn/tools/compare.hpp"
#include "attn/core/error.hpp"
#include "attn/io/json_text.hpp"
#include "attn/core/text.hpp"
#include "attn/core/suggest.hpp"

namespace attn {

namespace {

// 4 float32 ulps of |p|: what float32 arithmetic's rounding can move a right value by; and the same
// in float64, where only the order of a document's sums differs from ours.
double floor32(double p) { return 4.0 * std::ldexp(1.0, -24) * std::fabs(p); }
double floor64(double p) { return 4.0 * std::ldexp(1.0, -53) * std::fabs(p); }

// Whether a printed number's digits can tell float32 from float64 (its last decimal is finer than
// float32's spacing there), and then whether they are a float32 number's: the float32 nearest the
// printed value, printed to as many decimals, gives them back.
enum class Digits { Undecided, Float32, NotFloat32 };
Digits printed_digits(double p, int decimals) {
  if (decimals < 0 || !std::isfinite(p) || p == 0 || std::fabs(p) > std::numeric_limits<float>::max()) return Digits::Undecided;
  const float f = std::fabs(static_cast<float>(p));
  const double spacing = static_cast<double>(std::nextafter(f, std::numeric_limits<float>::infinity())) - static_cast<double>(f);
  if (!(std::pow(10.0, -decimals) < spacing)) return Digits::Undecided;
  return fmt::format("{:.{}f}", static_cast<double>(static_cast<float>(p)), decimals) == fmt::format("{:.{}f}", p, decimals) ? Digits::Float32
                                                                                                                             : Digits::NotFloat32;
}

}  // namespace

std::string_view judge_name(Judge j) {
  switch (j) {
    case Judge::Float64: return "float64";
    case Judge::Float32: return "float32";
    case Judge::Either: break;
  }
  return "float32 or float64";
}

namespace {
void require_expect(const Spec& spec) {
  if (spec.expect.empty()) {
    throw InputError("expect: required by attn check: the numbers a document printed, keyed by step id, e.g. "
                     "\"expect\": {\"weights\": [[1, 0], [0.4, 0.6]]}");
  }
}
}  // namespace

CheckReport check_trace(const Spec& spec, const Trace& trace, const Trace* wide, bool labels) {
  require_expect(spec);
  CheckReport r;
  r.title = trace.config.title;
  r.tolerance = spec.expect_tolerance;
  std::vector<std::string_view> ids;
  for (const auto& s : trace.steps) ids.push_back(s.id);
  for (const auto& x : spec.expect) {
    const Step* step = trace.find(x.id);
    if (step == nullptr) {
      throw InputError(fmt::format("expect.{}: this trace has no step \"{}\"{}; its steps: {}", x.id, x.id, did_you_mean(x.id, ids),
                                   fmt::join(ids, ", ")));
    }
    if (x.shape != step->value.shape()) {
      throw InputError(fmt::format("expect.{}: expected {} (the shape of step {}, {}), got {}", x.id, shape_string(step->value.shape()),
                                   x.id, fmt::format("[{}]", fmt::join(step->dims, ", ")), shape_string(x.shape)));
    }
  }
  // What a printed number claims: expect.tolerance, else half a unit in its last printed decimal
  // (an integer literal: the exact value).
  auto claimed = [&](int decimals) {
    return spec.expect_tolerance ? *spec.expect_tolerance : decimals == kExactInteger ? 0.0 : 0.5 * std::pow(10.0, -std::max(decimals, 0));
  };
  auto beyond_float32 = [&](double printed, int decimals) {
    return wide != nullptr && decimals != kExactInteger && std::isfinite(printed) && claimed(decimals) < floor32(printed);
  };
  // A float32 document printed to 8 decimals: every digit that can tell is a float32 number's.
  bool float32_seen = false, other_seen = false;
  for (const auto& x : spec.expect)
    for (std::size_t i = 0; i < x.values.size(); ++i) {
      if (!x.present[i] || !beyond_float32(x.values[i], x.decimals[i])) continue;
      const Digits d = printed_digits(x.values[i], x.decimals[i]);
      float32_seen = float32_seen || d == Digits::Float32;
      other_seen = other_seen || d == Digits::NotFloat32;
    }
  r.float32_digits = float32_seen && !other_seen;
  r.float64_digits = other_seen;
  // Steps in trace order, so the report reads like the walkthrough.
  for (const auto& step : trace.steps) {
    for (const auto& x : spec.expect) {
      if (x.id != step.id) continue;
      const Step* step64 = wide != nullptr ? wide->find(step.id) : nullptr;
      if (wide != nullptr && (step64 == nullptr || step64->value.shape() != step.value.shape())) {
        throw InternalError("attn check: the float64 trace has no step " + step.id + " of this shape");
      }
      CheckStep cs{step.id};
      for (std::size_t i = 0; i < x.values.size(); ++i) {
        if (x.present[i] && beyond_float32(x.values[i], x.decimals[i])) cs.judge = r.float64_digits ? Judge::Float64 : Judge::Float32;
      }
      for (std::size_t i = 0; i < x.values.size(); ++i) {
        if (!x.present[i]) continue;
        const double printed = x.values[i];
        const int decimals = x.decimals[i];
        const double computed32 = step.value.at(static_cast<std::int64_t>(i));
        const double computed64 = step64 != nullptr ? step64->value.wide_at(static_cast<std::int64_t>(i)) : computed32;
        // float32: never under 4 ulps of the printed value (but as expect.tolerance says), so a right
        // value printed to 8 or 9 significant digits is not flagged for float32 rounding; float32
        // arithmetic other than ours (another order of sums, another exp) may land as far from the
        // float64 value as ours did, on its other side: 3 × |ours − float64| more; and its rounding
        // (below). float64: what was claimed, never under 4 float64 ulps. A hair of slack: printed
        // 0.005 steps are not exactly representable.
        const double spread = step64 != nullptr && std::isfinite(computed32 - computed64) ? std::fabs(computed32 - computed64) : 0.0;
        // The document's float32 value, before it was rounded to the printed decimals, may differ from
        // ours by float32's rounding in another order: 2⁻²³ of the value (about an ulp) where printed
        // within float32's precision; beyond it (its last digits are that rounding), 2⁻²³ of the terms
        // that made the value, which is far more where a sum cancels.
        const Tensor::Wide* terms = step64 != nullptr ? step64->value.wide_terms() : nullptr;
        const double size = cs.judge == Judge::Float32 && terms != nullptr ? (*terms)[i] : std::fabs(printed);
        const double rounding = step64 != nullptr && std::isfinite(size) ? std::ldexp(size, -23) : 0.0;
        const double tol32 =
            spec.expect_tolerance ? *spec.expect_tolerance : std::max(claimed(decimals), floor32(printed)) + 3 * spread + rounding;
        const double tol64 = std::max(claimed(decimals), floor64(printed));
        const bool match64 = values_match(printed, computed64, Tolerance{tol64 * (1 + 1e-9), 0});
        const bool match = match64 || (cs.judge != Judge::Float64 && values_match(printed, computed32, Tolerance{tol32 * (1 + 1e-9), 0}));
        ++cs.checked;
        ++r.checked;
        if (match) {
          ++r.matches;
          continue;
        }
        const double computed = cs.judge == Judge::Float64 ? computed64 : computed32;
        const double diff = std::isfinite(printed) && std::isfinite(computed) ? computed - printed : std::numeric_limits<double>::infinity();
        ++cs.differ;
        ++r.differences;
        cs.max_abs_difference = std::max(cs.max_abs_difference, std::fabs(diff));
        r.differing.push_back({step.id, cs.judge,
                               labels ? position_label(trace.config, step.dims, step.value.shape(), static_cast<std::int64_t>(i)) : std::string(),
                               printed, decimals, computed, computed32, computed64, diff, cs.judge == Judge::Float64 ? tol64 : tol32,
                               i < x.literals.size() ? x.literals[i] : std::string(), static_cast<std::int64_t>(i)});
      }
      r.steps.push_back(cs);
    }
  }
  return r;
}

namespace {

// The document's number as its text wrote it.
std::string printed_text(const CheckEntry& e) {
  if (!e.literal.empty()) return e.literal;
  if (const auto name = nonfinite_name(e.printed)) return std::string(*name);
  return format_fixed(static_cast<Scalar>(e.printed), std::max(e.decimals, 0));
}

// Two more decimals than were printed, so the reader sees where the printed value went wrong, and
// more where the difference is smaller than that shows: two of its significant digits (a printed 0
// against 0.002334 reads 0.0023, not 0.00).
int shown_decimals(const CheckEntry& e) {
  int d = std::max(e.decimals, 0) + 2;
  const double diff = std::fabs(e.difference);
  if (std::isfinite(diff) && diff > 0) d = std::max(d, static_cast<int>(std::ceil(-std::log10(diff))) + 1);
  return std::min(d, e.judge == Judge::Float64 ? 12 : 9);  // no digits beyond what the judging arithmetic holds
}

std::string computed_text(const CheckEntry& e) {
  if (const auto name = nonfinite_name(e.computed)) return std::string(*name);
  return fmt::format("{:.{}f}", e.computed, shown_decimals(e));
}

std::string difference_text(const CheckEntry& e) {
  if (!std::isfinite(e.difference)) return "non-finite";
  const int d = shown_decimals(e);
  // a difference too small for the decimals shown (a value printed as 1.76786722e-04): in exponent form
  if (e.difference != 0 && std::fabs(e.difference) < 0.5 * std::pow(10.0, -d)) return fmt::format("{:+.2e}", e.difference);
  return fmt::format("{:+.{}f}", e.difference, d);
}

// The text report's header in plain words: when a printed number matches, and in which arithmetic.
// The details (4 ulps, the allowance for float32's rounding of the terms) are docs/check.md's.
std::string plain_header(const CheckReport& r) {
  auto any = [&](Judge j) { return std::any_of(r.steps.begin(), r.steps.end(), [j](const CheckStep& s) { return s.judge == j; }); };
  std::string text = r.tolerance ? fmt::format("A printed number matches when attn's value is within ±{} of it (the document's "
                                               "expect.tolerance).",
                                               *r.tolerance)
                                 : "A printed number matches when attn's value, rounded to the decimals the document printed, gives "
                                   "it (0.73 stands for 0.725 to 0.735; a printed integer must be exact).";
  text += " attn computes each value in float32 (PyTorch's default) and in float64 (NumPy's)";
  if (!any(Judge::Float64) && !any(Judge::Float32)) {
    return text + "; a match in either counts, with a small allowance for float32's rounding: docs/check.md says how.";
  }
  text += "; a match in either counts (a step's line says \"float32 or float64\")";
  if (any(Judge::Float64)) {
    text += ", but a step printed with more digits than float32 holds, not all of them a float32 number's, is a float64 "
            "document's and is checked in float64 alone (\"float64\")";
  }
  if (any(Judge::Float32)) {
    text += ", and a step printed with more digits than float32 holds, each a float32 number's, allows for float32's rounding of "
            "every term that made its values (\"float32\")";
  }
  return text + ". docs/check.md says how.";
}

// How the report judged: the arithmetic a document may have used.
std::string judged_text(const CheckReport& r) {
  auto any = [&](Judge j) { return std::any_of(r.steps.begin(), r.steps.end(), [j](const CheckStep& s) { return s.judge == j; }); };
  const std::string either = "against float32 and float64 arithmetic: a match in either counts (either)";
  if (any(Judge::Float32)) {
    return std::string(r.float32_digits ? "its digits beyond float32's precision are float32 numbers' (a float32 document)"
                                        : "no digit it printed beyond float32's precision tells float32 from float64") +
           ": against float32, allowing for float32's rounding of the terms, or float64 (float32)" +
           (any(Judge::Either) ? "; a step printed within float32's precision " + either : std::string());
  }
  if (!any(Judge::Float64)) return "each number " + either;
  const std::string alone = "printed beyond float32's precision: against float64 alone (float64)";
  return any(Judge::Either) ? "a step " + alone + "; the others " + either : "every step " + alone;
}

}  // namespace

void render_check_text(const CheckReport& r, std::ostream& out, int width) {
  out << "attn check";
  if (!r.title.empty()) out << " · " << r.title;
  out << "\n" << plain_header(r) << "\n";
  if (!r.differing.empty()) {
    const bool both = std::any_of(r.differing.begin(), r.differing.end(), [](const CheckEntry& e) { return e.judge != Judge::Float64; });
    const bool wide = std::any_of(r.differing.begin(), r.differing.end(), [](const CheckEntry& e) { return e.judge == Judge::Float64; });
    out << "computed: " << (both && wide ? "attn's float32 value; in a float64 step, its float64 value"
                            : wide        ? "attn's float64 value"
                                          : "attn's float32 value")
        << "\n";
  }
  if (!r.differing.empty()) {
    std::size_t w_step = 4, w_pos = 8, w_printed = 7, w_computed = 8, w_diff = 10;
    for (const auto& e : r.differing) {
      w_step = std::max(w_step, e.step.size());
      w_pos = std::max(w_pos, cells(e.position));  // in cells: "the₂" is 4 wide, 6 bytes
      w_printed = std::max(w_printed, printed_text(e).size());
      w_computed = std::max(w_computed, computed_text(e).size());
      w_diff = std::max(w_diff, difference_text(e).size());
    }
    // Half a unit in the last printed decimal needs exactly one decimal more than was printed.
    const auto tol_text = [&](const CheckEntry& e) {
      return r.tolerance ? fmt::format("{}", e.tolerance)
             : e.decimals == kExactInteger ? std::string("0 (exact)")
                                           : fmt::format("{:.{}f}", e.tolerance, std::max(e.decimals, 0) + 1);
    };
    std::size_t w_tol = 4;
    for (const auto& e : r.differing) w_tol = std::max(w_tol, 1 + tol_text(e).size());
    const std::size_t row = w_step + 2 + w_pos + 2 + w_printed + 2 + w_computed + 2 + w_diff + 2 + w_tol;
    if (row <= static_cast<std::size_t>(std::max(width, 20))) {
      out << "\n" << fmt::format("{:<{}}  {:<{}}  {:>{}}  {:>{}}  {:>{}}  {}\n", "step", w_step, "position", w_pos, "printed",
                                 w_printed, "computed", w_computed, "difference", w_diff, "tol.");
      for (const auto& e : r.differing) {
        out << fmt::format("{:<{}}  {}  {:>{}}  {:>{}}  {:>{}}  ±{}\n", e.step, w_step, pad_right(e.position, w_pos), printed_text(e), w_printed,
                           computed_text(e), w_computed, difference_text(e), w_diff, tol_text(e));
      }
    } else {  // too wide for a table: the entry's place, then its numbers below it
      out << "\n";
      for (const auto& e : r.differing) {
        out << fmt::format("{}  {}\n    printed {} · computed {} · difference {} · allowed ±{}\n", e.step, e.position, printed_text(e),
                           computed_text(e), difference_text(e), tol_text(e));
      }
    }
  }
  out << "\n";
  for (const auto& s : r.steps) {
    if (s.differ == 0) out << fmt::format("{}: {} printed, all match · {}\n", s.id, s.checked, judge_name(s.judge));
    else {
      out << fmt::format("{}: {} printed, {} {} (largest difference {:.4g}) · {}\n", s.id, s.checked, s.differ, s.differ == 1 ? "differs" : "differ",
                         s.max_abs_difference,
                         judge_name(s.judge));
    }
  }
  out << fmt::format("summary: {} printed values checked: {} match{}, {} {}\n", r.checked, r.matches, r.matches == 1 ? "es" : "", r.differences,
                     r.differences == 1 ? "differs" : "differ");
  if (r.why) render_why_text(*r.why, out);
}

void render_check_json(const CheckReport& r, std::ostream& out) {
  auto num = [](double v) -> std::string {
    if (const auto name = nonfinite_name(v)) return json_quote(*name);
    return fmt::format("{}", v);
  };
  const auto quote = json_quote;
  out << "{\n  \"format\": \"attn-check\",\n";
  out << "  \"title\": " << quote(r.title) << ",\n";
  out << "  \"tolerance\": " << (r.tolerance ? num(*r.tolerance) : "\"half a unit in the last printed decimal; a printed integer is exact; in float32 never under 4 ulps, plus float32's rounding (docs/check.md)\"") << ",\n";
  out << "  \"judged\": " << quote(judged_text(r)) << ",\n";
  out << "  \"float32_digits\": " << (r.float32_digits ? "true" : "false") << ",\n";
  out << fmt::format("  \"checked\": {}, \"matches\": {}, \"differences\": {},\n", r.checked, r.matches, r.differences);
  out << "  \"steps\": [";
  for (std::size_t i = 0; i < r.steps.size(); ++i) {
    const auto& s = r.steps[i];
    out << (i ? ",\n" : "\n") << fmt::format("    {{\"id\": {}, \"judged\": {}, \"checked\": {}, \"differ\": {}, \"max_abs_difference\": {}}}",
                                             quote(s.id), quote(judge_name(s.judge)), s.checked, s.differ, num(s.max_abs_difference));
  }
  out << "\n  ],\n  \"differing\": [";
  for (std::size_t i = 0; i < r.differing.size(); ++i) {
    const auto& e = r.differing[i];
    out << (i ? ",\n" : "\n")
        << fmt::format("    {{\"step\": {}, \"position\": {}, \"printed\": {}, \"computed\": {}, \"difference\": {}, \"tolerance\": {}, "
                       "\"judged\": {}, \"float32\": {}, \"float64\": {}}}",
                       quote(e.step), quote(e.position),
                       // the document's number literal itself (valid JSON: it came from JSON), not its double re-printed
                       !e.literal.empty() && std::isfinite(e.printed) ? e.literal : num(e.printed), num(e.computed), num(e.difference),
                       num(e.tolerance), quote(judge_name(e.judge)), num(e.computed32), num(e.computed64));
  }
  out << "\n  ],\n  \"why\": ";
  if (r.why) render_why_json(*r.why, out);
  else out << "null";
  out << "\n}\n";
}

bool prints_gradients(const Spec& spec) {
  return std::any_of(spec.expect.begin(), spec.expect.end(), [](const Expectation& e) { return e.id.starts_with("grad.") || e.id == "loss"; });
}

CheckTraces traces_to_check(const Spec& spec, Backend& backend, const PipelineOptions& options) {
  const bool backward = prints_gradients(spec);
  auto run = [&](Backend& be) { return backward ? run_backward(spec, be, options) : run_pipeline(spec, be, options); };
  auto float64 = make_float64_backend();
  Trace shown = run(backend);
  return {std::move(shown), run(*float64)};
}

CheckReport check_spec(const Spec& spec, Backend& backend) {
  require_expect(spec);  // before anything is computed
  const CheckTraces t = traces_to_check(spec, backend);
  CheckReport r = check_trace(spec, t.shown, &t.wide);
  if (r.differences > 0) r.why = why_differs(spec, backend, r);
  return r;
}

}  // namespace attn
