// The problem as the user gave it: JSON text -> a validated Spec, every tensor in x@W form.
// Every error is an InputError naming the JSON path and what was expected. Nothing here computes attention.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/config.hpp"
#include "attn/core/tensor.hpp"

namespace attn {

// Row/column labels: one list shared by every batch row, or one list per batch row.
using Labels = std::vector<std::vector<std::string>>;

// Projection weights, always stored in x@W form ([in, out]) whatever layout the input used.
struct Weights {
  std::optional<Tensor> W_q;           // [C, dk]
  std::optional<Tensor> W_k, W_v;      // [Cs, Hkv·hs], [Cs, Hkv·hv] (dk, dv unless grouped)
  std::optional<Tensor> W_qkv;         // [C, dk + Hkv·hs + Hkv·hv]: q, k, v in that order
  std::optional<Tensor> W_o;           // [dv, Co]
  std::optional<Tensor> b_q, b_k;      // [dk], [Hkv·hs]
  std::optional<Tensor> b_v;           // [Hkv·hv]
  std::optional<Tensor> b_qkv;         // [dk + Hkv·hs + Hkv·hv]
  std::optional<Tensor> b_o;           // [Co]
};

inline constexpr int kExactInteger = -2;

// Numbers a document printed for one step, to be checked against the computed step (attn check).
struct Expectation {
  std::string id;                  // step id
  Shape shape;                     // as given; must equal the step's shape
  std::vector<double> values;      // row-major; NaN where the entry is null (not printed)
  std::vector<int> decimals;       // printed decimals per entry (-1: null, or a non-finite string;
                                   // kExactInteger: an integer literal, which claims the exact value)
  std::vector<bool> present;       // false where null
  std::vector<std::string> literals;  // each entry as the document's text wrote it ("0.28733302"), to quote it exactly
};

struct Spec {
  std::string title;
  Mode mode = Mode::Self;
  std::int64_t H = 1;  // heads; hs = C / H
  std::int64_t Hkv = 1;  // key/value heads (kv_heads, grouped-query attention): query head h reads kv head h / (H / Hkv); H when not grouped
  Layout layout = Layout::XW;
  ScaleKind scale_kind = ScaleKind::SqrtDk;
  double scale_number = 1;  // as given (a float64 run multiplies by it; float32 ones by its rounding)
  bool scale_given = false;  // false: the default for the entry point was used
  std::string scale_source;  // where a Number scale comes from ("Gemma's query_pre_attn_scalar = 256"); empty: given
  Entry entry = Entry::Embeddings;
  bool batched = false;  // the input had a batch dimension
  std::int64_t B = 1, T = 0, S = 0;
  std::int64_t C = 0;   // model width; 0 when unknown (scores given without v)
  std::int64_t Cs = 0;  // key/value source width: the source's in cross mode, else C
  std::int64_t dk = 0;  // query/key width H·hs
  std::int64_t dv = 0;  // value width H·hv
  std::int64_t Co = 0;  // output width: W_o's, else dv
  bool causal = false;
  CausalAlign causal_align = CausalAlign::TopLeft;
  std::int64_t window = 0;  // sliding window (with causal): query i sees keys i + offset − W < j ≤ i + offset; 0 = none
  std::vector<std::int64_t> lengths;  // padding: one key length per batch row; empty = none
  // attn_mask as given: "block" / "keep" become user_keep (1 = may attend), "add" becomes user_add.
  UserMask user_mask = UserMask::None;
  Tensor user_keep;            // (1 or B, T, S)
  Tensor user_add;             // (1 or B, T, S), may hold -inf
  MaskedRow masked_row = MaskedRow::Error;
  std::optional<Scalar> mask_fill;  // blocked scores' value; none = -inf

  Labels tokens;         // queries: [1 or B][T]
  Labels source_tokens;  // keys/values: [1 or B][S]; equal to tokens unless cross
  std::vector<std::string> token_pieces;  // a checkpoint's tokens as its vocabulary spells them ("Ġcat"); tokens hold their text ("␣cat")

  // Rotary position embedding on q and k per head, after the head split.
  struct Rope {
    double theta = 10000;
    RopeStyle style = RopeStyle::Half;
    std::int64_t dims = 0;        // R, even, ≤ hs: the first R features of a head rotate
    std::int64_t offset = 0;      // the first query's position
    std::int64_t key_first = 0;   // the first key's position: 0 in cross mode, else where the keys end with the queries
    std::int64_t table_first = 0; // the tables' row 0: min(offset, key_first)
    RopeScaling scaling;          // Llama 3's or linear frequency scaling (none by default)
    Tensor cos, sin;              // (P, R/2): cos and sin of p·θ_i (θ_i = theta^(−2i/R), scaled) for positions table_first ..
    // Sets key_first and table_first for T queries and S keys; returns the tables' row count P. Keys
    // start at 0 in cross mode (another sequence); otherwise they end where the queries end, so with
    // S = T each token has one position, and with S > T the extra keys come before.
    std::int64_t place(std::int64_t T, std::int64_t S, bool cross) {
      key_first = cross ? 0 : offset + T - S;
      table_first = std::min(offset, key_first);
      return std::max(offset + T, key_first + S) - table_first;
    }
  };
  std::optional<Rope> rope;

  // Qwen3's and Gemma 3's q/k norms: each head's query and key features RMS-normalised with a learned
  // weight, after the head split and before RoPE: (hs), (hs). OLMo 2's (whole_width): all of q's and
  // k's features at once, before the head split: (dk), (Hkv·hs).
  struct QkNorm {
    Tensor q_weight, k_weight;  // the multipliers: Gemma's (1 + w) already summed (plus_one says so)
    double eps = 1e-6;
    bool whole_width = false;
    bool plus_one = false;
    std::string family;  // "Qwen3", "Gemma 3", "OLMo 2": for the notes
  };
  std::optional<QkNorm> qk_norm;

  // ALiBi: −slope_h · (i − j) added to the scaled scores; no data = none. (H)
  Tensor alibi_slopes;
  bool alibi_default = true;  // slopes by Press et al.'s rule, not given
  // T5's relative position bias: one learned number per head and bucket of the key − query distance,
  // added to the scores (numerics/position_tables.hpp computes the buckets and looks the numbers up).
  struct RelativeBias {
    Tensor table;    // (NB, H): relative_attention_bias.weight, NB = num_buckets
    Tensor buckets;  // (T, S): key j's bucket for query i, as numbers
    Tensor bias;     // (H, T, S): table[buckets[i, j], h]
    std::int64_t max_distance = 128;
    bool bidirectional = true;  // an encoder's: keys after the query have buckets of their own
    std::string source;         // where the table comes from, for the note
  };
  std::optional<RelativeBias> relative_bias;
  bool cached = false;  // attn decode: the keys and values are the KV cache's (k.cache, v.cache)
  std::optional<double> softcap;  // Gemma 2's logit soft-capping: c · tanh(logits / c) before masking

  Positions positions = Positions::None;
  Tensor position_table;  // (T, C): added to x before the projections (positions 0 .. T − 1)

  Tensor x;       // (B, T, C)   Entry::Embeddings
  std::string x_note;  // what x is when it is not given embeddings (a checkpoint layer's norm output)
  std::string source_note;  // what the source is when it is not given embeddings (an encoder-decoder's encoder output)
  Tensor source;  // (B, S, Cs)  cross with embeddings
  Weights w;      //             Entry::Embeddings
  Tensor q;       // (B, T, dk)  Entry::QKV
  Tensor k;       // (B, S, Hkv·hs)  Entry::QKV
  Tensor v;       // (B, S, Hkv·hv)  Entry::QKV; optional there and with Entry::Scores
  Tensor scores;  // (B, H, T, S) Entry::Scores

  std::vector<Expectation> expect;       // attn check: what a document printed, per step
  // attn backward: where the gradient of the output comes from (the input's "backward" block)
  struct Backward {
    enum class Upstream { Sum, Given, Seed, Target } upstream = Upstream::Sum;  // Sum: of sum(output), the default
    Tensor tensor;                  // Given: grad_output; Target: target (both as written: the output's shape)
    std::uint64_t seed = 0;         // Seed: grad_output ~ N(0, 1) from this seed
    std::string path;               // "backward.grad_output", "backward.target", "backward.seed": for messages
  } backward;
  std::optional<double> expect_tolerance;  // overrides half a unit in the last printed decimal
  std::vector<std::string> predict;  // exercise.predict: the step ids --predict asks about (empty: not given)

  std::vector<std::string> notes;  // where values came from ("weights.W_q: identity", random seeds)

  std::int64_t hs() const { return dk > 0 ? dk / H : 0; }
  std::int64_t hv() const { return dv > 0 ? dv / H : 0; }
  // Grouped-query attention: fewer key/value heads than query heads, k Hkv·hs and v Hkv·hv wide.
  bool grouped() const { return Hkv != H; }
  std::int64_t dkv() const { return hs() * Hkv; }
  std::int64_t dvkv() const { return hv() * Hkv; }
  // Some width differs from C: shapes then use the general letters (dk, dv, Co, Cs, hv).
  bool general() const { return Cs != C || dk != C || dv != C || Co != C; }
  bool cross() const { return mode == Mode::Cross; }
  // Keys are the queries' own tokens (shapes then write S as T, and one label list serves both).
  bool keys_are_queries() const { return !cross() && S == T; }
  bool masking() const { return causal || !lengths.empty() || user_mask != UserMask::None; }
  // Some keys are blocked outright (not an additive mask alone).
  bool blocking() const { return causal || !lengths.empty() || !user_keep.shape().empty(); }
  // The keep pattern differs between batch rows (padding, or a [B, T, S] attn_mask).
  bool mask_per_batch() const { return !lengths.empty() || (!user_keep.shape().empty() && user_keep.dim(0) > 1); }
  // The causal diagonal's offset: key j is visible to query i when j <= i + offset.
  std::int64_t causal_offset() const { return causal_align == CausalAlign::BottomRight ? S - T : 0; }
};

}  // namespace attn
