// OLMo 2 (Olmo2Config): Llama's with no norm before attention or the MLP but one after each, and
// q/k norms over the whole projection before the head split; rms_norm_eps 1e-5 by default; no BOS added.
#include "attn/model/families/family.hpp"

namespace attn::model::family {

const ModelFamily& llama();

const ModelFamily& olmo2() {
  static const ModelFamily f = [] {
    ModelFamily m = llama();
    m.model_type = "olmo2";
    m.name = "OLMo 2";
    m.doc_keys = {"rms_norm_eps"};
    m.default_eps = 1e-5;
    m.block = Block::PostNorm;
    m.qk_norm = QkNorm::WholeWidth;
    m.adds_bos = false;
    return m;
  }();
  return f;
}

}  // namespace attn::model::family
