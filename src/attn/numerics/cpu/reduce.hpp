// Row reductions with a fixed order: the lanes a vector unit would use, combined in a fixed tree,
// written in plain C++ so every machine adds the same numbers in the same order (the compiler may
// vectorise the lanes, never regroup them). Shared by the eager and the deferred softmax and row sums.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

namespace attn::cpu {

// The largest entry, exact in any order; NaN when any entry is NaN (a row holding a NaN has no
// distribution: its softmax is NaN throughout, never an empty row's policy).
inline float row_max(const float* x, std::int64_t n) {
  constexpr int kLanes = 16;
  float lane[kLanes];
  bool nan[kLanes] = {};
  std::fill(lane, lane + kLanes, -std::numeric_limits<float>::infinity());
  std::int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      lane[l] = std::max(lane[l], x[j + l]);
      nan[l] = nan[l] || x[j + l] != x[j + l];
    }
  float m = -std::numeric_limits<float>::infinity();
  bool any_nan = false;
  for (int l = 0; l < kLanes; ++l) m = std::max(m, lane[l]), any_nan = any_nan || nan[l];
  for (; j < n; ++j) m = std::max(m, x[j]), any_nan = any_nan || x[j] != x[j];
  return any_nan ? std::numeric_limits<float>::quiet_NaN() : m;
}

// The sum in double: 8 running sums (entry j goes to sum j mod 8 while whole groups of 8 last),
// added pairwise, then the leftover entries in order.
inline double row_sum(const float* x, std::int64_t n) {
  constexpr int kLanes = 8;
  double lane[kLanes] = {};
  std::int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) lane[l] += static_cast<double>(x[j + l]);
  double s = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  for (; j < n; ++j) s += static_cast<double>(x[j]);
  return s;
}

// x[j] ← x[j] · factor for every j < n, then row_sum(x, n), in one pass with row_sum's lanes and tree.
inline double scale_and_sum(float* x, std::int64_t n, float factor) {
  constexpr int kLanes = 8;
  double lane[kLanes] = {};
  std::int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      x[j + l] *= factor;
      lane[l] += static_cast<double>(x[j + l]);
    }
  double s = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  for (; j < n; ++j) {
    x[j] *= factor;
    s += static_cast<double>(x[j]);
  }
  return s;
}

}  // namespace attn::cpu
