// config.json of the encoder-decoders: BART (BartConfig), Marian (MarianConfig), T5 and T5 v1.1 /
// Flan-T5 (T5Config). Every key read, known to change nothing attn computes, refused, or named in a
// note as not read.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "attn/core/error.hpp"
#include "attn/model/architectures/architecture_detail.hpp"
#include "attn/model/architectures/checkpoint.hpp"

namespace attn::model {

namespace {

using json = nlohmann::json;
using detail::positive;
using detail::positive_number;
using detail::of_family;

// The modeling code's activation names (ACT2FN) that attn computes.
Architecture::Act activation(const json& name, const std::string& origin, const char* key, const std::string& family) {
  if (name == "gelu") return Architecture::Act::GeluErf;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") return Architecture::Act::GeluTanh;
  if (name == "relu") return Architecture::Act::Relu;
  if (name == "swish" || name == "silu") return Architecture::Act::Silu;
  throw InputError(fmt::format("{}: \"{}\": attn computes {}'s MLP with \"gelu\" (the erf form), \"gelu_new\", \"relu\" or \"swish\", got {}", origin,
                               key, family, name.dump()));
}

// Every key: read, known to change nothing (the family's lists), or named in a note.
void note_unread(const json& c, Architecture& a) {
  for (const auto& item : c.items()) {
    const std::string& key = item.key();
    const auto in = [&](const std::vector<std::string_view>& l) { return std::find(l.begin(), l.end(), key) != l.end(); };
    if (!in(a.features->keys) && !in(a.features->no_effect)) a.unread.push_back(key);
  }
}

std::int64_t token_id(const json& c, const std::string& origin, const char* key, std::int64_t fallback) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  const json& v = c[key];
  if (!v.is_number_integer() || v.get<std::int64_t>() < 0) {
    throw InputError(fmt::format("{}: \"{}\": expected a token id, an integer ≥ 0, got {}", origin, key, v.dump()));
  }
  return v.get<std::int64_t>();
}

}  // namespace

// BART and Marian (BartConfig, MarianConfig): post-LN blocks, the decoder's sizes the encoder's.
Architecture read_bart_like(const json& c, const std::string& origin, const ModelFamily& f) {
  const bool marian = f.positions == family::Positions::Sinusoidal;  // Marian's: its defaults and keys below
  Architecture a = of_family(f);
  a.encoder_decoder = true;
  a.C = positive(c, origin, "d_model", 1024);
  a.H = a.Hkv = positive(c, origin, "encoder_attention_heads", 16);
  if (a.C % a.H != 0) throw InputError(fmt::format("{}: \"encoder_attention_heads\" = {} does not divide \"d_model\" = {}", origin, a.H, a.C));
  a.hd = a.C / a.H;
  a.layers = positive(c, origin, "encoder_layers", 12);
  a.vocab = positive(c, origin, "vocab_size", marian ? 58101 : 50265);
  a.inner = positive(c, origin, "encoder_ffn_dim", 4096);
  a.positions = positive(c, origin, "max_position_embeddings", 1024);
  a.eps = 1e-5;  // nn.LayerNorm's default, which their layers keep
  a.pad_id = token_id(c, origin, "pad_token_id", marian ? 58100 : 1);
  a.decoder_start = token_id(c, origin, "decoder_start_token_id", marian ? 58100 : 2);
  if (c.value("scale_embedding", false) == true) a.embedding_multiplier = std::sqrt(static_cast<double>(a.C));
  if (c.contains("bos_token_id") && c["bos_token_id"].is_number_integer()) a.bos = c["bos_token_id"].get<std::int64_t>();
  if (c.contains("activation_function")) a.act = activation(c["activation_function"], origin, "activation_function", a.name());
  a.decoder_layers = positive(c, origin, "decoder_layers", 12);
  for (const auto& [dec, enc] : {std::pair{"decoder_attention_heads", a.H}, std::pair{"decoder_ffn_dim", a.inner}}) {
    if (positive(c, origin, dec, enc) != enc) {
      throw InputError(fmt::format("{}: \"{}\" = {}: attn reads {} with the encoder's sizes in the decoder too ({})", origin, dec, c[dec].dump(),
                                   a.name(), enc));
    }
  }
  if (marian) {
    // Marian: sinusoidal positions from 0, no LayerNorm on the embeddings; the older configs' BART
    // keys (normalize_before, static_position_embeddings, ...) are not read by its modeling code
    a.sinusoidal = true;
    if (c.contains("share_encoder_decoder_embeddings") && !c["share_encoder_decoder_embeddings"].is_boolean()) {
      throw InputError(fmt::format("{}: \"share_encoder_decoder_embeddings\": expected true or false, got {}", origin,
                                   c["share_encoder_decoder_embeddings"].dump()));
    }
    a.separate_decoder_embeddings = c.value("share_encoder_decoder_embeddings", true) == false;
    if (!a.separate_decoder_embeddings && positive(c, origin, "decoder_vocab_size", a.vocab) != a.vocab) {
      throw InputError(fmt::format("{}: \"decoder_vocab_size\" = {} differs from \"vocab_size\" = {}, but share_encoder_decoder_embeddings is "
                                   "true: one table cannot have both sizes", origin, c["decoder_vocab_size"].dump(), a.vocab));
    }
  } else {
    a.position_offset = 2;
    auto refuse_if = [&](const char* key, bool set, const std::string& why) {
      if (set) throw InputError(fmt::format("{}: \"{}\": {} is {}; attn reads BART as published", origin, key, c[key].dump(), why));
    };
    refuse_if("normalize_before", c.value("normalize_before", false) == true, "pre-LN blocks (mBART's)");
    refuse_if("add_final_layer_norm", c.value("add_final_layer_norm", false) == true, "a LayerNorm after the last layer (mBART's)");
    refuse_if("normalize_embedding", c.value("normalize_embedding", true) != true, "no LayerNorm on the embeddings");
    refuse_if("static_position_embeddings", c.value("static_position_embeddings", false) == true, "sinusoidal positions (Marian's)");
    refuse_if("extra_pos_embeddings", c.contains("extra_pos_embeddings") && c["extra_pos_embeddings"] != 2, "a position offset other than 2");
  }
  note_unread(c, a);
  return a;
}

// T5 (T5Config): pre-norm blocks with RMS norms (no mean, no bias), no 1/√d scale, no positions but a
// learned relative position bias; the MLP relu (T5) or gated gelu_new (T5 v1.1, Flan-T5).
Architecture read_t5(const json& c, const std::string& origin, const ModelFamily& f) {
  Architecture a = of_family(f);
  a.encoder_decoder = true;
  a.C = positive(c, origin, "d_model", 512);
  a.H = a.Hkv = positive(c, origin, "num_heads", 8);
  a.hd = positive(c, origin, "d_kv", 64);
  a.layers = positive(c, origin, "num_layers", 6);
  a.decoder_layers = positive(c, origin, "num_decoder_layers", a.layers);
  a.vocab = positive(c, origin, "vocab_size", 32128);
  a.inner = positive(c, origin, "d_ff", 2048);
  a.eps = positive_number(c, origin, "layer_norm_epsilon", 1e-6);
  a.rel_buckets = positive(c, origin, "relative_attention_num_buckets", 32);
  a.rel_max_distance = positive(c, origin, "relative_attention_max_distance", 128);
  if (a.rel_buckets < 4) {
    throw InputError(fmt::format("{}: \"relative_attention_num_buckets\" = {}: expected at least 4 (each side's half has exact and logarithmic buckets)",
                                 origin, a.rel_buckets));
  }
  if (a.rel_max_distance <= a.rel_buckets / 2) {
    throw InputError(fmt::format("{}: \"relative_attention_max_distance\" = {}: expected more than relative_attention_num_buckets / 2 = {}, where "
                                 "the logarithmic buckets begin", origin, a.rel_max_distance, a.rel_buckets / 2));
  }
  a.pad_id = token_id(c, origin, "pad_token_id", 0);
  a.decoder_start = token_id(c, origin, "decoder_start_token_id", a.pad_id);
  // feed_forward_proj: "relu", "gated-gelu" (gelu_new, T5Config's special case), "gated-<act>" or "<act>"
  const json proj = c.value("feed_forward_proj", json("relu"));
  if (!proj.is_string()) throw InputError(fmt::format("{}: \"feed_forward_proj\": expected a string such as \"relu\" or \"gated-gelu\", got {}", origin, proj.dump()));
  std::string act = proj.get<std::string>();
  a.gated_mlp = act.starts_with("gated-");
  if (a.gated_mlp) act = act.substr(6);
  if (act.find('-') != std::string::npos) {
    throw InputError(fmt::format("{}: \"feed_forward_proj\": expected \"<act>\" or \"gated-<act>\" (\"relu\", \"gated-gelu\"), got {}", origin, proj.dump()));
  }
  a.act = proj == "gated-gelu" ? Architecture::Act::GeluTanh : activation(json(act), origin, "feed_forward_proj", a.name());
  // the newer configs spell out what feed_forward_proj implies; given, they must agree
  if (c.contains("is_gated_act") && c["is_gated_act"] != a.gated_mlp) {
    throw InputError(fmt::format("{}: \"is_gated_act\" = {} disagrees with \"feed_forward_proj\" = {}", origin, c["is_gated_act"].dump(), proj.dump()));
  }
  if (c.contains("dense_act_fn") && activation(c["dense_act_fn"], origin, "dense_act_fn", a.name()) != a.act) {
    throw InputError(fmt::format("{}: \"dense_act_fn\" = {} disagrees with \"feed_forward_proj\" = {}", origin, c["dense_act_fn"].dump(), proj.dump()));
  }
  a.tied = f.tied;
  if (c.contains("tie_word_embeddings") && !c["tie_word_embeddings"].is_null()) {
    if (!c["tie_word_embeddings"].is_boolean()) {
      throw InputError(fmt::format("{}: \"tie_word_embeddings\": expected true or false, got {}", origin, c["tie_word_embeddings"].dump()));
    }
    a.tied = c["tie_word_embeddings"].get<bool>();
  }
  note_unread(c, a);
  return a;
}

}  // namespace attn::model
