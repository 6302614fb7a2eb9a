// Scaled dot-product attention, one step at a time: spec + backend -> trace. attention_forward is
// the one place the step order lives; it reads top to bottom like the formula. The words of each
// step are in step_text.cpp, mistakes are hooks (mistakes.cpp), and timing and policy checks are
// the recorder's (recorder.cpp): this file holds numerics only.
#include <fmt/format.h>

#include <limits>
#include <optional>

#include "attn/core/error.hpp"
#include "attn/pipeline/pipeline.hpp"
#include "attn/pipeline/recorder.hpp"

namespace attn {
namespace {

using BT = BackendTensor;

struct Flat {
  BT q, k;             // (B, T, dk), (B, S, Hkv·hs)
  std::optional<BT> v;  // (B, S, Hkv·hv); none when scores or q, k are given without v
};

// x (B, L, in) · W (in, out) + b (out) -> (B, L, out)
BT linear(Backend& be, const Hooks& m, const BT& x, const Tensor& w, const std::optional<Tensor>& b, Projection which) {
  const BT y = be.matmul(x, m.weight(be, be.upload(w), which));
  return b ? be.add_bias(y, be.upload(*b)) : y;
}

// q, k, v from the embeddings (x, and the source in cross mode), or as given.
Flat inputs(const Spec& s, Backend& be, const Hooks& m, Recorder& r) {
  if (s.entry == Entry::QKV) {
    Flat f{r.emit(StepId::Q, be.upload(s.q)), r.emit(StepId::K, be.upload(s.k)), std::nullopt};
    if (!s.v.shape().empty()) f.v = r.emit(StepId::V, be.upload(s.v));  // shapes, not values: a dry run has none
    return f;
  }
  const auto& w = s.w;
  BT x = r.emit(StepId::X, be.upload(s.x));  // (B, T, C)
  if (s.positions != Positions::None) {
    // absolute positions, one row per position, added to every batch row before the projections
    const BT table = r.emit(StepId::Positions, be.upload(s.position_table));  // (T, C)
    x = r.emit(StepId::XPos, be.add_mask(x.view({s.B, 1, s.T, s.C}), table.view({1, s.T, s.C})).view({s.B, s.T, s.C}));
  }
  const BT src = s.cross() ? r.emit(StepId::Source, be.upload(s.source)) : x;        // (B, S, Cs)
  if (w.W_qkv) {
    // one product makes q, k and v side by side, (B, T, dk + Hkv·hs + Hkv·hv); the split is shown
    const auto dkv = s.dkv(), dvkv = s.dvkv();
    const BT qkv = r.emit(StepId::Qkv, linear(be, m, x, *w.W_qkv, w.b_qkv, Projection::Input)).view({s.B * s.T, s.dk + dkv + dvkv});
    auto part = [&](StepId id, std::int64_t from, std::int64_t width) {
      return r.emit(id, be.slice_columns(qkv, from, width).view({s.B, s.T, width}));
    };
    return {part(StepId::Q, 0, s.dk), part(StepId::K, s.dk, dkv), part(StepId::V, s.dk + dkv, dvkv)};
  }
  return {r.emit(StepId::Q, linear(be, m, x, *w.W_q, w.b_q, Projection::Input)),
          r.emit(StepId::K, linear(be, m, src, *w.W_k, w.b_k, Projection::Input)),
          r.emit(StepId::V, linear(be, m, src, *w.W_v, w.b_v, Projection::Input))};
}

// (B, L, G·h) -> (B, G, L, h) for G heads (H, or Hkv for k and v): the view and the transpose, both
// shown, when G > 1.
BT split_heads(Backend& be, const Hooks& m, Recorder& r, const BT& flat, std::int64_t G, StepId view_id, StepId heads_id) {
  const auto B = flat.shape[0], L = flat.shape[1], C = flat.shape[2];
  if (G == 1) return flat.view({B, 1, L, C});
  const auto split = m.split(be, flat, G);
  const BT view = r.emit(view_id, split.heads, split.view);
  return r.emit(heads_id, be.swap_axes_1_2(view));
}

// The keep pattern (B, T, S) the backend applies; the mask step shows it, as one [T, S] pattern
// when every batch row shares it.
BT mask_steps(const Spec& s, Backend& be, const Hooks& m, Recorder& r) {
  if (m.mask_missing) {  // the mask left out: every key kept
    const BT all = be.mask_keep(s.B, s.T, s.S, false, 0, 0, {}, false);  // (B, T, S)
    if (s.mask_per_batch()) return r.emit(StepId::Mask, all);
    r.emit(StepId::Mask, be.mask_keep(1, s.T, s.S, false, 0, 0, {}, false).view({s.T, s.S}));
    return all;
  }
  const std::int64_t window = s.window > 0 ? s.window + m.window_extra : 0;
  BT keep = be.mask_keep(s.B, s.T, s.S, s.causal, s.causal_offset(), window, s.lengths, m.flip_mask);
  std::optional<BT> user;
  if (!s.user_keep.shape().empty()) keep = be.keep_and(keep, *(user = be.upload(s.user_keep)));
  if (s.mask_per_batch()) return r.emit(StepId::Mask, keep);
  if (s.B == 1) {  // the one batch row's pattern is the keep itself
    r.emit(StepId::Mask, keep.view({s.T, s.S}));
    return keep;
  }
  BT pattern = be.mask_keep(1, s.T, s.S, s.causal, s.causal_offset(), window, {}, m.flip_mask);
  if (user) pattern = be.keep_and(pattern, *user);
  r.emit(StepId::Mask, pattern.view({s.T, s.S}));
  return keep;
}

Backend::EmptyRow empty_row_policy(MaskedRow p) {
  return p == MaskedRow::Zeros ? Backend::EmptyRow::Zeros : p == MaskedRow::Uniform ? Backend::EmptyRow::Uniform : Backend::EmptyRow::Nan;
}

// Queries, keys and values, heads first, rotated with RoPE: q (B, H, T, hs), k (B, Hkv, S, hs),
// v (B, Hkv, S, hv).
struct Heads {
  BT q, k;
  std::optional<BT> v;
};

Heads project_heads(const Spec& s, Backend& be, const Hooks& m, Recorder& r) {
  Flat f = inputs(s, be, m, r);
  // (rows, n) RMS-normalised over n features with a learned weight (n)
  auto rms = [&](const BT& t, const Tensor& w) {
    const auto n = t.shape.back();
    return be.rms_norm_rows(t.view({element_count(t.shape) / n, n}), be.upload(w), s.qk_norm->eps).view(t.shape);
  };
  if (s.qk_norm && s.qk_norm->whole_width) {
    // OLMo 2: all of q's and k's features normalised at once, before the head split
    f.q = r.emit(StepId::QNorm, rms(f.q, s.qk_norm->q_weight));
    f.k = r.emit(StepId::KNorm, rms(f.k, s.qk_norm->k_weight));
  }
  Heads h{split_heads(be, m, r, f.q, s.H, StepId::QView, StepId::QHeads), split_heads(be, m, r, f.k, s.Hkv, StepId::KView, StepId::KHeads),
          std::nullopt};
  if (f.v) h.v = split_heads(be, m, r, *f.v, s.Hkv, StepId::VView, StepId::VHeads);
  if (s.qk_norm && !s.qk_norm->whole_width) {
    // Qwen3, Gemma 3: each head's q and k features RMS-normalised with a learned weight, before RoPE
    h.q = r.emit(StepId::QNorm, rms(h.q, s.qk_norm->q_weight));
    h.k = r.emit(StepId::KNorm, rms(h.k, s.qk_norm->k_weight));
  }
  if (s.rope) {
    // rotary positions: each head's q and k pairs turned by their position's angles
    const auto& rope = *s.rope;
    const BT cos = r.emit(StepId::RopeCos, be.upload(rope.cos)), sin = r.emit(StepId::RopeSin, be.upload(rope.sin));  // (P, R/2)
    h.q = r.emit(StepId::QRope, m.rotate(be, s, h.q, cos, sin, rope.offset - rope.table_first));
    h.k = r.emit(StepId::KRope, m.rotate(be, s, h.k, cos, sin, rope.key_first - rope.table_first));
    if (h.v && m.rope_on_v) h.v = m.rotate(be, s, *h.v, cos, sin, rope.key_first - rope.table_first);
  }
  return h;
}

// The context vectors onwards: the merged heads and the output projection (B, T, Co).
void merge_and_project(const Spec& s, Backend& be, const Hooks& m, Recorder& r, const BT& context) {
  const BT merged = s.H > 1 ? r.emit(StepId::Merged, m.merge(be, context)) : context.view({s.B, s.T, s.dv});  // (B, T, dv)
  if (s.w.W_o) r.emit(StepId::Output, m.output_missing ? merged : linear(be, m, merged, *s.w.W_o, s.w.b_o, Projection::Output));
}

// scores (B, H, T, S) -> the scaled, biased, capped and masked logits, the weights, and with v heads
// (B, H, S, hv) the context, the merged heads and the output projection.
void scores_to_output(const Spec& s, Backend& be, const Hooks& m, Recorder& r, const BT& scores, const std::optional<BT>& v_heads) {
  const auto B = s.B, H = s.H, T = s.T, S = s.S, hv = s.hv();

  // 2. scale: scores · 1/√hs (or the given factor)
  BT logits = scores;  // (B, H, T, S)
  if (s.scale_kind != ScaleKind::None) logits = r.emit(StepId::Scaled, be.scale(scores, m.scale(s, r.config().scale_exact)));
  if (!s.alibi_slopes.shape().empty()) {
    // ALiBi: a bias by distance, one slope per head, the same for every batch row
    const BT bias = r.emit(StepId::Alibi, be.distance_bias(m.slopes(be, be.upload(s.alibi_slopes)), T, S, s.causal_offset()));  // (H, T, S)
    logits = r.emit(StepId::Biased, be.add_mask(logits.view({B, 1, H * T, S}), bias.view({1, H * T, S})).view({B, H, T, S}));
  }
  if (s.relative_bias) {
    // T5: each key's bucket of its distance from the query, and each head's learned number for it
    r.emit(StepId::RelBucket, be.upload(s.relative_bias->buckets));                  // (T, S)
    const BT bias = r.emit(StepId::RelBias, be.upload(s.relative_bias->bias));        // (H, T, S)
    logits = r.emit(StepId::Biased, be.add_mask(logits.view({B, 1, H * T, S}), bias.view({1, H * T, S})).view({B, H, T, S}));
  }
  if (s.softcap) logits = r.emit(StepId::Capped, be.soft_cap(logits, *s.softcap));  // last before the mask, as Gemma 2

  // 3. mask: blocked keys to -inf, additive masks added
  std::optional<BT> keep;  // (B, T, S), 1 = may attend
  if (s.masking()) {
    if (s.blocking()) keep = mask_steps(s, be, m, r);
    BT base = logits;
    if (!s.user_add.shape().empty()) {
      const bool shared = s.user_add.dim(0) == 1;
      const BT add = r.emit(StepId::MaskAdd, be.upload(shared ? s.user_add.reshaped({T, S}) : s.user_add));
      if (!m.mask_missing) base = be.add_mask(logits, add.view({shared ? 1 : B, T, S}));
    }
    if (!m.mask_after_softmax) {
      r.facts.fill = m.fill(s.mask_fill ? *s.mask_fill : -std::numeric_limits<Scalar>::infinity());
      logits = r.emit(StepId::Masked, keep ? be.masked_fill(base, *keep, r.facts.fill) : base);
      r.check_masked_rows(logits);
    }
  }

  // 4. softmax over the keys (row max subtracted), each row's sum shown
  BT weights = m.softmax(be, logits, empty_row_policy(s.masked_row));  // (B, H, T, S)
  // (blocked weights zeroed: an additive mask alone blocks none, and require_applicable refuses it)
  if (keep && m.mask_after_softmax) weights = be.masked_fill(weights, *keep, 0);
  const BT sums = be.row_sums(weights.view({B * H * T, S})).view({B, H, T});
  weights = r.emit(StepId::Weights, weights);  // (as a document printed them, when it rounded them: PipelineOptions::rounded)
  r.attach_row_sums(sums);
  if (!v_heads) return;

  // 5. context: weights · v, heads merged back, the output projection (B, T, Co)
  merge_and_project(s, be, m, r, r.emit(StepId::Context, be.matmul(weights.view({B * H, T, S}), v_heads->view({B * H, S, hv})).view({B, H, T, hv})));
}

// --fused: what FlashAttention covers, or exit 2 naming what it does not.
void require_fusable(const Spec& s, Door door) {
  auto refuse = [door](const std::string& what) {
    throw InputError(fmt::format("{}: {}; run without {} to see every step", option_name(door, "fused"), what, switch_on(door, "fused")));
  };
  if (s.entry == Entry::Scores) refuse("the scores are given, so there is no q and k to fuse");
  if (s.v.shape().empty() && s.entry == Entry::QKV) refuse("no v is given, so there is no context to compute");
  if (!s.alibi_slopes.shape().empty()) refuse("ALiBi's bias is a step of its own");
  if (s.relative_bias) refuse("T5's relative position bias is a step of its own");
  if (s.softcap) refuse("soft-capping is a step of its own");
  if (!s.user_add.shape().empty() || !s.user_keep.shape().empty()) refuse("a given attn_mask is a step of its own");
  if (s.mask_fill) refuse("mask_fill: the fused pass blocks keys with -inf");
}

// The query rows (flat over B, H, T) with no key to attend under the fused pass's keep rule: counted
// from the rule itself (the fused pass holds no masked step to count them in).
Backend::EmptyRows empty_rows_of(const Spec& s, const Backend::FusedMask& mask) {
  Backend::EmptyRows e;
  for (std::int64_t b = 0; b < s.B; ++b) {
    const std::int64_t len = mask.lengths.empty() ? s.S : mask.lengths[static_cast<std::size_t>(b)];
    for (std::int64_t i = 0; i < s.T; ++i) {
      const std::int64_t hi = std::min(len - 1, mask.causal ? i + mask.offset : s.S - 1);
      const std::int64_t lo = mask.window > 0 ? std::max<std::int64_t>(0, i + mask.offset - mask.window + 1) : 0;
      if (lo <= hi) continue;
      if (e.count == 0) e.first = b * s.H * s.T + i;
      e.count += s.H;  // every head's row
    }
  }
  return e;
}

// --fused: q (B, H, T, hs), k and v (B, Hkv, S, ·) -> the context in one primitive, then the rest.
void attend_fused(const Spec& s, Backend& be, const Hooks& m, Recorder& r, const Heads& h) {
  Backend::FusedMask mask;
  if (s.blocking()) mask = {s.causal, s.causal_offset(), s.window, s.lengths};
  r.check_empty_rows(empty_rows_of(s, mask));
  const double scale = s.scale_kind == ScaleKind::None ? 1.0 : r.config().scale_exact;
  r.facts.fused = true;
  r.config().fused = true;
  merge_and_project(s, be, m, r, r.emit(StepId::Context, be.fused_attention(h.q, h.k, *h.v, scale, mask, empty_row_policy(s.masked_row))));
}

// q (B, H, T, hs), the keys and values (B, Hkv, S, ·) -> the scores, then the rest: the kv heads
// repeated to the H query heads when grouped.
void attend(const Spec& s, Backend& be, const Hooks& m, Recorder& r, const Heads& h) {
  const auto B = s.B, H = s.H, T = s.T, S = s.S, hs = s.hs();
  BT k = h.k;
  std::optional<BT> v = h.v;
  // grouped-query attention: each kv head serves H / Hkv query heads, repeated to line up with them
  if (s.grouped()) k = r.emit(StepId::KRepeat, m.repeat(be, k, H / s.Hkv));  // (B, H, S, hs)
  if (v && s.grouped()) v = r.emit(StepId::VRepeat, m.repeat(be, *v, H / s.Hkv));
  const BT q = h.q.view({B * H, T, hs});
  k = k.view({B * H, S, hs});
  // kᵀ is materialised only so the student can see the transpose the formula talks about
  const BT kt = r.emit(StepId::KT, be.transpose_last2(k).view({B, H, hs, S})).view({B * H, hs, S});  // (B·H, hs, S)
  scores_to_output(s, be, m, r, r.emit(StepId::Scores, m.scores(be, q, k, kt).view({B, H, T, S})), v);
}

// The forward pass. Shapes are the full ones; the trace drops B and H where the input has none.
Trace attention_forward(const Spec& s, Backend& be, const Hooks& m, Recorder& r, bool fused, bool project_only) {
  if (project_only) {
    project_heads(s, be, m, r);
  } else if (fused) {
    attend_fused(s, be, m, r, project_heads(s, be, m, r));
  } else if (s.entry == Entry::Scores) {
    // the scores, given (with the values, when given)
    const BT scores = r.emit(StepId::Scores, be.upload(s.scores));
    std::optional<BT> v_heads;  // (B, H, S, hv)
    if (!s.v.shape().empty()) v_heads = split_heads(be, m, r, r.emit(StepId::V, be.upload(s.v)), s.H, StepId::VView, StepId::VHeads);
    scores_to_output(s, be, m, r, scores, v_heads);
  } else {
    attend(s, be, m, r, project_heads(s, be, m, r));
  }
  return r.take();
}

}  // namespace

Trace run_pipeline(const Spec& spec, Backend& backend, const PipelineOptions& options) {
  require_pass(options.mistake, false, options.door);
  if (options.mistake != Mistake::None) require_applicable(options.mistake, spec);
  if (options.fused) {
    const Door door = options.door;
    if (options.mistake != Mistake::None) {
      throw InputError(fmt::format("{}: a {} changes steps the fused pass does not show; run without {}", option_name(door, "fused"),
                                   option_name(door, "mistake"), switch_on(door, "fused")));
    }
    require_fusable(spec, door);
  }
  const Hooks hooks = hooks_for(options.mistake);
  Recorder recorder(spec, backend, /*lenient=*/options.mistake != Mistake::None, options.shown, options.timings);
  recorder.facts.mask_after_softmax = hooks.mask_after_softmax;
  recorder.facts.mistake = options.mistake;
  recorder.round_as_printed(options.rounded);
  Trace t = attention_forward(spec, backend, hooks, recorder, options.fused, options.project_only);
  if (options.mistake != Mistake::None) {
    const auto& info = mistake_info(options.mistake);
    t.config.notes.push_back(fmt::format("simulated mistake {}: {}", info.name, info.description));
  }
  return t;
}

// One token of generation with a KV cache (attn decode). `token` is the new token alone (T = S = 1,
// at its position); `step` is the same token against the S cached keys, its own included (T = 1,
// bottom-right). The token's q, k and v are made and rotated as in the forward pass, k and v are
// appended to the cache ((B, Hkv, S − 1, ·) before, (B, Hkv, S, ·) after), and
// the new query attends over the cache.
Trace run_decode_step(const Spec& token, const Spec& step, Backend& be, KvCache& cache) {
  const Hooks m = hooks_for(Mistake::None);
  Recorder front(token, be, false), back(step, be, false);
  Heads h = project_heads(token, be, m, front);
  back.emit(StepId::KPast, cache.k);
  cache.k = back.emit(StepId::KCache, be.append_rows(cache.k, h.k));
  back.emit(StepId::VPast, cache.v);
  cache.v = back.emit(StepId::VCache, be.append_rows(cache.v, *h.v));
  attend(step, be, m, back, Heads{h.q, cache.k, cache.v});
  // one trace: the token's steps, then the cache's and the attention's, labelled as the step spec
  // (queries: the token; keys: every token so far), RoPE's table rows at the token's position
  Trace t = back.take();
  Trace first = front.take();
  t.config.first_position = first.config.first_position;
  t.config.query_first_position = t.config.key_first_position = first.config.query_first_position;
  t.steps.insert(t.steps.begin(), std::make_move_iterator(first.steps.begin()), std::make_move_iterator(first.steps.end()));
  return t;
}

// The prefill of attn decode: the causal trace of the first tokens, and their rotated keys and
// values, the cache decoding starts from.
Trace run_prefill(const Spec& s, Backend& be, KvCache& cache) {
  const Hooks m = hooks_for(Mistake::None);
  Recorder r(s, be, false);
  const Heads h = project_heads(s, be, m, r);
  cache.k = h.k, cache.v = *h.v;
  attend(s, be, m, r, h);
  return r.take();
}

}  // namespace attn
