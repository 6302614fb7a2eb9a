// The config.json key lists that several families share: the decoders' (GPT-2 and the Llama
// family), the encoders' (BERT, RoBERTa, DistilBERT) and BART's and Marian's.
#include "attn/model/families/family.hpp"

namespace attn::model::family {

const std::vector<std::string_view>& decoder_no_effect() {
  // known to change nothing attn computes: the forward pass in float32 up to one layer's attention
  static const std::vector<std::string_view> keys = {
      "architectures", "_name_or_path", "transformers_version", "torch_dtype", "dtype", "use_cache", "initializer_range", "eos_token_id",
      "pad_token_id", "attention_dropout", "attn_pdrop", "embd_pdrop", "resid_pdrop", "summary_activation",
      "summary_first_dropout", "summary_proj_to_labels", "summary_type", "summary_use_proj", "task_specific_params", "n_ctx",
      "reorder_and_upcast_attn", "pretraining_tp", "tokenizer_class", "output_past", "id2label", "label2id", "gradient_checkpointing",
      "return_dict", "is_decoder", "use_return_dict", "decoder_start_token_id"};
  return keys;
}

const std::vector<std::string_view>& decoder_refused() {
  // settings of other families that change attention or the residual stream: refused where they are set
  static const std::vector<std::string_view> keys = {
      "attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar", "sliding_window_pattern", "layer_types",
      "partial_rotary_factor", "rope_local_base_freq", "use_qk_norm", "qk_layernorm", "qk_norm", "embedding_multiplier",
      "attention_multiplier", "residual_multiplier", "logits_scaling", "add_cross_attention", "clip_qkv", "use_parallel_residual",
      "rotary_pct", "parallel_attn", "alibi", "new_decoder_architecture", "hidden_activation", "post_norm", "use_bias"};
  return keys;
}

const std::vector<std::string_view>& llama_keys() {
  static const std::vector<std::string_view> keys = {
      "model_type",      "hidden_size",    "num_attention_heads", "num_key_value_heads", "head_dim",     "num_hidden_layers",
      "vocab_size",      "intermediate_size", "max_position_embeddings", "rms_norm_eps", "rope_theta",     "rope_scaling",
      "rope_parameters", "hidden_act",     "sliding_window",      "use_sliding_window",  "max_window_layers", "mlp_bias",
      "attention_bias",  "bos_token_id",   "original_max_position_embeddings", "tie_word_embeddings"};
  return keys;
}

const std::vector<std::string_view>& encoder_keys() {
  static const std::vector<std::string_view> keys = {
      "model_type", "hidden_size", "num_attention_heads", "num_hidden_layers", "vocab_size", "intermediate_size", "max_position_embeddings",
      "layer_norm_eps", "type_vocab_size", "pad_token_id", "hidden_act", "position_embedding_type", "is_decoder", "add_cross_attention",
      "dim", "n_heads", "n_layers", "hidden_dim", "activation", "sinusoidal_pos_embds", "bos_token_id", "eos_token_id"};
  return keys;
}

const std::vector<std::string_view>& encoder_no_effect() {
  static const std::vector<std::string_view> keys = {
      "architectures", "_name_or_path", "transformers_version", "torch_dtype", "dtype", "use_cache", "initializer_range",
      "hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout", "dropout", "attention_dropout", "qa_dropout",
      "seq_classif_dropout", "tie_weights_", "gradient_checkpointing", "id2label", "label2id", "problem_type", "finetuning_task",
      "tokenizer_class", "output_past", "return_dict", "chunk_size_feed_forward", "directionality", "pooler_fc_size", "pooler_num_attention_heads",
      "pooler_num_fc_layers", "pooler_size_per_head", "pooler_type", "tie_word_embeddings", "output_hidden_states", "output_attentions",
      "torchscript", "pruned_heads", "bad_words_ids", "decoder_start_token_id", "sep_token_id", "cls_token_id"};
  return keys;
}

const std::vector<std::string_view>& bart_keys() {
  static const std::vector<std::string_view> keys = {
      "model_type", "d_model", "encoder_attention_heads", "encoder_layers", "vocab_size", "encoder_ffn_dim", "max_position_embeddings",
      "pad_token_id", "scale_embedding", "bos_token_id", "eos_token_id", "activation_function", "decoder_layers", "decoder_attention_heads",
      "decoder_ffn_dim", "decoder_start_token_id", "forced_bos_token_id", "forced_eos_token_id", "is_encoder_decoder", "num_hidden_layers"};
  return keys;
}

const std::vector<std::string_view>& bart_no_effect() {
  static const std::vector<std::string_view> keys = {
      "architectures", "_name_or_path", "transformers_version", "torch_dtype", "dtype", "use_cache", "init_std", "dropout", "attention_dropout",
      "activation_dropout", "classifier_dropout", "classif_dropout", "encoder_layerdrop", "decoder_layerdrop", "id2label", "label2id",
      "num_labels", "gradient_checkpointing", "output_past", "task_specific_params", "num_beams", "max_length", "min_length",
      "no_repeat_ngram_size", "early_stopping", "length_penalty", "prefix", "add_bias_logits", "tie_word_embeddings", "return_dict",
      "output_hidden_states", "output_attentions", "torchscript", "tokenizer_class", "bad_words_ids"};
  return keys;
}

std::vector<std::string_view> joined(const std::vector<std::string_view>& a, const std::vector<std::string_view>& b) {
  std::vector<std::string_view> out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

}  // namespace attn::model::family
