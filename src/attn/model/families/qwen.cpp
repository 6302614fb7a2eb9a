// Qwen2 and Qwen3 (Qwen2Config, Qwen3Config): Llama's, windowed with use_sliding_window on the layers
// from max_window_layers on, no BOS added; Qwen2's q/k/v projections have biases, Qwen3 has per-head
// q/k norms instead.
#include "attn/model/families/family.hpp"

namespace attn::model::family {

const ModelFamily& llama();

const ModelFamily& qwen2() {
  static const ModelFamily f = [] {
    ModelFamily m = llama();
    m.model_type = "qwen2";
    m.name = "Qwen2";
    m.doc_keys = {"sliding_window", "use_sliding_window", "max_window_layers"};
    m.windows = Windows::FromMaxWindowLayers;
    m.qkv_bias = true;
    m.adds_bos = false;
    return m;
  }();
  return f;
}

const ModelFamily& qwen3() {
  static const ModelFamily f = [] {
    ModelFamily m = qwen2();
    m.model_type = "qwen3";
    m.name = "Qwen3";
    m.doc_keys = {"max_window_layers"};
    m.qkv_bias = false;
    m.qk_norm = QkNorm::PerHead;
    return m;
  }();
  return f;
}

}  // namespace attn::model::family
