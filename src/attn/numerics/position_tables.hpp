// Tables of positions: fixed functions of the position, computed with attn's own elementary
// functions (fixed_math.hpp), so they hold the same bits on every machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attn/core/config.hpp"
#include "attn/core/tensor.hpp"

namespace attn {

// The original Transformer's encodings for positions 0 .. L − 1: (L, C) with
// PE[p, 2i] = sin(p / 10000^(2i/C)) and PE[p, 2i+1] = cos(p / 10000^(2i/C)), in double, rounded once.
Tensor sinusoidal_positions(std::int64_t L, std::int64_t C);
// Marian's layout of the same angles: (L, C) with the sines in the first half of the features and the
// cosines in the second, PE[p, i] = sin(p / 10000^(2i/C)) and PE[p, C/2 + i] = cos(p / 10000^(2i/C))
// for i < C/2 (MarianSinusoidalPositionalEmbedding), in double, rounded once.
Tensor sinusoidal_positions_halves(std::int64_t L, std::int64_t C);

// T5's bucket of a key n = j − i positions from its query (_relative_position_bucket): with
// `bidirectional` half the buckets are for keys after the query; in either half distances below
// max_exact = half / 2 have a bucket each, and the rest share buckets that widen logarithmically up
// to max_distance, max_exact + ⌊ln(n / max_exact) / ln(max_distance / max_exact) · (half − max_exact)⌋,
// the last one taking every distance beyond. Causal (not bidirectional): keys after the query are 0.
// The logarithm's arithmetic in float32, as the published code does it.
std::int64_t t5_bucket(std::int64_t n, bool bidirectional, std::int64_t num_buckets, std::int64_t max_distance);
// Query i (at position i + offset) against key j: buckets (T, S) and table[bucket, h] as (H, T, S).
struct RelativeBiasTables {
  Tensor buckets, bias;
};
RelativeBiasTables relative_bias_tables(const Tensor& table, std::int64_t T, std::int64_t S, std::int64_t offset, bool bidirectional,
                                        std::int64_t max_distance);

// RopeScaling (core/config.hpp): RoPE's frequency scaling, as the model hub's rope_type names it.
enum class RopeBand { High, Middle, Low };

// Each pair's angle per position, θ_i, scaled; in double with attn's own exp and log.
std::vector<double> rope_rates(std::int64_t R, double theta, const RopeScaling& scaling);
// Which of Llama 3's bands pair i of R falls in (High for every pair without llama3 scaling).
RopeBand rope_band(std::int64_t i, std::int64_t R, double theta, const RopeScaling& scaling);

// RoPE's tables for positions first .. first + L − 1: (L, R/2) each, the angle of position p and
// pair i being p · θ_i (RoFormer's θ_i = theta^(−2i/R), scaled as asked), in double, rounded once.
struct RopeTables {
  Tensor cos, sin;
};
RopeTables rope_tables(std::int64_t first, std::int64_t L, std::int64_t R, double theta, const RopeScaling& scaling = {});

// The largest position the tables take: their angles are reduced exactly below it.
inline constexpr std::int64_t kMaxPosition = std::int64_t{1} << 19;

}  // namespace attn
