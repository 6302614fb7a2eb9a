// DistilBERT (DistilBertConfig: dim, n_heads, ...): BERT's encoder without token types, its tensors
// under transformer.layer.{i} (q_lin … out_lin, sa_layer_norm, ffn, output_layer_norm).
#include "attn/model/families/family.hpp"

namespace attn::model::family {

const ModelFamily& bert();

const ModelFamily& distilbert() {
  static const ModelFamily f = [] {
    ModelFamily m = bert();
    m.model_type = "distilbert";
    m.name = "DistilBERT";
    m.doc_keys = {"dim", "n_heads", "n_layers", "hidden_dim", "max_position_embeddings", "activation", "sinusoidal_pos_embds"};
    m.prefixes = {"distilbert.", ""};
    m.tensors = Tensors::DistilBert;
    return m;
  }();
  return f;
}

}  // namespace attn::model::family
