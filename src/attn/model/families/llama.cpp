// Llama (LlamaConfig): RoPE, RMSNorm before attention and before the MLP, grouped kv heads, a gated
// silu MLP; the tokenizer puts BOS first. The other decoders of the family say how they differ.
#include "attn/model/families/family.hpp"

namespace attn::model::family {

const ModelFamily& llama() {
  static const ModelFamily f{
      .model_type = "llama",
      .name = "Llama",
      .keys = llama_keys(),
      .no_effect = decoder_no_effect(),
      .refused = decoder_refused(),
      .doc_keys = {"hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim", "num_hidden_layers", "rms_norm_eps", "rope_theta",
                   "rope_scaling", "rope_parameters", "intermediate_size", "vocab_size", "bos_token_id"},
      .adds_bos = true,
  };
  return f;
}

}  // namespace attn::model::family
