// GPT-2 (GPT2Config): learned positions, pre-LN blocks with LayerNorms, one fused Conv1D c_attn, a
// gelu_new MLP; the LM head tied to wte unless tie_word_embeddings says otherwise.
#include "attn/model/families/family.hpp"

namespace attn::model::family {

const ModelFamily& gpt2() {
  static const ModelFamily f{
      .model_type = "gpt2",
      .name = "GPT-2",
      .kind = Family::Gpt2,
      .reader = Reader::Gpt2,
      .keys = {"model_type", "n_embd", "n_head", "n_layer", "n_positions", "vocab_size", "n_inner", "layer_norm_epsilon", "scale_attn_weights",
               "scale_attn_by_inverse_layer_idx", "activation_function", "bos_token_id", "tie_word_embeddings"},
      .no_effect = decoder_no_effect(),
      .refused = decoder_refused(),
      .doc_keys = {"n_embd", "n_head", "n_layer", "n_positions", "vocab_size", "n_inner", "layer_norm_epsilon"},
      .prefixes = {"", "transformer."},
      .tensors = Tensors::Gpt2,
      .positions = Positions::Learned,
      .mlp = Mlp::GeluNew,
      .tied = true,
  };
  return f;
}

}  // namespace attn::model::family
