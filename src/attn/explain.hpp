// --explain: a short explanation of each step for students, in plain words, quoting this run's
// numbers (sizes, the scale factor, a row's weights). Reads the trace; computes nothing new.
#pragma once

#include <string>

#include "attn/trace.hpp"

namespace attn {

std::string explain_step(const Trace& trace, const Step& step);

}  // namespace attn
