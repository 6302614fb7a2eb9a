// OLMo 2 (Olmo2Config): Llama's with no norm before attention or the MLP but one after each, and
// q/k norms over the whole projection before the head split; rms_norm_eps 1e-5 by default.
#include "attn/model/families/family.hpp"

namespace attn::model::family {

const ModelFamily& olmo2() {
  static const ModelFamily f{
      .model_type = "olmo2",
      .name = "OLMo 2",
      .keys = llama_keys(),
      .no_effect = decoder_no_effect(),
      .refused = decoder_refused(),
      .doc_keys = {"rms_norm_eps"},
      .default_eps = 1e-5,
      .block = Block::PostNorm,
      .qk_norm = QkNorm::WholeWidth,
  };
  return f;
}

}  // namespace attn::model::family
