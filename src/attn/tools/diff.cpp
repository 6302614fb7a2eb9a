// Comparing traces step by step, and the diff report.
#include "attn/tools/diff.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "attn/core/suggest.hpp"
#include "attn/core/text.hpp"

namespace attn {

DiffReport diff_traces(const LoadedTrace& a, const LoadedTrace& b, const Tolerance& tol) {
  DiffReport r;
  r.a = a.origin;
  r.b = b.origin;
  r.tol = tol;
  for (const auto& sa : a.steps) {
    const LoadedStep* sb = b.find(sa.id);
    if (sb == nullptr) {
      StepDiff d;
      d.id = sa.id;
      d.status = StepStatus::OnlyInA;
      d.shape_a = sa.value.shape();
      r.steps.push_back(d);
      continue;
    }
    r.steps.push_back(compare_step(sa.id, sa.value, sb->value, tol, a.config, sa.dims));
  }
  for (const auto& sb : b.steps) {
    if (a.find(sb.id) != nullptr) continue;
    StepDiff d;
    d.id = sb.id;
    d.status = StepStatus::OnlyInB;
    d.shape_b = sb.value.shape();
    r.steps.push_back(d);
  }
  // a step only one side has (a student who saved fewer steps) is no divergence
  for (std::size_t i = 0; i < r.steps.size(); ++i) {
    const auto st = r.steps[i].status;
    if (st == StepStatus::OnlyInA || st == StepStatus::OnlyInB) continue;
    ++r.shared;
    if (st != StepStatus::Same && r.first_diverging < 0) r.first_diverging = static_cast<int>(i);
  }
  return r;
}

void render_diff_text(const DiffReport& r, std::ostream& out) {
  out << fmt::format("attn diff\n  A: {}\n  B: {}\n  tolerance: |a − b| ≤ {} + {}·|b|; non-finite values must match exactly\n", r.a, r.b,
                     r.tol.atol, r.tol.rtol);
  if (r.same()) {
    out << fmt::format("\nsame: the {} both traces have match in shape and values within the tolerance\n", count_of(r.shared, "step"));
  } else if (r.shared == 0) {
    out << "\nnothing to compare: the traces have no step id in common\n";
  } else {
    const auto& d = r.steps[static_cast<std::size_t>(r.first_diverging)];
    out << fmt::format("\nfirst diverging step: {}\n", d.id);
    switch (d.status) {
      case StepStatus::OnlyInA: out << "  only in A (B has no such step)\n"; break;
      case StepStatus::OnlyInB: out << "  only in B (A has no such step)\n"; break;
      case StepStatus::ShapeMismatch:
        out << fmt::format("  shapes differ: A {} vs B {}\n", shape_string(d.shape_a), shape_string(d.shape_b));
        break;
      default: {
        out << fmt::format("  {} of {} entries differ; largest |a − b| = {}\n", d.differ, d.compared, value_text(d.max_abs));
        std::size_t w = 8;
        for (const auto& e : d.worst) w = std::max(w, cells(e.position));  // in cells: "the₂" is 4 wide, 6 bytes
        out << fmt::format("  {:<{}}  {:>12}  {:>12}  {:>12}\n", "position", w, "A", "B", "|a − b|");
        for (const auto& e : d.worst) {
          const double err = std::isfinite(e.a) && std::isfinite(e.b) ? std::fabs(e.a - e.b) : std::numeric_limits<double>::infinity();
          out << fmt::format("  {}  {:>12}  {:>12}  {:>12}\n", pad_right(e.position, w), value_text(e.a), value_text(e.b), value_text(err));
        }
      }
    }
  }
  out << "\nper step:\n";
  std::size_t w = 4;
  for (const auto& d : r.steps) w = std::max(w, d.id.size());
  int same = 0, differ = 0, only_a = 0, only_b = 0;
  for (const auto& d : r.steps) {
    std::string what;
    switch (d.status) {
      case StepStatus::Same:
        ++same;
        what = fmt::format("same      {} values, largest |a − b| {}", d.compared, value_text(d.max_abs));
        break;
      case StepStatus::Differ:
        ++differ;
        what = fmt::format("differ    {} of {} values, largest |a − b| {}", d.differ, d.compared, value_text(d.max_abs));
        break;
      case StepStatus::ShapeMismatch:
        ++differ;
        what = fmt::format("shape     A {} vs B {}", shape_string(d.shape_a), shape_string(d.shape_b));
        break;
      case StepStatus::OnlyInA: ++only_a, what = "only in A"; break;
      case StepStatus::OnlyInB: ++only_b, what = "only in B"; break;
    }
    if (!d.note.empty()) what += " (" + d.note + ")";
    out << fmt::format("  {:<{}}  {}\n", d.id, w, what);
  }
  out << fmt::format("summary: {}: {} same, {} differ, {} only in A, {} only in B\n", count_of(r.steps.size(), "step"), same, differ, only_a,
                     only_b);
}

}  // namespace attn
