// Mistral (MistralConfig): Llama's, every layer windowed by sliding_window (null: none).
#include "attn/model/families/family.hpp"

namespace attn::model::family {

const ModelFamily& mistral() {
  static const ModelFamily f{
      .model_type = "mistral",
      .name = "Mistral",
      .keys = llama_keys(),
      .no_effect = decoder_no_effect(),
      .refused = decoder_refused(),
      .doc_keys = {"sliding_window"},
      .windows = Windows::Every,
      .adds_bos = true,
  };
  return f;
}

}  // namespace attn::model::family
