// DistilBERT (DistilBertConfig: dim, n_heads, ...): BERT's encoder without token types, its tensors
// under transformer.layer.{i} (q_lin … out_lin, sa_layer_norm, ffn, output_layer_norm).
#include "attn/model/families/family.hpp"

namespace attn::model::family {

const ModelFamily& distilbert() {
  static const ModelFamily f{
      .model_type = "distilbert",
      .name = "DistilBERT",
      .kind = Family::Bert,
      .reader = Reader::Encoder,
      .keys = encoder_keys(),
      .no_effect = encoder_no_effect(),
      .doc_keys = {"dim", "n_heads", "n_layers", "hidden_dim", "max_position_embeddings", "activation", "sinusoidal_pos_embds"},
      .prefixes = {"distilbert.", ""},
      .tensors = Tensors::DistilBert,
      .positions = Positions::Learned,
      .block = Block::PostLayerNorm,
      .mlp = Mlp::FromConfig,
      .specials = Specials::ClsSep,
  };
  return f;
}

}  // namespace attn::model::family
