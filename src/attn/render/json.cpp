// The whole trace as RFC 8259 JSON: a config object and the steps, each {id, title, formula, code,
// dims, shape, note, kind, data[, row_sums]}. Numbers are float32's shortest round-trip text;
// non-finite values are the strings "-inf", "inf", "nan". Written by hand so large traces stream out
// without building a document in memory; io/trace_json.cpp reads it back.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "attn/core/error.hpp"
#include "attn/io/json_text.hpp"
#include "attn/io/npy.hpp"
#include "attn/render/render.hpp"

namespace attn {

namespace {

const auto quote = json_quote;

std::string number(Scalar v) {
  if (const auto name = nonfinite_name(v)) return quote(*name);
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

void render_json(const Trace& trace, std::ostream& out, bool data_in_npy_files, const std::vector<std::size_t>& only) {
  const auto& c = trace.config;
  out << "{\n  \"format\": \"attn-trace\",\n  \"format_version\": 1,\n  \"config\": {\n";
  out << "    \"title\": " << quote(c.title) << ",\n";
  out << "    \"mode\": " << quote(mode_name(c.mode)) << ",\n";
  out << "    \"batched\": " << (c.batched ? "true" : "false") << ",\n";
  // C and hs are unknown (null) when the run starts from given scores without values.
  const auto known = [](std::int64_t v) { return v > 0 ? fmt::format("{}", v) : std::string("null"); };
  out << fmt::format("    \"B\": {}, \"T\": {}, \"S\": {}, \"C\": {}, \"H\": {}, \"hs\": {},\n", c.B, c.T, c.S,
                     known(c.C), c.H, known(c.hs));
  out << fmt::format("    \"Cs\": {}, \"dk\": {}, \"dv\": {}, \"Co\": {}, \"hv\": {},\n", known(c.Cs), known(c.dk), known(c.dv), known(c.Co),
                     known(c.hv));
  out << "    \"layout\": " << quote(layout_name(c.layout)) << ",\n";
  out << "    \"scale\": " << quote(c.scale) << ",\n";
  out << "    \"scale_factor\": " << number(c.scale_factor) << ",\n";
  out << "    \"entry\": " << quote(entry_name(c.entry)) << ",\n";
  out << "    \"causal\": " << (c.causal ? "true" : "false") << ",\n";
  out << fmt::format("    \"padding_lengths\": [{}],\n", fmt::join(c.lengths, ", "));
  if (c.Hkv != c.H) out << fmt::format("    \"kv_heads\": {},\n", c.Hkv);
  if (c.window > 0) out << fmt::format("    \"window\": {},\n", c.window);
  if (c.rope_interleaved) out << "    \"rope_interleaved\": true,\n";
  if (c.fused) out << "    \"fused\": true,\n";
  if (!c.rope_scaling.empty()) out << fmt::format("    \"rope_scaling\": {},\n    \"rope_bands\": {},\n", quote(c.rope_scaling), quote(c.rope_bands));
  if (c.learned_positions) out << "    \"learned_positions\": true,\n";
  if (c.softcap > 0) out << fmt::format("    \"softcap\": {},\n", c.softcap);
  if (!c.scale_source.empty()) out << fmt::format("    \"scale_source\": {},\n", quote(c.scale_source));
  if (!c.starts_from.empty()) out << fmt::format("    \"starts_from\": {},\n", quote(c.starts_from));
  if (!c.qk_norm.family.empty()) {
    out << fmt::format("    \"qk_norm\": {{\"family\": {}, \"whole_width\": {}, \"plus_one\": {}}},\n", quote(c.qk_norm.family),
                       c.qk_norm.whole_width, c.qk_norm.plus_one);
  }
  if (c.first_position != 0 || c.query_first_position != 0 || c.key_first_position != 0) {
    out << fmt::format("    \"first_position\": {}, \"query_first_position\": {}, \"key_first_position\": {},\n", c.first_position,
                       c.query_first_position, c.key_first_position);
  }
  out << "    \"tokens\": " << labels(c.tokens) << ",\n";
  out << "    \"source_tokens\": " << labels(c.source_tokens) << ",\n";
  if (!c.token_pieces.empty()) out << "    \"token_pieces\": " << string_list(c.token_pieces) << ",\n";
  out << "    \"notes\": " << string_list(c.notes) << "\n  },\n";
  out << "  \"steps\": [";
  bool first = true;
  for (std::size_t i = 0; i < trace.steps.size(); ++i) {
    if (!only.empty() && std::find(only.begin(), only.end(), i) == only.end()) continue;
    const auto& s = trace.steps[i];
    out << (first ? "\n" : ",\n") << "    {\n";
    first = false;
    out << "      \"id\": " << quote(s.id) << ",\n";
    out << "      \"title\": " << quote(s.title) << ",\n";
    out << "      \"formula\": " << quote(s.formula) << ",\n";
    out << "      \"code\": " << quote(s.code) << ",\n";
    std::vector<std::string> dims;
    for (const Dim d : s.dims) dims.emplace_back(dim_name(d));
    out << "      \"dims\": " << string_list(dims) << ",\n";
    out << fmt::format("      \"shape\": [{}],\n", fmt::join(s.value.shape(), ", "));
    out << "      \"note\": " << quote(s.note) << ",\n";
    out << "      \"kind\": " << (s.kind == ValueKind::Mask ? "\"mask\"" : s.kind == ValueKind::Index ? "\"index\"" : "\"real\"") << ",\n";
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
