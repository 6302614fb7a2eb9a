// RoBERTa (RobertaConfig, BERT's keys): BERT's encoder with positions counted from pad_token_id + 1
// (padding tokens at pad_token_id, pad_token_id 1 by default); <s> a </s></s> b </s> around the text.
#include "attn/model/families/family.hpp"

namespace attn::model::family {

const ModelFamily& roberta() {
  static const ModelFamily f{
      .model_type = "roberta",
      .name = "RoBERTa",
      .kind = Family::Bert,
      .reader = Reader::Encoder,
      .keys = encoder_keys(),
      .no_effect = encoder_no_effect(),
      .prefixes = {"roberta.", ""},
      .tensors = Tensors::Bert,
      .positions = Positions::LearnedAfterPad,
      .block = Block::PostLayerNorm,
      .mlp = Mlp::FromConfig,
      .specials = Specials::RobertaS,
  };
  return f;
}

}  // namespace attn::model::family
