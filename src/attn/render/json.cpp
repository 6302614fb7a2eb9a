// The whole trace as RFC 8259 JSON: a config object and the steps, each {id, title, formula, dims,
// shape, note, kind, data[, row_sums]}. Numbers are float32's shortest round-trip text; non-finite
// values are the strings "-inf", "inf", "nan". Written by hand so large traces stream out without
// building a document in memory.
#include <fmt/format.h>

#include <cmath>

#include "attn/render/render.hpp"

namespace attn {

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) out += fmt::format("\\u{:04x}", c);
        else out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

namespace {

const auto quote = json_quote;

std::string number(Scalar v) {
  if (std::isnan(v)) return "\"nan\"";
  if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
  if (v == 0) return "0";  // also for -0
  return fmt::format("{}", v);
}

std::string string_list(const std::vector<std::string>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + quote(v[i]);
  return out + "]";
}

std::string labels(const Labels& l) {
  if (l.size() == 1) return string_list(l[0]);
  std::string out = "[";
  for (std::size_t i = 0; i < l.size(); ++i) out += (i ? ", " : "") + string_list(l[i]);
  return out + "]";
}

// Nested arrays; the innermost rows each on one line.
void nested(std::ostream& out, const Tensor& t, std::size_t axis, std::int64_t& at, int indent) {
  const auto& shape = t.shape();
  if (shape.empty()) {
    out << number(t.data()[0]);
    return;
  }
  const auto n = shape[axis];
  if (axis + 1 == shape.size()) {
    out << "[";
    for (std::int64_t i = 0; i < n; ++i) out << (i ? ", " : "") << number(t.data()[at++]);
    out << "]";
    return;
  }
  const std::string pad(static_cast<std::size_t>(indent + 2), ' ');
  out << "[\n";
  for (std::int64_t i = 0; i < n; ++i) {
    out << pad;
    nested(out, t, axis + 1, at, indent + 2);
    out << (i + 1 < n ? ",\n" : "\n");
  }
  out << std::string(static_cast<std::size_t>(indent), ' ') << "]";
}

}  // namespace

void render_json(const Trace& trace, std::ostream& out, bool data_in_npy_files) {
  const auto& c = trace.config;
  out << "{\n  \"format\": \"attn-trace\",\n  \"format_version\": 1,\n  \"config\": {\n";
  out << "    \"title\": " << quote(c.title) << ",\n";
  out << "    \"mode\": " << quote(c.mode) << ",\n";
  out << "    \"batched\": " << (c.batched ? "true" : "false") << ",\n";
  // C and hs are unknown (null) when the run starts from given scores without values.
  const auto known = [](std::int64_t v) { return v > 0 ? fmt::format("{}", v) : std::string("null"); };
  out << fmt::format("    \"B\": {}, \"T\": {}, \"S\": {}, \"C\": {}, \"H\": {}, \"hs\": {},\n", c.B, c.T, c.S,
                     known(c.C), c.H, known(c.hs));
  out << "    \"layout\": " << quote(c.layout) << ",\n";
  out << "    \"scale\": " << quote(c.scale) << ",\n";
  out << "    \"scale_factor\": " << number(c.scale_factor) << ",\n";
  out << "    \"entry\": " << quote(c.entry) << ",\n";
  out << "    \"causal\": " << (c.causal ? "true" : "false") << ",\n";
  out << fmt::format("    \"padding_lengths\": [{}],\n", fmt::join(c.lengths, ", "));
  out << "    \"tokens\": " << labels(c.tokens) << ",\n";
  out << "    \"source_tokens\": " << labels(c.source_tokens) << ",\n";
  out << "    \"notes\": " << string_list(c.notes) << "\n  },\n";
  out << "  \"steps\": [";
  for (std::size_t i = 0; i < trace.steps.size(); ++i) {
    const auto& s = trace.steps[i];
    out << (i ? ",\n" : "\n") << "    {\n";
    out << "      \"id\": " << quote(s.id) << ",\n";
    out << "      \"title\": " << quote(s.title) << ",\n";
    out << "      \"formula\": " << quote(s.formula) << ",\n";
    out << "      \"dims\": " << string_list(s.dims) << ",\n";
    out << fmt::format("      \"shape\": [{}],\n", fmt::join(s.value.shape(), ", "));
    out << "      \"note\": " << quote(s.note) << ",\n";
    out << "      \"kind\": " << (s.kind == ValueKind::Mask ? "\"mask\"" : "\"real\"") << ",\n";
    std::int64_t at = 0;
    if (data_in_npy_files) {
      out << "      \"npy\": " << quote(s.id + ".npy");
    } else {
      out << "      \"data\": ";
      nested(out, s.value, 0, at, 6);
    }
    if (s.row_sums) {
      out << ",\n      \"row_sums\": ";
      at = 0;
      nested(out, *s.row_sums, 0, at, 6);
    }
    out << "\n    }";
  }
  out << "\n  ]\n}\n";
}

}  // namespace attn
