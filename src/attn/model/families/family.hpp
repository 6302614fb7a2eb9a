// A model family described once: the config.json "model_type" it answers to, the keys it reads,
// its tensor names and the features the model code asks for (norms, positions, windows, MLP, ...).
// Each family's own file (gpt2.cpp, llama.cpp, ...) fills one; registry.cpp lists them.
#pragma once

#include <array>
#include <string_view>
#include <vector>

namespace attn::model {

// The coarse layout: GPT-2, the Llama family, and the bidirectional ones (Bert: the encoders BERT,
// RoBERTa, DistilBERT and the encoder-decoders BART, Marian, T5).
enum class Family { Gpt2, Llama, Bert };

// Where the norms sit in a block: before attention and before the MLP (GPT-2, Llama, T5); Gemma's four
// (before and after each); OLMo 2's two, after attention and after the MLP, none before; BERT's
// LayerNorms after each residual sum (post-LN).
enum class Block { PreNorm, Sandwich, PostNorm, PostLayerNorm };
// q/k norms: none; each head's hd features (Qwen3, Gemma 3); all H·hd (Hkv·hd) at once (OLMo 2).
enum class QkNorm { None, PerHead, WholeWidth };

namespace family {

// Which reader of architectures/ reads config.json.
enum class Reader {
  Gpt2,        // n_embd, n_head, ...
  Llama,       // hidden_size, num_attention_heads, RoPE; the decoders after GPT-2
  Encoder,     // BertConfig's keys (DistilBertConfig's where the tensors are DistilBERT's)
  BartLike,    // BartConfig / MarianConfig
  T5,          // T5Config
  TextConfig,  // a multimodal config: the language model is text_config's (of model type `text_config`)
};
// Where a token's position comes from.
enum class Positions {
  Learned,          // a learned table from row 0 (GPT-2's wpe, BERT's position_embeddings)
  LearnedAfterPad,  // RoBERTa: rows from pad_token_id + 1, padding tokens at pad_token_id
  LearnedFrom2,     // BART: row i + 2 (BartLearnedPositionalEmbedding's offset), then layernorm_embedding
  Sinusoidal,       // Marian: computed sines and cosines, not stored
  Rope,             // RoPE on q and k (rope_theta, rope_scaling / rope_parameters)
  RopeLocalGlobal,  // Gemma 3: rope_local_base_freq unscaled on the sliding layers, rope_theta on the full ones
  RelativeBias,     // T5: no positions; a learned relative bias on the scores, no 1/√d scale
};
// Which layers slide by sliding_window.
enum class Windows {
  None,
  Every,               // Mistral, Phi-3: every layer (null: none)
  FromMaxWindowLayers,  // Qwen2, Qwen3: with use_sliding_window, the layers from max_window_layers on
  EveryEven,           // Gemma 2: layer_types, else every even layer
  Pattern,             // Gemma 3: layer_types, else all but every sliding_window_pattern-th
};
// The tensors' names: GPT-2's h.{i}.attn.c_attn, Llama's layers.{i}.self_attn.q_proj, BERT's
// encoder.layer.{i}.attention.self.query, DistilBERT's transformer.layer.{i}.attention.q_lin, BART's
// (and Marian's) encoder.layers.{i}.self_attn.q_proj, T5's encoder.block.{i}.layer.0.SelfAttention.q.
enum class Tensors { Gpt2, Llama, Bert, DistilBert, Bart, T5 };
// The MLP: GPT-2's gelu_new; the Llama family's down(silu(gate) · up); Gemma's with the tanh GELU;
// the encoders' and encoder-decoders' act from config.json.
enum class Mlp { GeluNew, SiluGated, GeluTanhGated, FromConfig };
// The tokenizer's special tokens around a sentence: none (the decoders); BERT's [CLS] a [SEP] b [SEP];
// RoBERTa's (and BART's) <s> a </s></s> b </s>; T5's and Marian's </s> last.
enum class Specials { None, ClsSep, RobertaS, EosLast };

}  // namespace family

struct ModelFamily {
  std::string_view model_type{};              // config.json's "model_type" value it answers to
  std::string_view name{};                    // in messages and titles: "Gemma 3"
  Family kind = Family::Llama;
  family::Reader reader = family::Reader::Llama;
  // config.json's keys: read (or checked, and refused when set otherwise); known to change nothing
  // attn computes; another family's setting that changes attention, refused where set (the decoders')
  std::vector<std::string_view> keys{}, no_effect{}, refused{};
  std::vector<std::string_view> doc_keys{};   // the keys its row of docs/checkpoints.md names (a test checks them)
  const char* defaults = nullptr;             // JSON object: the config class's defaults for the keys left out (Gemma)
  double default_rope_theta = 0;              // with defaults: rope_theta where rope_parameters is absent (0: none)
  double default_eps = 1e-6;                  // rms_norm_eps where absent (the Llama family)
  std::array<std::string_view, 2> prefixes = {"model.", ""};  // the tensors' prefixes, tried in order
  family::Tensors tensors = family::Tensors::Llama;
  family::Positions positions = family::Positions::Rope;
  family::Windows windows = family::Windows::None;
  Block block = Block::PreNorm;
  QkNorm qk_norm = QkNorm::None;
  family::Mlp mlp = family::Mlp::SiluGated;
  bool qkv_bias = false;       // Qwen2: q, k and v projections have biases
  bool fused_qkv = false;      // Phi-3: qkv_proj and gate_up_proj, one tensor each
  bool norm_plus_one = false;  // Gemma: RMSNorm multiplies by (1 + w)
  bool embed_scale = false;    // Gemma: the embeddings × √C, rounded to the embedding's dtype
  bool soft_cap = false;       // Gemma: query_pre_attn_scalar and the soft-caps read; use_bidirectional_attention refused
  bool tied = false;           // tie_word_embeddings' default: the LM head is the token embeddings
  bool adds_bos = false;       // the tokenizer puts BOS first (tokenizer_config.json's add_bos_token decides where given)
  family::Specials specials = family::Specials::None;
  bool decoder_spm = false;    // Marian: the decoder's text is cut by target.spm
  std::string_view text_config{};  // TextConfig: the model_type its text_config must have
};

// The key lists that several families share (families/shared_keys.cpp).
namespace family {
const std::vector<std::string_view>& decoder_no_effect();  // GPT-2 and the Llama family: known to change nothing attn computes
const std::vector<std::string_view>& decoder_refused();    // their settings of other families, refused where set
const std::vector<std::string_view>& llama_keys();         // the Llama family's keys read
const std::vector<std::string_view>& encoder_keys();       // BERT, RoBERTa, DistilBERT: read (BertConfig's and DistilBertConfig's)
const std::vector<std::string_view>& encoder_no_effect();
const std::vector<std::string_view>& bart_keys();          // BART and Marian: read
const std::vector<std::string_view>& bart_no_effect();
// a + b, in order
std::vector<std::string_view> joined(const std::vector<std::string_view>& a, const std::vector<std::string_view>& b);
}  // namespace family

}  // namespace attn::model
