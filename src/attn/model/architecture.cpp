// config.json, read: each architecture's keys (sizes, RoPE, windows, norms), every other key either
// known to change nothing, refused as another family's setting, or named in a note as not read.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "attn/error.hpp"
#include "attn/model/checkpoint.hpp"
#include "attn/spec/rope_scaling.hpp"
#include "attn/suggest.hpp"

namespace attn::model {

using json = nlohmann::json;

namespace {

// config[key] as a positive integer; `fallback` when absent or null (none: required).
std::int64_t positive(const json& c, const std::string& origin, const char* key, std::optional<std::int64_t> fallback = std::nullopt) {
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

double positive_number(const json& c, const std::string& origin, const char* key, double fallback) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  const json& v = c[key];
  if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>())) {
    throw InputError(fmt::format("{}: \"{}\": expected a positive number, got {}", origin, key, v.dump()));
  }
  return v.get<double>();
}

// RoPE's base and scaling, in either of the forms config.json files have: top-level "rope_theta"
// with "rope_scaling", or (the model library's newer form) "rope_parameters" holding "rope_theta",
// "rope_type" and the scaling's keys. Given twice, they must agree; a theta read from neither is
// Llama's 10000 (the older configs that leave it out mean that).
void read_rope(const json& c, const std::string& origin, Architecture& a) {
  const bool has_params = c.contains("rope_parameters") && !c["rope_parameters"].is_null();
  const bool has_scaling = c.contains("rope_scaling") && !c["rope_scaling"].is_null();
  auto key_name = [&origin](const std::string& base) {
    return [&origin, base](const std::string& key) { return fmt::format("{}: \"{}{}\"", origin, base, key.empty() ? "" : "." + key); };
  };
  a.rope_theta = positive_number(c, origin, "rope_theta", 10000);
  if (has_scaling && has_params) {
    throw InputError(fmt::format("{}: \"rope_scaling\" and \"rope_parameters\" are both given; one of them says how RoPE is scaled", origin));
  }
  if (has_scaling) a.rope_scaling = read_rope_scaling(c["rope_scaling"], key_name("rope_scaling"));
  if (has_params) {
    const json& p = c["rope_parameters"];
    a.rope_scaling = read_rope_scaling(p, key_name("rope_parameters"), {"rope_theta"});
    if (p.contains("rope_theta")) {
      const double theta = positive_number(p, origin + ": \"rope_parameters\"", "rope_theta", 10000);
      if (c.contains("rope_theta") && !c["rope_theta"].is_null() && c["rope_theta"].get<double>() != theta) {
        throw InputError(fmt::format("{}: \"rope_theta\" = {} and \"rope_parameters.rope_theta\" = {} disagree", origin, c["rope_theta"].dump(),
                                     p["rope_theta"].dump()));
      }
      a.rope_theta = theta;
    }
  }
}

// Every key of config.json is read above, known to change nothing attn computes (dropout, ids of
// special tokens, the language-model head, training settings), refused (a setting of another family
// that changes attention or the residual stream), or named in a note as not read.
void check_every_key(const json& c, const std::string& origin, Architecture& a) {
  static const std::vector<std::string_view> gpt2_read = {"model_type", "n_embd", "n_head", "n_layer", "n_positions", "vocab_size", "n_inner",
                                                          "layer_norm_epsilon", "scale_attn_weights", "scale_attn_by_inverse_layer_idx",
                                                          "activation_function", "bos_token_id"};
  static const std::vector<std::string_view> llama_read = {
      "model_type",      "hidden_size",    "num_attention_heads", "num_key_value_heads", "head_dim",     "num_hidden_layers",
      "vocab_size",      "intermediate_size", "max_position_embeddings", "rms_norm_eps", "rope_theta",     "rope_scaling",
      "rope_parameters", "hidden_act",     "sliding_window",      "use_sliding_window",  "max_window_layers", "mlp_bias",
      "attention_bias",  "bos_token_id",   "original_max_position_embeddings"};
  // known to change nothing attn computes: the forward pass in float32 up to one layer's attention
  static const std::vector<std::string_view> no_effect = {
      "architectures", "_name_or_path", "transformers_version", "torch_dtype", "dtype", "use_cache", "initializer_range", "eos_token_id",
      "pad_token_id", "tie_word_embeddings", "attention_dropout", "attn_pdrop", "embd_pdrop", "resid_pdrop", "summary_activation",
      "summary_first_dropout", "summary_proj_to_labels", "summary_type", "summary_use_proj", "task_specific_params", "n_ctx",
      "reorder_and_upcast_attn", "pretraining_tp", "tokenizer_class", "output_past", "id2label", "label2id", "gradient_checkpointing",
      "return_dict", "is_decoder", "use_return_dict", "decoder_start_token_id"};
  // settings of other families that change attention or the residual stream: refused where they are set
  static const std::vector<std::string_view> other_families = {
      "attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar", "sliding_window_pattern", "layer_types",
      "partial_rotary_factor", "rope_local_base_freq", "use_qk_norm", "qk_layernorm", "qk_norm", "embedding_multiplier",
      "attention_multiplier", "residual_multiplier", "logits_scaling", "add_cross_attention", "clip_qkv", "use_parallel_residual",
      "rotary_pct", "parallel_attn", "alibi", "new_decoder_architecture", "hidden_activation", "post_norm", "use_bias"};
  const auto& read = a.family == Family::Gpt2 ? gpt2_read : llama_read;
  auto in = [](const std::vector<std::string_view>& list, const std::string& k) { return std::find(list.begin(), list.end(), k) != list.end(); };
  for (const auto& [key, value] : c.items()) {
    if (in(read, key) || in(no_effect, key)) continue;
    if (in(other_families, key)) {
      // set to nothing, or to what changes nothing, it is no setting
      const bool unset = value.is_null() || value == false || (key == "partial_rotary_factor" && value == 1.0) ||
                         (key == "layer_types" && value.is_array() &&
                          std::all_of(value.begin(), value.end(), [&](const json& t) { return t == (a.window > 0 ? "sliding_attention" : "full_attention"); }));
      if (unset) continue;
      throw InputError(fmt::format("{}: \"{}\": {} is a setting of another model family, which changes attention or the layers around "
                                   "it; attn's {} checkpoint reader does not compute it, and refuses it rather than ignore it",
                                   origin, key, value.dump(), a.name()));
    }
    a.unread.push_back(key);
  }
  // Qwen2's and Qwen3's window covers only the layers from max_window_layers on: attn windows every layer or none
  if ((a.model_type == "qwen2" || a.model_type == "qwen3") && a.window > 0) {
    std::int64_t first = 28;  // Qwen2Config's default
    if (c.contains("max_window_layers") && !c["max_window_layers"].is_null()) {
      const json& v = c["max_window_layers"];
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0) {
        throw InputError(fmt::format("{}: \"max_window_layers\": expected an integer ≥ 0, got {}", origin, v.dump()));
      }
      first = v.get<std::int64_t>();
    }
    if (first >= a.layers) a.window = 0;  // no layer reaches it: no window anywhere
    else if (first > 0) {
      throw InputError(fmt::format("{}: \"use_sliding_window\": true windows only layers {} and on (\"max_window_layers\"); attn computes a "
                                   "window on every layer or none",
                                   origin, first));
    }
  }
}

}  // namespace

std::string Architecture::name() const {
  if (model_type == "gpt2") return "GPT-2";
  if (model_type == "llama") return "Llama";
  if (model_type == "mistral") return "Mistral";
  if (model_type == "qwen3") return "Qwen3";
  if (model_type == "phi3") return "Phi-3";
  return "Qwen2";
}

Architecture read_architecture(const json& c, const std::string& origin) {
  if (!c.is_object()) throw InputError(fmt::format("{}: expected a JSON object (config.json's content), got {}", origin, c.type_name()));
  if (!c.contains("model_type") || !c["model_type"].is_string()) {
    throw InputError(fmt::format("{}: \"model_type\" is {}: expected \"gpt2\", \"llama\", \"mistral\", \"qwen2\", \"qwen3\" or \"phi3\"", origin,
                                 c.contains("model_type") ? "not a string (" + c["model_type"].dump() + ")" : "required"));
  }
  Architecture a;
  a.model_type = c["model_type"].get<std::string>();
  if (a.model_type == "gpt2") {
    a.family = Family::Gpt2;
    a.C = positive(c, origin, "n_embd");
    a.H = a.Hkv = positive(c, origin, "n_head");
    a.layers = positive(c, origin, "n_layer");
    a.positions = positive(c, origin, "n_positions");
    a.vocab = positive(c, origin, "vocab_size");
    a.inner = positive(c, origin, "n_inner", 4 * a.C);
    a.eps = positive_number(c, origin, "layer_norm_epsilon", 1e-5);
    if (a.C % a.H != 0) throw InputError(fmt::format("{}: \"n_head\" = {} does not divide \"n_embd\" = {}", origin, a.H, a.C));
    a.hd = a.C / a.H;
    if (c.value("scale_attn_weights", true) != true || c.value("scale_attn_by_inverse_layer_idx", false) != false) {
      throw InputError(fmt::format("{}: \"scale_attn_weights\": true and \"scale_attn_by_inverse_layer_idx\": false are what attn computes "
                                   "(scores / √hs, GPT-2's own setting)", origin));
    }
    if (c.contains("activation_function") && c["activation_function"] != "gelu_new") {
      throw InputError(fmt::format("{}: \"activation_function\": attn computes GPT-2's \"gelu_new\", got {}", origin, c["activation_function"].dump()));
    }
  } else if (a.model_type == "llama" || a.model_type == "mistral" || a.model_type == "qwen2" || a.model_type == "qwen3" || a.model_type == "phi3") {
    a.family = Family::Llama;
    a.C = positive(c, origin, "hidden_size");
    a.H = positive(c, origin, "num_attention_heads");
    a.Hkv = positive(c, origin, "num_key_value_heads", a.H);
    if (a.H % a.Hkv != 0) {
      throw InputError(fmt::format("{}: \"num_key_value_heads\" = {} does not divide \"num_attention_heads\" = {}", origin, a.Hkv, a.H));
    }
    if (!c.contains("head_dim") && a.C % a.H != 0) {
      throw InputError(fmt::format("{}: \"num_attention_heads\" = {} does not divide \"hidden_size\" = {}; give \"head_dim\"", origin, a.H, a.C));
    }
    a.hd = positive(c, origin, "head_dim", a.C / a.H);
    if (a.hd % 2 != 0) throw InputError(fmt::format("{}: \"head_dim\" = {} is odd; RoPE rotates pairs", origin, a.hd));
    a.layers = positive(c, origin, "num_hidden_layers");
    a.vocab = positive(c, origin, "vocab_size");
    a.inner = positive(c, origin, "intermediate_size");
    a.positions = positive(c, origin, "max_position_embeddings", 0);
    a.eps = positive_number(c, origin, "rms_norm_eps", 1e-6);
    read_rope(c, origin, a);
    if (c.contains("hidden_act") && c["hidden_act"] != "silu") {
      throw InputError(fmt::format("{}: \"hidden_act\": attn computes the Llama family's \"silu\", got {}", origin, c["hidden_act"].dump()));
    }
    const bool qwen = a.model_type == "qwen2" || a.model_type == "qwen3";
    // Mistral and Phi-3 window every layer by sliding_window (null: none); Qwen only with use_sliding_window
    const bool window_used = a.model_type == "mistral" || a.model_type == "phi3" || (qwen && c.value("use_sliding_window", false));
    if (window_used) a.window = positive(c, origin, "sliding_window", 0);
    a.qkv_bias = a.model_type == "qwen2";
    a.qk_norm = a.model_type == "qwen3";
    a.fused_qkv = a.model_type == "phi3";
    if (c.contains("mlp_bias") && c["mlp_bias"] == true) throw InputError(fmt::format("{}: \"mlp_bias\": true is not read", origin));
    if (c.contains("attention_bias") && c["attention_bias"] == true) {
      throw InputError(fmt::format("{}: \"attention_bias\": true is not read (Qwen2's q/k/v biases are)", origin));
    }
  } else {
    throw InputError(fmt::format("{}: \"model_type\": attn reads \"gpt2\", \"llama\", \"mistral\", \"qwen2\", \"qwen3\" and \"phi3\", got \"{}\"{}",
                                 origin, a.model_type, did_you_mean(a.model_type, {"gpt2", "llama", "mistral", "qwen2", "qwen3", "phi3"})));
  }
  if (c.contains("bos_token_id") && c["bos_token_id"].is_number_integer()) a.bos = c["bos_token_id"].get<std::int64_t>();
  check_every_key(c, origin, a);
  return a;
}

}  // namespace attn::model
