// What the config.json readers share (architecture.cpp, architecture_seq2seq.cpp).
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "attn/core/error.hpp"
#include "attn/model/architectures/checkpoint.hpp"

namespace attn::model::detail {

using json = nlohmann::json;

// config[key] as a positive integer; `fallback` when absent or null (none: required).
inline std::int64_t positive(const json& c, const std::string& origin, const char* key, std::optional<std::int64_t> fallback = std::nullopt) {
  if (!c.contains(key) || c[key].is_null()) {
    if (fallback) return *fallback;
    throw InputError(fmt::format("{}: \"{}\" is required: a positive integer", origin, key));
  }
  const json& v = c[key];
  if (!v.is_number_integer() || v.get<std::int64_t>() <= 0 || v.get<std::int64_t>() > (std::int64_t{1} << 40)) {
    throw InputError(fmt::format("{}: \"{}\": expected a positive integer, got {}", origin, key, v.dump()));
  }
  return v.get<std::int64_t>();
}

inline double positive_number(const json& c, const std::string& origin, const char* key, double fallback) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  const json& v = c[key];
  if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>())) {
    throw InputError(fmt::format("{}: \"{}\": expected a positive number, got {}", origin, key, v.dump()));
  }
  return v.get<double>();
}

// An architecture of family f, before its config is read: its model_type, features, layout and blocks.
inline Architecture of_family(const ModelFamily& f) {
  Architecture a;
  a.model_type = f.model_type;
  a.features = &f;
  a.family = f.kind;
  a.block = f.block;
  return a;
}

}  // namespace attn::model::detail
