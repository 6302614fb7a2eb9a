// Comparing values and steps, once for every command that compares.
#include "attn/tools/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace attn {
namespace {

Shape squeezed(const Shape& s) {
  Shape out;
  for (auto d : s)
    if (d != 1) out.push_back(d);
  return out;
}

}  // namespace

bool values_match(double a, double b, const Tolerance& tol, double* error) {
  double err;
  bool ok;
  if (!std::isfinite(a) || !std::isfinite(b)) {
    ok = (std::isnan(a) && std::isnan(b)) || a == b;
    err = ok ? 0 : std::numeric_limits<double>::infinity();
  } else {
    err = std::fabs(a - b);
    ok = err <= tol.atol + tol.rtol * std::fabs(b);
  }
  if (error != nullptr) *error = err;
  return ok;
}

std::string value_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.6g}", v);
}

StepDiff compare_step(const std::string& id, const Tensor& a, const Tensor& b, const Tolerance& tol,
                      const std::optional<TraceConfig>& config, const Dims& dims) {
  StepDiff d;
  d.id = id;
  d.shape_a = a.shape();
  d.shape_b = b.shape();
  if (a.shape() != b.shape()) {
    if (squeezed(a.shape()) != squeezed(b.shape())) {
      d.status = StepStatus::ShapeMismatch;
      return d;
    }
    d.note = "shapes differ only by size-1 axes";
  }
  struct Bad {
    std::int64_t i;
    double err;
  };
  std::vector<Bad> bad;
  for (std::int64_t i = 0; i < a.size(); ++i) {
    const double x = a.data()[i], y = b.data()[i];
    ++d.compared;
    double err;
    const bool ok = values_match(x, y, tol, &err);
    d.max_abs = std::max(d.max_abs, err);  // infinite where one side is ±inf or NaN and the other is not the same
    if (!ok) bad.push_back({i, err});
    if (!ok && std::isnan(x)) ++d.nan_a;
    if (!ok && std::isnan(y)) ++d.nan_b;
  }
  d.differ = static_cast<std::int64_t>(bad.size());
  d.status = bad.empty() ? StepStatus::Same : StepStatus::Differ;
  std::stable_sort(bad.begin(), bad.end(), [](const Bad& l, const Bad& r) { return l.err > r.err; });
  const bool labelled = config && dims.size() == a.shape().size();
  for (std::size_t k = 0; k < bad.size() && k < 5; ++k) {
    const auto i = bad[k].i;
    std::string pos;
    if (labelled) {
      pos = position_label(*config, dims, a.shape(), i);
    } else {
      std::vector<std::int64_t> idx(a.shape().size());
      auto f = i;
      for (std::size_t ax = idx.size(); ax-- > 0;) idx[ax] = f % a.shape()[ax], f /= a.shape()[ax];
      pos = fmt::format("[{}]", fmt::join(idx, ", "));
    }
    d.worst.push_back({pos, a.data()[i], b.data()[i]});
  }
  return d;
}

}  // namespace attn
