// render/json.cpp's trace JSON read back with nlohmann/json: the whole config and every step, so
// that writing the result again gives the same bytes; "npy" steps from the trace's directory.
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <istream>
#include <nlohmann/json.hpp>

#include "attn/core/error.hpp"
#include "attn/io/json_text.hpp"
#include "attn/io/npy.hpp"
#include "attn/io/trace_io.hpp"

namespace attn {

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
