// The one place the step order lives: spec + backend -> trace.
// Backends compute primitives; renderers format the trace; neither decides what the steps are.
#pragma once

#include "attn/backend.hpp"
#include "attn/spec.hpp"
#include "attn/trace.hpp"

namespace attn {

Trace run_pipeline(const Spec& spec, Backend& backend);

}  // namespace attn
