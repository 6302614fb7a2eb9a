// The registry: every family's file registered by one line of ATTN_FAMILIES, and the lookup by
// config.json's "model_type" with its refusals. What each family reads and computes is in its file.
#include "attn/model/families/registry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "attn/core/error.hpp"
#include "attn/core/suggest.hpp"

// One line a family, in the order messages name them.
#define ATTN_FAMILIES(X) \
  X(gpt2)                \
  X(llama)               \
  X(mistral)             \
  X(qwen2)               \
  X(qwen3)               \
  X(phi3)                \
  X(gemma2)              \
  X(gemma3_text)         \
  X(gemma3)              \
  X(olmo2)               \
  X(bert)                \
  X(roberta)             \
  X(distilbert)          \
  X(bart)                \
  X(marian)              \
  X(t5)

namespace attn::model {

namespace family {
#define ATTN_DECLARE_FAMILY(name) const ModelFamily& name();
ATTN_FAMILIES(ATTN_DECLARE_FAMILY)
#undef ATTN_DECLARE_FAMILY
}  // namespace family

const std::vector<const ModelFamily*>& model_families() {
#define ATTN_LIST_FAMILY(name) &family::name(),
  static const std::vector<const ModelFamily*> all = {ATTN_FAMILIES(ATTN_LIST_FAMILY)};
#undef ATTN_LIST_FAMILY
  return all;
}

const ModelFamily* find_family(std::string_view model_type) {
  for (const ModelFamily* f : model_families())
    if (f->model_type == model_type) return f;
  return nullptr;
}

const ModelFamily& family_of(const nlohmann::json& config, const std::string& origin) {
  std::vector<std::string_view> types;
  for (const ModelFamily* f : model_families()) types.push_back(f->model_type);
  if (!config.contains("model_type") || !config["model_type"].is_string()) {
    throw InputError(fmt::format("{}: \"model_type\" is {}: expected one of \"{}\"", origin,
                                 config.contains("model_type") ? "not a string (" + config["model_type"].dump() + ")" : "required",
                                 fmt::join(types, "\", \"")));
  }
  const std::string type = config["model_type"].get<std::string>();
  if (const ModelFamily* f = find_family(type)) return *f;
  // an older family whose name is close to a newer one's is another architecture, not a typo
  static const std::vector<std::string_view> kOther = {"gemma", "olmo", "qwen", "phi", "phi3small", "qwen2_moe", "qwen3_moe", "mixtral",
                                                        "gpt_neox", "gptj", "falcon", "mpt", "bloom", "opt", "stablelm", "starcoder2"};
  const bool other = std::find(kOther.begin(), kOther.end(), type) != kOther.end();
  throw InputError(fmt::format("{}: \"model_type\": attn reads \"{}\", got \"{}\"{}", origin, fmt::join(types, "\", \""), type,
                               other ? " (an architecture of its own, which attn does not read)" : did_you_mean(type, types)));
}

}  // namespace attn::model
