// T5, T5 v1.1 and Flan-T5 (T5Config): an encoder-decoder, pre-norm blocks with RMS norms (no mean, no
// bias), no positions but a learned relative bias and no 1/√d scale, a relu or gated MLP; </s> after
// the text; the LM head tied unless tie_word_embeddings says otherwise.
#include "attn/model/families/family.hpp"

namespace attn::model::family {

const ModelFamily& t5() {
  static const ModelFamily f{
      .model_type = "t5",
      .name = "T5",
      .kind = Family::Bert,
      .reader = Reader::T5,
      .keys = {"model_type", "d_model", "num_heads", "d_kv", "num_layers", "num_decoder_layers", "vocab_size", "d_ff", "layer_norm_epsilon",
               "relative_attention_num_buckets", "relative_attention_max_distance", "pad_token_id", "decoder_start_token_id", "feed_forward_proj",
               "is_gated_act", "dense_act_fn", "tie_word_embeddings", "eos_token_id", "is_encoder_decoder"},
      .no_effect = {"architectures", "_name_or_path", "transformers_version", "torch_dtype", "dtype", "use_cache", "dropout_rate",
                    "initializer_factor", "classifier_dropout", "n_positions", "output_past", "task_specific_params", "gradient_checkpointing",
                    "id2label", "label2id", "return_dict", "tokenizer_class", "output_hidden_states", "output_attentions", "torchscript",
                    "bos_token_id"},
      .doc_keys = {"d_model", "num_heads", "d_kv", "num_layers", "num_decoder_layers", "d_ff", "layer_norm_epsilon", "relative_attention_num_buckets",
                   "relative_attention_max_distance", "feed_forward_proj", "is_gated_act", "dense_act_fn", "pad_token_id", "decoder_start_token_id",
                   "tie_word_embeddings"},
      .tensors = Tensors::T5,
      .positions = Positions::RelativeBias,
      .block = Block::PreNorm,
      .mlp = Mlp::FromConfig,
      .tied = true,
      .specials = Specials::EosLast,
  };
  return f;
}

}  // namespace attn::model::family
