// BART (BartConfig): an encoder-decoder, post-LN blocks, learned positions from row 2 then
// layernorm_embedding, the MLP's activation from config.json; RoBERTa's tokenizer (<s> a </s>).
// mBART's settings (pre-LN, a final LayerNorm) and Marian's sinusoidal positions are refused.
#include "attn/model/families/family.hpp"

namespace attn::model::family {

const ModelFamily& bart() {
  static const ModelFamily f{
      .model_type = "bart",
      .name = "BART",
      .kind = Family::Bert,
      .reader = Reader::BartLike,
      .keys = joined(bart_keys(), {"normalize_before", "add_final_layer_norm", "normalize_embedding", "static_position_embeddings",
                                   "extra_pos_embeddings"}),
      .no_effect = bart_no_effect(),
      .doc_keys = {"d_model", "encoder_attention_heads", "encoder_layers", "encoder_ffn_dim", "max_position_embeddings", "scale_embedding",
                   "activation_function", "pad_token_id", "decoder_layers", "decoder_start_token_id", "normalize_before", "add_final_layer_norm",
                   "static_position_embeddings", "normalize_embedding", "extra_pos_embeddings"},
      .tensors = Tensors::Bart,
      .positions = Positions::LearnedFrom2,
      .block = Block::PostLayerNorm,
      .mlp = Mlp::FromConfig,
      .specials = Specials::RobertaS,
  };
  return f;
}

}  // namespace attn::model::family
