// Common student mistakes as explicit hooks on the one pipeline (attn run --mistake, attn diagnose).
// Each hook is one operation the forward pass calls; the correct one by default, the student's under
// a mistake. Step ids stay the same, so a mistaken trace compares step by step with a student's.
#pragma once

#include <functional>
#include <string_view>
#include <vector>

#include "attn/backend.hpp"
#include "attn/spec.hpp"

namespace attn {

enum class Mistake {
  None,
  WTransposed,       // projections use Wᵀ (the other layout)
  ScaleMissing,      // no 1/√d_k
  ScaleSqrtC,        // 1/√C instead of 1/√hs
  SoftmaxWrongAxis,  // softmax over the queries (dim=-2) instead of the keys
  MaskFlipped,       // the mask's polarity flipped: attends exactly where it must not
  MaskAfterSoftmax,  // softmax first, then blocked weights zeroed (rows no longer sum to 1)
  Fill1e9,           // masked with -1e9 instead of -inf
  QKSwapped,         // scores = k · qᵀ
  HeadsInterleaved,  // heads split as view(B, T, hs, H): head h takes columns h, h+H, ...
  MergeNoTranspose,  // heads merged by reshape(B, T, C) without transposing back
  OutputMissing,     // no output projection
  OutputTransposed,  // output projection with W_oᵀ
};

struct MistakeInfo {
  Mistake mistake;
  const char* name;         // "scale-missing"
  const char* description;  // what the student did
};

const std::vector<MistakeInfo>& all_mistakes();  // every mistake but None, in a fixed order
const MistakeInfo& mistake_info(Mistake m);       // m != None
// InputError naming the known mistakes when none has this name.
Mistake mistake_from_name(std::string_view name, std::string_view option = "--mistake");

enum class Projection { Input, Output };

// The operations a mistake can replace. Shapes in the legend of the trace (h: hs for q and k, hv for v).
struct Hooks {
  // w (in, out) as the product uses it
  std::function<BackendTensor(Backend&, const BackendTensor& w, Projection which)> weight;
  // q (B·H, T, hs), k (B·H, S, hs), kᵀ (B·H, hs, S) -> scores (B·H, T, S)
  std::function<BackendTensor(Backend&, const BackendTensor& q, const BackendTensor& k, const BackendTensor& kt)> scores;
  // the factor the scores are multiplied by, given the correct one
  std::function<Scalar(const Spec&, Scalar correct)> scale;
  // the value blocked scores get, given the correct one
  std::function<Scalar(Scalar correct)> fill;
  // the keep pattern (B, T, S) inverted
  bool flip_mask = false;
  // no masked step: softmax first, then blocked weights set to 0
  bool mask_after_softmax = false;
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
};

Hooks hooks_for(Mistake m);

}  // namespace attn
