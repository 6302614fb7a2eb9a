// attn backward: the gradient of a loss with respect to every step of the forward pass and every
// given parameter, each a step like the forward ones. attention_backward is the one place the
// backward order lives; it reads bottom to top like the forward formula, each line the chain rule
// of one forward step. It reads the forward trace's values (what a training framework saves for the
// backward pass) and computes with the backend's primitives only.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "attn/error.hpp"
#include "attn/pipeline.hpp"
#include "attn/pipeline/recorder.hpp"
#include "attn/random.hpp"

namespace attn {
namespace {

using BT = BackendTensor;

// What this backward pass does not cover yet: refused, never computed wrong.
void require_backward(const Spec& s, const PipelineOptions& o) {
  auto refuse = [](const std::string& what) { throw InputError("attn backward: " + what); };
  if (o.fused) refuse("--fused keeps no weights to differentiate through; leave it out");
  if (o.mistake != Mistake::None) refuse("--mistake: the backward pass is of the correct forward pass; leave it out");
  if (!s.x_note.empty()) refuse("a checkpoint's layer is not covered yet: give the embeddings and weights (or q, k and v) in the input");
  const std::pair<bool, const char*> variants[] = {
      {s.rope.has_value(), "rope"},
      {s.grouped(), "kv_heads (grouped-query attention)"},
      {!s.alibi_slopes.shape().empty(), "alibi"},
      {s.softcap.has_value(), "softcap"},
      {s.relative_bias.has_value(), "T5's relative position bias"},
      {s.qk_norm.has_value(), "q/k norms"},
      {s.w.W_qkv.has_value(), "a fused W_qkv"},
  };
  for (const auto& [given, name] : variants) {
    if (given) refuse(fmt::format("{} is not covered yet; the backward pass covers self, causal, cross and multi-head attention with "
                                  "padding, masks, windows, positions, biases and W_o",
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
    case U::Sum: {
      Tensor ones = Tensor::uninitialized(out.shape);
      std::fill(ones.mutable_data(), ones.mutable_data() + ones.size(), Scalar{1});
      return be.upload(ones);
    }
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
      r.emit(StepId::Loss, be.scale(be.row_sums(squares), static_cast<Scalar>(1.0 / static_cast<double>(n))));
      return be.scale(diff, static_cast<Scalar>(2.0 / static_cast<double>(n)));
    }
  }
  throw InternalError("attn backward: unknown upstream");
}

// The backward pass, from the loss back to the inputs: each line one forward step's chain rule.
void attention_backward(const Spec& s, Backend& be, Recorder& r, const Trace& f) {
  const auto B = s.B, H = s.H, T = s.T, S = s.S, hs = s.hs(), hv = s.hv();
  const bool heads = H > 1;
  const bool values = s.entry == Entry::Embeddings || !s.v.shape().empty();  // no v: the weights are the last step
  const Step& last = f.steps.back();  // output, merged, the context, or the weights
  const BT out = saved(be, f, last.id, values ? Shape{B, T, element_count(last.value.shape()) / (B * T)} : Shape{B, H, T, S});
  const BT w = saved(be, f, "weights", {B * H, T, S});

  BT d_weights, d_v_heads;  // (B, H, T, S), (B, H, S, hv)
  if (!values) {
    d_weights = r.emit(StepId::GradWeights, upstream(s, be, r, last, out));
  } else {
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

    // context = weights · v
    const BT v = saved(be, f, heads ? "v.heads" : "v", {B * H, S, hv});
    d_weights = r.emit(StepId::GradWeights, be.matmul(d_context.view({B * H, T, hv}), be.transpose_last2(v)).view({B, H, T, S}));
    d_v_heads = be.matmul(be.transpose_last2(w), d_context.view({B * H, T, hv})).view({B, H, S, hv});
    if (heads) r.emit(StepId::GradVHeads, d_v_heads);
  }

  // weights = softmax(logits): d logits = w ⊙ (d w − rowsum(d w ⊙ w))
  const StepId softmax_in = s.masking() ? StepId::GradMasked : s.scale_kind != ScaleKind::None ? StepId::GradScaled : StepId::GradScores;
  BT d_logits = r.emit(softmax_in, be.softmax_backward_rows(w.view({B * H * T, S}), d_weights.view({B * H * T, S})).view({B, H, T, S}));
  if (s.masking()) {
    // masked = masked_fill(scaled (+ attn_mask.add), blocked, fill): a blocked score was replaced, so none of it passes
    if (s.blocking()) {
      BT keep = be.mask_keep(B, T, S, s.causal, s.causal_offset(), s.window, s.lengths, false);
      if (!s.user_keep.shape().empty()) keep = be.keep_and(keep, be.upload(s.user_keep));
      d_logits = be.masked_fill(d_logits, keep, 0);
    }
    d_logits = r.emit(s.scale_kind != ScaleKind::None ? StepId::GradScaled : StepId::GradScores, d_logits);
  }
  // scaled = scores · factor
  const BT d_scores = s.scale_kind != ScaleKind::None ? r.emit(StepId::GradScores, be.scale(d_logits, f.config.scale_factor)) : d_logits;
  if (s.entry == Entry::Scores) {  // the scores were given: they are where the pass ends, with v's
    if (values) r.emit(StepId::GradV, merge(be, d_v_heads));
    return;
  }

  // scores = q · kᵀ: d q = d scores · k, d k = d scoresᵀ · q
  const BT q = saved(be, f, heads ? "q.heads" : "q", {B * H, T, hs});
  const BT k = saved(be, f, heads ? "k.heads" : "k", {B * H, S, hs});
  const BT d_q_heads = be.matmul(d_scores.view({B * H, T, S}), k).view({B, H, T, hs});
  const BT d_k_heads = be.matmul(be.transpose_last2(d_scores.view({B * H, T, S})), q).view({B, H, S, hs});
  if (heads) r.emit(StepId::GradQHeads, d_q_heads), r.emit(StepId::GradKHeads, d_k_heads);
  const BT d_q = r.emit(StepId::GradQ, merge(be, d_q_heads));  // (B, T, dk)
  const BT d_k = r.emit(StepId::GradK, merge(be, d_k_heads));  // (B, S, dk)
  if (!values) return;
  const BT d_v = r.emit(StepId::GradV, merge(be, d_v_heads));  // (B, S, dv)
  if (s.entry != Entry::Embeddings) return;

  // q = x · W_q + b_q, k = src · W_k + b_k, v = src · W_v + b_v (src: the source in cross mode, else x)
  const BT x = saved(be, f, s.positions != Positions::None ? "x.pos" : "x", {B, T, s.C});
  const BT src = s.cross() ? saved(be, f, "source", {B, S, s.Cs}) : x;
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
    r.emit(StepId::GradX, be.add(from_q, from_kv));
  }
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
  Trace t = run_pipeline(spec, backend, options);
  Recorder recorder(spec, backend, /*lenient=*/false);
  attention_backward(spec, backend, recorder, t);
  Trace back = recorder.take();
  t.config.notes.push_back(upstream_note(spec, t.steps.back()));
  t.steps.insert(t.steps.end(), std::make_move_iterator(back.steps.begin()), std::make_move_iterator(back.steps.end()));
  return t;
}

}  // namespace attn
