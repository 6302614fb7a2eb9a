// Marian (MarianConfig): BART's layers with sinusoidal positions from 0 (computed, not stored) and no
// LayerNorm on the embeddings; </s> after the text, the decoder's text cut by its own target.spm.
// The older configs' BART keys are not read by its modeling code: they change nothing.
#include "attn/model/families/family.hpp"

namespace attn::model::family {

const ModelFamily& marian() {
  static const ModelFamily f{
      .model_type = "marian",
      .name = "Marian",
      .kind = Family::Bert,
      .reader = Reader::BartLike,
      .keys = joined(bart_keys(), {"share_encoder_decoder_embeddings", "decoder_vocab_size"}),
      .no_effect = joined(bart_no_effect(), {"normalize_before", "add_final_layer_norm", "normalize_embedding", "static_position_embeddings",
                                             "extra_pos_embeddings"}),
      .doc_keys = {"share_encoder_decoder_embeddings", "decoder_vocab_size", "normalize_before", "static_position_embeddings"},
      .tensors = Tensors::Bart,
      .positions = Positions::Sinusoidal,
      .block = Block::PostLayerNorm,
      .mlp = Mlp::FromConfig,
      .specials = Specials::EosLast,
      .decoder_spm = true,
  };
  return f;
}

}  // namespace attn::model::family
