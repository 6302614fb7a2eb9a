// Reading a hub checkpoint: config.json's keys per architecture, the tensors under their hub names
// (with or without the "transformer." / "model." prefix), converted to float32 one layer at a time.
#include "attn/model/checkpoint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "attn/error.hpp"
#include "attn/spec/json_read.hpp"
#include "attn/spec/rope_scaling.hpp"
#include "attn/suggest.hpp"

namespace attn::model {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

// config[key] as a positive integer; `fallback` when absent or null (none: required).
std::int64_t positive(const json& c, const std::string& origin, const char* key, std::optional<std::int64_t> fallback = std::nullopt) {
  if (!c.contains(key) || c[key].is_null()) {
    if (fallback) return *fallback;
    throw InputError(fmt::format("{}: \"{}\" is required: a positive integer", origin, key));
  }
  const json& v = c[key];
  if (!v.is_number_integer() || v.get<std::int64_t>() <= 0 || v.get<std::int64_t>() > (std::int64_t{1} << 40)) {
    throw InputError(fmt::format("{}: \"{}\": expected a positive integer, got {}", origin, key, v.dump()));
  }
  return v.get<std::int64_t>();
}

double positive_number(const json& c, const std::string& origin, const char* key, double fallback) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  const json& v = c[key];
  if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>())) {
    throw InputError(fmt::format("{}: \"{}\": expected a positive number, got {}", origin, key, v.dump()));
  }
  return v.get<double>();
}

json read_json_file(const fs::path& path, const std::string& shown) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open the file", shown));
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return parse_json(text, shown).root;  // syntax errors name the line and column
}

// A weight holding NaN or ±inf would surface steps later as a value out of range in some step;
// named here, with the file, the tensor and the first such element.
void require_finite(const StoredTensor& t, const float* values, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(values[i])) {
      throw InputError(fmt::format("{}: tensor \"{}\" holds {} at flat index {}: a checkpoint's weights must be finite", t.file, t.name,
                                   std::isnan(values[i]) ? "nan" : values[i] > 0 ? "inf" : "-inf", i));
    }
  }
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

// RoPE's base and scaling, in either of the forms config.json files have: top-level "rope_theta"
// with "rope_scaling", or (the model library's newer form) "rope_parameters" holding "rope_theta",
// "rope_type" and the scaling's keys. Given twice, they must agree; a theta read from neither is
// Llama's 10000 (the older configs that leave it out mean that).
void read_rope(const json& c, const std::string& origin, Architecture& a) {
  const bool has_params = c.contains("rope_parameters") && !c["rope_parameters"].is_null();
  const bool has_scaling = c.contains("rope_scaling") && !c["rope_scaling"].is_null();
  auto key_name = [&origin](const std::string& base) {
    return [&origin, base](const std::string& key) { return fmt::format("{}: \"{}{}\"", origin, base, key.empty() ? "" : "." + key); };
  };
  a.rope_theta = positive_number(c, origin, "rope_theta", 10000);
  if (has_scaling && has_params) {
    throw InputError(fmt::format("{}: \"rope_scaling\" and \"rope_parameters\" are both given; one of them says how RoPE is scaled", origin));
  }
  if (has_scaling) a.rope_scaling = read_rope_scaling(c["rope_scaling"], key_name("rope_scaling"));
  if (has_params) {
    const json& p = c["rope_parameters"];
    a.rope_scaling = read_rope_scaling(p, key_name("rope_parameters"), {"rope_theta"});
    if (p.contains("rope_theta")) {
      const double theta = positive_number(p, origin + ": \"rope_parameters\"", "rope_theta", 10000);
      if (c.contains("rope_theta") && !c["rope_theta"].is_null() && c["rope_theta"].get<double>() != theta) {
        throw InputError(fmt::format("{}: \"rope_theta\" = {} and \"rope_parameters.rope_theta\" = {} disagree", origin, c["rope_theta"].dump(),
                                     p["rope_theta"].dump()));
      }
      a.rope_theta = theta;
    }
  }
}

// Every key of config.json is read above, known to change nothing attn computes (dropout, ids of
// special tokens, the language-model head, training settings), refused (a setting of another family
// that changes attention or the residual stream), or named in a note as not read.
void check_every_key(const json& c, const std::string& origin, Architecture& a) {
  static const std::vector<std::string_view> gpt2_read = {"model_type", "n_embd", "n_head", "n_layer", "n_positions", "vocab_size", "n_inner",
                                                          "layer_norm_epsilon", "scale_attn_weights", "scale_attn_by_inverse_layer_idx",
                                                          "activation_function", "bos_token_id"};
  static const std::vector<std::string_view> llama_read = {
      "model_type",      "hidden_size",    "num_attention_heads", "num_key_value_heads", "head_dim",     "num_hidden_layers",
      "vocab_size",      "intermediate_size", "max_position_embeddings", "rms_norm_eps", "rope_theta",     "rope_scaling",
      "rope_parameters", "hidden_act",     "sliding_window",      "use_sliding_window",  "max_window_layers", "mlp_bias",
      "attention_bias",  "bos_token_id",   "original_max_position_embeddings"};
  // known to change nothing attn computes: the forward pass in float32 up to one layer's attention
  static const std::vector<std::string_view> no_effect = {
      "architectures", "_name_or_path", "transformers_version", "torch_dtype", "dtype", "use_cache", "initializer_range", "eos_token_id",
      "pad_token_id", "tie_word_embeddings", "attention_dropout", "attn_pdrop", "embd_pdrop", "resid_pdrop", "summary_activation",
      "summary_first_dropout", "summary_proj_to_labels", "summary_type", "summary_use_proj", "task_specific_params", "n_ctx",
      "reorder_and_upcast_attn", "pretraining_tp", "tokenizer_class", "output_past", "id2label", "label2id", "gradient_checkpointing",
      "return_dict", "is_decoder", "use_return_dict", "decoder_start_token_id"};
  // settings of other families that change attention or the residual stream: refused where they are set
  static const std::vector<std::string_view> other_families = {
      "attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar", "sliding_window_pattern", "layer_types",
      "partial_rotary_factor", "rope_local_base_freq", "use_qk_norm", "qk_layernorm", "qk_norm", "embedding_multiplier",
      "attention_multiplier", "residual_multiplier", "logits_scaling", "add_cross_attention", "clip_qkv", "use_parallel_residual",
      "rotary_pct", "parallel_attn", "alibi", "new_decoder_architecture", "hidden_activation", "post_norm", "use_bias"};
  const auto& read = a.family == Family::Gpt2 ? gpt2_read : llama_read;
  auto in = [](const std::vector<std::string_view>& list, const std::string& k) { return std::find(list.begin(), list.end(), k) != list.end(); };
  for (const auto& [key, value] : c.items()) {
    if (in(read, key) || in(no_effect, key)) continue;
    if (in(other_families, key)) {
      // set to nothing, or to what changes nothing, it is no setting
      const bool unset = value.is_null() || value == false || (key == "partial_rotary_factor" && value == 1.0) ||
                         (key == "layer_types" && value.is_array() &&
                          std::all_of(value.begin(), value.end(), [&](const json& t) { return t == (a.window > 0 ? "sliding_attention" : "full_attention"); }));
      if (unset) continue;
      throw InputError(fmt::format("{}: \"{}\": {} is a setting of another model family, which changes attention or the layers around "
                                   "it; attn's {} checkpoint reader does not compute it, and refuses it rather than ignore it",
                                   origin, key, value.dump(), a.name()));
    }
    a.unread.push_back(key);
  }
  // Qwen2's and Qwen3's window covers only the layers from max_window_layers on: attn windows every layer or none
  if ((a.model_type == "qwen2" || a.model_type == "qwen3") && a.window > 0) {
    std::int64_t first = 28;  // Qwen2Config's default
    if (c.contains("max_window_layers") && !c["max_window_layers"].is_null()) {
      const json& v = c["max_window_layers"];
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0) {
        throw InputError(fmt::format("{}: \"max_window_layers\": expected an integer ≥ 0, got {}", origin, v.dump()));
      }
      first = v.get<std::int64_t>();
    }
    if (first >= a.layers) a.window = 0;  // no layer reaches it: no window anywhere
    else if (first > 0) {
      throw InputError(fmt::format("{}: \"use_sliding_window\": true windows only layers {} and on (\"max_window_layers\"); attn computes a "
                                   "window on every layer or none",
                                   origin, first));
    }
  }
}

}  // namespace

std::string Architecture::name() const {
  if (model_type == "gpt2") return "GPT-2";
  if (model_type == "llama") return "Llama";
  if (model_type == "mistral") return "Mistral";
  if (model_type == "qwen3") return "Qwen3";
  if (model_type == "phi3") return "Phi-3";
  return "Qwen2";
}

Architecture read_architecture(const json& c, const std::string& origin) {
  if (!c.is_object()) throw InputError(fmt::format("{}: expected a JSON object (config.json's content), got {}", origin, c.type_name()));
  if (!c.contains("model_type") || !c["model_type"].is_string()) {
    throw InputError(fmt::format("{}: \"model_type\" is {}: expected \"gpt2\", \"llama\", \"mistral\", \"qwen2\", \"qwen3\" or \"phi3\"", origin,
                                 c.contains("model_type") ? "not a string (" + c["model_type"].dump() + ")" : "required"));
  }
  Architecture a;
  a.model_type = c["model_type"].get<std::string>();
  if (a.model_type == "gpt2") {
    a.family = Family::Gpt2;
    a.C = positive(c, origin, "n_embd");
    a.H = a.Hkv = positive(c, origin, "n_head");
    a.layers = positive(c, origin, "n_layer");
    a.positions = positive(c, origin, "n_positions");
    a.vocab = positive(c, origin, "vocab_size");
    a.inner = positive(c, origin, "n_inner", 4 * a.C);
    a.eps = positive_number(c, origin, "layer_norm_epsilon", 1e-5);
    if (a.C % a.H != 0) throw InputError(fmt::format("{}: \"n_head\" = {} does not divide \"n_embd\" = {}", origin, a.H, a.C));
    a.hd = a.C / a.H;
    if (c.value("scale_attn_weights", true) != true || c.value("scale_attn_by_inverse_layer_idx", false) != false) {
      throw InputError(fmt::format("{}: \"scale_attn_weights\": true and \"scale_attn_by_inverse_layer_idx\": false are what attn computes "
                                   "(scores / √hs, GPT-2's own setting)", origin));
    }
    if (c.contains("activation_function") && c["activation_function"] != "gelu_new") {
      throw InputError(fmt::format("{}: \"activation_function\": attn computes GPT-2's \"gelu_new\", got {}", origin, c["activation_function"].dump()));
    }
  } else if (a.model_type == "llama" || a.model_type == "mistral" || a.model_type == "qwen2" || a.model_type == "qwen3" || a.model_type == "phi3") {
    a.family = Family::Llama;
    a.C = positive(c, origin, "hidden_size");
    a.H = positive(c, origin, "num_attention_heads");
    a.Hkv = positive(c, origin, "num_key_value_heads", a.H);
    if (a.H % a.Hkv != 0) {
      throw InputError(fmt::format("{}: \"num_key_value_heads\" = {} does not divide \"num_attention_heads\" = {}", origin, a.Hkv, a.H));
    }
    if (!c.contains("head_dim") && a.C % a.H != 0) {
      throw InputError(fmt::format("{}: \"num_attention_heads\" = {} does not divide \"hidden_size\" = {}; give \"head_dim\"", origin, a.H, a.C));
    }
    a.hd = positive(c, origin, "head_dim", a.C / a.H);
    if (a.hd % 2 != 0) throw InputError(fmt::format("{}: \"head_dim\" = {} is odd; RoPE rotates pairs", origin, a.hd));
    a.layers = positive(c, origin, "num_hidden_layers");
    a.vocab = positive(c, origin, "vocab_size");
    a.inner = positive(c, origin, "intermediate_size");
    a.positions = positive(c, origin, "max_position_embeddings", 0);
    a.eps = positive_number(c, origin, "rms_norm_eps", 1e-6);
    read_rope(c, origin, a);
    if (c.contains("hidden_act") && c["hidden_act"] != "silu") {
      throw InputError(fmt::format("{}: \"hidden_act\": attn computes the Llama family's \"silu\", got {}", origin, c["hidden_act"].dump()));
    }
    const bool qwen = a.model_type == "qwen2" || a.model_type == "qwen3";
    // Mistral and Phi-3 window every layer by sliding_window (null: none); Qwen only with use_sliding_window
    const bool window_used = a.model_type == "mistral" || a.model_type == "phi3" || (qwen && c.value("use_sliding_window", false));
    if (window_used) a.window = positive(c, origin, "sliding_window", 0);
    a.qkv_bias = a.model_type == "qwen2";
    a.qk_norm = a.model_type == "qwen3";
    a.fused_qkv = a.model_type == "phi3";
    if (c.contains("mlp_bias") && c["mlp_bias"] == true) throw InputError(fmt::format("{}: \"mlp_bias\": true is not read", origin));
    if (c.contains("attention_bias") && c["attention_bias"] == true) {
      throw InputError(fmt::format("{}: \"attention_bias\": true is not read (Qwen2's q/k/v biases are)", origin));
    }
  } else {
    throw InputError(fmt::format("{}: \"model_type\": attn reads \"gpt2\", \"llama\", \"mistral\", \"qwen2\", \"qwen3\" and \"phi3\", got \"{}\"{}",
                                 origin, a.model_type, did_you_mean(a.model_type, {"gpt2", "llama", "mistral", "qwen2", "qwen3", "phi3"})));
  }
  if (c.contains("bos_token_id") && c["bos_token_id"].is_number_integer()) a.bos = c["bos_token_id"].get<std::int64_t>();
  check_every_key(c, origin, a);
  return a;
}

Checkpoint::Checkpoint(Architecture arch, TensorStore store, std::string shown)
    : arch_(std::move(arch)), store_(std::move(store)), shown_(std::move(shown)) {}
Checkpoint::Checkpoint(Checkpoint&&) noexcept = default;
Checkpoint::~Checkpoint() = default;

Checkpoint Checkpoint::open(const std::string& path, const json* config, const std::string& shown) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status)) throw InputError(fmt::format("checkpoint.path: {}: no such file or directory", shown));
  std::optional<Architecture> arch;
  std::optional<TensorStore> store;
  if (fs::is_directory(status)) {
    const fs::path dir(path);
    if (config && fs::exists(dir / "config.json")) {
      throw InputError(fmt::format("checkpoint.config: {} has its own config.json; \"config\" is for a lone .safetensors file (or a directory "
                                   "without config.json)", shown));
    }
    if (config) {
      arch = read_architecture(*config, "checkpoint.config");
    } else {
      if (!fs::exists(dir / "config.json")) {
        throw InputError(fmt::format("{}: no config.json in the directory (the architecture); or give \"config\": {{...}}", shown));
      }
      arch = read_architecture(read_json_file(dir / "config.json", shown + "/config.json"), shown + "/config.json");
    }
    if (fs::exists(dir / "model.safetensors")) store = TensorStore::open_file((dir / "model.safetensors").string());
    else if (fs::exists(dir / "model.safetensors.index.json")) store = TensorStore::open_index((dir / "model.safetensors.index.json").string());
    else throw InputError(fmt::format("{}: neither model.safetensors nor model.safetensors.index.json is in the directory", shown));
  } else {
    if (!config && (path.ends_with(".safetensors") || path.ends_with(".safetensors.index.json"))) {
      throw InputError(fmt::format("{}: a single weights file carries no architecture: give \"checkpoint\": {{\"path\": ..., \"config\": {{config.json's keys}}}}", shown));
    }
    if (!path.ends_with(".safetensors") && !path.ends_with(".safetensors.index.json")) {
      throw InputError(fmt::format("checkpoint.path: expected a checkpoint directory, a .safetensors file or a model.safetensors.index.json, got {}",
                                   shown));
    }
    arch = read_architecture(*config, "checkpoint.config");
    store = path.ends_with(".json") ? TensorStore::open_index(path) : TensorStore::open_file(path);
  }
  Checkpoint c(std::move(*arch), std::move(*store), shown);
  const bool gpt2 = c.arch_.family == Family::Gpt2;
  const std::string embed = gpt2 ? "wte.weight" : "embed_tokens.weight";
  for (const char* prefix : gpt2 ? std::vector<const char*>{"", "transformer."} : std::vector<const char*>{"model.", ""}) {
    if (c.store_.find(std::string(prefix) + embed)) {
      c.prefix_ = prefix;
      break;
    }
  }
  if (!c.store_.find(c.prefix_ + embed)) {
    throw InputError(fmt::format("{}: tensor \"{}\" (or \"{}{}\") is missing: the token embeddings of a {} checkpoint", c.store_.path(),
                                 gpt2 ? embed : "model." + embed, gpt2 ? "transformer." : "", embed, c.arch_.name()));
  }
  if (fs::is_directory(status)) {
    c.tokenizer_ = load_tokenizer(path);
    // Llama's and Mistral's tokenizers put BOS first; tokenizer_config.json's add_bos_token decides where it is given.
    c.adds_bos_ = c.arch_.bos && (c.arch_.model_type == "llama" || c.arch_.model_type == "mistral");
    const fs::path tc = fs::path(path) / "tokenizer_config.json";
    if (c.arch_.bos && fs::exists(tc)) {
      const json t = read_json_file(tc, shown + "/tokenizer_config.json");
      if (t.is_object() && t.contains("add_bos_token")) {
        if (!t["add_bos_token"].is_boolean()) {
          throw InputError(fmt::format("{}/tokenizer_config.json: \"add_bos_token\": expected true or false, got {}", shown, t["add_bos_token"].dump()));
        }
        c.adds_bos_ = t["add_bos_token"].get<bool>();
      }
    }
  }
  return c;
}

std::string Checkpoint::describe() const {
  return fmt::format("{} ({}): {} layers × {} heads{}, C = {}", arch_.name(), shown_, arch_.layers, arch_.H,
                     arch_.Hkv != arch_.H ? fmt::format(" on {} kv heads", arch_.Hkv) : "", arch_.C);
}

const StoredTensor& Checkpoint::stored(const std::string& name) const {
  const StoredTensor* t = store_.find(prefix_ + name);
  if (!t) throw InputError(fmt::format("{}: tensor \"{}\" is missing: a {} checkpoint has it ({} in all)", store_.path(), prefix_ + name, arch_.name(), store_.describe()));
  return *t;
}

Tensor Checkpoint::tensor(const std::string& name, const Shape& shape, const char* dims) const {
  const StoredTensor& t = stored(name);
  if (t.shape != shape) {
    throw InputError(fmt::format("{}: tensor \"{}\": expected {} = {}, got {}", t.file, t.name, dims, shape_text(shape), shape_text(t.shape)));
  }
  Tensor out = Tensor::uninitialized(shape);
  convert_to_f32(t, out.mutable_data());
  require_finite(t, out.data(), out.size());
  return out;
}

Tensor Checkpoint::transposed(const std::string& name, std::int64_t out, std::int64_t in, const char* dims) const {
  const Tensor w = tensor(name, {out, in}, dims);
  Tensor t = Tensor::uninitialized({in, out});
  const Scalar* src = w.data();
  Scalar* dst = t.mutable_data();
  for (std::int64_t o = 0; o < out; ++o)
    for (std::int64_t i = 0; i < in; ++i) dst[i * out + o] = src[o * in + i];
  return t;
}

Tensor Checkpoint::embed(const std::vector<std::int64_t>& ids) const {
  const auto T = static_cast<std::int64_t>(ids.size());
  const StoredTensor& wte = stored(arch_.family == Family::Gpt2 ? "wte.weight" : "embed_tokens.weight");
  const std::int64_t C = arch_.C;
  if (wte.shape.size() != 2 || wte.shape[1] != C || wte.shape[0] < arch_.vocab) {
    throw InputError(fmt::format("{}: tensor \"{}\": expected [vocab_size, C] = [{}, {}], got {}", wte.file, wte.name, arch_.vocab, C, shape_text(wte.shape)));
  }
  Tensor x = Tensor::uninitialized({1, T, C});
  convert_rows_to_f32(wte, ids, x.mutable_data());
  require_finite(wte, x.data(), x.size());
  if (arch_.family == Family::Gpt2) {
    if (T > arch_.positions) {
      throw InputError(fmt::format("{} tokens, but GPT-2 has learned positions for n_positions = {} of them", T, arch_.positions));
    }
    const StoredTensor& wpe = stored("wpe.weight");
    if (wpe.shape != std::vector<std::int64_t>{arch_.positions, C}) {
      throw InputError(fmt::format("{}: tensor \"{}\": expected [n_positions, C] = [{}, {}], got {}", wpe.file, wpe.name, arch_.positions, C, shape_text(wpe.shape)));
    }
    std::vector<std::int64_t> rows(static_cast<std::size_t>(T));
    for (std::int64_t i = 0; i < T; ++i) rows[static_cast<std::size_t>(i)] = i;
    Tensor pos = Tensor::uninitialized({T, C});
    convert_rows_to_f32(wpe, rows, pos.mutable_data());
    require_finite(wpe, pos.data(), pos.size());
    for (std::int64_t i = 0; i < T * C; ++i) x.mutable_data()[i] += pos.data()[i];
  }
  return x;
}

LayerWeights Checkpoint::layer(std::int64_t i) const {
  const auto& a = arch_;
  const std::int64_t C = a.C, I = a.inner;
  LayerWeights w;
  if (a.family == Family::Gpt2) {
    const std::string p = fmt::format("h.{}.", i);
    w.norm1_w = tensor(p + "ln_1.weight", {C}, "[C]");
    w.norm1_b = tensor(p + "ln_1.bias", {C}, "[C]");
    w.W_qkv = tensor(p + "attn.c_attn.weight", {C, 3 * C}, "[C, 3C]");  // Conv1D: already x@W
    w.b_qkv = tensor(p + "attn.c_attn.bias", {3 * C}, "[3C]");
    w.W_o = tensor(p + "attn.c_proj.weight", {C, C}, "[C, C]");
    w.b_o = tensor(p + "attn.c_proj.bias", {C}, "[C]");
    w.norm2_w = tensor(p + "ln_2.weight", {C}, "[C]");
    w.norm2_b = tensor(p + "ln_2.bias", {C}, "[C]");
    w.W_up = tensor(p + "mlp.c_fc.weight", {C, I}, "[C, 4C]");
    w.b_up = tensor(p + "mlp.c_fc.bias", {I}, "[4C]");
    w.W_down = tensor(p + "mlp.c_proj.weight", {I, C}, "[4C, C]");
    w.b_down = tensor(p + "mlp.c_proj.bias", {C}, "[C]");
    return w;
  }
  const std::string p = fmt::format("layers.{}.", i);
  const std::int64_t dq = a.H * a.hd, dkv = a.Hkv * a.hd;
  w.norm1_w = tensor(p + "input_layernorm.weight", {C}, "[C]");
  if (a.fused_qkv) {
    // Phi-3: one qkv_proj [H·hd + 2·Hkv·hd, C], its rows q's, then k's, then v's: the trace's fused qkv step
    w.W_qkv = transposed(p + "self_attn.qkv_proj.weight", dq + 2 * dkv, C, "[H·hd + 2·Hkv·hd, C]");
  } else {
    w.W_q = transposed(p + "self_attn.q_proj.weight", dq, C, "[H·hd, C]");  // nn.Linear: [out, in]
    w.W_k = transposed(p + "self_attn.k_proj.weight", dkv, C, "[Hkv·hd, C]");
    w.W_v = transposed(p + "self_attn.v_proj.weight", dkv, C, "[Hkv·hd, C]");
  }
  if (a.qkv_bias) {
    w.b_q = tensor(p + "self_attn.q_proj.bias", {dq}, "[H·hd]");
    w.b_k = tensor(p + "self_attn.k_proj.bias", {dkv}, "[Hkv·hd]");
    w.b_v = tensor(p + "self_attn.v_proj.bias", {dkv}, "[Hkv·hd]");
  }
  if (a.qk_norm) {
    w.q_norm = tensor(p + "self_attn.q_norm.weight", {a.hd}, "[hd]");
    w.k_norm = tensor(p + "self_attn.k_norm.weight", {a.hd}, "[hd]");
  }
  w.W_o = transposed(p + "self_attn.o_proj.weight", C, dq, "[C, H·hd]");
  w.norm2_w = tensor(p + "post_attention_layernorm.weight", {C}, "[C]");
  if (a.fused_qkv) {
    // Phi-3: one gate_up_proj [2I, C], the gate's rows first (its MLP chunks the product in two)
    const Tensor gu = transposed(p + "mlp.gate_up_proj.weight", 2 * I, C, "[2I, C]");  // [C, 2I]
    Tensor gate = Tensor::uninitialized({C, I}), up = Tensor::uninitialized({C, I});
    for (std::int64_t r = 0; r < C; ++r)
      for (std::int64_t j = 0; j < I; ++j) {
        gate.mutable_data()[r * I + j] = gu.data()[r * 2 * I + j];
        up.mutable_data()[r * I + j] = gu.data()[r * 2 * I + I + j];
      }
    w.W_gate = std::move(gate);
    w.W_up = std::move(up);
  } else {
    w.W_gate = transposed(p + "mlp.gate_proj.weight", I, C, "[I, C]");
    w.W_up = transposed(p + "mlp.up_proj.weight", I, C, "[I, C]");
  }
  w.W_down = transposed(p + "mlp.down_proj.weight", C, I, "[C, I]");
  return w;
}

void render_tokenized(const std::string& dir, const std::string& text, std::ostream& out, bool as_json) {
  if (!fs::is_directory(dir)) {
    throw InputError(fmt::format("{}: {}", dir, fs::exists(dir) ? "expected a checkpoint directory with tokenizer files, got a file" : "no such directory"));
  }
  const auto tokenizer = load_tokenizer(dir);
  if (!tokenizer) throw InputError(fmt::format("{}: no tokenizer.json, vocab.json + merges.txt or tokenizer.model in the directory", dir));
  const auto ids = tokenizer->encode(text);
  std::vector<std::string> pieces;
  for (const auto id : ids) pieces.push_back(tokenizer->piece(id));
  if (as_json) {
    const json j = {{"tokenizer", tokenizer->describe()}, {"ids", ids}, {"pieces", pieces}};
    out << j.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
    return;
  }
  out << tokenizer->describe() << "\n" << ids.size() << (ids.size() == 1 ? " token\n" : " tokens\n");
  for (std::size_t i = 0; i < ids.size(); ++i) out << fmt::format("{:>4}  {:>8}  {}\n", i, ids[i], pieces[i]);
}

}  // namespace attn::model
