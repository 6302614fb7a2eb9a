// The whole trace as RFC 8259 JSON, written and read back: a config object and the steps, each
// {id, title, formula, code, dims, shape, note, kind, data[, row_sums]}. Numbers are float32's shortest
// round-trip text; non-finite values are the strings "-inf", "inf", "nan". Written by hand so large
// traces stream out without building a document in memory; read with nlohmann/json.
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


namespace {

using json = nlohmann::json;

Labels labels_of(const json& j) {
  if (!j.is_array() || j.empty()) return {};
  if (j[0].is_array()) return j.get<Labels>();
  return {j.get<std::vector<std::string>>()};
}

void flatten(const json& j, std::vector<Scalar>& out, const std::string& where) {
  if (j.is_array()) {
    for (const auto& e : j) flatten(e, out, where);
  } else if (j.is_number()) {
    out.push_back(static_cast<Scalar>(j.get<double>()));
  } else if (const auto v = j.is_string() ? nonfinite_value(j.get<std::string>()) : std::nullopt) {
    out.push_back(static_cast<Scalar>(*v));
  } else {
    throw InputError(fmt::format("{}: expected numbers in data, got {}", where, j.dump()));
  }
}

Tensor tensor_of(const json& j, const Shape& shape, const std::string& where) {
  std::vector<Scalar> values;
  flatten(j, values, where);
  if (element_count(shape) != static_cast<std::int64_t>(values.size())) {
    throw InputError(fmt::format("{}: shape {} does not hold {} values", where, shape_string(shape), values.size()));
  }
  return Tensor(shape, values);
}

TraceConfig config_of(const json& cj) {
  TraceConfig c;
  c.title = cj.value("title", "");
  c.mode = mode_from_name(cj.value("mode", "")).value_or(Mode::Self);
  c.batched = cj.value("batched", false);
  auto size = [&](const char* key, std::int64_t fallback) {
    return cj.contains(key) && cj[key].is_number_integer() ? cj[key].get<std::int64_t>() : fallback;
  };
  c.B = size("B", 1), c.T = size("T", 0), c.S = size("S", 0), c.C = size("C", 0), c.H = size("H", 1), c.hs = size("hs", 0);
  c.Cs = size("Cs", c.C), c.dk = size("dk", c.C), c.dv = size("dv", c.C), c.Co = size("Co", c.C), c.hv = size("hv", c.hs);
  c.general = c.Cs != c.C || c.dk != c.C || c.dv != c.C || c.Co != c.C;
  c.layout = layout_from_name(cj.value("layout", "")).value_or(Layout::XW);
  c.scale = cj.value("scale", "");
  if (cj.contains("scale_factor")) {
    const auto& f = cj["scale_factor"];
    c.scale_factor = f.is_number() ? f.get<Scalar>() : static_cast<Scalar>(nonfinite_value(f.get<std::string>()).value_or(1));
  }
  c.entry = entry_from_name(cj.value("entry", "")).value_or(Entry::Embeddings);
  c.causal = cj.value("causal", false);
  c.lengths = cj.value("padding_lengths", std::vector<std::int64_t>{});
  c.window = size("window", 0);
  c.Hkv = size("kv_heads", c.H);
  c.rope_interleaved = cj.value("rope_interleaved", false);
  c.fused = cj.value("fused", false);
  c.rope_scaling = cj.contains("rope_scaling") && cj["rope_scaling"].is_string() ? cj["rope_scaling"].get<std::string>() : "";
  c.rope_bands = cj.contains("rope_bands") && cj["rope_bands"].is_string() ? cj["rope_bands"].get<std::string>() : "";
  c.learned_positions = cj.value("learned_positions", false);
  c.softcap = cj.contains("softcap") && cj["softcap"].is_number() ? cj["softcap"].get<Scalar>() : 0;
  c.scale_source = cj.contains("scale_source") && cj["scale_source"].is_string() ? cj["scale_source"].get<std::string>() : "";
  c.starts_from = cj.contains("starts_from") && cj["starts_from"].is_string() ? cj["starts_from"].get<std::string>() : "";
  if (cj.contains("qk_norm") && cj["qk_norm"].is_object()) {
    const json& q = cj["qk_norm"];
    c.qk_norm = {q.value("family", std::string()), q.value("whole_width", false), q.value("plus_one", false)};
  }
  c.first_position = size("first_position", 0);
  c.query_first_position = size("query_first_position", 0);
  c.key_first_position = size("key_first_position", 0);
  c.tokens = labels_of(cj.value("tokens", json()));
  c.source_tokens = labels_of(cj.value("source_tokens", json()));
  if (cj.contains("token_pieces") && cj["token_pieces"].is_array())
    for (const auto& p : cj["token_pieces"]) c.token_pieces.push_back(p.is_string() ? p.get<std::string>() : "");
  c.notes = cj.value("notes", std::vector<std::string>{});
  return c;
}

}  // namespace

Trace read_json_trace(std::istream& in, const std::string& origin, bool metadata_only) {
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: not a JSON trace: {}", origin, e.what()));
  }
  if (!doc.is_object() || doc.value("format", "") != "attn-trace" || !doc.contains("steps") || !doc["steps"].is_array()) {
    throw InputError(fmt::format("{}: not an attn trace (expected the output of attn run --format json)", origin));
  }
  Trace t;
  try {
    if (doc.contains("config") && doc["config"].is_object()) t.config = config_of(doc["config"]);
    for (const auto& sj : doc["steps"]) {
      Step s;
      s.id = sj.value("id", "");
      const auto where = fmt::format("{}: step {}", origin, s.id);
      s.title = sj.value("title", "");
      s.formula = sj.value("formula", "");
      s.code = sj.value("code", "");
      s.note = sj.value("note", "");
      s.kind = sj.value("kind", "") == "mask" ? ValueKind::Mask : sj.value("kind", "") == "index" ? ValueKind::Index : ValueKind::Real;
      for (const auto& d : sj.value("dims", std::vector<std::string>{})) {
        if (const auto dim = dim_from_name(d)) s.dims.push_back(*dim);
      }
      const Shape shape = sj.value("shape", Shape{});
      if (s.dims.size() != shape.size()) s.dims.clear();  // letters this version does not know
      if (metadata_only) {
        s.value = Tensor::shape_only(shape);
      } else if (sj.contains("npy") && sj["npy"].is_string()) {
        // a --dump trace.json: the values are in the .npy file beside it
        const auto file = (std::filesystem::path(origin).parent_path() / sj["npy"].get<std::string>()).string();
        s.value = read_npy(file, where, NonFinite::Allow);
        if (s.value.shape() != shape) {
          throw InputError(fmt::format("{}: {} holds {}, the trace says {}", where, file, shape_string(s.value.shape()), shape_string(shape)));
        }
      } else {
        s.value = tensor_of(sj.value("data", json()), shape, where);
      }
      if (!metadata_only && sj.contains("row_sums")) {
        Shape rows = shape;
        if (!rows.empty()) rows.pop_back();
        s.row_sums = tensor_of(sj["row_sums"], rows, where + " row_sums");
      }
      t.steps.push_back(std::move(s));
    }
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: not an attn trace: {}", origin, e.what()));
  }
  return t;
}

}  // namespace attn
