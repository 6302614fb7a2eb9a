// Phi-3 (Phi3Config): Llama's with one fused qkv_proj and one gate_up_proj, every layer windowed by
// sliding_window (null: none), rms_norm_eps 1e-5 by default.
#include "attn/model/families/family.hpp"

namespace attn::model::family {

const ModelFamily& phi3() {
  static const ModelFamily f{
      .model_type = "phi3",
      .name = "Phi-3",
      .keys = llama_keys(),
      .no_effect = decoder_no_effect(),
      .refused = decoder_refused(),
      .doc_keys = {"sliding_window"},
      .default_eps = 1e-5,
      .windows = Windows::Every,
      .fused_qkv = true,
  };
  return f;
}

}  // namespace attn::model::family
