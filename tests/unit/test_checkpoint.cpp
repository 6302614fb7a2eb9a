// Checkpoint configs: each architecture's config.json keys, their defaults, and every refusal's message.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "attn/numerics/position_tables.hpp"
#include "attn/core/error.hpp"
#include "attn/model/architectures/checkpoint.hpp"
#include "helpers.hpp"

using attn::model::Architecture;
using attn::model::Family;
using attn::model::read_architecture;
using nlohmann::json;

namespace {

std::string refusal(const json& config) {
  try {
    read_architecture(config, "ckpt/config.json");
  } catch (const attn::InputError& e) {
    return e.what();
  }
  return "";
}

const json kGpt2 = {{"model_type", "gpt2"}, {"n_embd", 16}, {"n_head", 4}, {"n_layer", 2}, {"n_positions", 32}, {"vocab_size", 300}};
const json kLlama = {{"model_type", "llama"},    {"hidden_size", 32},     {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                     {"num_hidden_layers", 2},   {"vocab_size", 300},     {"intermediate_size", 64},  {"rms_norm_eps", 1e-5},
                     {"rope_theta", 500000.0},   {"bos_token_id", 1}};

}  // namespace

TEST_CASE("GPT-2's config.json: sizes, and n_inner and layer_norm_epsilon defaults", "[checkpoint]") {
  const Architecture a = read_architecture(kGpt2, "c");
  CHECK(a.family == Family::Gpt2);
  CHECK(a.C == 16);
  CHECK(a.H == 4);
  CHECK(a.Hkv == 4);
  CHECK(a.hd == 4);
  CHECK(a.layers == 2);
  CHECK(a.positions == 32);
  CHECK(a.inner == 64);  // n_inner absent: 4C
  CHECK(a.eps == 1e-5);
  CHECK(a.name() == "GPT-2");
  json c = kGpt2;
  c["n_inner"] = nullptr;  // as real GPT-2 configs write it
  CHECK(read_architecture(c, "c").inner == 64);
}

TEST_CASE("the Llama family's config.json: grouped heads, head_dim, Mistral's window, Qwen2's biases", "[checkpoint]") {
  Architecture a = read_architecture(kLlama, "c");
  CHECK(a.family == Family::Llama);
  CHECK(a.H == 4);
  CHECK(a.Hkv == 2);
  CHECK(a.hd == 8);  // hidden_size / heads
  CHECK(a.rope_theta == 500000.0);
  CHECK(a.eps == 1e-5);
  CHECK(a.bos == 1);
  CHECK(a.window == 0);
  CHECK_FALSE(a.qkv_bias);
  json c = kLlama;
  c["head_dim"] = 12;
  CHECK(read_architecture(c, "c").hd == 12);
  c = kLlama;
  c["model_type"] = "mistral";
  c["sliding_window"] = 3;
  CHECK(read_architecture(c, "c").window == 3);
  c["sliding_window"] = nullptr;  // Mistral v0.2 and later: no window
  CHECK(read_architecture(c, "c").window == 0);
  c = kLlama;
  c["model_type"] = "qwen2";
  c["sliding_window"] = 3;  // Qwen2 reads it only with use_sliding_window
  a = read_architecture(c, "c");
  CHECK(a.qkv_bias);
  CHECK(a.window == 0);
  CHECK(a.name() == "Qwen2");
}

TEST_CASE("Gemma 2 and 3 and OLMo 2: their norms, scale, soft-cap, sliding layers and two RoPEs", "[checkpoint]") {
  // Gemma 2 as gemma-2-2b's config.json writes it (sizes made small)
  json g2 = {{"model_type", "gemma2"}, {"hidden_size", 32}, {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"head_dim", 16},
             {"num_hidden_layers", 5}, {"vocab_size", 100}, {"intermediate_size", 64}, {"query_pre_attn_scalar", 24},
             {"attn_logit_softcapping", 50.0}, {"final_logit_softcapping", 30.0}, {"sliding_window", 4}, {"rms_norm_eps", 1e-6},
             {"hidden_activation", "gelu_pytorch_tanh"}, {"hidden_act", "gelu_pytorch_tanh"}, {"cache_implementation", "hybrid"}};
  Architecture a = read_architecture(g2, "c");
  CHECK(a.name() == "Gemma 2");
  CHECK(a.block == Architecture::Block::Sandwich);
  CHECK(a.norm_plus_one);
  CHECK(a.embed_scale);
  CHECK(a.gelu_mlp);
  CHECK(a.query_scalar == 24.0);
  CHECK(a.softcap == 50.0);
  CHECK(a.qk_norm == Architecture::QkNorm::None);
  CHECK(a.rope_theta == 10000.0);  // Gemma2Config's default, the key being absent
  // the modeling code's rule: layers 0, 2, 4 slide
  CHECK(a.window_of(0) == 4);
  CHECK(a.window_of(1) == 0);
  CHECK(a.window_of(4) == 4);
  CHECK(a.unread.empty());
  json c = g2;
  c.erase("attn_logit_softcapping");  // absent: Gemma2Config's 50
  CHECK(read_architecture(c, "c").softcap == 50.0);
  c["attn_logit_softcapping"] = nullptr;  // null: none
  CHECK_FALSE(read_architecture(c, "c").softcap);
  c = g2;
  c["layer_types"] = {"full_attention", "sliding_attention", "full_attention", "full_attention", "sliding_attention"};
  a = read_architecture(c, "c");
  CHECK(a.window_of(0) == 0);
  CHECK(a.window_of(1) == 4);
  CHECK(a.window_of(4) == 4);
  c["layer_types"] = {"full_attention", "sliding_attention"};
  CHECK(refusal(c) == "ckpt/config.json: \"layer_types\": expected an array of num_hidden_layers = 5 entries, got 2 entries");
  c["layer_types"] = {"full_attention", "sliding_attention", "full_attention", "full_attention", "chunked_attention"};
  CHECK(refusal(c) == "ckpt/config.json: \"layer_types[4]\": expected \"sliding_attention\" or \"full_attention\", got \"chunked_attention\"");
  c = g2;
  c["hidden_activation"] = "gelu";
  CHECK_THAT(refusal(c), Catch::Contains("\"hidden_activation\": attn computes Gemma's \"gelu_pytorch_tanh\", got \"gelu\""));
  // Gemma 3: per-head q/k norms, 5 of 6 layers sliding, the local θ, the full layers' scaling
  json g3 = g2;
  g3["model_type"] = "gemma3_text";
  g3.erase("attn_logit_softcapping");
  g3.erase("final_logit_softcapping");
  g3["num_hidden_layers"] = 7;
  g3["rope_theta"] = 1000000.0;
  g3["rope_local_base_freq"] = 10000.0;
  g3["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 8.0}};
  a = read_architecture(g3, "c");
  CHECK(a.name() == "Gemma 3");
  CHECK(a.qk_norm == Architecture::QkNorm::PerHead);
  CHECK_FALSE(a.softcap);  // Gemma3TextConfig's default is none
  for (std::int64_t l = 0; l < 7; ++l) CHECK(a.window_of(l) == (l == 5 ? 0 : 4));
  CHECK(a.local_rope(0));
  CHECK_FALSE(a.local_rope(5));
  CHECK(a.local_rope_theta == 10000.0);
  CHECK(a.rope_theta == 1000000.0);
  CHECK(a.rope_scaling.kind == attn::RopeScaling::Kind::Linear);
  c = g3;
  c["sliding_window_pattern"] = 2;
  CHECK(read_architecture(c, "c").window_of(1) == 0);
  CHECK(read_architecture(c, "c").window_of(2) == 4);
  // the newer form: one rope_parameters per layer type
  c = g3;
  c.erase("rope_theta");
  c.erase("rope_local_base_freq");
  c.erase("rope_scaling");
  c["rope_parameters"] = {{"full_attention", {{"rope_type", "linear"}, {"factor", 8.0}, {"rope_theta", 1000000.0}}},
                          {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}}};
  a = read_architecture(c, "c");
  CHECK(a.rope_theta == 1000000.0);
  CHECK(a.local_rope_theta == 10000.0);
  CHECK(a.rope_scaling.kind == attn::RopeScaling::Kind::Linear);
  c["rope_parameters"]["sliding_attention"]["rope_type"] = "yarn";
  CHECK_THAT(refusal(c), Catch::Contains("rope_parameters.sliding_attention"));
  // a multimodal Gemma 3: text_config, with Gemma3TextConfig's defaults for what it leaves out
  json mm = {{"model_type", "gemma3"}, {"text_config", {{"hidden_size", 32}, {"num_hidden_layers", 7}, {"intermediate_size", 64},
                                                        {"vocab_size", 100}, {"model_type", "gemma3_text"}}},
             {"vision_config", {{"model_type", "siglip_vision_model"}}}, {"mm_tokens_per_image", 256}, {"boi_token_index", 255999}};
  a = read_architecture(mm, "c");
  CHECK(a.model_type == "gemma3");
  CHECK(a.H == 8);
  CHECK(a.Hkv == 4);
  CHECK(a.hd == 256);
  CHECK(a.query_scalar == 256.0);
  CHECK(a.window == 4096);
  CHECK(a.local_rope_theta == 10000.0);
  CHECK(a.rope_theta == 1000000.0);
  CHECK(a.unread.empty());
  json g1 = g2;
  g1["model_type"] = "gemma";  // Gemma 1: another architecture, not a misspelt "gemma2"
  CHECK_THAT(refusal(g1), Catch::EndsWith("got \"gemma\" (an architecture of its own, which attn does not read)"));
  CHECK(read_architecture(g2, "c").sliding_rule == "every even layer: Gemma 2's rule where config.json has no layer_types");
  mm.erase("text_config");
  CHECK(refusal(mm) == "ckpt/config.json: \"text_config\" is required for model_type \"gemma3\": the language model's config");
  // OLMo 2: q/k norms over the whole width, norms after each block, rms_norm_eps defaulting to 1e-5
  json o2 = kLlama;
  o2["model_type"] = "olmo2";
  o2.erase("rms_norm_eps");
  a = read_architecture(o2, "c");
  CHECK(a.name() == "OLMo 2");
  CHECK(a.qk_norm == Architecture::QkNorm::WholeWidth);
  CHECK(a.block == Architecture::Block::PostNorm);
  CHECK(a.eps == 1e-5);
  CHECK_FALSE(a.norm_plus_one);
  CHECK_FALSE(a.query_scalar);
}

TEST_CASE("RoPE's base and scaling from either config form", "[checkpoint]") {
  // the newer form: theta and the scaling inside rope_parameters, no top-level rope_theta (read as
  // 10000 with no scaling before: a silent wrong answer)
  json c = kLlama;
  c.erase("rope_theta");
  c["rope_parameters"] = {{"rope_type", "llama3"}, {"rope_theta", 500000.0}, {"factor", 32.0}, {"low_freq_factor", 1.0},
                          {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  Architecture a = read_architecture(c, "c");
  CHECK(a.rope_theta == 500000.0);
  CHECK(a.rope_scaling.kind == attn::RopeScaling::Kind::Llama3);
  CHECK(a.rope_scaling.factor == 32.0);
  CHECK(a.rope_scaling.low_freq_factor == 1.0);
  CHECK(a.rope_scaling.high_freq_factor == 4.0);
  CHECK(a.rope_scaling.original == 8192.0);
  c["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1000000.0}};
  CHECK(read_architecture(c, "c").rope_theta == 1000000.0);
  CHECK(read_architecture(c, "c").rope_scaling.kind == attn::RopeScaling::Kind::None);
  // the older form, with the older key "type"
  c = kLlama;
  c["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  CHECK(read_architecture(c, "c").rope_scaling.kind == attn::RopeScaling::Kind::Linear);
  CHECK(read_architecture(c, "c").rope_theta == 500000.0);
  c["rope_scaling"]["rope_type"] = "llama3";  // both keys, disagreeing
  CHECK_THROWS_WITH(read_architecture(c, "c"), "c: \"rope_scaling.type\": \"linear\" disagrees with \"rope_type\": \"llama3\"; give one of them");
  // Llama 3.1's bands at head_dim 128, theta 500000: pairs 0..28 kept, 29..34 smoothed, 35..63 divided
  attn::RopeScaling l3;
  l3.kind = attn::RopeScaling::Kind::Llama3, l3.factor = 32, l3.low_freq_factor = 1, l3.high_freq_factor = 4, l3.original = 8192;
  CHECK(attn::rope_band(28, 128, 500000, l3) == attn::RopeBand::High);
  CHECK(attn::rope_band(29, 128, 500000, l3) == attn::RopeBand::Middle);
  CHECK(attn::rope_band(34, 128, 500000, l3) == attn::RopeBand::Middle);
  CHECK(attn::rope_band(35, 128, 500000, l3) == attn::RopeBand::Low);
  const auto rates = attn::rope_rates(128, 500000, l3), plain = attn::rope_rates(128, 500000, {});
  CHECK(rates[28] == plain[28]);
  CHECK(rates[35] == Approx(plain[35] / 32).epsilon(1e-15));
  CHECK(rates[30] < plain[30]);
  CHECK(rates[30] > plain[30] / 32);
}

TEST_CASE("config.json refusals name the file, the key and what was expected", "[checkpoint]") {
  json c = kGpt2;
  c["model_type"] = "gpt3";
  CHECK(refusal(c) == "ckpt/config.json: \"model_type\": attn reads \"gpt2\", \"llama\", \"mistral\", \"qwen2\", \"qwen3\", \"phi3\", \"gemma2\", \"gemma3_text\", \"gemma3\", \"olmo2\", \"bert\", \"roberta\", \"distilbert\", \"bart\", \"marian\", \"t5\", got \"gpt3\" (did you mean \"gpt2\"?)");
  c = kGpt2;
  c.erase("n_head");
  CHECK(refusal(c) == "ckpt/config.json: \"n_head\" is required: a positive integer");
  c = kGpt2;
  c["n_head"] = 5;
  CHECK(refusal(c) == "ckpt/config.json: \"n_head\" = 5 does not divide \"n_embd\" = 16");
  c = kGpt2;
  c["n_embd"] = "16";
  CHECK(refusal(c) == "ckpt/config.json: \"n_embd\": expected a positive integer, got \"16\"");
  c = kLlama;
  c["num_key_value_heads"] = 3;
  CHECK(refusal(c) == "ckpt/config.json: \"num_key_value_heads\" = 3 does not divide \"num_attention_heads\" = 4");
  // RoPE scaling: the types attn does not compute are refused by name, and so is any key it does not read
  c = kLlama;
  c["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 4096}};
  CHECK(refusal(c) == "ckpt/config.json: \"rope_scaling.rope_type\": attn computes RoPE of type \"default\", \"linear\" and \"llama3\"; "
                      "\"yarn\" is not computed");
  c["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}};
  CHECK_THAT(refusal(c), Catch::Contains("\"dynamic\" is not computed"));
  c["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}, {"attention_factor", 0.5}};
  CHECK(refusal(c) == "ckpt/config.json: \"rope_scaling.attention_factor\": not read with rope_type \"linear\" (it reads factor); attn refuses "
                      "a key that could change the rotation rather than ignore it");
  c["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0}};
  CHECK(refusal(c) == "ckpt/config.json: \"rope_scaling.original_max_position_embeddings\": required with rope_type \"llama3\"");
  c = kLlama;
  c["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 10000.0}};
  CHECK(refusal(c) == "ckpt/config.json: \"rope_theta\" = 500000.0 and \"rope_parameters.rope_theta\" = 10000.0 disagree");
  c["rope_scaling"] = {{"rope_type", "default"}};
  CHECK(refusal(c) == "ckpt/config.json: \"rope_scaling\" and \"rope_parameters\" are both given; one of them says how RoPE is scaled");
  c = kLlama;
  c["hidden_act"] = "gelu";
  CHECK_THAT(refusal(c), Catch::Contains("\"hidden_act\": attn computes the Llama family's \"silu\""));
  CHECK(refusal(json::array()) == "ckpt/config.json: expected a JSON object (config.json's content), got array");
  CHECK(refusal(json::object()) == "ckpt/config.json: \"model_type\" is required: expected one of \"gpt2\", \"llama\", \"mistral\", \"qwen2\", \"qwen3\", \"phi3\", \"gemma2\", \"gemma3_text\", \"gemma3\", \"olmo2\", \"bert\", \"roberta\", \"distilbert\", \"bart\", \"marian\", \"t5\"");
  CHECK(refusal({{"model_type", 2}}) == "ckpt/config.json: \"model_type\" is not a string (2): expected one of \"gpt2\", \"llama\", \"mistral\", \"qwen2\", \"qwen3\", \"phi3\", \"gemma2\", \"gemma3_text\", \"gemma3\", \"olmo2\", \"bert\", \"roberta\", \"distilbert\", \"bart\", \"marian\", \"t5\"");
}

TEST_CASE("every config.json key is read, known to change nothing, refused, or named as not read", "[checkpoint]") {
  auto refusal = [](const json& c) {
    try {
      read_architecture(c, "c");
    } catch (const attn::InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // each family with one key that matters and that it does not compute
  json c = kGpt2;
  c["add_cross_attention"] = true;
  CHECK(refusal(c) == "c: \"add_cross_attention\": true is a setting of another model family, which changes attention or the layers around it; "
                      "attn's GPT-2 checkpoint reader does not compute it, and refuses it rather than ignore it");
  c = kLlama;
  c["attn_logit_softcapping"] = 50.0;
  CHECK_THAT(refusal(c), Catch::StartsWith("c: \"attn_logit_softcapping\": 50.0 is a setting of another model family"));
  c = kLlama;
  c["model_type"] = "mistral";
  c["sliding_window"] = 4;
  c["layer_types"] = {"sliding_attention", "full_attention"};
  CHECK_THAT(refusal(c), Catch::Contains("attn's Mistral checkpoint reader does not compute it"));
  c = kLlama;
  c["model_type"] = "qwen2";
  c["use_sliding_window"] = true;
  c["sliding_window"] = 4;
  c["num_hidden_layers"] = 4;
  c["max_window_layers"] = 2;  // layers 2 and 3 only (Qwen2Config's layer_types rule)
  Architecture q = read_architecture(c, "c");
  CHECK(q.window == 4);
  CHECK(q.window_of(1) == 0);
  CHECK(q.window_of(2) == 4);
  CHECK(q.window_of(3) == 4);
  c["max_window_layers"] = 0;  // every layer
  CHECK(read_architecture(c, "c").window_of(0) == 4);
  c["max_window_layers"] = 4;  // none
  CHECK(read_architecture(c, "c").window == 0);
  // the newer families too: Gemma 2, Gemma 3 and OLMo 2, each with a key that matters and that it does not compute
  json g = {{"model_type", "gemma2"}, {"hidden_size", 32}, {"num_attention_heads", 4}, {"num_hidden_layers", 2}, {"vocab_size", 100},
            {"intermediate_size", 64}, {"head_dim", 8}};
  g["use_parallel_residual"] = true;
  CHECK_THAT(refusal(g), Catch::StartsWith("c: \"use_parallel_residual\": true is a setting of another model family"));
  CHECK_THAT(refusal(g), Catch::Contains("attn's Gemma 2 checkpoint reader does not compute it"));
  g.erase("use_parallel_residual");
  g["model_type"] = "gemma3_text";
  g["partial_rotary_factor"] = 0.5;
  CHECK_THAT(refusal(g), Catch::Contains("attn's Gemma 3 checkpoint reader does not compute it"));
  c = kLlama;
  c["model_type"] = "olmo2";
  c["clip_qkv"] = 8.0;
  CHECK_THAT(refusal(c), Catch::StartsWith("c: \"clip_qkv\": 8.0 is a setting of another model family"));
  c.erase("clip_qkv");
  c["attn_logit_softcapping"] = 50.0;  // Gemma's, not OLMo 2's
  CHECK_THAT(refusal(c), Catch::Contains("attn's OLMo 2 checkpoint reader does not compute it"));
  // set to what changes nothing, a setting of another family is no setting
  c = kLlama;
  c["layer_types"] = {"full_attention", "full_attention"};
  c["attn_logit_softcapping"] = nullptr;
  CHECK(refusal(c).empty());
  // known to change nothing: not named; anything else: named as not read
  c = kLlama;
  c["attention_dropout"] = 0.1;
  c["tie_word_embeddings"] = true;
  c["some_new_key"] = 3;
  CHECK(read_architecture(c, "c").unread == std::vector<std::string>{"some_new_key"});
}
