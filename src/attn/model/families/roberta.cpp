// RoBERTa (RobertaConfig, BERT's keys): BERT's encoder with positions counted from pad_token_id + 1
// (padding tokens at pad_token_id, pad_token_id 1 by default); <s> a </s></s> b </s> around the text.
#include "attn/model/families/family.hpp"

namespace attn::model::family {

const ModelFamily& bert();

const ModelFamily& roberta() {
  static const ModelFamily f = [] {
    ModelFamily m = bert();
    m.model_type = "roberta";
    m.name = "RoBERTa";
    m.doc_keys = {};  // its row: "BERT's"
    m.prefixes = {"roberta.", ""};
    m.positions = Positions::LearnedAfterPad;
    m.specials = Specials::RobertaS;
    return m;
  }();
  return f;
}

}  // namespace attn::model::family
