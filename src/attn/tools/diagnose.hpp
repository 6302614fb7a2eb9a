// attn diagnose: which common mistake reproduces a student's tensors? Finds the first step where the
// student differs from the reference, then re-runs the one pipeline under each mistake switch. Says
// when two mistakes give the student's numbers equally (a tie), and the scale factor the student used.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "attn/tools/diff.hpp"
#include "attn/pipeline/pipeline.hpp"
#include "attn/core/spec.hpp"

namespace attn {

struct MistakeMatch {
  const MistakeInfo* mistake = nullptr;
  int later_consistent = 0;  // later student steps the mistaken trace also reproduces
  int later_total = 0;       // later student steps it has a value for
};

// A student file whose values are another reference step's (saved at another point of the pipeline).
struct Misnamed {
  std::string student;    // the file's step id: "scores"
  std::string reference;  // the reference step it equals: "scaled"
};

// The factor a student's scores were scaled by, estimated from their tensors and confirmed: the one
// pipeline re-run with that factor reproduces their first differing step.
struct ScaleEstimate {
  double factor = 0;
  std::string from;   // how it was read: "scaled ÷ scores", "the weights' log-ratios against the scores"
  std::string right;  // the reference's factor as the trace writes it: "1/√2 = 0.7071"
  std::vector<std::string> named;  // the matching mistakes whose factor it is: "1/√C = 1/√4 (scale-sqrt-c)"
};

struct Diagnosis {
  std::string reference, student;
  std::vector<std::string> compared;  // student steps with a reference counterpart, in pipeline order
  std::vector<std::string> unknown;   // student files that name no step of the reference
  bool correct = false;
  StepDiff first;                     // reference (A) vs student (B) at the first differing step
  std::vector<MistakeMatch> matches;  // best explanation first
  std::size_t tied = 0;               // how many of the first matches explain the student equally (a tie when 2 or more)
  std::optional<ScaleEstimate> scale; // where the first difference is the scale's
  std::vector<std::string> matching;  // student steps equal to the reference's, in pipeline order
  std::vector<Misnamed> misnamed;     // differing files that hold another reference step
  std::vector<std::string> hints;     // where the fix is known: "the head average nn.MultiheadAttention returns"
};

Diagnosis diagnose(const Spec& spec, const std::string& spec_origin, const LoadedTrace& student, const Tolerance& tol);
void render_diagnosis_text(const Diagnosis& d, std::ostream& out);

}  // namespace attn
