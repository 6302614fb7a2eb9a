// Deterministic values for tensors the input does not give: the same seed gives the same numbers
// on every machine. Uses std::mt19937_64 (its output is fixed by the C++ standard) and our own
// conversions, never std::*_distribution (whose algorithms differ between standard libraries).
#pragma once

#include <cstdint>
#include <string_view>

#include "attn/tensor.hpp"

namespace attn {

// Each tensor draws from its own stream, keyed by seed and name, so adding a tensor to the input
// never changes the values of another.
// normal: N(0, 1) by Box-Muller, like torch.randn.
Tensor random_normal(std::uint64_t seed, std::string_view name, Shape shape);
// uniform on [-bound, bound), like nn.Linear's default initialisation with bound = 1/sqrt(in).
Tensor random_uniform(std::uint64_t seed, std::string_view name, Shape shape, double bound);

}  // namespace attn
