// The encoders' side of a checkpoint (checkpoint.hpp): BERT's, RoBERTa's and DistilBERT's embeddings
// and layers, and the encoder-decoders' two stacks: BART's (learned positions from row 2), Marian's
// (sinusoidal positions, computed) and T5's (no positions: a relative bias in the attention). Split
// from checkpoint.cpp, which reads the decoder-only families.
#include <fmt/format.h>

#include <tuple>

#include "attn/core/error.hpp"
#include "attn/model/architectures/checkpoint.hpp"
#include "attn/model/architectures/checkpoint_detail.hpp"
#include "attn/numerics/position_tables.hpp"

namespace attn::model {

namespace {

// Rows `rows` of a [rows_total, C] table (positions, token types) added into x (T, C).
void add_rows(const StoredTensor& table, std::int64_t n, std::int64_t C, const std::vector<std::int64_t>& rows, Scalar* x, const char* dims) {
  if (table.shape != std::vector<std::int64_t>{n, C}) {
    throw InputError(fmt::format("{}: tensor \"{}\": expected {} = [{}, {}], got {}", table.file, table.name, dims, n, C, shape_text(table.shape)));
  }
  std::vector<Scalar> v(rows.size() * static_cast<std::size_t>(C));
  convert_rows_to_f32(table, rows, v.data());
  require_finite(table, v.data(), static_cast<std::int64_t>(v.size()));
  for (std::size_t i = 0; i < v.size(); ++i) x[i] += v[i];
}

}  // namespace

std::string Checkpoint::embedding_name(bool decoder) const {
  const auto& a = arch_;
  if (a.family == Family::Gpt2) return "wte.weight";
  if (a.separate_decoder_embeddings) return decoder ? "decoder.embed_tokens.weight" : "encoder.embed_tokens.weight";
  if (a.encoder_decoder) return "shared.weight";
  return a.encoder() ? "embeddings.word_embeddings.weight" : "embed_tokens.weight";
}

namespace {

// Marian: sinusoidal positions 0 .. T − 1 added into x (1, T, C), refused past max_position_embeddings.
void add_sinusoidal(const Architecture& a, Tensor& x, const char* which) {
  const std::int64_t T = x.dim(1), C = a.C;
  if (T > a.positions) {
    throw InputError(fmt::format("{} {} tokens, but {} has sinusoidal positions for max_position_embeddings = {} of them; give fewer tokens", T,
                                 which, a.name(), a.positions));
  }
  const Tensor pe = sinusoidal_positions_halves(T, C);
  for (std::int64_t i = 0; i < T * C; ++i) x.mutable_data()[i] += pe.data()[i];
}

}  // namespace

// BERT's embeddings: word + position (RoBERTa's counted from pad_token_id + 1) + token type, then
// LayerNorm; Marian's: + sinusoidal positions; T5's: the token embeddings alone.
Tensor Checkpoint::embed_encoder(const std::vector<std::int64_t>& ids, const std::vector<std::int64_t>& types, Tensor x) const {
  const family::Positions positions_kind = arch_.features->positions;
  if (positions_kind == family::Positions::RelativeBias) return x;
  if (positions_kind == family::Positions::Sinusoidal) {
    add_sinusoidal(arch_, x, "source");
    return x;
  }
  const auto T = static_cast<std::int64_t>(ids.size());
  const std::int64_t C = arch_.C;
  std::vector<std::int64_t> positions(static_cast<std::size_t>(T));
  std::int64_t seen = 0;  // RoBERTa: padding tokens sit at pad_token_id, the others count on from it
  for (std::int64_t i = 0; i < T; ++i) {
    const bool pad = ids[static_cast<std::size_t>(i)] == arch_.pad_id;
    positions[static_cast<std::size_t>(i)] = !arch_.offset_positions ? i : pad ? arch_.pad_id : arch_.pad_id + ++seen;
  }
  const std::int64_t last = positions.empty() ? 0 : *std::max_element(positions.begin(), positions.end());
  if (last >= arch_.positions) {
    throw InputError(fmt::format("{} tokens, but {} has learned positions for max_position_embeddings = {}{}; give fewer tokens", T, arch_.name(), arch_.positions,
                                 arch_.offset_positions ? fmt::format(", counted from pad_token_id + 1 = {}: at most {} tokens", arch_.pad_id + 1,
                                                                      arch_.positions - arch_.pad_id - 1)
                                                        : ""));
  }
  if (positions_kind == family::Positions::LearnedFrom2) {
    // BartLearnedPositionalEmbedding: position i is row i + 2 of a [max_position_embeddings + 2, C] table
    for (auto& p : positions) p += arch_.position_offset;
    add_rows(stored("encoder.embed_positions.weight"), arch_.positions + arch_.position_offset, C, positions, x.mutable_data(),
             "[max_position_embeddings + 2, C]");
    const auto [w, b] = layer_norm("encoder.layernorm_embedding");
    return layer_norm_rows(x, w, b, arch_.eps);
  }
  add_rows(stored("embeddings.position_embeddings.weight"), arch_.positions, C, positions, x.mutable_data(), "[max_position_embeddings, C]");
  if (arch_.type_vocab > 0) {
    std::vector<std::int64_t> t = types.empty() ? std::vector<std::int64_t>(static_cast<std::size_t>(T), 0) : types;
    add_rows(stored("embeddings.token_type_embeddings.weight"), arch_.type_vocab, C, t, x.mutable_data(), "[type_vocab_size, C]");
  }
  const auto [w, b] = layer_norm("embeddings.LayerNorm");
  return layer_norm_rows(x, w, b, arch_.eps);
}

LayerWeights Checkpoint::encoder_layer(std::int64_t i) const {
  const std::int64_t C = arch_.C, I = arch_.inner;
  LayerWeights w;
  const family::Tensors names = arch_.features->tensors;
  if (names == family::Tensors::T5) {
    const std::string p = fmt::format("encoder.block.{}.layer.", i);
    t5_attention(p + "0.", "SelfAttention", w);
    t5_mlp(p + "1.", w);
    t5_relative("encoder", w);
    return w;
  }
  if (names == family::Tensors::Bart) {
    const std::string p = fmt::format("encoder.layers.{}.", i);
    bart_attention(p, "self_attn", w);
    bart_mlp(p, w);
    return w;
  }
  const bool distil = names == family::Tensors::DistilBert;
  const std::string p = fmt::format("{}.layer.{}.", distil ? "transformer" : "encoder", i);
  const std::string q = distil ? "attention.q_lin" : "attention.self.query", k = distil ? "attention.k_lin" : "attention.self.key",
                    v = distil ? "attention.v_lin" : "attention.self.value", o = distil ? "attention.out_lin" : "attention.output.dense",
                    up = distil ? "ffn.lin1" : "intermediate.dense", down = distil ? "ffn.lin2" : "output.dense";
  w.W_q = weight(p + q + ".weight", {C, C}, "[C, C]", true);
  w.W_k = weight(p + k + ".weight", {C, C}, "[C, C]", true);
  w.W_v = weight(p + v + ".weight", {C, C}, "[C, C]", true);
  w.b_q = tensor(p + q + ".bias", {C}, "[C]");
  w.b_k = tensor(p + k + ".bias", {C}, "[C]");
  w.b_v = tensor(p + v + ".bias", {C}, "[C]");
  w.W_o = weight(p + o + ".weight", {C, C}, "[C, C]", true);
  w.b_o = tensor(p + o + ".bias", {C}, "[C]");
  std::tie(w.attn_ln_w, w.attn_ln_b) = layer_norm(p + (distil ? "sa_layer_norm" : "attention.output.LayerNorm"));
  w.W_up = weight(p + up + ".weight", {I, C}, "[I, C]", true);
  w.b_up = tensor(p + up + ".bias", {I}, "[I]");
  w.W_down = weight(p + down + ".weight", {C, I}, "[C, I]", true);
  w.b_down = tensor(p + down + ".bias", {C}, "[C]");
  std::tie(w.mlp_ln_w, w.mlp_ln_b) = layer_norm(p + (distil ? "output_layer_norm" : "output.LayerNorm"));
  return w;
}

void Checkpoint::bart_attention(const std::string& p, const std::string& att, LayerWeights& w) const {
  const std::int64_t C = arch_.C;
  auto W = [&](const char* n) { return weight(p + att + "." + n + ".weight", {C, C}, "[C, C]", true); };
  auto b = [&](const char* n) { return tensor(p + att + "." + n + ".bias", {C}, "[C]"); };
  w.W_q = W("q_proj"), w.W_k = W("k_proj"), w.W_v = W("v_proj"), w.W_o = W("out_proj");
  w.b_q = b("q_proj"), w.b_k = b("k_proj"), w.b_v = b("v_proj"), w.b_o = b("out_proj");
  std::tie(w.attn_ln_w, w.attn_ln_b) = layer_norm(p + att + "_layer_norm");
}

void Checkpoint::bart_mlp(const std::string& p, LayerWeights& w) const {
  const std::int64_t C = arch_.C, I = arch_.inner;
  w.W_up = weight(p + "fc1.weight", {I, C}, "[I, C]", true);
  w.b_up = tensor(p + "fc1.bias", {I}, "[I]");
  w.W_down = weight(p + "fc2.weight", {C, I}, "[C, I]", true);
  w.b_down = tensor(p + "fc2.bias", {C}, "[C]");
  std::tie(w.mlp_ln_w, w.mlp_ln_b) = layer_norm(p + "final_layer_norm");
}

// T5: the attention of p + att ("SelfAttention", "EncDecAttention"), [H·hd, C] each, no biases, and
// p's RMS norm before it (norm1)
void Checkpoint::t5_attention(const std::string& p, const std::string& att, LayerWeights& w) const {
  const std::int64_t C = arch_.C, inner = arch_.H * arch_.hd;
  auto W = [&](const char* n) { return weight(p + att + "." + n + ".weight", {inner, C}, "[H·d_kv, C]", true); };
  w.W_q = W("q"), w.W_k = W("k"), w.W_v = W("v");
  w.W_o = weight(p + att + ".o.weight", {C, inner}, "[C, H·d_kv]", true);
  w.norm1_w = tensor(p + "layer_norm.weight", {C}, "[C]");
}

// T5: DenseReluDense, wo(act(wi x)) or (gated) wo(act(wi_0 x) · wi_1 x), no biases, with p's RMS norm (norm2)
void Checkpoint::t5_mlp(const std::string& p, LayerWeights& w) const {
  const std::int64_t C = arch_.C, I = arch_.inner;
  const std::string d = p + "DenseReluDense.";
  if (arch_.gated_mlp) {
    w.W_gate = weight(d + "wi_0.weight", {I, C}, "[d_ff, C]", true);
    w.W_up = weight(d + "wi_1.weight", {I, C}, "[d_ff, C]", true);
  } else {
    w.W_up = weight(d + "wi.weight", {I, C}, "[d_ff, C]", true);
  }
  w.W_down = weight(d + "wo.weight", {C, I}, "[C, d_ff]", true);
  w.norm2_w = tensor(p + "layer_norm.weight", {C}, "[C]");
}

void Checkpoint::t5_relative(const std::string& stack, LayerWeights& w) const {
  const std::string name = stack + ".block.0.layer.0.SelfAttention.relative_attention_bias.weight";
  w.rel_table = tensor(name, {arch_.rel_buckets, arch_.H}, "[relative_attention_num_buckets, H]");
  w.rel_bidirectional = stack == "encoder";
  w.rel_source = prefix_ + name;
}

LayerWeights Checkpoint::decoder_self(std::int64_t i) const {
  LayerWeights w;
  if (arch_.features->tensors == family::Tensors::T5) {
    t5_attention(fmt::format("decoder.block.{}.layer.0.", i), "SelfAttention", w);
    t5_relative("decoder", w);
    return w;
  }
  bart_attention(fmt::format("decoder.layers.{}.", i), "self_attn", w);
  return w;
}

LayerWeights Checkpoint::decoder_cross(std::int64_t i) const {
  LayerWeights w;
  if (arch_.features->tensors == family::Tensors::T5) {
    const std::string p = fmt::format("decoder.block.{}.layer.", i);
    t5_attention(p + "1.", "EncDecAttention", w);
    t5_mlp(p + "2.", w);
    return w;
  }
  const std::string p = fmt::format("decoder.layers.{}.", i);
  bart_attention(p, "encoder_attn", w);
  bart_mlp(p, w);
  return w;
}

Tensor Checkpoint::encoder_final_norm() const {
  if (arch_.features->tensors != family::Tensors::T5) return Tensor{};  // T5's alone has one
  return tensor("encoder.final_layer_norm.weight", {arch_.C}, "[C]");
}

Tensor Checkpoint::embed_decoder(const std::vector<std::int64_t>& ids) const {
  const auto T = static_cast<std::int64_t>(ids.size());
  const std::int64_t C = arch_.C;
  const family::Positions positions_kind = arch_.features->positions;
  if (positions_kind != family::Positions::RelativeBias && T > arch_.positions) {
    throw InputError(fmt::format("{} decoder tokens, but {} has {} positions for max_position_embeddings = {} of them; give fewer tokens", T,
                                 arch_.name(), arch_.sinusoidal ? "sinusoidal" : "learned", arch_.positions));
  }
  const StoredTensor& shared = stored(embedding_name(true));
  if (shared.shape.size() != 2 || shared.shape[1] != C) {
    throw InputError(fmt::format("{}: tensor \"{}\": expected [vocab_size, C] with C = {}, got {}", shared.file, shared.name, C, shape_text(shared.shape)));
  }
  for (std::size_t k = 0; k < ids.size(); ++k) {
    if (ids[k] >= shared.shape[0]) {
      throw InputError(fmt::format("decoder token {}: id {} is past the {} rows of \"{}\"", k, ids[k], shared.shape[0], shared.name));
    }
  }
  Tensor x = Tensor::uninitialized({1, T, C});
  convert_rows_to_f32(shared, ids, x.mutable_data());
  require_finite(shared, x.data(), x.size());
  if (arch_.embedding_multiplier != 1) {
    const auto m = static_cast<Scalar>(arch_.embedding_multiplier);
    for (std::int64_t k = 0; k < T * C; ++k) x.mutable_data()[k] *= m;
  }
  if (positions_kind == family::Positions::RelativeBias) return x;
  if (positions_kind == family::Positions::Sinusoidal) {
    add_sinusoidal(arch_, x, "decoder");
    return x;
  }
  std::vector<std::int64_t> positions(static_cast<std::size_t>(T));
  for (std::int64_t k = 0; k < T; ++k) positions[static_cast<std::size_t>(k)] = k + arch_.position_offset;
  add_rows(stored("decoder.embed_positions.weight"), arch_.positions + arch_.position_offset, C, positions, x.mutable_data(),
           "[max_position_embeddings + 2, C]");
  const auto [w, b] = layer_norm("decoder.layernorm_embedding");
  return layer_norm_rows(x, w, b, arch_.eps);
}

}  // namespace attn::model
