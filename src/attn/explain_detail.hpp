// What the step explanations (explain.cpp) and the entry explanations (explain_cell.cpp) share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attn/trace.hpp"

namespace attn::explain_detail {

// s in double quotes: a token as the sentences quote it.
std::string q(const std::string& s);
// The step holding the heads-first rows of q or k ("q.heads"), or the flat one when H = 1.
const Step* rows_step(const Trace& t, const char* heads, const char* flat);
// One head row x (h features) turned by table row p of rope.cos and rope.sin, in double: what
// q.rope and k.rope do, for showing the same vectors at other positions.
std::vector<double> rotated(const Scalar* x, std::int64_t h, const Step& cos, const Step& sin, std::int64_t p, bool interleaved);

}  // namespace attn::explain_detail
