// Reading a hub checkpoint: the tensors under their hub names (with or without the "transformer." /
// "model." prefix), converted to float32 one layer at a time. config.json is read in architecture.cpp.
#include "attn/model/architectures/checkpoint.hpp"
#include "attn/model/architectures/checkpoint_detail.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "attn/core/error.hpp"
#include "attn/io/json_read.hpp"

namespace attn::model {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

json read_json_file(const fs::path& path, const std::string& shown) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open the file", shown));
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return parse_json(text, shown).root;  // syntax errors name the line and column
}

}  // namespace

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

Checkpoint::Checkpoint(Architecture arch, TensorStore store, std::string shown)
    : arch_(std::move(arch)), store_(std::make_shared<const TensorStore>(std::move(store))), shown_(std::move(shown)) {}
Checkpoint::Checkpoint(Checkpoint&&) noexcept = default;
Checkpoint::~Checkpoint() = default;

Checkpoint Checkpoint::open(const std::string& path, const json* config, const std::string& shown) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status)) {
    // a relative path is read from the input file's folder: say where that led
    const std::string where = path != shown ? fmt::format(" (a relative path is read from the input file's folder: {})", path) : "";
    throw InputError(fmt::format("checkpoint.path: {}: no such file or directory{}", shown, where));
  }
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
  const ModelFamily& f = *c.arch_.features;
  const std::string embed = c.embedding_name(false);
  // the family's two prefixes: a multimodal Gemma 3 keeps its language model under one of two, older
  // and newer; an encoder saved with a task head under its model type's name
  const auto& prefixes = f.prefixes;
  for (const std::string_view prefix : prefixes) {
    if (c.store_->find(std::string(prefix) + embed)) {
      c.prefix_ = prefix;
      break;
    }
  }
  if (!c.store_->find(c.prefix_ + embed)) {
    throw InputError(fmt::format("{}: tensor \"{}{}\" (or \"{}{}\") is missing: the token embeddings of a {} checkpoint", c.store_->path(),
                                 prefixes[0], embed, prefixes[1], embed, c.arch_.name()));
  }
  if (fs::is_directory(status)) {
    c.tokenizer_ = load_tokenizer(path);
    // Marian's decoder text is cut by its own target.spm, into the same vocabulary
    if (f.decoder_spm && fs::exists(fs::path(path) / "target.spm") && fs::exists(fs::path(path) / "vocab.json")) {
      c.decoder_tokenizer_ = open_marian(path, "target.spm");
    }
    // Llama's, Mistral's and Gemma's tokenizers put BOS first; tokenizer_config.json's add_bos_token decides where it is given.
    c.adds_bos_ = c.arch_.bos && f.adds_bos;
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
  const std::string layers = arch_.encoder_decoder ? fmt::format("{} encoder and {} decoder layers", arch_.layers, arch_.decoder_layers)
                                                   : fmt::format("{} layers", arch_.layers);
  return fmt::format("{} ({}): {} × {} heads{}, C = {}", arch_.name(), shown_, layers, arch_.H,
                     arch_.Hkv != arch_.H ? fmt::format(" on {} kv head{}", arch_.Hkv, arch_.Hkv == 1 ? "" : "s") : "", arch_.C);
}

const StoredTensor& Checkpoint::stored(const std::string& name) const {
  const StoredTensor* t = store_->find(prefix_ + name);
  if (!t) throw InputError(fmt::format("{}: tensor \"{}\" is missing: {} checkpoints have it ({} in all)", store_->path(), prefix_ + name, arch_.name(), store_->describe()));
  return *t;
}

std::pair<Tensor, Tensor> Checkpoint::layer_norm(const std::string& base) const {
  const Shape c{arch_.C};
  if (!store_->find(prefix_ + base + ".weight") && store_->find(prefix_ + base + ".gamma")) {
    return {tensor(base + ".gamma", c, "[C]"), tensor(base + ".beta", c, "[C]")};  // BERT's older TensorFlow-converted names
  }
  return {tensor(base + ".weight", c, "[C]"), tensor(base + ".bias", c, "[C]")};
}

Checkpoint::Specials Checkpoint::specials() const {
  const family::Specials kind = arch_.features->specials;
  if (kind == family::Specials::None || !tokenizer_) return {};
  // BERT's [CLS] a [SEP] b [SEP]; RoBERTa's <s> a </s></s> b </s>, each as the tokenizer spells it
  if (kind == family::Specials::EosLast) {
    // T5's and Marian's tokenizers put </s> last and nothing first
    const std::int64_t eos = tokenizer_->id_of("</s>");
    if (eos < 0) throw InputError(fmt::format("{}: the tokenizer has no </s> token, which {} puts after a sentence", shown_, arch_.name()));
    return Specials{{}, {}, {eos}};
  }
  const bool roberta = kind == family::Specials::RobertaS;  // BART's tokenizer is RoBERTa's
  const std::int64_t first = tokenizer_->id_of(roberta ? "<s>" : "[CLS]"), last = tokenizer_->id_of(roberta ? "</s>" : "[SEP]");
  if (first < 0 || last < 0) {
    throw InputError(fmt::format("{}: the tokenizer has no {} and {} tokens, which {} puts around a sentence", shown_, roberta ? "<s>" : "[CLS]",
                                 roberta ? "</s>" : "[SEP]", arch_.name()));
  }
  return roberta ? Specials{{first}, {last, last}, {last}} : Specials{{first}, {last}, {last}};
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

namespace {

// A weight in x@W form [in, width] read in order from flat index `pos` on: B[r][j] = stored[row0 + j][r]
// (transpose) or stored[r][row0 + j]; the stored tensor's rows are `ld` elements long. A transposing
// reader converts kBufferRows rows of B at a time into its buffer, in 16 × 16 tiles (the stored rows
// read 16 at a time, each along kBufferRows elements), and copies the rows asked for from there.
// Stored rows [r0, r1) of `ld` elements each, converted to float32, one after another into out.
template <FloatType F>
void convert_rows(const unsigned char* data, std::int64_t ld, std::int64_t r0, std::int64_t r1, Scalar* out) {
  const std::int64_t n = (r1 - r0) * ld, first = r0 * ld;
  for (std::int64_t i = 0; i < n; ++i) out[i] = element_f32(data, F, first + i);
}

class WeightReader {
 public:
  // 128: half of a product's k-block, what one of its two readers reads before skipping ahead
  static constexpr std::int64_t kBufferRows = 128, kTile = 16;
  WeightReader(const unsigned char* data, FloatType f, std::int64_t ld, std::int64_t row0, std::int64_t width, std::int64_t in, bool transpose,
               std::int64_t pos)
      : data_(data), f_(f), ld_(ld), row0_(row0), width_(width), in_(in), transpose_(transpose), pos_(pos) {}

  void read(Scalar* out, std::int64_t n) {
    if (out == nullptr) {
      pos_ += n;
      return;
    }
    while (n > 0) {
      const std::int64_t r = pos_ / width_, j = pos_ % width_;
      std::int64_t advance = std::min(n, width_ - j);
      if (!transpose_) {
        for (std::int64_t q = 0; q < advance; ++q) out[q] = element_f32(data_, f_, r * ld_ + row0_ + j + q);
      } else if (j == 0 && n >= width_) {  // whole rows: from the buffer
        if (r < first_ || r >= first_ + rows_) fill(r);
        const std::int64_t rows = std::min(n / width_, first_ + rows_ - r);
        advance = rows * width_;
        std::copy_n(buffer_.data() + (r - first_) * width_, advance, out);
      } else {
        for (std::int64_t q = 0; q < advance; ++q) out[q] = element_f32(data_, f_, (row0_ + j + q) * ld_ + r);
      }
      out += advance, n -= advance, pos_ += advance;
    }
  }

 private:
  // rows [r, r + kBufferRows) of B (fewer at the end) into the buffer
  void fill(std::int64_t r) {
    first_ = r;
    rows_ = std::min(kBufferRows, in_ - r);
    buffer_.resize(static_cast<std::size_t>(kBufferRows * width_));
    switch (f_) {  // the element type decided once per fill, not per element
      case FloatType::F32: fill_as<FloatType::F32>(r); break;
      case FloatType::F16: fill_as<FloatType::F16>(r); break;
      case FloatType::BF16: fill_as<FloatType::BF16>(r); break;
    }
  }

  template <FloatType F>
  void fill_as(std::int64_t r) {
    Scalar* buffer = buffer_.data();
    constexpr std::int64_t size = F == FloatType::F32 ? 4 : 2;
    for (std::int64_t j0 = 0; j0 < width_; j0 += kTile) {
      const std::int64_t j1 = std::min(width_, j0 + kTile);
      // the next tile's stored rows, asked for early: each is another page, whose translation and
      // first lines then arrive while this tile is converted
      for (std::int64_t j = j1; j < std::min(width_, j1 + kTile); ++j)
        for (std::int64_t b = 0; b < rows_ * size; b += 64) __builtin_prefetch(data_ + ((row0_ + j) * ld_ + r) * size + b);
      for (std::int64_t i0 = 0; i0 < rows_; i0 += kTile) {
        const std::int64_t i1 = std::min(rows_, i0 + kTile);
        for (std::int64_t j = j0; j < j1; ++j) {
          const std::int64_t from = (row0_ + j) * ld_ + r;
          for (std::int64_t i = i0; i < i1; ++i) buffer[i * width_ + j] = element_f32(data_, F, from + i);
        }
      }
    }
  }

  const unsigned char* data_;
  FloatType f_;
  std::int64_t ld_, row0_, width_, in_;
  bool transpose_;
  std::int64_t pos_;
  std::vector<Scalar> buffer_;
  std::int64_t first_ = 0, rows_ = 0;
};

}  // namespace

Tensor Checkpoint::weight(const std::string& name, const Shape& stored_shape, const char* dims, bool transpose, std::int64_t row0,
                          std::int64_t width) const {
  return weight_of(stored(name), stored_shape, dims, transpose, row0, width);
}

Tensor Checkpoint::weight_of(const StoredTensor& t, const Shape& stored_shape, const char* dims, bool transpose, std::int64_t row0,
                             std::int64_t width) const {
  if (t.shape != stored_shape) {
    throw InputError(fmt::format("{}: tensor \"{}\": expected {} = {}, got {}", t.file, t.name, dims, shape_text(stored_shape), shape_text(t.shape)));
  }
  const FloatType f = float_type(t);
  if (const std::int64_t bad = first_nonfinite(t); bad >= 0) {
    const float v = element_f32(t.data, f, bad);
    throw InputError(fmt::format("{}: tensor \"{}\" holds {} at flat index {}: a checkpoint's weights must be finite", t.file, t.name,
                                 std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf", bad));
  }
  const std::int64_t ld = stored_shape[1], in = transpose ? stored_shape[1] : stored_shape[0];
  if (width < 0) width = transpose ? stored_shape[0] : stored_shape[1];
  Tensor::OpenAt open = [keep = store_, data = t.data, f, ld, row0, width, in, transpose](std::int64_t first) {
    auto reader = std::make_shared<WeightReader>(data, f, ld, row0, width, in, transpose, first);
    return [keep, reader](Scalar* out, std::int64_t n) { reader->read(out, n); };
  };
  if (!transpose) return Tensor::generated({in, width}, std::move(open));
  // columns of x@W are the stored rows: read along them, a page at a time
  Tensor::Columns columns = [keep = store_, data = t.data, f, ld, row0](std::int64_t j0, std::int64_t j1, Scalar* out) {
    switch (f) {
      case FloatType::F32: convert_rows<FloatType::F32>(data, ld, row0 + j0, row0 + j1, out); break;
      case FloatType::F16: convert_rows<FloatType::F16>(data, ld, row0 + j0, row0 + j1, out); break;
      case FloatType::BF16: convert_rows<FloatType::BF16>(data, ld, row0 + j0, row0 + j1, out); break;
    }
  };
  return Tensor::generated({in, width}, std::move(open), std::move(columns));
}

namespace {

// x rounded to `bits` significant bits, to nearest, ties to even (BF16 keeps 8, F16 11, F32 24).
float round_significant(float x, int bits) {
  if (x == 0 || !std::isfinite(x)) return x;
  const int e = std::ilogb(x);
  return static_cast<float>(std::ldexp(std::nearbyint(std::ldexp(static_cast<double>(x), bits - 1 - e)), e - (bits - 1)));
}

}  // namespace

float Checkpoint::embedding_scale() const {
  if (!arch_.embed_scale) return 1;
  // torch.tensor(hidden_size ** 0.5, dtype=embeddings.dtype): √C through float32 into the weights' dtype
  const auto root = static_cast<float>(std::sqrt(static_cast<double>(arch_.C)));
  const std::string& dtype = stored("embed_tokens.weight").dtype;
  return dtype == "BF16" ? round_significant(root, 8) : dtype == "F16" ? round_significant(root, 11) : root;
}


Tensor Checkpoint::embed(const std::vector<std::int64_t>& ids, const std::vector<std::int64_t>& types) const {
  const auto T = static_cast<std::int64_t>(ids.size());
  const StoredTensor& wte = stored(embedding_name(false));
  const std::int64_t C = arch_.C;
  if (wte.shape.size() != 2 || wte.shape[1] != C || wte.shape[0] < arch_.vocab) {
    throw InputError(fmt::format("{}: tensor \"{}\": expected [vocab_size, C] = [{}, {}], got {}", wte.file, wte.name, arch_.vocab, C, shape_text(wte.shape)));
  }
  Tensor x = Tensor::uninitialized({1, T, C});
  convert_rows_to_f32(wte, ids, x.mutable_data());
  require_finite(wte, x.data(), x.size());
  if (arch_.embedding_multiplier != 1) {  // BART's and Marian's scale_embedding: × √d_model, in float32
    const auto m = static_cast<Scalar>(arch_.embedding_multiplier);
    for (std::int64_t i = 0; i < T * C; ++i) x.mutable_data()[i] *= m;
  }
  if (arch_.encoder()) return embed_encoder(ids, types, std::move(x));
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
  if (arch_.embed_scale) {
    const float scale = embedding_scale();
    for (std::int64_t i = 0; i < T * C; ++i) x.mutable_data()[i] *= scale;
  }
  return x;
}

std::pair<Tensor, Tensor> Checkpoint::final_norm() const {
  const std::int64_t C = arch_.C;
  if (arch_.encoder()) throw InputError(fmt::format("{} is an encoder: it has no final norm and language-model head to predict a next token", arch_.name()));
  if (arch_.family == Family::Gpt2) return {tensor("ln_f.weight", {C}, "[C]"), tensor("ln_f.bias", {C}, "[C]")};
  Tensor w = tensor("norm.weight", {C}, "[C]");
  if (arch_.norm_plus_one)
    for (std::int64_t j = 0; j < C; ++j) w.mutable_data()[j] += 1.0F;
  return {std::move(w), Tensor{}};
}

const StoredTensor& Checkpoint::head_tensor() const {
  if (arch_.tied) return stored(arch_.family == Family::Gpt2 ? "wte.weight" : "embed_tokens.weight");
  // lm_head sits beside the model's own prefix ("model.lm_head.weight" is not a name the hub writes)
  std::string outer = prefix_;
  for (const char* inner : {"transformer.", "model."})
    if (outer.ends_with(inner)) outer.resize(outer.size() - std::string_view(inner).size());
  const StoredTensor* t = store_->find(outer + "lm_head.weight");
  if (!t) {
    throw InputError(fmt::format("{}: tensor \"{}lm_head.weight\" is missing: config.json's tie_word_embeddings is false, so {} has a "
                                 "language-model head of its own ({} in all)", store_->path(), outer, arch_.name(), store_->describe()));
  }
  return *t;
}

Tensor Checkpoint::lm_head() const {
  final_norm();  // (refuses the encoders)
  const StoredTensor& t = head_tensor();
  if (t.shape.size() != 2 || t.shape[1] != arch_.C || t.shape[0] < arch_.vocab) {
    throw InputError(fmt::format("{}: tensor \"{}\": expected [vocab_size, C] = [{}, {}], got {}", t.file, t.name, arch_.vocab, arch_.C, shape_text(t.shape)));
  }
  return weight_of(t, {t.shape[0], t.shape[1]}, "[vocab_size, C]", true, 0, -1);
}

std::string Checkpoint::lm_head_name() const {
  const StoredTensor& t = head_tensor();
  return arch_.tied ? fmt::format("{} (tied: the token embeddings)", t.name) : t.name;
}

LayerWeights Checkpoint::layer(std::int64_t i) const {
  const auto& a = arch_;
  const std::int64_t C = a.C, I = a.inner;
  LayerWeights w;
  if (a.family == Family::Gpt2) {
    const std::string p = fmt::format("h.{}.", i);
    w.norm1_w = tensor(p + "ln_1.weight", {C}, "[C]");
    w.norm1_b = tensor(p + "ln_1.bias", {C}, "[C]");
    w.W_qkv = weight(p + "attn.c_attn.weight", {C, 3 * C}, "[C, 3C]", false);  // Conv1D: already x@W
    w.b_qkv = tensor(p + "attn.c_attn.bias", {3 * C}, "[3C]");
    w.W_o = weight(p + "attn.c_proj.weight", {C, C}, "[C, C]", false);
    w.b_o = tensor(p + "attn.c_proj.bias", {C}, "[C]");
    w.norm2_w = tensor(p + "ln_2.weight", {C}, "[C]");
    w.norm2_b = tensor(p + "ln_2.bias", {C}, "[C]");
    w.W_up = weight(p + "mlp.c_fc.weight", {C, I}, "[C, 4C]", false);
    w.b_up = tensor(p + "mlp.c_fc.bias", {I}, "[4C]");
    w.W_down = weight(p + "mlp.c_proj.weight", {I, C}, "[4C, C]", false);
    w.b_down = tensor(p + "mlp.c_proj.bias", {C}, "[C]");
    return w;
  }
  if (a.encoder()) return encoder_layer(i);
  const std::string p = fmt::format("layers.{}.", i);
  const std::int64_t dq = a.H * a.hd, dkv = a.Hkv * a.hd;
  // Gemma's RMSNorm multiplies by (1 + w), in float32: held as that sum
  auto norm = [&](const std::string& name, std::int64_t n, const char* dims) {
    Tensor t = tensor(p + name, {n}, dims);
    if (a.norm_plus_one)
      for (std::int64_t j = 0; j < n; ++j) t.mutable_data()[j] += 1.0F;
    return t;
  };
  if (a.block != Architecture::Block::PostNorm) w.norm1_w = norm("input_layernorm.weight", C, "[C]");
  if (a.fused_qkv) {
    // Phi-3: one qkv_proj [H·hd + 2·Hkv·hd, C], its rows q's, then k's, then v's: the trace's fused qkv step
    w.W_qkv = weight(p + "self_attn.qkv_proj.weight", {dq + 2 * dkv, C}, "[H·hd + 2·Hkv·hd, C]", true);
  } else {
    w.W_q = weight(p + "self_attn.q_proj.weight", {dq, C}, "[H·hd, C]", true);  // nn.Linear: [out, in]
    w.W_k = weight(p + "self_attn.k_proj.weight", {dkv, C}, "[Hkv·hd, C]", true);
    w.W_v = weight(p + "self_attn.v_proj.weight", {dkv, C}, "[Hkv·hd, C]", true);
  }
  if (a.qkv_bias) {
    w.b_q = tensor(p + "self_attn.q_proj.bias", {dq}, "[H·hd]");
    w.b_k = tensor(p + "self_attn.k_proj.bias", {dkv}, "[Hkv·hd]");
    w.b_v = tensor(p + "self_attn.v_proj.bias", {dkv}, "[Hkv·hd]");
  }
  if (a.qk_norm == Architecture::QkNorm::PerHead) {
    w.q_norm = norm("self_attn.q_norm.weight", a.hd, "[hd]");
    w.k_norm = norm("self_attn.k_norm.weight", a.hd, "[hd]");
  } else if (a.qk_norm == Architecture::QkNorm::WholeWidth) {
    w.q_norm = norm("self_attn.q_norm.weight", dq, "[H·hd]");
    w.k_norm = norm("self_attn.k_norm.weight", dkv, "[Hkv·hd]");
  }
  w.W_o = weight(p + "self_attn.o_proj.weight", {C, dq}, "[C, H·hd]", true);
  if (a.block == Architecture::Block::PreNorm) {
    w.norm2_w = norm("post_attention_layernorm.weight", C, "[C]");  // Llama's name for the MLP's input norm
  } else {
    w.attn_out_norm = norm("post_attention_layernorm.weight", C, "[C]");  // Gemma, OLMo 2: on the attention's output
    w.mlp_out_norm = norm("post_feedforward_layernorm.weight", C, "[C]");
    if (a.block == Architecture::Block::Sandwich) w.norm2_w = norm("pre_feedforward_layernorm.weight", C, "[C]");
  }
  if (a.fused_qkv) {
    // Phi-3: one gate_up_proj [2I, C], the gate's rows first (its MLP chunks the product in two)
    w.W_gate = weight(p + "mlp.gate_up_proj.weight", {2 * I, C}, "[2I, C]", true, 0, I);
    w.W_up = weight(p + "mlp.gate_up_proj.weight", {2 * I, C}, "[2I, C]", true, I, I);
  } else {
    w.W_gate = weight(p + "mlp.gate_proj.weight", {I, C}, "[I, C]", true);
    w.W_up = weight(p + "mlp.up_proj.weight", {I, C}, "[I, C]", true);
  }
  w.W_down = weight(p + "mlp.down_proj.weight", {C, I}, "[C, I]", true);
  return w;
}

// BERT's and RoBERTa's encoder.layer.{i} (attention.self.query, attention.output.dense and its
// LayerNorm, intermediate.dense, output.dense and its LayerNorm); DistilBERT's transformer.layer.{i}
// (attention.q_lin … out_lin, sa_layer_norm, ffn.lin1, ffn.lin2, output_layer_norm). nn.Linear: [out, in].

void render_tokenized(const std::string& dir, const std::vector<std::string>& texts, const TokenizeOptions& options, std::ostream& out, bool as_json) {
  if (!fs::exists(dir)) throw InputError(fmt::format("{}: no such directory or file", dir));
  // a tokenizer file given directly (tokenizer.json, vocab.txt, ...), or a checkpoint directory
  const auto tokenizer = fs::is_directory(dir) ? load_tokenizer(dir) : load_tokenizer_file(dir);
  if (!tokenizer) throw InputError(fmt::format("{}: no tokenizer.json, vocab.json + merges.txt or tokenizer.model in the directory", dir));
  for (std::size_t t = 0; t < texts.size(); ++t) {
    std::vector<std::int64_t> ids;
    if (options.add_special_tokens) ids = tokenizer->special_first();
    const auto body = tokenizer->encode(texts[t], options.split_special_tokens);
    ids.insert(ids.end(), body.begin(), body.end());
    if (options.add_special_tokens) {
      const auto last = tokenizer->special_last();
      ids.insert(ids.end(), last.begin(), last.end());
    }
    std::vector<std::string> pieces;
    for (const auto id : ids) pieces.push_back(tokenizer->piece(id));
    if (as_json) {
      const json j = {{"tokenizer", tokenizer->describe()}, {"ids", ids}, {"pieces", pieces}};
      out << j.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
      continue;
    }
    out << (t > 0 ? "\n" : "") << tokenizer->describe() << "\n" << ids.size() << (ids.size() == 1 ? " token\n" : " tokens\n");
    for (std::size_t i = 0; i < ids.size(); ++i) out << fmt::format("{:>4}  {:>8}  {}\n", i, ids[i], pieces[i]);
  }
}

}  // namespace attn::model
