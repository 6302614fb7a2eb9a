// attn backward: the gradient of a loss with respect to every step of the forward pass and every
// given parameter, each a step like the forward ones. attention_backward is the one place the
// backward order lives; it reads bottom to top like the forward formula, each line the chain rule
// of one forward step. It reads the forward trace's values (what a training framework saves for the
// backward pass) and computes with the backend's primitives only.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "attn/core/error.hpp"
#include "attn/pipeline/pipeline.hpp"
#include "attn/pipeline/mistakes.hpp"
#include "attn/pipeline/recorder.hpp"
#include "attn/numerics/random.hpp"

namespace attn {
namespace {

using BT = BackendTensor;

// What this backward pass does not cover yet: refused, never computed wrong.
void require_backward(const Spec& s, const PipelineOptions& o) {
  auto refuse = [&o](const std::string& what) { throw InputError(command_name(o.door, "backward") + ": " + what); };
  if (o.fused) refuse(fmt::format("{} keeps no weights to differentiate through; leave it out", switch_on(o.door, "fused")));
  require_pass(o.mistake, true, o.door);
  if (o.mistake != Mistake::None) require_applicable(o.mistake, s);
  if (!s.x_note.empty()) refuse("a checkpoint's layer is not covered yet: give the embeddings and weights (or q, k and v) in the input");
  const std::pair<bool, const char*> variants[] = {
      {s.relative_bias.has_value(), "T5's relative position bias"},
      {s.qk_norm.has_value(), "q/k norms"},
  };
  for (const auto& [given, name] : variants) {
    if (given) refuse(fmt::format("{} is not covered yet; the backward pass covers self, causal, cross and multi-head attention with "
                                  "padding, masks, windows, positions, biases, W_o, a fused W_qkv, RoPE, grouped-query heads, ALiBi "
                                  "and soft-capping",
                                  name));
  }
  if (s.masked_row != MaskedRow::Error) {
    refuse("masked_row: a query with every key masked has no softmax to differentiate; leave masked_row out (such rows are then refused)");
  }
}

// A forward step's values, on the backend, at their full shape (the trace drops B and H where the input has none).
BT saved(Backend& be, const Trace& f, std::string_view id, Shape full) {
  const Step* st = f.find(id);
  if (st == nullptr) throw InternalError(fmt::format("attn backward: the forward trace has no step {}", id));
  return be.upload(st->value).view(std::move(full));
}

// A tensor of ones on the backend, shape `shape`.
BT ones(Backend& be, const Shape& shape) {
  Tensor t = Tensor::uninitialized(shape);
  std::fill(t.mutable_data(), t.mutable_data() + t.size(), Scalar{1});
  return be.upload(t);
}

// Parameters' gradients summed over every row (B·L of them) that used them.
// x (B, L, in), dy (B, L, out) -> dW = xᵀ · dy, [in, out]; [out, in] when the input gave W as torch's [out, in].
BT weight_grad(Backend& be, const Spec& s, const BT& x, const BT& dy) {
  const auto in = x.shape[2], out = dy.shape[2], rows = x.shape[0] * x.shape[1];
  const BT g = be.matmul(be.transpose_last2(x.view({1, rows, in})), dy.view({1, rows, out}));  // (1, in, out)
  return s.layout == Layout::Torch ? be.transpose_last2(g).view({out, in}) : g.view({in, out});
}
// dy (B, L, out) -> db (out): each column's sum
BT bias_grad(Backend& be, const BT& dy) {
  const auto out = dy.shape[2], rows = dy.shape[0] * dy.shape[1];
  return be.row_sums(be.transpose_last2(dy.view({1, rows, out})).view({out, rows}));
}
// dy (B, L, out), W [in, out] -> dx = dy · Wᵀ (B, L, in): the gradient reaching a projection's input
BT input_grad(Backend& be, const BT& dy, const Tensor& w) {
  const auto in = w.dim(0), out = w.dim(1);
  return be.matmul(dy, be.transpose_last2(be.upload(w).view({1, in, out})).view({out, in}));
}
// (B, H, S, h), H = G·n query heads reading G kv heads (head g·n + r reads g) -> (B, G, S, h): the
// repeat's backward, each kv head's gradient the sum of its n copies'
BT sum_groups(Backend& be, const BT& t, std::int64_t G) {
  const auto B = t.shape[0], n = t.shape[1] / G, S = t.shape[2], h = t.shape[3];
  const BT cols = be.transpose_last2(t.view({B * G, n, S * h})).view({B * G * S * h, n});
  return be.row_sums(cols).view({B, G, S, h});
}
// a (B, L, wa), b (B, L, wb) -> (B, L, wa + wb): side by side
BT side_by_side(Backend& be, const BT& a, const BT& b) {
  const auto rows = a.shape[0] * a.shape[1], wa = a.shape[2], wb = b.shape[2];
  const BT cols = be.append_rows(be.transpose_last2(a.view({1, rows, wa})), be.transpose_last2(b.view({1, rows, wb})));  // (1, wa + wb, rows)
  return be.transpose_last2(cols).view({a.shape[0], a.shape[1], wa + wb});
}
// RoPE's backward: (N, L, h) turned by minus the forward's angles (the rotation's transpose)
BT unrotate(Backend& be, const Spec& s, const BT& grad, std::int64_t first) {
  const auto& rope = *s.rope;
  Tensor minus_sin = Tensor::uninitialized(rope.sin.shape());  // (a Tensor copy would share rope.sin's values)
  Tensor::Wide minus_wide(static_cast<std::size_t>(minus_sin.size()));
  for (std::int64_t i = 0; i < minus_sin.size(); ++i) {
    minus_sin.mutable_data()[i] = -rope.sin.data()[i];
    minus_wide[static_cast<std::size_t>(i)] = -rope.sin.wide_at(i);
  }
  minus_sin = minus_sin.with_wide(std::move(minus_wide));
  const auto& sh = grad.shape;
  return be.rotate_pairs(grad.view({sh[0] * sh[1], sh[2], sh[3]}), be.upload(rope.cos), be.upload(minus_sin), first,
                         rope.style == RopeStyle::Interleaved)
      .view(sh);
}

// (B, H, L, h) -> (B, L, H·h), and back
BT merge(Backend& be, const BT& t) {
  return be.swap_axes_1_2(t).view({t.shape[0], t.shape[2], t.shape[1] * t.shape[3]});
}
BT split(Backend& be, const BT& t, std::int64_t H) {
  return be.swap_axes_1_2(t.view({t.shape[0], t.shape[1], H, t.shape[2] / H}));
}

// The upstream gradient: d loss / d output (B, T, width), and the loss step where there is a target.
BT upstream(const Spec& s, Backend& be, Recorder& r, const Step& out_step, const BT& out) {
  const auto& bw = s.backward;
  using U = Spec::Backward::Upstream;
  const Shape shown = out_step.value.shape();
  auto check_shape = [&](const Tensor& t) {
    if (t.shape() != shown) {
      throw InputError(fmt::format("{}: expected {} = {} (the shape of {}, the forward pass's last step), got {}", bw.path,
                                   fmt::format("[{}]", fmt::join(out_step.dims, ", ")), shape_string(shown), out_step.id, shape_string(t.shape())));
    }
  };
  switch (bw.upstream) {
    case U::Sum: return ones(be, out.shape);
    case U::Given:
      check_shape(bw.tensor);
      return be.upload(bw.tensor).view(out.shape);
    case U::Seed: {
      Tensor g = Tensor::uninitialized(out.shape);
      fill_normal(bw.seed, "backward.grad_output", g.mutable_data(), g.size());
      return be.upload(g);
    }
    case U::Target: {
      check_shape(bw.tensor);
      // loss = mean((output − target)²); d loss / d output = 2 (output − target) / N
      const auto n = element_count(out.shape);
      const BT diff = be.add(out, be.scale(be.upload(bw.tensor).view(out.shape), -1));
      const BT squares = be.mul(diff, diff).view({1, n});
      r.emit(StepId::Loss, be.scale(be.row_sums(squares), 1.0 / static_cast<double>(n)));
      return be.scale(diff, 2.0 / static_cast<double>(n));
    }
  }
  throw InternalError("attn backward: unknown upstream");
}

// The gradients the output's side hands down: of the weights (B, H, T, S) and of the values (B, G, S, hv),
// none where the weights end the forward pass.
struct ValueGrads {
  BT d_weights, d_v_heads;
};

// 1. From the upstream gradient back through W_o, the heads' merge and context = weights · v.
ValueGrads output_backward(const Spec& s, Backend& be, Recorder& r, const Trace& f, const BT& out, const BT& w, bool values) {
  const auto B = s.B, H = s.H, G = s.Hkv, T = s.T, S = s.S, hv = s.hv();
  const bool heads = H > 1;
  const Step& last = f.steps.back();
  ValueGrads g;
  if (!values) {
    g.d_weights = r.emit(StepId::GradWeights, upstream(s, be, r, last, out));
    return g;
  }
  // output = merged · W_o + b_o
  const BT d_out = r.emit(StepId::GradOutput, upstream(s, be, r, last, out));
  BT d_merged = d_out;  // (B, T, dv)
  if (s.w.W_o) {
    const BT merged = saved(be, f, heads ? "merged" : "context", {B, T, s.dv});
    r.emit(StepId::GradWo, weight_grad(be, s, merged, d_out));
    if (s.w.b_o) r.emit(StepId::GradBo, bias_grad(be, d_out));
    d_merged = input_grad(be, d_out, *s.w.W_o);
    if (heads) r.emit(StepId::GradMerged, d_merged);
  }
  // merged = context with the heads side by side
  BT d_context = heads ? split(be, d_merged, H) : d_merged.view({B, 1, T, hv});  // (B, H, T, hv)
  if (heads || s.w.W_o) d_context = r.emit(StepId::GradContext, d_context);

  // context = weights · v (v repeated to the H query heads when grouped: each kv head sums its copies)
  const BT v = saved(be, f, s.grouped() ? "v.repeat" : heads ? "v.heads" : "v", {B * H, S, hv});
  g.d_weights = r.emit(StepId::GradWeights, be.matmul(d_context.view({B * H, T, hv}), be.transpose_last2(v)).view({B, H, T, S}));
  g.d_v_heads = be.matmul(be.transpose_last2(w), d_context.view({B * H, T, hv})).view({B, H, S, hv});
  if (s.grouped()) g.d_v_heads = sum_groups(be, r.emit(StepId::GradVRepeat, g.d_v_heads), G);
  if (heads) r.emit(StepId::GradVHeads, g.d_v_heads);
  return g;
}

// 2. weights = softmax(logits): d logits = w ⊙ (d w − rowsum(d w ⊙ w)). Then back along the logits'
// steps, each emitted under the id of the step it is the gradient of, to the scores' gradient.
BT logits_backward(const Spec& s, Backend& be, Recorder& r, const Trace& f, const BT& w, const BT& d_weights, Mistake m) {
  const auto B = s.B, H = s.H, T = s.T, S = s.S;
  const bool scaled = s.scale_kind != ScaleKind::None, biased = !s.alibi_slopes.shape().empty();
  const StepId chain[] = {StepId::GradMasked, StepId::GradCapped, StepId::GradBiased, StepId::GradScaled, StepId::GradScores};
  const bool present[] = {s.masking(), s.softcap.has_value(), biased, scaled, true};
  std::size_t at = 0;
  while (!present[at]) ++at;
  auto next = [&] {  // the next step back along the chain that the forward pass had
    do ++at;
    while (!present[at]);
    return chain[at];
  };
  BT d = r.emit(chain[at], m == Mistake::SoftmaxBackwardElementwise
                              ? be.mul(w.view({B, H, T, S}), d_weights)
                              : be.softmax_backward_rows(w.view({B * H * T, S}), d_weights.view({B * H * T, S})).view({B, H, T, S}));
  if (s.masking()) {
    // masked = masked_fill(logits (+ attn_mask.add), blocked, fill): a blocked score was replaced, so none of it passes
    if (s.blocking()) {
      BT keep = be.mask_keep(B, T, S, s.causal, s.causal_offset(), s.window, s.lengths, false);
      if (!s.user_keep.shape().empty()) keep = be.keep_and(keep, be.upload(s.user_keep));
      d = be.masked_fill(d, keep, 0);
    }
    d = r.emit(next(), d);
  }
  if (s.softcap) {
    // capped = c · tanh(x / c): d x = d capped ⊙ (1 − tanh²(x / c)) = d capped ⊙ (1 − (capped / c)²)
    const BT t = be.scale(saved(be, f, "capped", {B, H, T, S}), 1 / *s.softcap);
    d = r.emit(next(), be.mul(d, be.add(ones(be, {B, H, T, S}), be.scale(be.mul(t, t), -1))));
  }
  if (biased) d = r.emit(next(), d, /*view=*/true);  // biased = scaled + alibi: the bias is a constant, the gradient passes
  // scaled = scores · factor
  return scaled ? r.emit(StepId::GradScores, be.scale(d, m == Mistake::BackwardScaleForgotten ? 1.0 : f.config.scale_exact)) : d;
}

// The queries' and the keys' gradients, flat: (B, T, dk), (B, S, G·hs).
struct QueryKeyGrads {
  BT d_q, d_k;
};

// 3. scores = q · kᵀ (q rotated, k rotated and repeated): d q = d scores · k, d k = d scoresᵀ · q
QueryKeyGrads scores_backward(const Spec& s, Backend& be, Recorder& r, const Trace& f, const BT& d_scores, Mistake m) {
  const auto B = s.B, H = s.H, G = s.Hkv, T = s.T, S = s.S, hs = s.hs();
  const bool heads = H > 1;
  const BT q = saved(be, f, s.rope ? "q.rope" : heads ? "q.heads" : "q", {B * H, T, hs});
  const BT k = saved(be, f, s.grouped() ? "k.repeat" : s.rope ? "k.rope" : heads ? "k.heads" : "k", {B * H, S, hs});
  BT d_q_heads = be.matmul(d_scores.view({B * H, T, S}), k).view({B, H, T, hs});
  BT d_k_heads = be.matmul(m == Mistake::BackwardDkUntransposed ? d_scores.view({B * H, T, S}) : be.transpose_last2(d_scores.view({B * H, T, S})), q)
                    .view({B, H, S, hs});
  if (s.rope) d_q_heads = r.emit(StepId::GradQRope, d_q_heads);
  if (s.grouped()) d_k_heads = sum_groups(be, r.emit(StepId::GradKRepeat, d_k_heads), G);  // (B, G, S, hs)
  if (s.rope) {
    // q.rope = rotate(q.heads): the rotation's transpose turns the gradient back
    d_k_heads = r.emit(StepId::GradKRope, d_k_heads);
    d_q_heads = unrotate(be, s, d_q_heads, s.rope->offset - s.rope->table_first);
    d_k_heads = unrotate(be, s, d_k_heads, s.rope->key_first - s.rope->table_first);
  }
  if (heads) r.emit(StepId::GradQHeads, d_q_heads), r.emit(StepId::GradKHeads, d_k_heads);
  const BT d_q = r.emit(StepId::GradQ, merge(be, d_q_heads));  // (B, T, dk)
  const BT d_k = r.emit(StepId::GradK, merge(be, d_k_heads));  // (B, S, G·hs)
  return {d_q, d_k};
}

// 4. The projections: q, k and v back to their weights, biases and inputs (x, and the source in cross mode).
void projections_backward(const Spec& s, Backend& be, Recorder& r, const Trace& f, const QueryKeyGrads& qk, const BT& d_v, Mistake m) {
  const BT &d_q = qk.d_q, &d_k = qk.d_k;
  const BT x = saved(be, f, s.positions != Positions::None ? "x.pos" : "x", {s.B, s.T, s.C});
  if (s.w.W_qkv) {
    // q, k, v = slices of qkv = x · W_qkv + b_qkv: the slices' backward puts the gradients side by side
    const BT d_qkv = r.emit(StepId::GradQkv, side_by_side(be, side_by_side(be, d_q, d_k), d_v));
    r.emit(StepId::GradWqkv, weight_grad(be, s, x, d_qkv));
    if (s.w.b_qkv) r.emit(StepId::GradBqkv, bias_grad(be, d_qkv));
    r.emit(StepId::GradX, input_grad(be, d_qkv, *s.w.W_qkv));
    return;
  }
  // q = x · W_q + b_q, k = src · W_k + b_k, v = src · W_v + b_v (src: the source in cross mode, else x)
  const BT src = s.cross() ? saved(be, f, "source", {s.B, s.S, s.Cs}) : x;
  r.emit(StepId::GradWq, weight_grad(be, s, x, d_q));
  if (s.w.b_q) r.emit(StepId::GradBq, bias_grad(be, d_q));
  r.emit(StepId::GradWk, weight_grad(be, s, src, d_k));
  if (s.w.b_k) r.emit(StepId::GradBk, bias_grad(be, d_k));
  r.emit(StepId::GradWv, weight_grad(be, s, src, d_v));
  if (s.w.b_v) r.emit(StepId::GradBv, bias_grad(be, d_v));
  // x feeds the queries, and in self-attention the keys and values too: its gradient sums the paths
  // (positions are constants: the gradient of x.pos is x's)
  const BT from_q = input_grad(be, d_q, *s.w.W_q);
  const BT from_kv = be.add(input_grad(be, d_k, *s.w.W_k), input_grad(be, d_v, *s.w.W_v));
  if (s.cross()) {
    r.emit(StepId::GradX, from_q);
    r.emit(StepId::GradSource, from_kv);
  } else {
    r.emit(StepId::GradX, m == Mistake::BackwardDxOnePath ? from_q : be.add(from_q, from_kv));
  }
}

// The backward pass, from the loss back to the inputs: each pass one forward step's chain rule, or a few.
void attention_backward(const Spec& s, Backend& be, Recorder& r, const Trace& f, Mistake m) {
  const auto B = s.B, H = s.H, T = s.T, S = s.S;
  const bool values = s.entry == Entry::Embeddings || !s.v.shape().empty();  // no v: the weights are the last step
  const Step& last = f.steps.back();  // output, merged, the context, or the weights
  const BT out = saved(be, f, last.id, values ? Shape{B, T, element_count(last.value.shape()) / (B * T)} : Shape{B, H, T, S});
  const BT w = saved(be, f, "weights", {B * H, T, S});

  // 1. the output back to the weights and the values
  const ValueGrads vg = output_backward(s, be, r, f, out, w, values);
  // 2. the softmax and the logits' steps back to the scores
  const BT d_scores = logits_backward(s, be, r, f, w, vg.d_weights, m);
  if (s.entry == Entry::Scores) {  // the scores were given: they are where the pass ends, with v's
    if (values) r.emit(StepId::GradV, merge(be, vg.d_v_heads));
    return;
  }
  // 3. the scores back to the queries and the keys
  const QueryKeyGrads qk = scores_backward(s, be, r, f, d_scores, m);
  if (!values) return;
  const BT d_v = r.emit(StepId::GradV, merge(be, vg.d_v_heads));  // (B, S, G·hv)
  if (s.entry != Entry::Embeddings) return;
  // 4. q, k and v back through the projections to x (and the source)
  projections_backward(s, be, r, f, qk, d_v, m);
}

std::string upstream_note(const Spec& s, const Step& last) {
  using U = Spec::Backward::Upstream;
  switch (s.backward.upstream) {
    case U::Sum:
      return fmt::format("backward: the gradient of sum({}) (no \"backward\" block in the input): grad.{} is all ones", last.id,
                         last.id == "weights" ? "weights" : "output");
    case U::Given: return fmt::format("backward: grad.output as given (backward.grad_output), the gradient of some loss with respect to {}", last.id);
    case U::Seed: return fmt::format("backward: grad.output drawn ~ N(0, 1), seed {} (backward.seed)", s.backward.seed);
    case U::Target: return fmt::format("backward: loss = mean(({} − target)²) (backward.target)", last.id);
  }
  return "";
}

}  // namespace

Trace run_backward(const Spec& spec, Backend& backend, const PipelineOptions& options) {
  require_backward(spec, options);
  PipelineOptions forward = options;
  forward.mistake = Mistake::None;  // (a backward mistake: the forward pass is the correct one)
  Trace t = run_pipeline(spec, backend, forward);
  Recorder recorder(spec, backend, /*lenient=*/options.mistake != Mistake::None);
  recorder.facts.mistake = options.mistake;  // the step the mistake changes says what was computed
  attention_backward(spec, backend, recorder, t, options.mistake);
  Trace back = recorder.take();
  t.config.notes.push_back(upstream_note(spec, t.steps.back()));
  if (options.mistake != Mistake::None) {
    t.config.notes.push_back(fmt::format("simulated mistake {}: {}", mistake_info(options.mistake).name, mistake_info(options.mistake).description));
  }
  t.steps.insert(t.steps.end(), std::make_move_iterator(back.steps.begin()), std::make_move_iterator(back.steps.end()));
  return t;
}

}  // namespace attn
