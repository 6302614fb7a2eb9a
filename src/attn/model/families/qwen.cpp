// Qwen2 and Qwen3 (Qwen2Config, Qwen3Config): Llama's, windowed with use_sliding_window on the layers
// from max_window_layers on; Qwen2's q/k/v projections have biases, Qwen3 has per-head q/k norms instead.
#include "attn/model/families/family.hpp"

namespace attn::model::family {

const ModelFamily& qwen2() {
  static const ModelFamily f{
      .model_type = "qwen2",
      .name = "Qwen2",
      .keys = llama_keys(),
      .no_effect = decoder_no_effect(),
      .refused = decoder_refused(),
      .doc_keys = {"sliding_window", "use_sliding_window", "max_window_layers"},
      .windows = Windows::FromMaxWindowLayers,
      .qkv_bias = true,
  };
  return f;
}

const ModelFamily& qwen3() {
  static const ModelFamily f{
      .model_type = "qwen3",
      .name = "Qwen3",
      .keys = llama_keys(),
      .no_effect = decoder_no_effect(),
      .refused = decoder_refused(),
      .doc_keys = {"max_window_layers"},
      .windows = Windows::FromMaxWindowLayers,
      .qk_norm = QkNorm::PerHead,
  };
  return f;
}

}  // namespace attn::model::family
