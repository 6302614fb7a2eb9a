// The helpers explain.cpp, explain_backward.cpp and explain_cell.cpp share.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "attn/tools/explain_detail.hpp"

namespace attn::explain_detail {

std::string q(const std::string& s) { return fmt::format("\"{}\"", s); }

std::string signed_num(double v, int decimals) {
  if (std::isinf(v)) return v < 0 ? "−∞" : "+∞";
  if (std::isnan(v)) return "nan";
  std::string t = fmt::format("{:.{}f}", std::fabs(v), decimals);
  // a negative that rounds to zero prints as 0, with no sign
  return v < 0 && t.find_first_not_of("0.") != std::string::npos ? "−" + t : t;
}

std::string signed_operand(double v, int decimals) {
  const std::string t = signed_num(v, decimals);
  return t.starts_with("−") ? "(" + t + ")" : t;
}

// The step holding the heads-first rows of q or k ("q.heads"), or the flat one when H = 1.
const Step* rows_step(const Trace& t, const char* heads, const char* flat) {
  const Step* s = t.find(heads);
  return s != nullptr ? s : t.find(flat);
}

// One head row x (h features) turned by table row p of rope.cos and rope.sin, in double: what
// q.rope and k.rope do, for showing the same vectors at other positions.
std::vector<double> rotated(const Scalar* x, std::int64_t h, const Step& cos, const Step& sin, std::int64_t p, bool interleaved) {
  const auto pairs = cos.value.shape().back();
  std::vector<double> out(x, x + h);
  for (std::int64_t i = 0; i < pairs; ++i) {
    const std::int64_t u = interleaved ? 2 * i : i, w = interleaved ? u + 1 : i + pairs;
    const double c = cos.value.at(p * pairs + i), s = sin.value.at(p * pairs + i);
    out[static_cast<std::size_t>(u)] = x[u] * c - x[w] * s;
    out[static_cast<std::size_t>(w)] = x[w] * c + x[u] * s;
  }
  return out;
}

std::int64_t block_offset(const Step& s, const ExplainBlock& b) {
  const auto& shape = s.value.shape();
  std::int64_t offset = 0, stride = 1;
  for (std::size_t ax = shape.size(); ax-- > 0;) {
    if (ax + 2 < shape.size() && ax < s.dims.size()) {
      const Dim d = s.dims[ax];
      const std::int64_t i = d == Dim::B ? b.batch : d == Dim::H ? b.head : 0;
      offset += std::min(i, shape[ax] - 1) * stride;
    }
    stride *= shape[ax];
  }
  return offset;
}

Row pick_row(const Step& s, const ExplainBlock& block) {
  const auto& shape = s.value.shape();
  const auto S = shape.back(), T = shape[shape.size() - 2];
  Row r;
  const std::int64_t base = block_offset(s, block);
  r.batch = block.batch, r.head = block.head;
  r.values = s.value.data() + base;
  // weights: a row of zeros (every key blocked, masked_row zeros) shows nothing; fall back on the first row with any weight
  const bool weights = s.id == "weights";
  bool placed = false;
  for (std::int64_t i = 0; i < T; ++i) {
    const Scalar* row = s.value.data() + base + i * S;
    const Scalar top = *std::max_element(row, row + S);
    if (weights && top > 0 && !placed) r.query = i, r.values = row, placed = true;
    if (top < 0.999f && (!weights || top > 0)) {
      r.query = i;
      r.values = row;
      break;
    }
  }
  return r;
}

std::string block_prefix(const Step& s, const ExplainBlock& block) {
  std::vector<std::string> parts;
  for (const auto& d : s.dims) {
    if (d == Dim::B) parts.push_back(fmt::format("batch row {}", block.batch));
    if (d == Dim::H) parts.push_back(fmt::format("head {}", block.head));
  }
  return parts.empty() ? "" : fmt::format("In {}, ", fmt::join(parts, ", "));
}

// distinct: a token that occurs twice is "the₁" and "the₂", as the tables name its rows
std::string tok(const Trace& t, const ExplainBlock& b, std::int64_t i) {
  const auto& c = t.config;
  // a decoded query (a KV-cache step: its T queries are the last of the S keys) is named as its key is, "the₂" where the
  // cache holds "the" twice: its own label alone cannot say which
  const std::int64_t k = c.S - c.T + i;  // the cache ends with the new tokens
  if (t.find("k.cache") != nullptr && c.mode != Mode::Cross && c.T < c.S && k >= 0 && k < c.S) return q(distinct_axis_label(c, Dim::S, k, b.batch));
  return q(distinct_axis_label(c, Dim::T, i, b.batch));
}

MaskFacts mask_facts(const Trace& t) {
  MaskFacts m;
  m.masked = t.find("masked");
  if (m.masked == nullptr) return m;
  m.additive = t.find("mask.add") != nullptr;
  for (const char* id : {"capped", "biased", "scaled", "scores"}) {
    if (const Step* s = t.find(id)) {
      if (s->value.shape() == m.masked->value.shape()) m.before = s;
      break;
    }
  }
  const auto& v = m.masked->value;
  const auto S = v.shape().back(), rows = S > 0 ? v.size() / S : 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t in_row = 0;
    for (std::int64_t j = 0; j < S; ++j) {
      if (!blocked_cell(m, r * S + j)) continue;
      ++in_row;
      if (m.blocked++ == 0) m.fill = v.at(r * S + j);
    }
    if (in_row == S && m.empty_row < 0) m.empty_row = r;
  }
  return m;
}

bool blocked_cell(const MaskFacts& m, std::int64_t at) {
  if (m.masked == nullptr) return false;
  const Scalar x = m.masked->value.at(at);
  if (x == -std::numeric_limits<Scalar>::infinity()) return true;
  // a finite fill replaces the score; an additive mask changes every cell, so only −inf tells there
  return !m.additive && m.before != nullptr && x != m.before->value.at(at);
}

}  // namespace attn::explain_detail
