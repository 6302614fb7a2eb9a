// Gemma 2's logit soft-capping, cap · tanh(x / cap), for the CPU backend: the division and the
// product in float32 as Gemma 2 writes them, tanh with attn's own exp (the same bits everywhere).
#pragma once

#include <cstdint>

#include "attn/core/tensor.hpp"

namespace attn {

void soft_cap_values(const Scalar* in, Scalar* out, std::int64_t n, Scalar cap);

}  // namespace attn
