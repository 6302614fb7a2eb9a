// Trace against trace: attn diff and attn diagnose compare steps by id. A trace is read from
// attn's JSON trace or from a directory of <step id>.npy files (a dump, or a student's own).
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "attn/trace.hpp"

namespace attn {

struct LoadedStep {
  std::string id;
  Tensor value;
  std::vector<std::string> dims;  // empty when unknown (a student's .npy)
};

struct LoadedTrace {
  std::string origin;
  std::optional<TraceConfig> config;  // when read from attn's JSON (labels for positions)
  std::vector<LoadedStep> steps;      // in pipeline order where known

  const LoadedStep* find(std::string_view id) const;
};

LoadedTrace load_trace(const std::string& path);  // JSON trace file, or a directory of .npy files
LoadedTrace loaded_from(const Trace& trace, std::string origin);

struct Tolerance {
  double atol = 1e-5;
  double rtol = 1e-4;
};

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
  double max_abs = 0;  // over finite pairs
  std::string note;    // "shapes differ only by size-1 axes"
  std::vector<WorstEntry> worst;  // up to 5, largest |a - b| first (non-finite mismatches first)
};

struct DiffReport {
  std::string a, b;
  Tolerance tol;
  std::vector<StepDiff> steps;
  int first_diverging = -1;  // index into steps, -1 when none
  bool same() const { return first_diverging < 0; }
};

// Compares one pair of tensors (shapes equal, or equal once size-1 axes are dropped).
StepDiff compare_step(const std::string& id, const Tensor& a, const Tensor& b, const Tolerance& tol,
                      const std::optional<TraceConfig>& config, const std::vector<std::string>& dims);
DiffReport diff_traces(const LoadedTrace& a, const LoadedTrace& b, const Tolerance& tol);

void render_diff_text(const DiffReport& report, std::ostream& out);

// A compared value as reports print it: 6 significant digits, "inf", "-inf", "nan".
std::string value_text(double v);

}  // namespace attn
