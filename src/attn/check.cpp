// Comparing printed numbers with computed ones, and the check report's text and JSON forms.
#include "attn/check.hpp"
#include "attn/pipeline.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <cmath>
#include <limits>

#include "attn/compare.hpp"
#include "attn/error.hpp"
#include "attn/json_text.hpp"
#include "attn/render/render.hpp"
#include "attn/suggest.hpp"

namespace attn {

CheckReport check_trace(const Spec& spec, const Trace& trace) {
  if (spec.expect.empty()) {
    throw InputError("expect: required by attn check: the numbers a document printed, keyed by step id, e.g. "
                     "\"expect\": {\"weights\": [[1, 0], [0.4, 0.6]]}");
  }
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
  // Steps in trace order, so the report reads like the walkthrough.
  for (const auto& step : trace.steps) {
    for (const auto& x : spec.expect) {
      if (x.id != step.id) continue;
      CheckStep cs{step.id};
      for (std::size_t i = 0; i < x.values.size(); ++i) {
        if (!x.present[i]) continue;
        const double printed = x.values[i];
        const double computed = step.value.data()[i];
        const int decimals = x.decimals[i];
        // An integer literal claims the exact value; a decimal one half a unit in its last place. Never
        // less than 4 float32 ulps of the printed value, so a right value printed to 8 or 9 significant
        // digits is not flagged for float32 rounding.
        const double floor = 4.0 * std::ldexp(1.0, -24) * std::fabs(printed);
        const double tol = spec.expect_tolerance ? *spec.expect_tolerance
                           : decimals == kExactInteger ? floor
                                                       : std::max(0.5 * std::pow(10.0, -std::max(decimals, 0)), floor);
        // printed 0.005 steps are not exactly representable: a hair of slack
        const bool match = values_match(printed, computed, Tolerance{tol * (1 + 1e-9), 0});
        const double diff = std::isfinite(printed) && std::isfinite(computed) ? computed - printed
                            : match                                           ? 0
                                                                              : std::numeric_limits<double>::infinity();
        ++cs.checked;
        ++r.checked;
        if (match) {
          ++r.matches;
          continue;
        }
        ++cs.differ;
        ++r.differences;
        cs.max_abs_difference = std::max(cs.max_abs_difference, std::fabs(diff));
        r.differing.push_back({step.id, position_label(trace.config, step.dims, step.value.shape(), static_cast<std::int64_t>(i)),
                               printed, decimals, computed, diff, tol, i < x.literals.size() ? x.literals[i] : std::string()});
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
  return std::min(d, 9);
}

std::string computed_text(const CheckEntry& e) {
  if (const auto name = nonfinite_name(e.computed)) return std::string(*name);
  return fmt::format("{:.{}f}", e.computed, shown_decimals(e));
}

std::string difference_text(const CheckEntry& e) {
  if (!std::isfinite(e.difference)) return "non-finite";
  return fmt::format("{:+.{}f}", e.difference, shown_decimals(e));
}

std::string tolerance_text(const CheckReport& r) {
  return r.tolerance ? fmt::format("±{} (expect.tolerance)", *r.tolerance)
                     : "half a unit in each number's last printed decimal; a printed integer is exact; never under 4 float32 ulps";
}

}  // namespace

void render_check_text(const CheckReport& r, std::ostream& out, int width) {
  out << "attn check";
  if (!r.title.empty()) out << " · " << r.title;
  out << "\n" << "tolerance: " << tolerance_text(r) << "\n";
  if (!r.differing.empty()) {
    std::size_t w_step = 4, w_pos = 8, w_printed = 7, w_computed = 8, w_diff = 10;
    for (const auto& e : r.differing) {
      w_step = std::max(w_step, e.step.size());
      w_pos = std::max(w_pos, e.position.size());
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
        out << fmt::format("{:<{}}  {:<{}}  {:>{}}  {:>{}}  {:>{}}  ±{}\n", e.step, w_step, e.position, w_pos, printed_text(e), w_printed,
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
    if (s.differ == 0) out << fmt::format("{}: {} printed, all match\n", s.id, s.checked);
    else out << fmt::format("{}: {} printed, {} differ (largest difference {:.4g})\n", s.id, s.checked, s.differ, s.max_abs_difference);
  }
  out << fmt::format("summary: {} printed values checked: {} match, {} differ\n", r.checked, r.matches, r.differences);
}

void render_check_json(const CheckReport& r, std::ostream& out) {
  auto num = [](double v) -> std::string {
    if (const auto name = nonfinite_name(v)) return json_quote(*name);
    return fmt::format("{}", v);
  };
  const auto quote = json_quote;
  out << "{\n  \"format\": \"attn-check\",\n";
  out << "  \"title\": " << quote(r.title) << ",\n";
  out << "  \"tolerance\": " << (r.tolerance ? num(*r.tolerance) : "\"half a unit in the last printed decimal; a printed integer is exact; never under 4 float32 ulps\"") << ",\n";
  out << fmt::format("  \"checked\": {}, \"matches\": {}, \"differences\": {},\n", r.checked, r.matches, r.differences);
  out << "  \"steps\": [";
  for (std::size_t i = 0; i < r.steps.size(); ++i) {
    const auto& s = r.steps[i];
    out << (i ? ",\n" : "\n") << fmt::format("    {{\"id\": {}, \"checked\": {}, \"differ\": {}, \"max_abs_difference\": {}}}",
                                             quote(s.id), s.checked, s.differ, num(s.max_abs_difference));
  }
  out << "\n  ],\n  \"differing\": [";
  for (std::size_t i = 0; i < r.differing.size(); ++i) {
    const auto& e = r.differing[i];
    out << (i ? ",\n" : "\n")
        << fmt::format("    {{\"step\": {}, \"position\": {}, \"printed\": {}, \"computed\": {}, \"difference\": {}, \"tolerance\": {}}}",
                       quote(e.step), quote(e.position),
                       // the document's number literal itself (valid JSON: it came from JSON), not its double re-printed
                       !e.literal.empty() && std::isfinite(e.printed) ? e.literal : num(e.printed), num(e.computed), num(e.difference),
                       num(e.tolerance));
  }
  out << "\n  ]\n}\n";
}

Trace trace_to_check(const Spec& spec, Backend& backend) {
  const bool backward = std::any_of(spec.expect.begin(), spec.expect.end(), [](const Expectation& e) { return e.id.starts_with("grad.") || e.id == "loss"; });
  return backward ? run_backward(spec, backend) : run_pipeline(spec, backend);
}

}  // namespace attn
