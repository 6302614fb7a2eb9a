// Trace against trace: attn diff compares steps by id (values by compare.hpp's one comparison)
// and reports the first diverging step. Reading traces is trace_io.hpp's.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "attn/tools/compare.hpp"
#include "attn/core/trace.hpp"
#include "attn/io/trace_io.hpp"

namespace attn {

struct DiffReport {
  std::string a, b;
  Tolerance tol;
  std::vector<StepDiff> steps;
  int first_diverging = -1;  // index into steps of the first shared step that differs, -1 when none
  int shared = 0;            // steps both traces have
  // Every shared step matches (a step only one trace has is no divergence), and there is one.
  bool same() const { return first_diverging < 0 && shared > 0; }
};

DiffReport diff_traces(const LoadedTrace& a, const LoadedTrace& b, const Tolerance& tol);

void render_diff_text(const DiffReport& report, std::ostream& out);

}  // namespace attn
