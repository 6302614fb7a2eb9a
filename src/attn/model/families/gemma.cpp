// Gemma 2 and 3 (Gemma2Config, Gemma3TextConfig, a multimodal Gemma 3's text_config): four RMSNorms a
// layer × (1 + w), embeddings × √C, a gated tanh-GELU MLP, scores × query_pre_attn_scalar^−½, sliding
// layers; the config classes' defaults stand for the keys a config.json leaves out.
#include "attn/model/families/family.hpp"

namespace attn::model::family {

namespace {

// Gemma's own keys; final_logit_softcapping acts on the language-model head's logits only
const std::vector<std::string_view> kGemmaKeys = {"query_pre_attn_scalar", "attn_logit_softcapping", "final_logit_softcapping",
                                                  "sliding_window_pattern", "layer_types", "rope_local_base_freq", "hidden_activation",
                                                  "use_bidirectional_attention", "cache_implementation"};

}  // namespace

const ModelFamily& gemma2() {
  static const ModelFamily f{
      .model_type = "gemma2",
      .name = "Gemma 2",
      .keys = joined(llama_keys(), kGemmaKeys),
      .no_effect = decoder_no_effect(),
      .refused = decoder_refused(),
      .doc_keys = {"head_dim", "query_pre_attn_scalar", "attn_logit_softcapping", "sliding_window", "layer_types", "hidden_activation"},
      .defaults = R"({"vocab_size": 256000, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
                      "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "rms_norm_eps": 1e-6,
                      "query_pre_attn_scalar": 256, "sliding_window": 4096, "hidden_activation": "gelu_pytorch_tanh",
                      "max_position_embeddings": 8192, "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0})",
      .default_rope_theta = 10000.0,
      .windows = Windows::EveryEven,
      .block = Block::Sandwich,
      .mlp = Mlp::GeluTanhGated,
      .norm_plus_one = true,
      .embed_scale = true,
      .soft_cap = true,
      .tied = true,
      .adds_bos = true,
  };
  return f;
}

// Gemma 3's text model: Gemma 2's with its own defaults (no soft-cap), 5 of 6 layers sliding, per-head
// q/k norms and two RoPEs.
const ModelFamily& gemma3_text() {
  static const ModelFamily f = [] {
    ModelFamily m = gemma2();
    m.model_type = "gemma3_text";
    m.name = "Gemma 3";
    m.doc_keys = {"sliding_window_pattern", "layer_types", "rope_local_base_freq", "rope_parameters"};
    m.defaults = R"({"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
                    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "rms_norm_eps": 1e-6,
                    "query_pre_attn_scalar": 256, "sliding_window": 4096, "hidden_activation": "gelu_pytorch_tanh",
                    "max_position_embeddings": 131072, "attn_logit_softcapping": null})";
    m.default_rope_theta = 1000000.0;
    m.positions = Positions::RopeLocalGlobal;
    m.windows = Windows::Pattern;
    m.qk_norm = QkNorm::PerHead;
    return m;
  }();
  return f;
}

// A multimodal Gemma 3: gemma3_text's language model, under language_model.model. (or, newer,
// model.language_model.); the image tower's keys change no text token's attention.
const ModelFamily& gemma3() {
  static const ModelFamily f = [] {
    ModelFamily m = gemma3_text();
    m.model_type = "gemma3";
    m.reader = Reader::TextConfig;
    m.text_config = "gemma3_text";
    m.keys = {"model_type", "text_config"};
    m.no_effect = {"vision_config", "boi_token_index", "eoi_token_index", "image_token_index", "mm_tokens_per_image", "boi_token_id",
                   "eoi_token_id", "image_token_id", "architectures", "initializer_range", "torch_dtype", "dtype", "transformers_version",
                   "_name_or_path", "bos_token_id", "eos_token_id", "pad_token_id", "tie_word_embeddings", "use_cache"};
    m.refused = {};
    m.doc_keys = {"text_config"};
    m.prefixes = {"language_model.model.", "model.language_model."};
    return m;
  }();
  return f;
}

}  // namespace attn::model::family
