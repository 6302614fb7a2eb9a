// Attention rollout's arithmetic (rollout.hpp), in double. Per layer l, with A_l the heads combined
// (their mean, or the largest or smallest weight at each cell):
//   Ã_l = rownorm(A_l + I)          (for the mean, Ã_l = 0.5·A_l + 0.5·I: the paper's form)
//   R_0 = Ã_0,  R_l = Ã_l · R_{l−1}
// Row i of R_l is query i's shares of the input tokens after layer l; a product of row-stochastic
// matrices is row-stochastic, so each row sums to 1. A causal model's maps are lower triangular, and
// the product skips the zeros above the diagonal (about T³/6 multiplications a layer, not T³).
#include "attn/model/tools/rollout.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "attn/core/error.hpp"

namespace attn::model {

const char* rollout_heads_name(RolloutHeads c) {
  switch (c) {
    case RolloutHeads::Mean: return "mean";
    case RolloutHeads::Max: return "max";
    case RolloutHeads::Min: return "min";
  }
  return "mean";
}

RolloutAccumulator::RolloutAccumulator(RolloutHeads combine, std::int64_t T) {
  r_.combine = combine;
  r_.T = T;
}

// Rows [i0, i1) of Ã (T, T), the heads of one layer combined at each cell, the identity added, each
// row renormalised, from those rows' weights w (H, i1 − i0, cols), the keys from cols on zero.
void RolloutAccumulator::add_rows(const float* w, std::int64_t H, std::int64_t i0, std::int64_t i1, std::int64_t cols) {
  const std::int64_t T = r_.T, n = i1 - i0;
  if (cols < 0) cols = T;
  if (pending_.empty()) pending_.assign(static_cast<std::size_t>(T * T), 0.0);
  for (std::int64_t i = i0; i < i1; ++i) {
    double* row = pending_.data() + i * T;
    for (std::int64_t j = 0; j < T; ++j) {
      if (j >= cols) {  // a key no row of the block sees: every head's weight 0
        row[j] = 0.0;
        continue;
      }
      double m = w[(i - i0) * cols + j];
      for (std::int64_t h = 1; h < H; ++h) {
        const double x = w[(h * n + i - i0) * cols + j];
        m = r_.combine == RolloutHeads::Mean ? m + x : r_.combine == RolloutHeads::Max ? std::max(m, x) : std::min(m, x);
      }
      row[j] = r_.combine == RolloutHeads::Mean ? m / static_cast<double>(H) : m;
    }
    row[i] += 1.0;  // the residual: the token's own stream carried past the attention
    const double sum = std::accumulate(row, row + T, 0.0);
    for (std::int64_t j = 0; j < T; ++j) row[j] /= sum;
  }
  if (i1 == T) finish_layer();
}

void RolloutAccumulator::add_layer(const float* weights, std::int64_t H) { add_rows(weights, H, 0, r_.T); }

void RolloutAccumulator::finish_layer() {
  const std::int64_t T = r_.T;
  const std::vector<double> a = std::move(pending_);
  pending_.clear();
  if (product_.empty()) {
    product_ = a;
  } else {
    std::vector<double> next(static_cast<std::size_t>(T * T), 0.0);
    for (std::int64_t i = 0; i < T; ++i)
      for (std::int64_t k = 0; k < T; ++k) {
        const double x = a[static_cast<std::size_t>(i * T + k)];
        if (x == 0) continue;  // above a causal diagonal
        const double* from = product_.data() + k * T;
        double* to = next.data() + i * T;
        for (std::int64_t j = 0; j < T; ++j) to[j] += x * from[j];
      }
    product_ = std::move(next);
  }
  double kept = 0, residual = 0;
  for (std::int64_t i = 0; i < T; ++i) {
    kept += product_[static_cast<std::size_t>(i * T + i)];
    residual += a[static_cast<std::size_t>(i * T + i)];
  }
  r_.kept.push_back(T ? kept / static_cast<double>(T) : 0);
  r_.residual.push_back(T ? residual / static_cast<double>(T) : 0);
  r_.maps.insert(r_.maps.end(), product_.begin(), product_.end());
  ++r_.layers;
}

Rollout RolloutAccumulator::finish(std::int64_t query) && {
  r_.query = query;
  return std::move(r_);
}

std::vector<std::pair<std::int64_t, double>> rollout_top(const Rollout& r, std::int64_t l, std::int64_t q, std::int64_t k) {
  std::vector<std::pair<std::int64_t, double>> all;
  for (std::int64_t j = 0; j < r.T; ++j)
    if (r.at(l, q, j) > 0) all.emplace_back(j, r.at(l, q, j));  // (a later token of a causal model: none, so not listed)
  k = std::min<std::int64_t>(k, static_cast<std::int64_t>(all.size()));
  const auto n = static_cast<std::ptrdiff_t>(std::max<std::int64_t>(k, 0));
  std::partial_sort(all.begin(), all.begin() + n, all.end(), [](const auto& x, const auto& y) { return x.second != y.second ? x.second > y.second : x.first < y.first; });
  all.resize(static_cast<std::size_t>(n));
  return all;
}

namespace {

// "milk₂" is "milk" and a subscript: the rest of `label` after `base` is subscript digits only.
bool numbered(const std::string& label, const std::string& base) {
  if (label.size() <= base.size() || label.compare(0, base.size(), base) != 0) return false;
  for (std::size_t i = base.size(); i < label.size(); i += 3) {  // ₀ .. ₉ are E2 82 80 .. 89
    if (i + 3 > label.size()) return false;
    if (static_cast<unsigned char>(label[i]) != 0xE2 || static_cast<unsigned char>(label[i + 1]) != 0x82) return false;
    const auto d = static_cast<unsigned char>(label[i + 2]);
    if (d < 0x80 || d > 0x89) return false;
  }
  return true;
}

}  // namespace

std::int64_t rollout_query(const std::string& value, const std::vector<std::string>& labels, const std::string& option) {
  const auto T = static_cast<std::int64_t>(labels.size());
  if (!value.empty() && std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    const long long n = value.size() > 18 ? T : std::atoll(value.c_str());
    if (n >= T) throw InputError(fmt::format("{} {}: the input has {} tokens (positions 0 .. {})", option, value, T, T - 1));
    return n;
  }
  // a leading ␣ (a word's space) optional on either side
  const auto bare = [](const std::string& s) { return s.rfind("␣", 0) == 0 && s.size() > std::string("␣").size() ? s.substr(std::string("␣").size()) : s; };
  // ASCII digits after a word stand for the subscript the tokens line writes ("milk2" for "milk₂")
  std::string word = bare(value);
  if (const auto at = word.find_last_not_of("0123456789"); at != std::string::npos && at + 1 < word.size()) {
    std::string sub = word.substr(0, at + 1);
    for (std::size_t i = at + 1; i < word.size(); ++i) sub += std::string("\xE2\x82") + static_cast<char>(0x80 + (word[i] - '0'));
    for (const auto& l : labels)
      if (bare(l) == sub) word = sub;
  }
  std::vector<std::string> each;
  for (std::int64_t i = 0; i < T; ++i) {
    const std::string label = bare(labels[static_cast<std::size_t>(i)]);
    if (label == word) return i;
    if (numbered(label, word)) each.push_back(fmt::format("{} ({})", labels[static_cast<std::size_t>(i)], i));
  }
  if (!each.empty()) {
    throw InputError(fmt::format("{} {}: that token occurs {} times; name one as the tokens line numbers it, or by position: {}", option, value, each.size(),
                                 fmt::join(each, ", ")));
  }
  throw InputError(fmt::format("{} {}: expected a position (0 .. {}) or one of the input's tokens as the tokens line shows them", option, value, T - 1));
}

}  // namespace attn::model
