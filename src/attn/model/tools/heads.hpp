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
enum class HeadPattern { PreviousToken, FirstToken, SameToken, Broad, Mixed, NextToken, StartToken, EndToken, Induction, Diagonal, Local };
// "previous token", "first token", "same token", "broad", "mixed", "next token", and an encoder's
// "start token" ([CLS], <s>) and "end token" ([SEP], </s>), and "induction"; a cross-attention's
// "diagonal" (each decoder position on the source position as far through it); "local" (most weight
// on the query and the kLocalWindow − 1 tokens before it, at T ≥ 4 · kLocalWindow)
const char* pattern_name(HeadPattern p);

// The local window of the "local" share: the query and the 7 tokens before it (an encoder's: after it too).
inline constexpr std::int64_t kLocalWindow = 8;

struct HeadSummary {
  double entropy = 0;          // mean over queries of −Σ_j w_ij log2 w_ij, in bits
  double max_entropy = 0;      // the same for uniform weights over each query's visible keys
  double max_off_diagonal = 0; // the largest w_ij with j ≠ i
  std::int64_t max_query = 0, max_key = 0;  // where it is
  HeadPattern pattern = HeadPattern::Mixed;
  double pattern_share = 0;    // the mean weight behind the pattern (e.g. mean w_{i,i−1})
  std::string label;           // what the text says for the pattern: "to [CLS]", "to [SEP]" for an encoder's special tokens (a pair's ends numbered as the tokens are: "to [SEP]₁ + [SEP]₂"); "" = pattern_name
  // The shares behind the label, each a mean over the queries (a causal head's over i ≥ 1: query 0
  // sees only itself): the weight on the first token (a sink), on the previous one, on the query
  // itself; the mean query–key distance Σ_j w_ij |i − j| (over every query); the share within the
  // local window (|i − j| < kLocalWindow; a causal head's over the queries i ≥ kLocalWindow that it
  // restricts; −1 below T = 4 · kLocalWindow, where the window is most of what a query sees); a cross-attention's stay 0 (local −1): its keys are another sequence.
  double first = 0, previous = 0, same = 0, distance = 0, local = -1;
  // An encoder's mean weight on the next token (queries i ≤ T − 2); a causal head's induction score
  // (see summarise_head; −1 without the ids or with fewer than two repeated tokens).
  double next = 0, induction = -1;
};

// A layer's heads averaged: each share and the entropy over its heads (local over those that have one).
struct LayerMeans {
  double entropy = 0, max_entropy = 0, first = 0, previous = 0, same = 0, distance = 0, local = -1;
};
LayerMeans layer_means(const HeadSummary* heads, std::int64_t count);

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
  std::vector<float> weights;        // [layers, heads, T, keys()], row-major; causal: zero above the diagonal; empty when not kept (pool > 1)
  // Long inputs (the weights not kept): each head's map pooled as drawn, grid[l][h][r][c] the largest
  // weight of the pool × pool block of (query, key) positions (r·pool …, c·pool …); NaN where the
  // whole block is masked. pool = 1: no grid, the weights are kept.
  std::int64_t pool = 1;
  std::vector<float> grid;           // [layers, heads, grid_rows(), grid_cols()]
  std::int64_t grid_rows() const { return (T + pool - 1) / pool; }
  std::int64_t grid_cols() const { return (keys() + pool - 1) / pool; }
  bool kept() const { return pool == 1; }
  std::string weights_note;          // why the JSON leaves the weights out ("" when it writes them)
  // A pooled view as drawn (render/heads_layout.hpp's pooled_view): each query and key a cell of
  // drawn_pool × drawn_pool positions, of drawn_from in all; 1 and 0 for a view of tokens.
  std::int64_t drawn_pool = 1, drawn_from = 0;
  std::vector<float> head_weights;   // --head: that head's [T, keys()] (heads_stream.hpp's one_head_view)
  std::int64_t first_layer = 0, first_head = 0;  // the drawn layers' and heads' numbers start here (--head: the one head's own)
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

// summarise_head a query row at a time, rows 0, 1, … T − 1 in order, row i's keys 0 … i read (what
// attn heads streams: a layer's weights made a block of rows at a time and dropped). summarise_head
// is this over the whole [T, T], so the two give the same numbers.
class CausalSummariser {
 public:
  CausalSummariser(std::int64_t T, std::int64_t window, const std::vector<std::int64_t>* ids);
  void add_row(std::int64_t i, const float* row);
  HeadSummary finish() const;

 private:
  std::int64_t T_, window_;
  const std::vector<std::int64_t>* ids_;
  std::vector<std::int64_t> earlier_;  // [T] the query token's most recent earlier occurrence, or −1
  HeadSummary s_;
  bool have_off_ = false;
  double entropy_ = 0, max_entropy_ = 0, distance_ = 0, local_ = 0, induction_ = 0, w00_ = 0;
  std::int64_t local_n_ = 0, induction_n_ = 0;
};
// An encoder's head: every key visible. The tokens at `start` (−1: none) and `ends` are its special
// tokens, spelled start_name and end_name ("[CLS]", "[SEP]").
struct EncoderSpecials {
  std::int64_t start = -1;
  std::vector<std::int64_t> ends;
  std::string start_name, end_name;
};
HeadSummary summarise_encoder_head(const float* weights, std::int64_t T, const EncoderSpecials& specials);
// The same a query row at a time (row i: its T keys), rows in order.
class EncoderSummariser {
 public:
  EncoderSummariser(std::int64_t T, const EncoderSpecials& specials) : T_(T), sp_(specials) {}
  void add_row(std::int64_t i, const float* row);
  HeadSummary finish() const;

 private:
  std::int64_t T_;
  EncoderSpecials sp_;
  HeadSummary s_;
  bool have_off_ = false;
  double entropy_ = 0, next_ = 0, start_ = 0, end_ = 0, distance_ = 0, local_ = 0;
  std::int64_t local_n_ = 0;
};
// A cross-attention head: T decoder queries over S source keys, every key visible; the source's
// special tokens in `specials` (T5's and Marian's </s>, BART's <s> … </s>).
HeadSummary summarise_cross_head(const float* weights, std::int64_t T, std::int64_t S, const EncoderSpecials& specials);

}  // namespace attn::model
