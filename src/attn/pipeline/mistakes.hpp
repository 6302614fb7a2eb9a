// Common student mistakes as explicit hooks on the one pipeline (attn run --mistake, attn diagnose).
// Each hook is one operation the forward pass calls; the correct one by default, the student's under
// a mistake. Step ids stay the same, so a mistaken trace compares step by step with a student's.
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "attn/numerics/backend.hpp"
#include "attn/core/options.hpp"
#include "attn/core/spec.hpp"

namespace attn {

enum class Mistake {
  None,
  WTransposed,       // projections use Wᵀ (the other layout)
  ScaleMissing,      // no 1/√d_k
  ScaleSqrtC,        // 1/√C instead of 1/√hs
  ScaleDk,           // 1/hs: divided by d_k instead of √d_k
  SoftmaxWrongAxis,  // softmax over the queries (dim=-2) instead of the keys
  MaskFlipped,       // the mask's polarity flipped: attends exactly where it must not
  MaskAfterSoftmax,  // softmax first, then blocked weights zeroed (rows no longer sum to 1)
  MaskMissing,       // the mask left out: every key attended, an additive attn_mask not added
  Fill1e9,           // masked with -1e9 instead of -inf
  QKSwapped,         // scores = k · qᵀ
  HeadsInterleaved,  // heads split as view(B, T, hs, H): head h takes columns h, h+H, ...
  MergeNoTranspose,  // heads merged by reshape(B, T, C) without transposing back
  OutputMissing,     // no output projection
  OutputTransposed,  // output projection with W_oᵀ
  RopeWrongStyle,    // RoPE's pairs of the other style: (2i, 2i+1) for (i, i+R/2) or the reverse
  RopeOnV,           // RoPE applied to v as well as to q and k
  RopeBeforeSplit,   // RoPE applied to the [T, H·hs] rows before the head split: pairs and angles across heads
  KvTiled,           // kv heads repeated by tiling (h % Hkv) instead of repeat_kv's interleave (h / (H/Hkv))
  WindowOffByOne,    // the window keeps W + 1 keys (j ≥ i − W) instead of W
  AlibiSignFlipped,  // ALiBi's bias added with the wrong sign: +m·(i − j)
  // the backward pass's (attn backward --mistake, attn diagnose on grad.* files)
  SoftmaxBackwardElementwise,  // d logits = w ⊙ d w: the softmax's backward without the rowsum term
  BackwardScaleForgotten,      // d scores = d scaled: the scale left out of the chain rule
  BackwardDkUntransposed,      // d k = d scores · q instead of d scoresᵀ · q
  BackwardDxOnePath,           // d x = d q · W_qᵀ only: the keys' and values' paths into x left out
};
// Whether m is a mistake of the backward pass (the forward pass is then the correct one).
bool is_backward(Mistake m);

struct MistakeInfo {
  Mistake mistake;
  const char* name;         // "scale-missing"
  const char* description;  // what the student did
  // The same as a condition on a document's numbers, ending "the document's weights match when …"
  // (attn check's explanation): "1/√d_k is left out".
  const char* condition;
};

const std::vector<MistakeInfo>& all_mistakes();  // every mistake but None, in a fixed order
const MistakeInfo& mistake_info(Mistake m);       // m != None
// InputError naming the known mistakes when none has this name (the option spelled as door does).
Mistake mistake_from_name(std::string_view name, Door door = Door::Cli);
// The same, and an InputError for a mistake of the other pass: run simulates the forward pass's
// mistakes, backward (backward_pass) the backward pass's.
Mistake mistake_for_pass(std::string_view name, bool backward_pass, Door door);
// InputError for a mistake of the other pass (None passes).
void require_pass(Mistake m, bool backward_pass, Door door);
// The mistakes of one pass, by name, in all_mistakes' order: "scale-missing, ..."
std::string mistake_names(bool backward_pass);
// "   (the mistake scale-dk: d_k, not √d_k)": what ends the formula of the step a mistake changes.
std::string mistake_mark(Mistake m, std::string_view what);

enum class Projection { Input, Output };

// The operations a mistake can replace. Shapes in the legend of the trace (h: hs for q and k, hv for v).
struct Hooks {
  // w (in, out) as the product uses it
  std::function<BackendTensor(Backend&, const BackendTensor& w, Projection which)> weight;
  // q (B·H, T, hs), k (B·H, S, hs), kᵀ (B·H, hs, S) -> scores (B·H, T, S)
  std::function<BackendTensor(Backend&, const BackendTensor& q, const BackendTensor& k, const BackendTensor& kt)> scores;
  // the factor the scores are multiplied by, given the correct one
  std::function<double(const Spec&, double correct)> scale;
  // the value blocked scores get, given the correct one
  std::function<double(double correct)> fill;
  // the keep pattern (B, T, S) inverted
  bool flip_mask = false;
  // no masked step: softmax first, then blocked weights set to 0
  bool mask_after_softmax = false;
  // nothing blocked and no additive mask added: the masked step is the logits themselves
  bool mask_missing = false;
  // logits (B, H, T, S) -> weights (B, H, T, S)
  std::function<BackendTensor(Backend&, const BackendTensor& logits, Backend::EmptyRow empty)> softmax;
  // flat (B, L, H·h) -> (B, L, H, h); `view` says whether that is a view (no copy)
  struct Split {
    BackendTensor heads;
    bool view;
  };
  std::function<Split(Backend&, const BackendTensor& flat, std::int64_t H)> split;
  // context (B, H, T, hv) -> merged (B, T, dv)
  std::function<BackendTensor(Backend&, const BackendTensor& context)> merge;
  // the output projection is skipped (output = merged)
  bool output_missing = false;
  // kv heads (B, Hkv, L, h) -> (B, H, L, h), n = H / Hkv copies of each
  std::function<BackendTensor(Backend&, const BackendTensor& kv, std::int64_t n)> repeat;
  // heads (B, G, L, h) turned by the spec's RoPE, with its tables cos, sin (P, R/2); row l at table row first + l
  std::function<BackendTensor(Backend&, const Spec&, const BackendTensor& heads, const BackendTensor& cos, const BackendTensor& sin,
                              std::int64_t first)>
      rotate;
  // v's heads are rotated too (no step shows it: the context differs)
  bool rope_on_v = false;
  // keys added to the sliding window's W
  std::int64_t window_extra = 0;
  // ALiBi's slopes (H) as the bias uses them
  std::function<BackendTensor(Backend&, const BackendTensor& slopes)> slopes;
};

Hooks hooks_for(Mistake m);
// InputError when the mistake cannot happen on this input (rope-on-v without "rope", …), naming what it needs.
void require_applicable(Mistake m, const Spec& s);

}  // namespace attn
