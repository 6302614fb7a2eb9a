// attn heads: every layer's and head's attention weights of one sentence at a glance, with a one-line
// summary per head. The numbers are computed by the checkpoint's forward pass (checkpoint.hpp); the
// renderers below only draw them.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>


namespace attn::model {

// What a head mostly does, judged from its weights (see summarise_head).
enum class HeadPattern { PreviousToken, FirstToken, SameToken, Broad, Mixed, NextToken, StartToken, EndToken, Induction, Diagonal };
// "previous token", "first token", "same token", "broad", "mixed", "next token", and an encoder's
// "start token" ([CLS], <s>) and "end token" ([SEP], </s>), and "induction"; a cross-attention's
// "diagonal" (each decoder position on the source position as far through it)
const char* pattern_name(HeadPattern p);

struct HeadSummary {
  double entropy = 0;          // mean over queries of −Σ_j w_ij log2 w_ij, in bits
  double max_entropy = 0;      // the same for uniform weights over each query's visible keys
  double max_off_diagonal = 0; // the largest w_ij with j ≠ i
  std::int64_t max_query = 0, max_key = 0;  // where it is
  HeadPattern pattern = HeadPattern::Mixed;
  double pattern_share = 0;    // the mean weight behind the pattern (e.g. mean w_{i,i−1})
  std::string label;           // what the text says for the pattern: "to [CLS]", "to [SEP]" for an encoder's special tokens (a pair's ends numbered as the tokens are: "to [SEP]₁ + [SEP]₂"); "" = pattern_name
};

// One attention of a model, every layer × head: a decoder's or an encoder's self-attention (T × T), or
// an encoder-decoder's cross-attention (T decoder tokens × S source tokens). attn heads draws one view
// per attention the input names: one for a single stack, three (encoder, decoder, cross) for an
// encoder-decoder, as the notebook tools' model view.
struct HeadsView {
  std::string model;                 // "GPT-2 (examples/checkpoints/tiny-gpt2): 2 layers × 4 heads, C = 16"
  std::string part;                  // "" (one stack), or "encoder", "decoder", "cross"
  std::vector<std::string> tokens;   // [T] the tokens' text ("␣cat"): the queries, and the keys unless cross
  std::vector<std::string> pieces;   // [T] as the vocabulary spells them ("Ġcat"), for the JSON and hover text; may be empty
  std::vector<std::string> key_tokens, key_pieces;  // [S] cross: the source's tokens, the keys
  bool cross = false;                // the keys are the source's (S of them), every one visible
  std::int64_t S = 0;                // cross: the keys' count
  std::int64_t layers = 0, heads = 0, T = 0;
  std::vector<std::int64_t> windows; // [layers] each layer's sliding window W: query i sees keys i − W < j ≤ i; 0 (or none given): every earlier key
  bool bidirectional = false;        // an encoder (BERT): every query sees every key, nothing is masked
  std::vector<float> weights;        // [layers, heads, T, keys()], row-major; causal: zero above the diagonal
  std::vector<HeadSummary> summaries;  // [layers × heads]
  std::vector<std::string> notes;    // where the numbers came from (dtype, tokenizer, BOS)
  std::int64_t keys() const { return cross ? S : T; }
  const std::vector<std::string>& key_labels() const { return cross ? key_tokens : tokens; }
  float weight(std::int64_t l, std::int64_t h, std::int64_t i, std::int64_t j) const {
    return weights[static_cast<std::size_t>(((l * heads + h) * T + i) * keys() + j)];
  }
  std::int64_t window(std::int64_t l) const { return windows.empty() ? 0 : windows[static_cast<std::size_t>(l)]; }
  bool visible(std::int64_t l, std::int64_t i, std::int64_t j) const {
    return bidirectional || cross || (j <= i && (window(l) == 0 || j > i - window(l)));
  }
  // "encoder self-attention", "decoder self-attention", "cross-attention"; "" for one stack
  std::string part_title() const;
  // What the masked cells are, for legends.
  std::string masked_text() const;
  const HeadSummary& summary(std::int64_t l, std::int64_t h) const { return summaries[static_cast<std::size_t>(l * heads + h)]; }
};

// weights: one head's [T, T] rows (causal, within a sliding window W when W > 0). Pure arithmetic.
// ids (the tokens, [T]; none: no induction score): a query whose token occurred before it, most
// recently at j, scores the head's weight on key j + 1, the token that followed it then; their mean
// (with two such queries at least) ≥ 0.4, and above any positional pattern's mean, names the head
// "induction" (a head that continues a repeated sequence by copying).
HeadSummary summarise_head(const float* weights, std::int64_t T, std::int64_t window = 0, const std::vector<std::int64_t>* ids = nullptr);
// The induction measure alone (also attn heads --evidence's): the mean weight on the key after the
// query token's most recent earlier occurrence, over the queries that have one; −1 with fewer than two.
double induction_score(const float* weights, std::int64_t T, const std::vector<std::int64_t>& ids);
// An encoder's head: every key visible. The tokens at `start` (−1: none) and `ends` are its special
// tokens, spelled start_name and end_name ("[CLS]", "[SEP]").
struct EncoderSpecials {
  std::int64_t start = -1;
  std::vector<std::int64_t> ends;
  std::string start_name, end_name;
};
HeadSummary summarise_encoder_head(const float* weights, std::int64_t T, const EncoderSpecials& specials);
// A cross-attention head: T decoder queries over S source keys, every key visible; the source's
// special tokens in `specials` (T5's and Marian's </s>, BART's <s> … </s>).
HeadSummary summarise_cross_head(const float* weights, std::int64_t T, std::int64_t S, const EncoderSpecials& specials);

}  // namespace attn::model
