// Tables of positions: fixed functions of the position, computed with attn's own elementary
// functions (fixed_math.hpp), so they hold the same bits on every machine.
#pragma once

#include <cstdint>

#include "attn/tensor.hpp"

namespace attn {

// The original Transformer's encodings for positions 0 .. L − 1: (L, C) with
// PE[p, 2i] = sin(p / 10000^(2i/C)) and PE[p, 2i+1] = cos(p / 10000^(2i/C)), in double, rounded once.
Tensor sinusoidal_positions(std::int64_t L, std::int64_t C);

// RoPE's tables for positions first .. first + L − 1: (L, R/2) each, the angle of position p and
// pair i being p · theta^(−2i/R) (RoFormer's θ_i), in double, rounded once.
struct RopeTables {
  Tensor cos, sin;
};
RopeTables rope_tables(std::int64_t first, std::int64_t L, std::int64_t R, double theta);

// The largest position the tables take: their angles are reduced exactly below it.
inline constexpr std::int64_t kMaxPosition = std::int64_t{1} << 19;

}  // namespace attn
