// attn heads --ablate and --evidence: the model run again with some heads' outputs removed (zeroed, or
// replaced by their mean over positions) before the output projection, and what that changes: every
// later head's summary and label, and the mean next-token loss. The arithmetic and the comparison;
// the runs are attn heads' own pass (heads_stream.hpp's hooks), the drawing render/ablation_*.cpp's.
// Legend: T tokens, C model width, H heads, hv = dv/H, L layers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attn/model/tools/heads.hpp"
#include "attn/model/tools/heads_stream.hpp"

namespace attn::model {

enum class AblationMode { Zero, Mean };
const char* ablation_mode_name(AblationMode m);  // "zero", "mean"

struct HeadRef {
  std::int64_t layer = 0, head = 0;
  bool operator==(const HeadRef&) const = default;
};
std::string head_ref_name(HeadRef r);  // "L0H2", as --ablate takes it

// --ablate's value: "L0H0,L0H2" (L and H in either case), each head once. InputError naming `option`
// for anything else.
std::vector<HeadRef> parse_head_list(const std::string& value, const std::string& option);
// A head list against the model's sizes: InputError naming `option` and the range for a layer ≥ L or a head ≥ H.
void check_head_list(const std::vector<HeadRef>& heads, std::int64_t layers, std::int64_t H, const std::string& option);

// The hooks that ablate `heads`: in each of their layers the head's context vectors (T, hv) are
// replaced by zeros (Zero) or by their mean over the T positions (Mean) before the output projection,
// so the attention block's output loses (ctx_h − r_h) · W_o[h·hv .. (h+1)·hv) at each position.
LayerHooks ablation_hooks(const std::vector<HeadRef>& heads, AblationMode mode);
// Adds the stream hook to `hooks`: the input's ids into *ids, and into *loss the mean next-token
// cross-entropy (nats) −(1/(T−1)) Σ_{i<T−1} log softmax(logits_i)[id_{i+1}], in double; no loss for an
// encoder (no LM head) or a single token.
void add_loss_hook(LayerHooks& hooks, std::optional<double>* loss, std::vector<std::int64_t>* ids);

// Head (l, h)'s score for pattern p, read off its summary (so at any T, the weights kept or not):
// previous, first and same token (causal: the mean over queries i ≥ 1; an encoder's over every query,
// the previous token's over i ≥ 1), next token, induction (with the ids), broad (entropy / its uniform
// maximum). NaN for the patterns whose score needs the special tokens (start, end, diagonal) or has no
// one measure (mixed).
double pattern_score(const HeadsView& v, std::int64_t l, std::int64_t h, HeadPattern p);

// One head, clean and ablated: both summaries, and the clean label's score in each run.
struct HeadChange {
  HeadRef head;
  HeadSummary clean, ablated;
  double clean_score = 0, ablated_score = 0;  // NaN: no one measure (see pattern_score)
  bool relabelled() const;                    // the label differs
};

struct AblationRun {
  std::vector<HeadRef> heads;       // ablated
  AblationMode mode = AblationMode::Zero;
  HeadsView view;                   // the ablated run, everything attn heads reports
  std::optional<double> loss;       // its mean next-token loss
  std::vector<HeadChange> changes;  // every head of the layers after the first ablated head's, in order
};

struct AblationReport {
  HeadsView clean;
  std::optional<double> loss;       // the clean run's
  std::vector<std::int64_t> ids;
  bool evidence = false;            // --evidence: one run per labelled head
  std::vector<AblationRun> runs;
};

// The changes of a run (fills run.changes), against the clean view.
void compare_runs(const HeadsView& clean, AblationRun& run);
// The k changes largest in |ablated − clean score| (no score: 0; ties: the earlier head).
std::vector<HeadChange> largest_changes(const AblationRun& run, std::size_t k);
// What --evidence ablates: every head labelled by a pattern (not "mixed" or "broad"), in order.
std::vector<HeadRef> labelled_heads(const HeadsView& v);

}  // namespace attn::model
