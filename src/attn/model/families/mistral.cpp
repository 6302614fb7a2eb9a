// Mistral (MistralConfig): Llama's, every layer windowed by sliding_window (null: none).
#include "attn/model/families/family.hpp"

namespace attn::model::family {

const ModelFamily& llama();

const ModelFamily& mistral() {
  static const ModelFamily f = [] {
    ModelFamily m = llama();
    m.model_type = "mistral";
    m.name = "Mistral";
    m.doc_keys = {"sliding_window"};
    m.windows = Windows::Every;
    return m;
  }();
  return f;
}

}  // namespace attn::model::family
