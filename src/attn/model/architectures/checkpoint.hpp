// A checkpoint in the common model hub's layout: config.json, safetensors weights (one file or an
// index with shards) and tokenizer files. GPT-2 and the Llama family (Llama, Mistral's sliding window,
// Qwen2's q/k/v biases, Qwen3's and Gemma 3's per-head q/k norms, Phi-3's fused projections, Gemma 2
// and 3's four norms, soft-cap and alternating windows, OLMo 2's norms after each block). Everything
// is computed in float32 after converting each weight to float32.
// Legend: T tokens, C model width, H heads, Hkv key/value heads, hd head width, I MLP width.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "attn/model/formats/safetensors.hpp"
#include "attn/model/tokenizers/tokenizer.hpp"
#include "attn/core/spec.hpp"
#include "attn/model/families/family.hpp"

namespace attn::model {

// config.json's sizes, as one architecture reads them.
struct Architecture {
  std::string model_type;             // config.json's, one of the registry's (families/registry.hpp)
  const ModelFamily* features = nullptr;  // what its family computes (families/); set by read_architecture
  Family family = Family::Gpt2;
  using Block = model::Block;         // where the norms sit in a block (families/family.hpp)
  Block block = Block::PreNorm;
  std::int64_t C = 0;                 // n_embd / hidden_size
  std::int64_t H = 0, Hkv = 0;        // n_head / num_attention_heads, num_key_value_heads (H unless grouped)
  std::int64_t hd = 0;                // head_dim (C / H unless given)
  std::int64_t layers = 0;            // n_layer / num_hidden_layers
  std::int64_t vocab = 0;             // vocab_size
  std::int64_t positions = 0;         // n_positions / max_position_embeddings (0: not given)
  std::int64_t inner = 0;             // MLP width I: n_inner (4C when null) / intermediate_size
  double eps = 1e-5;                  // layer_norm_epsilon / rms_norm_eps
  double rope_theta = 10000;          // Llama family: rope_theta, or rope_parameters' rope_theta
  RopeScaling rope_scaling;           // rope_scaling, or rope_parameters' rope_type and its keys
  std::int64_t window = 0;            // sliding_window (0: none), on the layers `sliding` names
  std::vector<bool> sliding;          // [layers] which layers are windowed (empty: all of them when window > 0)
  std::string sliding_rule;           // what chose them ("layer_types", "every even layer: Gemma 2's rule without layer_types", ...)
  double local_rope_theta = 0;        // Gemma 3: the sliding layers' θ, rope_local_base_freq (0: rope_theta)
  bool qkv_bias = false;              // Qwen2: q, k and v projections have biases
  using QkNorm = model::QkNorm;
  QkNorm qk_norm = QkNorm::None;      // Qwen3, Gemma 3: each head's hd features; OLMo 2: all H·hd (Hkv·hd)
  bool fused_qkv = false;             // Phi-3: qkv_proj and gate_up_proj, one tensor each
  bool norm_plus_one = false;         // Gemma: RMSNorm multiplies by (1 + w)
  bool embed_scale = false;           // Gemma: the embeddings × √C, rounded to the embedding's dtype
  bool gelu_mlp = false;              // Gemma: gelu (tanh form) on the gate, not silu
  std::optional<double> query_scalar; // Gemma: the scores × query_pre_attn_scalar^−½ (else 1/√hd)
  std::optional<double> softcap;      // Gemma 2: attn_logit_softcapping, c · tanh(scores / c) before the mask
  std::optional<std::int64_t> bos;    // bos_token_id
  bool tied = true;                   // tie_word_embeddings (its default per family): the LM head is the token embeddings
  std::optional<double> final_softcap;  // Gemma 2: final_logit_softcapping, c · tanh(logits / c) on the LM head's logits
  std::int64_t type_vocab = 0;        // BERT, RoBERTa: type_vocab_size, the token types (0: none, DistilBERT)
  std::int64_t pad_id = 0;            // pad_token_id: RoBERTa counts positions from pad_token_id + 1
  bool offset_positions = false;      // RoBERTa: position ids pad_token_id + 1 + i (padding tokens at pad_token_id)
  std::int64_t position_offset = 0;   // BART: position i is row i + 2 of embed_positions (BartLearnedPositionalEmbedding's offset)
  double embedding_multiplier = 1;    // BART with scale_embedding: the token embeddings × √d_model
  bool encoder_decoder = false;       // BART, Marian, T5: an encoder (layers, H, inner above) and a decoder
  std::int64_t decoder_layers = 0;    // decoder_layers / num_decoder_layers (its heads and MLP width are the encoder's)
  std::int64_t decoder_start = 2;     // decoder_start_token_id, the decoder's first token
  // The encoders' and encoder-decoders' MLP: act(x·W_up) (BERT's and BART's erf GELU, Marian's swish,
  // T5's relu), or T5 v1.1's gated act(x·wi_0) · x·wi_1 (gelu_new: the tanh form).
  enum class Act { GeluErf, GeluTanh, Relu, Silu } act = Act::GeluErf;
  bool gated_mlp = false;
  bool sinusoidal = false;            // Marian: sinusoidal positions (sines, then cosines), computed, not stored
  bool separate_decoder_embeddings = false;  // Marian with share_encoder_decoder_embeddings false: encoder. and decoder.embed_tokens
  std::int64_t rel_buckets = 0;       // T5: relative_attention_num_buckets (0: no relative bias)
  std::int64_t rel_max_distance = 128;  // T5: relative_attention_max_distance
  bool encoder() const { return family == Family::Bert; }
  std::vector<std::string> unread;    // config.json keys neither read nor known to change nothing (named in a note)
  std::string name() const;           // "GPT-2", "Llama", "Mistral", "Qwen2", "Gemma 2", ...
  // The note for an input of `tokens` positions beyond a RoPE model's trained ones ("" within them,
  // and for learned positions, whose table refuses a longer input itself); `what`: "tokens" or
  // "tokens in all" (a prompt and what is generated).
  std::string beyond_positions_note(std::int64_t tokens, const char* what = "tokens") const;
  // Layer i's sliding window (0: it sees every earlier key), and its RoPE θ and scaling.
  std::int64_t window_of(std::int64_t i) const { return window > 0 && (sliding.empty() || sliding[static_cast<std::size_t>(i)]) ? window : 0; }
  bool local_rope(std::int64_t i) const { return local_rope_theta > 0 && window_of(i) > 0; }
};

// origin names config.json (or "checkpoint.config") in messages, each key as origin + ": " + key.
Architecture read_architecture(const nlohmann::json& config, const std::string& origin);
// The encoder-decoders' config.json (architecture_seq2seq.cpp): BART's and Marian's, T5's.
Architecture read_bart_like(const nlohmann::json& config, const std::string& origin, const ModelFamily& f);
Architecture read_t5(const nlohmann::json& config, const std::string& origin, const ModelFamily& f);

// One layer's weights as float32 tensors, in x@W form ([in, out]) whatever the file's layout: the
// products' weights read from the mapped file as they are used (Checkpoint::weight), the norms held.
// Gemma's norms multiply by (1 + w): that sum is what the norm weights hold here.
struct LayerWeights {
  Tensor norm1_w, norm1_b;            // [C] ln_1 / input_layernorm (no bias: RMSNorm); none in OLMo 2
  std::optional<Tensor> W_qkv, b_qkv; // GPT-2: [C, 3C], [3C]
  std::optional<Tensor> W_q, W_k, W_v;  // Llama: [C, H·hd], [C, Hkv·hd], [C, Hkv·hd]
  std::optional<Tensor> b_q, b_k, b_v;  // Qwen2: [H·hd], [Hkv·hd], [Hkv·hd]
  std::optional<Tensor> q_norm, k_norm;  // Qwen3, Gemma 3: [hd], [hd]; OLMo 2: [H·hd], [Hkv·hd]
  Tensor W_o;                         // [H·hd, C]
  std::optional<Tensor> b_o;          // [C] (GPT-2)
  Tensor norm2_w, norm2_b;            // [C] the MLP's input norm: ln_2 / post_attention_layernorm (Llama) / pre_feedforward_layernorm (Gemma); none in OLMo 2
  std::optional<Tensor> attn_out_norm;  // [C] Gemma, OLMo 2: post_attention_layernorm, on the attention block's output
  std::optional<Tensor> mlp_out_norm;   // [C] Gemma, OLMo 2: post_feedforward_layernorm, on the MLP's output
  Tensor attn_ln_w, attn_ln_b;        // [C] BERT: attention.output.LayerNorm, on the residual sum after attention
  Tensor mlp_ln_w, mlp_ln_b;          // [C] BERT: output.LayerNorm, on the residual sum after the MLP
  Tensor W_up, b_up;                  // GPT-2 c_fc [C, I], [I]; Llama up_proj [C, I]
  std::optional<Tensor> W_gate;       // Llama gate_proj [C, I]
  Tensor W_down, b_down;              // GPT-2 c_proj [I, C], [C]; Llama down_proj [I, C]
  // T5: block 0's relative_attention_bias [NB, H], which every block of its stack uses; an encoder's
  // buckets see both sides of the query, the decoder's only the keys before it
  std::optional<Tensor> rel_table;
  bool rel_bidirectional = true;
  std::string rel_source;             // the table's tensor name, for the note
};

class Checkpoint {
 public:
  // path: a hub directory, or a single .safetensors file with the architecture given as `config`
  // (then there is no tokenizer). shown names it in messages (as the user wrote it).
  static Checkpoint open(const std::string& path, const nlohmann::json* config, const std::string& shown);

  const Architecture& arch() const { return arch_; }
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }
  // The decoder's text: Marian's target.spm where it has one, else the tokenizer above.
  const Tokenizer* decoder_tokenizer() const { return decoder_tokenizer_ ? decoder_tokenizer_.get() : tokenizer_.get(); }
  bool adds_bos() const { return adds_bos_; }  // the tokenizer puts BOS first (Llama's does)
  std::string describe() const;                // "GPT-2 (examples/checkpoints/tiny-gpt2): 2 layers × 4 heads, C = 16"
  std::string weights_description() const { return store_->describe(); }
  // Gemma: √C rounded to the embedding tensor's dtype, as its modeling code makes the factor (1 elsewhere).
  float embedding_scale() const;
  // The tokenizer's special tokens around a sentence (BERT's [CLS] … [SEP], RoBERTa's <s> … </s>):
  // the ids put first, between a pair's sentences, and last; empty for the decoders.
  struct Specials {
    std::vector<std::int64_t> first, between, last;
  };
  Specials specials() const;

  // The token embeddings (+ GPT-2's learned positions; × Gemma's rounded √C; BERT's word + position +
  // token type, then LayerNorm) of ids: [1, T, C]; ids < arch().vocab, types < arch().type_vocab (none: 0).
  Tensor embed(const std::vector<std::int64_t>& ids, const std::vector<std::int64_t>& types = {}) const;
  LayerWeights layer(std::int64_t i) const;
  // An encoder-decoder's decoder: its embeddings [1, T, C] (BART's model.shared × the multiplier +
  // decoder.embed_positions rows 2 .., then decoder.layernorm_embedding; Marian's × √C + sinusoidal
  // positions; T5's shared alone); layer i's self-attention with its norm, and its cross-attention
  // (BART's encoder_attn, T5's EncDecAttention) with its norm and the MLP.
  Tensor embed_decoder(const std::vector<std::int64_t>& ids) const;
  LayerWeights decoder_self(std::int64_t i) const;
  LayerWeights decoder_cross(std::int64_t i) const;
  // T5: encoder.final_layer_norm's weight [C], the RMS norm on the encoder's output (what the
  // decoder's cross-attention reads); BART and Marian have none (an empty tensor).
  Tensor encoder_final_norm() const;
  // What turns the last layer's stream into logits: the final norm's weight and bias [C] (GPT-2's
  // ln_f; the Llama family's RMSNorm model.norm, no bias, Gemma's 1 + w) and the LM head [C, V] in
  // x@W form: the token embeddings where tied, else lm_head.weight. Refused for the encoders.
  std::pair<Tensor, Tensor> final_norm() const;
  Tensor lm_head() const;
  std::string lm_head_name() const;  // "wte.weight (tied)", "lm_head.weight"

  Checkpoint(Checkpoint&&) noexcept;
  ~Checkpoint();

 private:
  Checkpoint(Architecture arch, TensorStore store, std::string shown);
  // A tensor under its hub name (the prefix found once), as float32 of the expected shape; `dims`
  // names the shape's letters for the message ("[C, 3C]").
  Tensor tensor(const std::string& name, const Shape& shape, const char* dims) const;
  Tensor embed_encoder(const std::vector<std::int64_t>& ids, const std::vector<std::int64_t>& types, Tensor x) const;
  LayerWeights encoder_layer(std::int64_t i) const;
  // BART: q/k/v/out_proj of p + att with their biases and att's LayerNorm; fc1, fc2, final_layer_norm of p
  void bart_attention(const std::string& p, const std::string& att, LayerWeights& w) const;
  void bart_mlp(const std::string& p, LayerWeights& w) const;
  // T5: q, k, v, o of p + att (no biases) with p's layer_norm; the MLP of p (DenseReluDense) with its
  // layer_norm; the relative bias table of `stack` ("encoder", "decoder")
  void t5_attention(const std::string& p, const std::string& att, LayerWeights& w) const;
  void t5_mlp(const std::string& p, LayerWeights& w) const;
  void t5_relative(const std::string& stack, LayerWeights& w) const;
  // the token embeddings' tensor name, of the encoder (or the only stack) or of the decoder
  std::string embedding_name(bool decoder) const;
  // A LayerNorm's weight and bias [C] under base + ".weight" / ".bias", or BERT's older ".gamma" / ".beta".
  std::pair<Tensor, Tensor> layer_norm(const std::string& base) const;
  // A weight in x@W form [in, width], read from the mapped file as the products need it: converted to
  // float32 a block at a time and never held (a reader that wants every value at once, an upload to a
  // device, has them filled). Stored as nn.Linear's [rows, in] (transpose: rows [row0, row0 + width)
  // of it, read across), or as Conv1D's [in, width] itself. Refused when a value is not finite.
  Tensor weight(const std::string& name, const Shape& stored_shape, const char* dims, bool transpose, std::int64_t row0 = 0,
                std::int64_t width = -1) const;
  Tensor weight_of(const StoredTensor& t, const Shape& stored_shape, const char* dims, bool transpose, std::int64_t row0, std::int64_t width) const;
  const StoredTensor& head_tensor() const;  // the LM head's stored tensor ([V, C])
  const StoredTensor& stored(const std::string& name) const;

  Architecture arch_;
  std::shared_ptr<const TensorStore> store_;  // shared with the weights read lazily from its mappings
  std::string shown_;
  std::string prefix_;  // "", "transformer.", "model.", or Gemma 3's "language_model.model." / "model.language_model."
  std::unique_ptr<Tokenizer> tokenizer_, decoder_tokenizer_;
  bool adds_bos_ = false;
};

// x (1, T, C) -> (1, T, C): LayerNorm (x − mean) / √(var + eps) · w + b, or RMSNorm x / √(mean(x²) + eps) · w
// when b is empty; each row's sums in double (residual.cpp).
Tensor layer_norm_rows(const Tensor& x, const Tensor& w, const Tensor& b, double eps);

// An input file naming a checkpoint, read by spec/checkpoint.cpp: the model, the tokens and the layer.
struct CheckpointInput {
  Checkpoint ckpt;
  std::vector<std::int64_t> ids;    // [T], BOS first where the tokenizer adds it ([CLS] … [SEP] for BERT)
  std::vector<std::int64_t> types;  // [T] the encoders' token types (a pair's second sentence 1); empty: all 0
  std::vector<std::string> pieces;  // [T] their labels: the text each stands for ("␣cat"), "#id" without a tokenizer
  std::vector<std::string> raw;     // [T] their vocabulary spellings ("Ġcat", "▁cat"), for the JSON and hover text
  std::int64_t layer = 0;
  std::vector<std::string> notes;   // what was read
  // an encoder-decoder's (BART's): "encoder" or "decoder", "self" or "cross"; the decoder's source
  std::string stack, attention;
  std::vector<std::int64_t> source_ids;  // [S] the encoder's tokens (the decoder's: ids above)
  std::vector<std::string> source_pieces, source_raw;
};
// attn tokenize: dir's tokenizer on each text, as lines "id  piece" or one JSON line {"tokenizer",
// "ids", "pieces"} a text. split_special_tokens cuts a special token written in the text as text;
// add_special_tokens puts the tokenizer's own special tokens around each text, as the hub's do by default.
struct TokenizeOptions {
  bool split_special_tokens = false;
  bool add_special_tokens = false;
};
void render_tokenized(const std::string& dir, const std::vector<std::string>& texts, const TokenizeOptions& options, std::ostream& out, bool as_json);

}  // namespace attn::model
