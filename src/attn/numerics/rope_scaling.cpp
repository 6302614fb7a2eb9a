#include "attn/numerics/rope_scaling.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attn/core/error.hpp"
#include "attn/core/suggest.hpp"

namespace attn {

RopeScaling read_rope_scaling(const nlohmann::json& j, const std::function<std::string(const std::string&)>& name,
                              const std::vector<std::string>& also) {
  auto refuse = [&](const std::string& key, const std::string& what) -> void { throw InputError(name(key) + ": " + what); };
  if (!j.is_object()) {
    refuse("", fmt::format("expected an object like {{\"rope_type\": \"llama3\", \"factor\": 32, ...}}, got {}", j.dump()));
  }
  const char* type_key = j.contains("rope_type") ? "rope_type" : "type";
  if (j.contains("rope_type") && j.contains("type") && j["rope_type"] != j["type"]) {
    refuse("type", fmt::format("{} disagrees with \"rope_type\": {}; give one of them", j["type"].dump(), j["rope_type"].dump()));
  }
  if (!j.contains(type_key) || !j[type_key].is_string()) {
    refuse("rope_type", fmt::format("expected \"default\", \"linear\" or \"llama3\" (the scaling's kind), got {}",
                                    j.contains(type_key) ? j[type_key].dump() : std::string("nothing")));
  }
  const std::string type = j[type_key].get<std::string>();
  RopeScaling s;
  std::vector<std::string> keys;  // the keys this type reads
  if (type == "default") {
    s.kind = RopeScaling::Kind::None;
  } else if (type == "linear") {
    s.kind = RopeScaling::Kind::Linear;
    keys = {"factor"};
  } else if (type == "llama3") {
    s.kind = RopeScaling::Kind::Llama3;
    keys = {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"};
  } else {
    const bool named = type == "yarn" || type == "longrope" || type == "dynamic" || type == "su" || type == "mrope";
    refuse(type_key, fmt::format("attn computes RoPE of type \"default\", \"linear\" and \"llama3\"; \"{}\" is not computed{}", type,
                                 named ? std::string() : did_you_mean(type, {"default", "linear", "llama3"})));
  }
  for (const auto& [key, value] : j.items()) {
    if (key == "rope_type" || key == "type" || std::find(keys.begin(), keys.end(), key) != keys.end() ||
        std::find(also.begin(), also.end(), key) != also.end())
      continue;
    refuse(key, fmt::format("not read with rope_type \"{}\"{}; attn refuses a key that could change the rotation rather than ignore it", type,
                            keys.empty() ? std::string() : fmt::format(" (it reads {})", fmt::join(keys, ", "))));
  }
  auto number = [&](const std::string& key, double least, bool strictly) {
    if (!j.contains(key)) refuse(key, fmt::format("required with rope_type \"{}\"", type));
    const auto& v = j[key];
    if (!v.is_number() || !std::isfinite(v.get<double>()) || (strictly ? !(v.get<double>() > least) : !(v.get<double>() >= least))) {
      refuse(key, fmt::format("expected a number {} {}, got {}", strictly ? ">" : "≥", least, v.dump()));
    }
    return v.get<double>();
  };
  if (s.kind != RopeScaling::Kind::None) s.factor = number("factor", 1, false);
  if (s.kind == RopeScaling::Kind::Llama3) {
    s.low_freq_factor = number("low_freq_factor", 0, true);
    s.high_freq_factor = number("high_freq_factor", 0, true);
    s.original = number("original_max_position_embeddings", 1, false);
    if (!(s.high_freq_factor > s.low_freq_factor)) {
      refuse("high_freq_factor", fmt::format("expected more than low_freq_factor = {}, got {}", s.low_freq_factor, s.high_freq_factor));
    }
  }
  return s;
}

}  // namespace attn
