// The pipeline's public face: spec + backend -> trace, optionally under a simulated mistake.
// The step order itself is attention_forward in pipeline/forward.cpp.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "attn/numerics/backend.hpp"
#include "attn/pipeline/mistakes.hpp"
#include "attn/core/spec.hpp"
#include "attn/core/trace.hpp"

namespace attn {

// A step as a document printed it, entry by entry (flat, in the order the trace shows it): the
// decimals (negative: not printed, left as computed) and the printed value.
struct PrintedStep {
  std::vector<int> decimals;
  std::vector<double> values;
};

struct PipelineOptions {
  Mistake mistake = Mistake::None;
  // The steps the run will show (by id); none given: every step. A device's backend starts copying
  // these to the host as they are made; the others stay on the device until something reads them.
  std::vector<std::string> shown;
  bool shows_all() const { return shown.empty(); }
  // FlashAttention's fused pass (attn run --fused): the context straight from q, k and v, with no
  // [T, S] step (kᵀ, scores, scaled, masked, weights) in the trace.
  bool fused = false;
  // Only the projections: x to q, k and v, split into heads, normalised and rotated (the steps up to
  // q.rope and k.rope), nothing after them. attn heads makes the rest a block of query rows at a time.
  bool project_only = false;
  // Each step's time measured to the end of its work (--timings): the backend is waited for after
  // every step. Without it a device runs ahead of the host, and a step's time is only the host's.
  bool timings = false;
  Door door = Door::Cli;  // the door the options came through: messages name them as it spells them ("--fused", "fused=True")
  // A document's convention (attn check's explanation): each step named here is rounded, entry by
  // entry, to the decimals the document printed it with, before the next steps use it.
  std::map<std::string, PrintedStep, std::less<>> rounded;
};

// Under a mistake the trace keeps non-finite values and fully masked rows (a student's tensors can
// hold them) instead of refusing them.
Trace run_pipeline(const Spec& spec, Backend& backend, const PipelineOptions& options = {});

// attn backward: the forward trace, then the gradient of the loss (spec.backward: the gradient of
// sum(output) by default) with respect to every step and given parameter, the steps in the order the
// backward pass computes them (grad.output first). Exit 2 (InputError) for what it does not cover.
Trace run_backward(const Spec& spec, Backend& backend, const PipelineOptions& options = {});

// attn decode's numerics: generation with a KV cache, one token at a time (decode.cpp makes the specs).
struct KvCache {
  BackendTensor k;  // (B, Hkv, S, hs): the keys so far, rotated
  BackendTensor v;  // (B, Hkv, S, hv)
};
// The causal trace of the prefill; fills the cache with its keys and values.
Trace run_prefill(const Spec& spec, Backend& backend, KvCache& cache);
// One new token: `token` is it alone at its position (T = S = 1); `step` is it against every key so
// far, its own included (T = 1, S = t + 1, bottom-right). Its k and v are appended to the cache.
Trace run_decode_step(const Spec& token, const Spec& step, Backend& backend, KvCache& cache);

}  // namespace attn
