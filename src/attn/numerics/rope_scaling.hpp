// RoPE's frequency scaling as written in JSON: an input's "rope": {"scaling": {...}} and a checkpoint
// config's "rope_scaling" / "rope_parameters" share this reader, so both accept and refuse the same.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attn/numerics/position_tables.hpp"

namespace attn {

// j: {"rope_type" (or the older "type"): "default" | "linear" | "llama3", and that type's keys}.
// name(key) is how a message names one of j's keys ("" for j itself). `also` are keys read elsewhere
// (rope_parameters' "rope_theta"). Every other key is refused, and so are the types attn does not
// compute (yarn, longrope, dynamic, ...), by name: exit 2, never a plain RoPE in their place.
RopeScaling read_rope_scaling(const nlohmann::json& j, const std::function<std::string(const std::string&)>& name,
                              const std::vector<std::string>& also = {});

}  // namespace attn
