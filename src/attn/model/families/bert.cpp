// BERT (BertConfig): an encoder, post-LN blocks with LayerNorms, erf GELU, learned absolute positions
// and token types, bidirectional attention; [CLS] a [SEP] b [SEP] around the text.
#include "attn/model/families/family.hpp"

namespace attn::model::family {

const ModelFamily& bert() {
  static const ModelFamily f{
      .model_type = "bert",
      .name = "BERT",
      .kind = Family::Bert,
      .reader = Reader::Encoder,
      .keys = encoder_keys(),
      .no_effect = encoder_no_effect(),
      .doc_keys = {"hidden_size", "num_attention_heads", "num_hidden_layers", "intermediate_size", "max_position_embeddings", "type_vocab_size",
                   "layer_norm_eps", "pad_token_id", "hidden_act", "position_embedding_type"},
      .prefixes = {"bert.", ""},
      .tensors = Tensors::Bert,
      .positions = Positions::Learned,
      .block = Block::PostLayerNorm,
      .mlp = Mlp::FromConfig,
      .specials = Specials::ClsSep,
  };
  return f;
}

}  // namespace attn::model::family
