// config.json, read: each architecture's keys (sizes, RoPE, windows, norms), every other key either
// known to change nothing, refused as another family's setting, or named in a note as not read.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "attn/core/error.hpp"
#include "attn/model/architectures/checkpoint.hpp"
#include "attn/numerics/rope_scaling.hpp"
#include "attn/model/architectures/architecture_detail.hpp"
#include "attn/model/families/registry.hpp"

namespace attn::model {

using json = nlohmann::json;

namespace {

using detail::positive;
using detail::positive_number;
using detail::of_family;

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
// that changes attention or the residual stream), or named in a note as not read: the family's lists.
void check_every_key(const json& c, const std::string& origin, Architecture& a) {
  const ModelFamily& f = *a.features;
  auto in = [](const std::vector<std::string_view>& list, const std::string& k) { return std::find(list.begin(), list.end(), k) != list.end(); };
  for (const auto& [key, value] : c.items()) {
    if (in(f.keys, key) || in(f.no_effect, key)) continue;
    if (in(f.refused, key)) {
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
  // Qwen2's and Qwen3's window covers the layers from max_window_layers on (Qwen2Config's layer_types rule)
  if (f.windows == family::Windows::FromMaxWindowLayers && a.window > 0) {
    std::int64_t first = 28;  // Qwen2Config's default
    if (c.contains("max_window_layers") && !c["max_window_layers"].is_null()) {
      const json& v = c["max_window_layers"];
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0) {
        throw InputError(fmt::format("{}: \"max_window_layers\": expected an integer ≥ 0, got {}", origin, v.dump()));
      }
      first = v.get<std::int64_t>();
    }
    if (first >= a.layers) a.window = 0;  // no layer reaches it: no window anywhere
    a.sliding_rule = fmt::format("layers {} and on: max_window_layers = {}", first, first);
    a.sliding.assign(static_cast<std::size_t>(a.layers), false);
    for (std::int64_t i = first; i < a.layers; ++i) a.sliding[static_cast<std::size_t>(i)] = true;
  }
}


// Which layers slide: "layer_types" when given (one "sliding_attention" or "full_attention" per layer),
// else the family's rule: Gemma 2 every other layer from layer 0, Gemma 3 all but every
// sliding_window_pattern-th (5 of 6).
void read_sliding_layers(const json& c, const std::string& origin, Architecture& a) {
  a.sliding.assign(static_cast<std::size_t>(a.layers), false);
  if (c.contains("layer_types") && !c["layer_types"].is_null()) {
    const json& t = c["layer_types"];
    if (!t.is_array() || static_cast<std::int64_t>(t.size()) != a.layers) {
      throw InputError(fmt::format("{}: \"layer_types\": expected an array of num_hidden_layers = {} entries, got {}", origin, a.layers,
                                   t.is_array() ? fmt::format("{} entries", t.size()) : t.dump()));
    }
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t[i] != "sliding_attention" && t[i] != "full_attention") {
        throw InputError(fmt::format("{}: \"layer_types[{}]\": expected \"sliding_attention\" or \"full_attention\", got {}", origin, i, t[i].dump()));
      }
      a.sliding[i] = t[i] == "sliding_attention";
    }
    a.sliding_rule = "config.json's layer_types";
  } else if (a.features->windows == family::Windows::EveryEven) {
    for (std::int64_t i = 0; i < a.layers; i += 2) a.sliding[static_cast<std::size_t>(i)] = true;  // layer_idx % 2 == 0
    a.sliding_rule = "every even layer: Gemma 2's rule where config.json has no layer_types";
  } else {
    const std::int64_t pattern = positive(c, origin, "sliding_window_pattern", 6);
    for (std::int64_t i = 0; i < a.layers; ++i) a.sliding[static_cast<std::size_t>(i)] = (i + 1) % pattern != 0;
    a.sliding_rule = fmt::format("all but every {}th layer: sliding_window_pattern = {}{}", pattern, pattern,
                                 c.contains("sliding_window_pattern") ? "" : " (Gemma 3's default)");
  }
  const bool any = std::find(a.sliding.begin(), a.sliding.end(), true) != a.sliding.end();
  if (any && a.window == 0) {
    throw InputError(fmt::format("{}: \"sliding_window\" is null, but layers are \"sliding_attention\": give the window's width", origin));
  }
}

// Gemma 3's two RoPEs: the full layers' rope_theta with its scaling, the sliding layers'
// rope_local_base_freq unscaled; or (the newer form) "rope_parameters": {"full_attention": {...},
// "sliding_attention": {...}}, each with its rope_theta and rope_type.
void read_gemma3_rope(const json& c, const std::string& origin, Architecture& a) {
  const json* p = c.contains("rope_parameters") && c["rope_parameters"].is_object() ? &c["rope_parameters"] : nullptr;
  if (!p || !(p->contains("full_attention") || p->contains("sliding_attention"))) {
    read_rope(c, origin, a);
    a.local_rope_theta = positive_number(c, origin, "rope_local_base_freq", 10000);
    return;
  }
  for (const auto& [key, value] : p->items()) {
    if (key != "full_attention" && key != "sliding_attention") {
      throw InputError(fmt::format("{}: \"rope_parameters.{}\": expected \"full_attention\" and \"sliding_attention\" only", origin, key));
    }
    if (!value.is_object()) throw InputError(fmt::format("{}: \"rope_parameters.{}\": expected an object, got {}", origin, key, value.dump()));
  }
  const json full = p->value("full_attention", json::object()), local = p->value("sliding_attention", json::object());
  auto name = [&origin](const std::string& base) {
    return [&origin, base](const std::string& key) { return fmt::format("{}: \"rope_parameters.{}{}\"", origin, base, key.empty() ? "" : "." + key); };
  };
  a.rope_scaling = read_rope_scaling(full, name("full_attention"), {"rope_theta"});
  a.rope_theta = positive_number(full, origin + ": \"rope_parameters.full_attention\"", "rope_theta", 1000000);
  if (read_rope_scaling(local, name("sliding_attention"), {"rope_theta"}).kind != RopeScaling::Kind::None) {
    throw InputError(fmt::format("{}: \"rope_parameters.sliding_attention\": a scaled RoPE on the sliding layers is not one Gemma 3 has; attn "
                                 "scales the full layers' only", origin));
  }
  a.local_rope_theta = positive_number(local, origin + ": \"rope_parameters.sliding_attention\"", "rope_theta", 10000);
}

// The family's config class's defaults (Gemma 2's and 3's) stand for the keys a config.json leaves
// out (a multimodal Gemma 3 writes only the ones that differ).
json with_defaults(const json& c, const ModelFamily& f) {
  if (!f.defaults) return c;
  json d = json::parse(f.defaults);
  if (f.default_rope_theta > 0 && !c.contains("rope_parameters")) d["rope_theta"] = f.default_rope_theta;
  for (const auto& [key, value] : c.items()) d[key] = value;
  return d;
}

// tie_word_embeddings, else its family's default (the config classes': GPT-2's and Gemma's true, the
// others' false): whether the LM head is the token embeddings or a tensor of its own, lm_head.weight.
void read_tied(const json& c, const std::string& origin, Architecture& a) {
  a.tied = a.features->tied;
  if (!c.contains("tie_word_embeddings") || c["tie_word_embeddings"].is_null()) return;
  if (!c["tie_word_embeddings"].is_boolean()) {
    throw InputError(fmt::format("{}: \"tie_word_embeddings\": expected true or false, got {}", origin, c["tie_word_embeddings"].dump()));
  }
  a.tied = c["tie_word_embeddings"].get<bool>();
}

// Gemma's scores: × query_pre_attn_scalar^−½, soft-capped where attn_logit_softcapping is given (and
// the logits where final_logit_softcapping is); its attention causal.
void read_scores(const json& c, const std::string& origin, Architecture& a) {
  a.query_scalar = positive_number(c, origin, "query_pre_attn_scalar", 256);
  if (c.contains("attn_logit_softcapping") && !c["attn_logit_softcapping"].is_null()) {
    a.softcap = positive_number(c, origin, "attn_logit_softcapping", 50);
  }
  if (c.contains("final_logit_softcapping") && !c["final_logit_softcapping"].is_null()) {
    a.final_softcap = positive_number(c, origin, "final_logit_softcapping", 30);
  }
}

// The MLP's activation: Gemma's "gelu_pytorch_tanh" (hidden_activation or hidden_act), else the
// Llama family's "silu".
void check_activation(const json& c, const std::string& origin, const ModelFamily& f) {
  if (f.mlp != family::Mlp::GeluTanhGated) {
    if (c.contains("hidden_act") && c["hidden_act"] != "silu") {
      throw InputError(fmt::format("{}: \"hidden_act\": attn computes the Llama family's \"silu\", got {}", origin, c["hidden_act"].dump()));
    }
    return;
  }
  for (const char* key : {"hidden_activation", "hidden_act"}) {
    if (c.contains(key) && !c[key].is_null() && c[key] != "gelu_pytorch_tanh") {
      throw InputError(fmt::format("{}: \"{}\": attn computes Gemma's \"gelu_pytorch_tanh\", got {}", origin, key, c[key].dump()));
    }
  }
}

// The features the family decides (norms, q/k norms, biases, fused projections, MLP) and what it
// reads of them: its scores, its sliding layers, its activation.
void read_features(const json& c, const std::string& origin, Architecture& a) {
  const ModelFamily& f = *a.features;
  a.block = f.block;
  a.norm_plus_one = f.norm_plus_one;
  a.embed_scale = f.embed_scale;
  a.gelu_mlp = f.mlp == family::Mlp::GeluTanhGated;
  if (f.soft_cap) read_scores(c, origin, a);
  if (f.windows == family::Windows::EveryEven || f.windows == family::Windows::Pattern) {
    a.window = positive(c, origin, "sliding_window", 0);
    read_sliding_layers(c, origin, a);
  }
  check_activation(c, origin, f);
  if (f.soft_cap && c.value("use_bidirectional_attention", false) != false) {
    throw InputError(fmt::format("{}: \"use_bidirectional_attention\": true makes every token see every other; attn traces the causal model", origin));
  }
  // Mistral and Phi-3 window every layer by sliding_window (null: none); Qwen only with use_sliding_window
  const bool window_used = f.windows == family::Windows::Every ||
                           (f.windows == family::Windows::FromMaxWindowLayers && c.value("use_sliding_window", false));
  if (window_used) a.window = positive(c, origin, "sliding_window", 0);
  a.qkv_bias = f.qkv_bias;
  a.qk_norm = f.qk_norm;  // OLMo 2's over the whole projection, before the head split
  a.fused_qkv = f.fused_qkv;
}

// A multimodal config (Gemma 3's "gemma3"): its language model is text_config's, of the family's
// text_config model type; the image tower's keys change no text token's attention.
Architecture read_text_config(const json& c, const std::string& origin, const ModelFamily& f) {
  if (!c.contains("text_config") || !c["text_config"].is_object()) {
    throw InputError(fmt::format("{}: \"text_config\" is required for model_type \"{}\": the language model's config", origin, f.model_type));
  }
  json t = c["text_config"];
  const std::string text_type(f.text_config);
  if (!t.contains("model_type")) t["model_type"] = text_type;
  if (t["model_type"] != text_type) {
    throw InputError(fmt::format("{}: \"text_config.model_type\": expected \"{}\", got {}", origin, text_type, t["model_type"].dump()));
  }
  Architecture a = read_architecture(t, origin + ": text_config");
  a.model_type = f.model_type;
  a.features = &f;
  for (const auto& [key, value] : c.items()) {
    if (std::find(f.keys.begin(), f.keys.end(), key) == f.keys.end() && std::find(f.no_effect.begin(), f.no_effect.end(), key) == f.no_effect.end()) {
      a.unread.push_back(key);
    }
  }
  if (!a.bos && c.contains("bos_token_id") && c["bos_token_id"].is_number_integer()) a.bos = c["bos_token_id"].get<std::int64_t>();
  return a;
}

// The encoders: BERT and RoBERTa (BertConfig's keys), DistilBERT (its own). Post-LN blocks with erf
// GELU, absolute learned positions, bidirectional attention; every config.json key read, known to
// change nothing, or refused.
Architecture read_encoder(const json& c, const std::string& origin, const ModelFamily& f) {
  Architecture a = of_family(f);
  const bool distil = f.tensors == family::Tensors::DistilBert;  // DistilBertConfig's names
  a.C = positive(c, origin, distil ? "dim" : "hidden_size");
  a.H = a.Hkv = positive(c, origin, distil ? "n_heads" : "num_attention_heads");
  if (a.C % a.H != 0) {
    throw InputError(fmt::format("{}: \"{}\" = {} does not divide \"{}\" = {}", origin, distil ? "n_heads" : "num_attention_heads", a.H,
                                 distil ? "dim" : "hidden_size", a.C));
  }
  a.hd = a.C / a.H;
  a.layers = positive(c, origin, distil ? "n_layers" : "num_hidden_layers");
  a.vocab = positive(c, origin, "vocab_size");
  a.inner = positive(c, origin, distil ? "hidden_dim" : "intermediate_size");
  a.positions = positive(c, origin, "max_position_embeddings");
  a.eps = distil ? 1e-12 : positive_number(c, origin, "layer_norm_eps", 1e-12);  // DistilBERT's LayerNorms: eps 1e-12, fixed
  a.type_vocab = distil ? 0 : positive(c, origin, "type_vocab_size", 2);
  if (c.contains("pad_token_id") && c["pad_token_id"].is_number_integer()) a.pad_id = c["pad_token_id"].get<std::int64_t>();
  else if (f.positions == family::Positions::LearnedAfterPad) a.pad_id = 1;  // RoBERTa's
  a.offset_positions = f.positions == family::Positions::LearnedAfterPad;
  if (a.offset_positions && a.positions <= a.pad_id + 1) {
    throw InputError(fmt::format("{}: \"max_position_embeddings\" = {}: RoBERTa's positions start at pad_token_id + 1 = {}", origin, a.positions, a.pad_id + 1));
  }
  const char* act_key = distil ? "activation" : "hidden_act";
  if (c.contains(act_key) && c[act_key] != "gelu") {
    throw InputError(fmt::format("{}: \"{}\": attn computes {}'s \"gelu\" (the erf form), got {}", origin, act_key, a.name(), c[act_key].dump()));
  }
  auto refuse_if = [&](const char* key, bool set, const std::string& why) {
    if (set) throw InputError(fmt::format("{}: \"{}\": {} is {}; attn traces the encoder as published", origin, key, c[key].dump(), why));
  };
  refuse_if("position_embedding_type", c.contains("position_embedding_type") && c["position_embedding_type"] != "absolute",
            "a relative position scheme of BERT's (attn computes the absolute learned positions)");
  refuse_if("is_decoder", c.value("is_decoder", false) == true, "BERT used as a causal decoder");
  refuse_if("add_cross_attention", c.value("add_cross_attention", false) == true, "a decoder's cross-attention");
  refuse_if("sinusoidal_pos_embds", c.value("sinusoidal_pos_embds", false) == true, "DistilBERT with fixed sinusoidal positions");
  for (const auto& item : c.items()) {
    const std::string& key = item.key();
    const auto in = [&](const std::vector<std::string_view>& l) { return std::find(l.begin(), l.end(), key) != l.end(); };
    if (!in(f.keys) && !in(f.no_effect)) a.unread.push_back(key);
  }
  if (c.contains("bos_token_id") && c["bos_token_id"].is_number_integer()) a.bos = c["bos_token_id"].get<std::int64_t>();
  return a;
}

}  // namespace

std::string Architecture::name() const { return features ? std::string(features->name) : model_type; }

std::string Architecture::beyond_positions_note(std::int64_t tokens, const char* what) const {
  if (family != Family::Llama || positions <= 0 || tokens <= positions) return "";
  return fmt::format("{} {}, more than the {} positions the model was trained for (max_position_embeddings); RoPE computes them all the same",
                     tokens, what, positions);
}

namespace {

// GPT-2's sizes (GPT2Config's names); its scaling and activation as published.
void read_gpt2(const json& c, const std::string& origin, Architecture& a) {
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
}

// The Llama family's sizes, RoPE and the features its member decides.
void read_llama(const json& c, const std::string& origin, Architecture& a) {
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
  a.eps = positive_number(c, origin, "rms_norm_eps", a.features->default_eps);
  if (a.features->positions == family::Positions::RopeLocalGlobal) read_gemma3_rope(c, origin, a);
  else read_rope(c, origin, a);
  read_features(c, origin, a);
  if (c.contains("mlp_bias") && c["mlp_bias"] == true) throw InputError(fmt::format("{}: \"mlp_bias\": true is not read", origin));
  if (c.contains("attention_bias") && c["attention_bias"] == true) {
    throw InputError(fmt::format("{}: \"attention_bias\": true is not read (Qwen2's q/k/v biases are)", origin));
  }
}

}  // namespace

Architecture read_architecture(const json& config, const std::string& origin) {
  if (!config.is_object()) throw InputError(fmt::format("{}: expected a JSON object (config.json's content), got {}", origin, config.type_name()));
  const ModelFamily& f = family_of(config, origin);
  switch (f.reader) {
    case family::Reader::TextConfig: return read_text_config(config, origin, f);
    case family::Reader::Encoder: return read_encoder(config, origin, f);
    case family::Reader::BartLike: return read_bart_like(config, origin, f);
    case family::Reader::T5: return read_t5(config, origin, f);
    case family::Reader::Gpt2:
    case family::Reader::Llama: break;
  }
  const json c = with_defaults(config, f);
  Architecture a;
  a.model_type = f.model_type;
  a.features = &f;
  a.family = f.kind;
  if (f.reader == family::Reader::Gpt2) read_gpt2(c, origin, a);
  else read_llama(c, origin, a);
  if (c.contains("bos_token_id") && c["bos_token_id"].is_number_integer()) a.bos = c["bos_token_id"].get<std::int64_t>();
  read_tied(c, origin, a);
  check_every_key(c, origin, a);
  return a;
}

}  // namespace attn::model
