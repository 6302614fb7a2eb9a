// The helpers explain.cpp and explain_cell.cpp share.
#include <fmt/format.h>

#include "attn/explain_detail.hpp"

namespace attn::explain_detail {

std::string q(const std::string& s) { return fmt::format("\"{}\"", s); }

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

}  // namespace attn::explain_detail
