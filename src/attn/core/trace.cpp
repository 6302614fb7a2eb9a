// Labels for positions in a trace's tensors, shared by every report that names an entry.
#include "attn/core/trace.hpp"

#include <fmt/format.h>

namespace attn {

std::string axis_label(const TraceConfig& c, Dim dim, std::int64_t index, std::int64_t b) {
  const Labels* labels = dim == Dim::T ? &c.tokens : dim == Dim::S ? &c.source_tokens : nullptr;
  if (labels != nullptr && !labels->empty()) {
    const auto& row = (*labels)[labels->size() == 1 ? 0 : static_cast<std::size_t>(b)];
    if (index >= 0 && index < static_cast<std::int64_t>(row.size())) return row[static_cast<std::size_t>(index)];
  }
  if (dim == Dim::H) return fmt::format("h{}", index);
  if (dim == Dim::Hkv) return fmt::format("kv{}", index);
  if (dim == Dim::P) return fmt::format("p{}", c.first_position + index);
  return fmt::format("{}", index);
}

std::string distinct_axis_label(const TraceConfig& c, Dim dim, std::int64_t index, std::int64_t b) {
  const std::string label = axis_label(c, dim, index, b);
  const Labels* labels = dim == Dim::T ? &c.tokens : dim == Dim::S ? &c.source_tokens : nullptr;
  if (labels == nullptr || labels->empty()) return label;
  const auto& row = (*labels)[labels->size() == 1 ? 0 : static_cast<std::size_t>(b)];
  std::int64_t occurrence = 0, total = 0;
  for (std::size_t i = 0; i < row.size(); ++i) {
    if (row[i] != label) continue;
    ++total;
    if (static_cast<std::int64_t>(i) <= index) ++occurrence;
  }
  return total < 2 ? label : label + subscript(occurrence);
}

std::string subscript(std::int64_t n) {
  std::string sub;
  for (char d : std::to_string(n)) sub += std::string("\xE2\x82") + static_cast<char>(0x80 + (d - '0'));  // ₀ … ₉ are U+2080 … U+2089
  return sub;
}

std::string widths_text(const TraceConfig& c, std::string_view sep) {
  const std::string kv = c.Hkv != c.H ? fmt::format("{}Hkv = {}", sep, c.Hkv) : "";
  if (c.C <= 0) return fmt::format("H = {}", c.H);
  if (!c.general) return fmt::format("C = {1}{0}H = {2}{4}{0}hs = {3}", sep, c.C, c.H, c.hs, kv);
  std::string out = fmt::format("C = {}", c.C);
  if (c.mode == Mode::Cross) out += fmt::format("{}Cs = {}", sep, c.Cs);
  return out + fmt::format("{0}dk = {1}{0}dv = {2}{0}Co = {3}{0}H = {4}{7}{0}hs = {5}{0}hv = {6}", sep, c.dk, c.dv, c.Co, c.H, c.hs, c.hv, kv);
}

std::string position_label(const TraceConfig& c, const Dims& dims, const Shape& shape, std::int64_t flat) {
  std::vector<std::int64_t> idx(shape.size());
  for (std::size_t a = shape.size(); a-- > 0;) {
    idx[a] = flat % shape[a];
    flat /= shape[a];
  }
  std::int64_t b = 0;
  for (std::size_t a = 0; a < dims.size() && a < idx.size(); ++a)
    if (dims[a] == Dim::B) b = idx[a];
  std::vector<std::string> parts;
  const std::size_t n = std::min(dims.size(), idx.size());
  // With two token axes (scores, weights) the first is the query and the second the key; a single
  // token axis (x, q, k, v rows) is just a token.
  int token_axes = 0;
  for (std::size_t a = 0; a < n; ++a) token_axes += is_token_axis(dims[a]) ? 1 : 0;
  int seen = 0;
  for (std::size_t a = 0; a < n; ++a) {
    const Dim d = dims[a];
    if (d == Dim::B) parts.push_back(fmt::format("batch {}", idx[a]));
    else if (d == Dim::H) parts.push_back(fmt::format("head {}", idx[a]));
    else if (d == Dim::Hkv) parts.push_back(fmt::format("kv head {}", idx[a]));
    else if (is_token_axis(d)) {
      const char* role = token_axes < 2 ? "token" : (seen++ == 0 ? "query" : "key");
      parts.push_back(fmt::format("{} \"{}\"", role, distinct_axis_label(c, d, idx[a], b)));
    } else {
      parts.push_back(fmt::format("{} {}", d, idx[a]));
    }
  }
  return fmt::format("[{}] ({})", fmt::join(idx, ", "), fmt::join(parts, ", "));
}

const Step* blocking_step(const Trace& trace, const Step& step) {
  if (step.kind == ValueKind::Mask) return nullptr;
  const Step* masked = trace.find("masked");
  // the same axes, not only the same sizes: x [T, C] is no score matrix when C happens to equal T
  return masked != nullptr && masked->value.shape() == step.value.shape() && masked->dims == step.dims ? masked : nullptr;
}

}  // namespace attn
