// The model families attn reads, looked up by config.json's "model_type". Adding a family is one new
// file here (`const ModelFamily& NAME()` in attn::model::family, as gpt2.cpp) named in attn_lib's
// sources, and one line X(NAME) in registry.cpp's ATTN_FAMILIES; test_families.cpp then asks for its docs row.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "attn/model/families/family.hpp"

namespace attn::model {

// Every family, in the order messages name them.
const std::vector<const ModelFamily*>& model_families();
// The family answering to model_type; null when none does.
const ModelFamily* find_family(std::string_view model_type);
// config.json's family (config an object): its "model_type" required, a string, and one of the
// families' (else InputError naming origin, with a suggestion for a near miss).
const ModelFamily& family_of(const nlohmann::json& config, const std::string& origin);

}  // namespace attn::model
