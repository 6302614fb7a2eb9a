// The pipeline's public face: spec + backend -> trace, optionally under a simulated mistake.
// The step order itself is attention_forward in pipeline/forward.cpp.
#pragma once

#include "attn/backend.hpp"
#include "attn/pipeline/mistakes.hpp"
#include "attn/spec.hpp"
#include "attn/trace.hpp"

namespace attn {

struct PipelineOptions {
  Mistake mistake = Mistake::None;
};

// Under a mistake the trace keeps non-finite values and fully masked rows (a student's tensors can
// hold them) instead of refusing them.
Trace run_pipeline(const Spec& spec, Backend& backend, const PipelineOptions& options = {});

}  // namespace attn
