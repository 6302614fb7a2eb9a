// The one value comparison: diff, check, diagnose, --check-against and the CUDA parity test all
// decide "same or not" here. |a - b| <= atol + rtol * |b|; non-finite values match only exactly
// (-inf with -inf, nan with nan). No file reading and no report text here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "attn/core/trace.hpp"

namespace attn {

struct Tolerance {
  double atol = 1e-5;
  double rtol = 1e-4;
};

// Whether b is within the tolerance of a; `error` gets |a - b| (infinity for a non-finite mismatch,
// 0 for a non-finite match).
bool values_match(double a, double b, const Tolerance& tol, double* error = nullptr);

struct WorstEntry {
  std::string position;
  double a = 0, b = 0;
};

enum class StepStatus { Same, Differ, OnlyInA, OnlyInB, ShapeMismatch };

struct StepDiff {
  std::string id;
  StepStatus status = StepStatus::Same;
  Shape shape_a, shape_b;
  std::int64_t compared = 0, differ = 0;
  double max_abs = 0;             // over finite pairs
  std::int64_t nan_a = 0, nan_b = 0;  // NaN entries of a (the reference) and of b (the student) where the other is no NaN
  std::string note;               // "shapes differ only by size-1 axes"
  std::vector<WorstEntry> worst;  // up to 5, largest |a - b| first (non-finite mismatches first)
};

// Compares one pair of tensors (shapes equal, or equal once size-1 axes are dropped). With a config
// and dims the worst positions are labelled with tokens.
StepDiff compare_step(const std::string& id, const Tensor& a, const Tensor& b, const Tolerance& tol,
                      const std::optional<TraceConfig>& config, const Dims& dims);

// A compared value as reports print it: 6 significant digits, "inf", "-inf", "nan".
std::string value_text(double v);

}  // namespace attn
