// Phi-3 (Phi3Config): Llama's with one fused qkv_proj and one gate_up_proj, every layer windowed by
// sliding_window (null: none), rms_norm_eps 1e-5 by default; its tokenizer adds no BOS.
#include "attn/model/families/family.hpp"

namespace attn::model::family {

const ModelFamily& llama();

const ModelFamily& phi3() {
  static const ModelFamily f = [] {
    ModelFamily m = llama();
    m.model_type = "phi3";
    m.name = "Phi-3";
    m.doc_keys = {"sliding_window"};
    m.default_eps = 1e-5;
    m.windows = Windows::Every;
    m.fused_qkv = true;
    m.adds_bos = false;
    return m;
  }();
  return f;
}

}  // namespace attn::model::family
