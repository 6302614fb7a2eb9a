// The one place the step order lives: spec + backend -> trace.
// Backends compute primitives; renderers format the trace; neither decides what the steps are.
#pragma once

#include <vector>

#include "attn/backend.hpp"
#include "attn/spec.hpp"
#include "attn/trace.hpp"

namespace attn {

// Common student mistakes, as switches on the one pipeline (attn run --mistake, attn diagnose).
// Step ids stay the same under a mistake, so a mistaken trace compares step by step with a student's.
enum class Mistake {
  None,
  WTransposed,       // projections use Wᵀ (the other layout)
  ScaleMissing,      // no 1/√d_k
  ScaleSqrtC,        // 1/√C instead of 1/√hs
  SoftmaxWrongAxis,  // softmax over the queries (dim=-2) instead of the keys
  MaskFlipped,       // the mask's polarity flipped: attends exactly where it must not
  MaskAfterSoftmax,  // softmax first, then blocked weights zeroed (rows no longer sum to 1)
  Fill1e9,           // masked with -1e9 instead of -inf
  QKSwapped,         // scores = k · qᵀ
  HeadsInterleaved,  // heads split as view(B, T, hs, H): head h takes columns h, h+H, ...
  MergeNoTranspose,  // heads merged by reshape(B, T, C) without transposing back
  OutputMissing,     // no output projection
  OutputTransposed,  // output projection with W_oᵀ
};

struct MistakeInfo {
  Mistake mistake;
  const char* name;         // "scale-missing"
  const char* description;  // what the student did
};

const std::vector<MistakeInfo>& all_mistakes();  // every mistake but None, in a fixed order

struct PipelineOptions {
  Mistake mistake = Mistake::None;
};

// Under a mistake the trace keeps non-finite values and fully masked rows (a student's tensors can
// hold them) instead of refusing them.
Trace run_pipeline(const Spec& spec, Backend& backend, const PipelineOptions& options = {});

}  // namespace attn
