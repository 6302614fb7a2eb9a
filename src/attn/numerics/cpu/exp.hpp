// exp for the softmax, with the same bits on every x86-64 machine (see exp.cpp).
#pragma once

#include <cstdint>

namespace attn::cpu {

// y[j] = exp(y[j] - shift) for j < n, vectorised where the CPU allows.
void exp_shifted(float* y, std::int64_t n, float shift);
// One value, with the same bits as exp_shifted gives.
float exp_deterministic(float x);

}  // namespace attn::cpu
