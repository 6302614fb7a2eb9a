// The words and the PyTorch of the backward steps (attn backward): each gradient's formula, its
// symbolic dims, a note saying why it has the form it has, and the line that computes it. Prose only.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "attn/pipeline/step_code.hpp"
#include "attn/pipeline/step_text.hpp"

namespace attn {
namespace {

using U = Spec::Backward::Upstream;

std::string transposed(const Spec& s, std::string_view w) { return s.layout == Layout::Torch ? std::string(w) : fmt::format("{}ᵀ", w); }
std::string x_in(const Spec& s) { return s.positions != Positions::None ? "x.pos" : "x"; }
// Whether the forward pass ends at a context (else at the weights: no v given).
bool values(const Spec& s) { return s.entry == Entry::Embeddings || !s.v.shape().empty(); }
std::string out_name(const Spec& s) { return !values(s) ? "weights" : s.w.W_o ? "output" : s.H > 1 ? "merged" : "context"; }
Dims out_dims(const Spec& s) { return Dims{Dim::B, Dim::T, s.w.W_o ? Dim::Co : Dim::dv}; }

// The repeat's backward (grouped-query heads): `id` is `from` summed over each kv head's copies.
StepText summed_copies(const Spec& s, std::string_view id, std::string_view from, const Dims& dims) {
  return {"", fmt::format("{} = {} summed over the copies", id, from),
          fmt::format("the repeat's backward: each kv head served H / Hkv = {} query heads, so its gradient sums theirs", s.H / s.Hkv), dims};
}
// RoPE's backward: `id` is `from` turned back.
StepText turned_back(std::string_view id, std::string_view from, const Dims& dims) {
  return {"", fmt::format("{} = {} turned back (each pair by −angle)", id, from),
          "the rotation's backward is its transpose: the same pairs turned by minus the position's angle", dims};
}
std::string summed_copies_code(const Spec& s, std::string_view id, std::string_view from) {
  return fmt::format("{} = {}.unflatten(-3, ({}, {})).sum(-3)", id, from, s.Hkv, s.H / s.Hkv);
}
// the queries' (or the keys') rotated gradient turned back by the tables' rows at their positions
std::string turned_back_code(const Spec& s, std::string_view id, bool query) {
  const auto& r = *s.rope;
  return fmt::format("{} = {}  # each pair turned back by its angle", id,
                     rotate_code(s, query ? "grad_q_rope" : "grad_k_rope", (query ? r.offset : r.key_first) - r.table_first, query ? s.T : s.S,
                                 s.hs(), "rope_cos", "(-rope_sin)"));
}

// The step holding the context's gradient: grad.context, or grad.output where the context is the output (one head, no W_o).
std::string context_grad(const Spec& s) { return s.H > 1 || s.w.W_o ? "grad.context" : "grad.output"; }

// The upstream gradient's words: of grad.output, or of grad.weights where the weights end the pass.
StepText upstream_text(const Spec& s, std::string_view id, const Dims& dims) {
  const std::string o = out_name(s);
  switch (s.backward.upstream) {
    case U::Sum:
      return {"", fmt::format("{0} = ∂ sum({1}) / ∂ {1} = 1", id, o), fmt::format("no \"backward\" block: the loss is sum({}), so every entry's gradient is 1", o),
              dims};
    case U::Given: return {"", fmt::format("{} (given)", id), fmt::format("∂ loss / ∂ {}, as the input gave it (backward.grad_output)", o), dims};
    case U::Seed: return {"", fmt::format("{} ~ N(0, 1), seed {}", id, s.backward.seed), fmt::format("a random direction to differentiate {} along", o), dims};
    case U::Target: return {"", fmt::format("{} = 2 ({} − target) / N", id, o), "the derivative of the mean squared error (N entries)", dims};
  }
  return {};
}
// a parameter's dims as the input gave it: [in, out] (x@W) or [out, in] (torch)
Dims param(const Spec& s, Dim in, Dim out) { return s.layout == Layout::Torch ? Dims{out, in} : Dims{in, out}; }

// The logits' steps the forward pass had, from the softmax's input back to the scores.
std::vector<std::string> chain(const Spec& s) {
  std::vector<std::string> c;
  if (s.masking()) c.push_back("masked");
  if (s.softcap) c.push_back("capped");
  if (!s.alibi_slopes.shape().empty()) c.push_back("biased");
  if (s.scale_kind != ScaleKind::None) c.push_back("scaled");
  c.push_back("scores");
  return c;
}
// What the softmax read, and the step before `self` in the chain (the one whose gradient it comes from).
std::string logits(const Spec& s) { return chain(s).front(); }
std::string before(const Spec& s, std::string_view self) {
  const auto c = chain(s);
  for (std::size_t i = 1; i < c.size(); ++i)
    if (c[i] == self) return c[i - 1];
  return "";
}
std::string_view chain_id(StepId step) {
  switch (step) {
    case StepId::GradMasked: return "masked";
    case StepId::GradCapped: return "capped";
    case StepId::GradBiased: return "biased";
    case StepId::GradScaled: return "scaled";
    default: return "scores";
  }
}
// the kv heads' dims: Hkv of them when grouped
Dim kv_heads(const Spec& s) { return s.grouped() ? Dim::Hkv : Dim::H; }
Dim kv_width(const Spec& s, bool key) { return s.grouped() ? (key ? Dim::dkv : Dim::dvkv) : (key ? Dim::dk : Dim::dv); }

StepText weight_text(const Spec& s, std::string_view w, std::string_view in, std::string_view grad, Dim din, Dim dout) {
  const std::string f = s.layout == Layout::Torch ? fmt::format("grad.{0} = ({1}ᵀ · grad.{2})ᵀ", w, in, grad)
                                                  : fmt::format("grad.{0} = {1}ᵀ · grad.{2}", w, in, grad);
  return {"", f,
          fmt::format("every row ({}) used {}: its gradient sums their contributions, {}ᵀ · grad.{} over all of them; the shape is {}'s as "
                      "the input gave it",
                      s.batched ? "each batch row's each position" : "each position", w, in, grad, w),
          param(s, din, dout)};
}

StepText bias_text(std::string_view b, std::string_view grad, Dim d) {
  return {"", fmt::format("grad.{} = Σ_rows grad.{}", b, grad), fmt::format("{} was added to every row: its gradient is the sum of the rows'", b),
          Dims{d}};
}

}  // namespace

namespace {

// The output's side, from the loss back to the context: the upstream gradient, W_o and the heads' merge.
StepText output_grad_text(StepId step, const Spec& s) {
  const bool heads = s.H > 1;
  switch (step) {
    case StepId::Loss:
      return {"", fmt::format("loss = mean(({} − target)²)", out_name(s)), "the mean squared error over every entry", Dims{Dim::One}};
    case StepId::GradOutput: return upstream_text(s, "grad.output", out_dims(s));
    case StepId::GradWo: return weight_text(s, "W_o", heads ? "merged" : "context", "output", Dim::dv, Dim::Co);
    case StepId::GradBo: return bias_text("b_o", "output", Dim::Co);
    case StepId::GradMerged:
      return {"", fmt::format("grad.merged = grad.output · {}", transposed(s, "W_o")), "the chain rule through output = merged · W_o: multiply by W_oᵀ",
              Dims{Dim::B, Dim::T, Dim::dv}};
    case StepId::GradContext:
      if (heads) {
        return {"", fmt::format("grad.context = {} split into heads", s.w.W_o ? "grad.merged" : "grad.output"),
                "the merge's backward is the split: head h takes its own columns back",
                Dims{Dim::B, Dim::H, Dim::T, Dim::hv}};
      }
      return {"", fmt::format("grad.context = grad.output · {}", transposed(s, "W_o")), "the chain rule through output = context · W_o",
              Dims{Dim::B, Dim::H, Dim::T, Dim::hv}};
    default: return {};
  }
}

// context = weights · v: the weights' gradient, and the values' (summed over their copies when grouped).
StepText values_grad_text(StepId step, const Spec& s) {
  const Dims bhts{Dim::B, Dim::H, Dim::T, Dim::S};
  const bool heads = s.H > 1;
  const std::string v = s.grouped() ? "v.repeat" : heads ? "v.heads" : "v";
  switch (step) {
    case StepId::GradWeights:
      if (!values(s)) return upstream_text(s, "grad.weights", bhts);
      return {"", fmt::format("grad.weights = {} · {}ᵀ", context_grad(s), v),
              s.masking() ? "how the loss moves with each weight; a masked key's weight has a gradient too (its value would have counted), but "
                            "the softmax passes none of it back (grad.masked)"
                          : "how the loss moves with each weight: a positive entry means more weight on that key would raise the loss",
              bhts};
    case StepId::GradVRepeat:
      return {"", "grad.v.repeat = weightsᵀ · grad.context", "each query head's copy of its kv head's values, with the gradient of its queries",
              Dims{Dim::B, Dim::H, Dim::S, Dim::hv}};
    case StepId::GradVHeads:
      if (s.grouped()) {
        return summed_copies(s, "grad.v.heads", "grad.v.repeat", Dims{Dim::B, Dim::Hkv, Dim::S, Dim::hv});
      }
      return {"", "grad.v.heads = weightsᵀ · grad.context", "each key's value collects the gradient of every query, in proportion to that query's weight on it",
              Dims{Dim::B, Dim::H, Dim::S, Dim::hv}};
    case StepId::GradV:
      if (heads) return {"", "grad.v = grad.v.heads merged", "the head split's backward is the merge", Dims{Dim::B, Dim::S, kv_width(s, false)}};
      return {"", fmt::format("grad.v = weightsᵀ · {}", context_grad(s)),
              "each key's value collects the gradient of every query, in proportion to that query's weight on it", Dims{Dim::B, Dim::S, Dim::dv}};
    default: return {};
  }
}

// The logits' chain, from the softmax's input back to the scores: one of grad.masked, .capped, .biased, .scaled, .scores.
StepText logits_grad_text(StepId step, const Spec& s, const TraceConfig& c) {
  const Dims bhts{Dim::B, Dim::H, Dim::T, Dim::S};
  const std::string self(chain_id(step)), prev = before(s, self);
  if (self == logits(s)) {
    return {"Gradient through the softmax", fmt::format("grad.{} = weights ⊙ (grad.weights − rowsum(grad.weights ⊙ weights))", self),
            std::string("the softmax's Jacobian times grad.weights: a row's weights sum to 1, so raising one score lowers the others, which "
                        "the rowsum term subtracts") +
                (s.masking() ? "; a masked key has weight 0, so its gradient is exactly 0" : ""),
            bhts};
  }
  if (prev == "scaled") {
    if (s.scale_kind == ScaleKind::SqrtDk) {
      return {"", "grad.scores = grad.scaled / √d_k", fmt::format("the chain rule through scaled = scores / √d_k: the same factor again, {}", c.scale),
              bhts};
    }
    return {"", fmt::format("grad.scores = grad.scaled × {}", c.scale_factor),
            fmt::format("the chain rule through scaled = scores × {0}: the same factor again", c.scale_factor), bhts};
  }
  if (prev == "biased") {
    return {"", fmt::format("grad.{} = grad.biased", self), "the ALiBi bias depends on no input (only on distances): the gradient passes unchanged",
            bhts};
  }
  if (prev == "capped") {
    return {"", fmt::format("grad.{0} = grad.capped ⊙ (1 − (capped / {1})²)", self, static_cast<Scalar>(*s.softcap)),
            fmt::format("the derivative of {0} · tanh(x / {0}) is 1 − tanh²(x / {0}): near 1 for small scores, near 0 where the cap "
                        "flattens them",
                        static_cast<Scalar>(*s.softcap)),
            bhts};
  }
  // the mask's backward: masked = masked_fill(logits, blocked, fill) (+ an additive mask)
  if (s.blocking()) {
    return {"", fmt::format("grad.{} = grad.masked, 0 where a key is masked", self),
            "masked_fill put a constant where a key is blocked, so no gradient reaches that score: exactly 0, whatever its weight's "
            "gradient was",
            bhts};
  }
  return {"", fmt::format("grad.{} = grad.masked", self), "an additive mask is a constant: the gradient passes through unchanged", bhts};
}

// scores = q · kᵀ back to the queries and the keys: rotated, repeated, split into heads, or flat.
StepText query_key_grad_text(StepId step, const Spec& s) {
  const bool heads = s.H > 1;
  const std::string q = heads ? "q.heads" : "q", k = heads ? "k.heads" : "k";
  switch (step) {
    case StepId::GradQRope:
      return {"", fmt::format("grad.q.rope = grad.scores · {}", s.grouped() ? "k.repeat" : "k.rope"),
              "scores = q.rope · kᵀ: the gradient of the rotated queries", Dims{Dim::B, Dim::H, Dim::T, Dim::hs}};
    case StepId::GradKRepeat:
      return {"", fmt::format("grad.k.repeat = grad.scoresᵀ · {}", s.rope ? "q.rope" : heads ? "q.heads" : "q"),
              "each query head's copy of its kv head's keys: scores = q · kᵀ puts the keys in the columns, so it takes grad.scoresᵀ",
              Dims{Dim::B, Dim::H, Dim::S, Dim::hs}};
    case StepId::GradKRope:
      if (s.grouped()) {
        return summed_copies(s, "grad.k.rope", "grad.k.repeat", Dims{Dim::B, Dim::Hkv, Dim::S, Dim::hs});
      }
      return {"", "grad.k.rope = grad.scoresᵀ · q.rope", "scores = q · kᵀ puts the keys in the columns, so their gradient takes grad.scoresᵀ",
              Dims{Dim::B, Dim::H, Dim::S, Dim::hs}};
    case StepId::GradQHeads:
      if (s.rope) return turned_back("grad.q.heads", "grad.q.rope", Dims{Dim::B, Dim::H, Dim::T, Dim::hs});
      return {"", fmt::format("grad.q.heads = grad.scores · {}", s.grouped() ? "k.repeat" : k),
              "scores = q · kᵀ: each query's gradient mixes the keys by how the loss wants its scores to move", Dims{Dim::B, Dim::H, Dim::T, Dim::hs}};
    case StepId::GradKHeads:
      if (s.rope) return turned_back("grad.k.heads", "grad.k.rope", Dims{Dim::B, kv_heads(s), Dim::S, Dim::hs});
      if (s.grouped()) {
        return summed_copies(s, "grad.k.heads", "grad.k.repeat", Dims{Dim::B, Dim::Hkv, Dim::S, Dim::hs});
      }
      return {"", fmt::format("grad.k.heads = grad.scoresᵀ · {}", q),
              "scores = q · kᵀ puts the keys in the columns, so their gradient takes grad.scoresᵀ: each key sums over the queries", Dims{Dim::B, Dim::H, Dim::S, Dim::hs}};
    case StepId::GradQ:
      if (heads) return {"", "grad.q = grad.q.heads merged", "the head split's backward is the merge", Dims{Dim::B, Dim::T, Dim::dk}};
      if (s.rope) return turned_back("grad.q", "grad.q.rope", Dims{Dim::B, Dim::T, Dim::dk});
      return {"", "grad.q = grad.scores · k", "scores = q · kᵀ: each query's gradient mixes the keys by how the loss wants its scores to move",
              Dims{Dim::B, Dim::T, Dim::dk}};
    case StepId::GradK:
      if (heads) return {"", "grad.k = grad.k.heads merged", "the head split's backward is the merge", Dims{Dim::B, Dim::S, kv_width(s, true)}};
      if (s.rope) return turned_back("grad.k", "grad.k.rope", Dims{Dim::B, Dim::S, Dim::dk});
      return {"", "grad.k = grad.scoresᵀ · q", "scores = q · kᵀ puts the keys in the columns, so their gradient takes grad.scoresᵀ",
              Dims{Dim::B, Dim::S, Dim::dk}};
    default: return {};
  }
}

// The projections' side: q, k and v back to their weights, biases and inputs (x, and the source in cross mode).
StepText projection_grad_text(StepId step, const Spec& s) {
  switch (step) {
    case StepId::GradQkv:
      return {"", "grad.qkv = [grad.q | grad.k | grad.v]", "q, k and v were slices of qkv: their gradients side by side, in the same columns",
              Dims{Dim::B, Dim::T, s.grouped() ? Dim::DqkvG : Dim::Dqkv}};
    case StepId::GradWqkv: return weight_text(s, "W_qkv", x_in(s), "qkv", Dim::C, s.grouped() ? Dim::DqkvG : Dim::Dqkv);
    case StepId::GradBqkv: return bias_text("b_qkv", "qkv", s.grouped() ? Dim::DqkvG : Dim::Dqkv);
    case StepId::GradWq: return weight_text(s, "W_q", x_in(s), "q", Dim::C, Dim::dk);
    case StepId::GradBq: return bias_text("b_q", "q", Dim::dk);
    case StepId::GradWk: return weight_text(s, "W_k", s.cross() ? "source" : x_in(s), "k", s.cross() ? Dim::Cs : Dim::C, kv_width(s, true));
    case StepId::GradBk: return bias_text("b_k", "k", kv_width(s, true));
    case StepId::GradWv: return weight_text(s, "W_v", s.cross() ? "source" : x_in(s), "v", s.cross() ? Dim::Cs : Dim::C, kv_width(s, false));
    case StepId::GradBv: return bias_text("b_v", "v", kv_width(s, false));
    case StepId::GradX: {
      const std::string pos = s.positions != Positions::None ? "; the positions are constants, so x.pos's gradient is x's" : "";
      if (s.w.W_qkv) {
        return {"", fmt::format("grad.x = grad.qkv · {}", transposed(s, "W_qkv")),
                "x made q, k and v through one product: its gradient sums the three paths in one product" + pos, Dims{Dim::B, Dim::T, Dim::C}};
      }
      if (s.cross()) {
        return {"", fmt::format("grad.x = grad.q · {}", transposed(s, "W_q")), "x made only the queries; the keys and values came from the source" + pos,
                Dims{Dim::B, Dim::T, Dim::C}};
      }
      return {"",
              fmt::format("grad.x = grad.q · {} + grad.k · {} + grad.v · {}", transposed(s, "W_q"), transposed(s, "W_k"), transposed(s, "W_v")),
              "x made the queries, the keys and the values: its gradient sums the three paths" + pos, Dims{Dim::B, Dim::T, Dim::C}};
    }
    case StepId::GradSource:
      return {"", fmt::format("grad.source = grad.k · {} + grad.v · {}", transposed(s, "W_k"), transposed(s, "W_v")),
              "the source made the keys and the values: its gradient sums the two paths", Dims{Dim::B, Dim::S, Dim::Cs}};
    default: return {};
  }
}

// Each backward step's correct words, by the part of the pass it belongs to (the order the pass runs them).
StepText correct_backward_text(StepId step, const Spec& s, const TraceConfig& c) {
  switch (step) {
    case StepId::Loss:
    case StepId::GradOutput:
    case StepId::GradWo:
    case StepId::GradBo:
    case StepId::GradMerged:
    case StepId::GradContext: return output_grad_text(step, s);
    case StepId::GradWeights:
    case StepId::GradVRepeat:
    case StepId::GradVHeads:
    case StepId::GradV: return values_grad_text(step, s);
    case StepId::GradMasked:
    case StepId::GradCapped:
    case StepId::GradBiased:
    case StepId::GradScaled:
    case StepId::GradScores: return logits_grad_text(step, s, c);
    case StepId::GradQRope:
    case StepId::GradKRepeat:
    case StepId::GradKRope:
    case StepId::GradQHeads:
    case StepId::GradKHeads:
    case StepId::GradQ:
    case StepId::GradK: return query_key_grad_text(step, s);
    // grad.qkv, the projections' weights and biases, grad.x and grad.source (no words for any other step)
    default: return projection_grad_text(step, s);
  }
}

// The words of the one step a backward mistake changes (its formula empty for any other step): what the student computed.
// Words only: the step keeps the correct text's dims (backward_text), as a mistake never changes a shape.
StepText mistaken_backward_text(StepId step, const Spec& s, Mistake m) {
  const bool heads = s.H > 1;
  switch (m) {
    case Mistake::SoftmaxBackwardElementwise:
      // the softmax's backward is the gradient of the logits, the first step back along the chain
      if ((step != StepId::GradScores && chain_id(step) == "scores") || chain_id(step) != logits(s)) break;
      return {"Gradient through the softmax",
              fmt::format("grad.{} = weights ⊙ grad.weights{}", logits(s), mistake_mark(m, "elementwise, no rowsum term")),
              "only the diagonal of the softmax's Jacobian: the rowsum(grad.weights ⊙ weights) that raising one score takes from the others is "
              "left out", {}};
    case Mistake::BackwardScaleForgotten:
      if (step != StepId::GradScores) break;
      return {"", fmt::format("grad.scores = grad.scaled{}", mistake_mark(m, "the scale left out")),
              "the chain rule through scaled = scores × scale without the factor: the gradient passes unscaled", {}};
    case Mistake::BackwardDkUntransposed: {
      // the first key gradient the pass shows: rotated keys, else the heads, else k itself
      const StepId first = s.rope ? StepId::GradKRope : heads ? StepId::GradKHeads : StepId::GradK;
      if (step != first) break;
      const char* self = s.rope ? "k.rope" : heads ? "k.heads" : "k";
      return {"", fmt::format("grad.{} = grad.scores · {}{}", self, s.rope ? "q.rope" : heads ? "q.heads" : "q", mistake_mark(m, "grad.scores, not grad.scoresᵀ")),
              "the queries' rows of grad.scores taken as the keys': right only in shape (S = T), row j mixes query j's scores, not key j's", {}};
    }
    case Mistake::BackwardDxOnePath:
      if (step != StepId::GradX) break;
      return {"", fmt::format("grad.x = grad.q · {}{}", transposed(s, "W_q"), mistake_mark(m, "the keys' and values' paths left out")),
              "only the queries' path: x made the keys and the values too, and their gradients were not added", {}};
    default: break;
  }
  return {};
}

}  // namespace

StepText backward_text(StepId step, const Spec& s, const TraceConfig& c, Mistake m) {
  StepText t = correct_backward_text(step, s, c);
  if (StepText wrong = mistaken_backward_text(step, s, m); !wrong.formula.empty()) {
    // a mistake changes the values and the words, never the step's shape: its dims stay the correct ones
    t.formula = std::move(wrong.formula);
    t.note = std::move(wrong.note);
    if (!wrong.title.empty()) t.title = std::move(wrong.title);
  }
  return t;
}

std::string backward_code(StepId step, const Spec& s, const TraceConfig& c) {
  const bool heads = s.H > 1;
  const std::string v = s.grouped() ? "v_repeat" : heads ? "v_heads" : "v", q = heads ? "q_heads" : "q", k = heads ? "k_heads" : "k";
  const std::string o = out_name(s);
  auto wt = [&](std::string_view w) { return s.layout == Layout::Torch ? std::string(w) : fmt::format("{}.T", w); };
  auto wgrad = [&](std::string_view w, std::string_view in, std::string_view g) {
    return s.layout == Layout::Torch ? fmt::format("grad_{} = (grad_{}.flatten(0, -2).T @ {}.flatten(0, -2))", w, g, in)
                                     : fmt::format("grad_{} = {}.flatten(0, -2).T @ grad_{}.flatten(0, -2)", w, in, g);
  };
  auto bgrad = [](std::string_view b, std::string_view g) { return fmt::format("grad_{} = grad_{}.flatten(0, -2).sum(0)", b, g); };
  const std::string x = s.positions != Positions::None ? "x_pos" : "x";
  switch (step) {
    case StepId::Loss: return fmt::format("loss = (({} - target.reshape({}.shape)) ** 2).mean()", o, o);  // a scalar, as shown
    case StepId::GradOutput:
      switch (s.backward.upstream) {
        case U::Sum: return fmt::format("grad_output = torch.ones_like({})", o);
        case U::Given: return fmt::format("grad_output = torch.from_numpy(np.load(\"inputs/grad_output.npy\")).reshape({}.shape)", o);
        case U::Seed: return "grad_output = torch.from_numpy(np.load(\"grad.output.npy\"))  # attn's own N(0, 1) draw from the seed";
        case U::Target: return fmt::format("grad_output = 2 * ({} - target.reshape({}.shape)) / {}.numel()", o, o, o);
      }
      return "";
    case StepId::GradWo: return wgrad("W_o", heads ? "merged" : "context", "output");
    case StepId::GradBo: return bgrad("b_o", "output");
    case StepId::GradMerged: return fmt::format("grad_merged = grad_output @ {}", wt("W_o"));
    case StepId::GradContext:
      if (heads) return fmt::format("grad_context = grad_{}.unflatten(-1, ({}, {})).transpose(-3, -2)", s.w.W_o ? "merged" : "output", s.H, s.hv());
      return fmt::format("grad_context = grad_output @ {}", wt("W_o"));
    case StepId::GradWeights:
      if (!values(s)) {
        switch (s.backward.upstream) {
          case U::Sum: return "grad_weights = torch.ones_like(weights)";
          case U::Given: return "grad_weights = torch.from_numpy(np.load(\"inputs/grad_output.npy\")).reshape(weights.shape)";
          case U::Seed: return "grad_weights = torch.from_numpy(np.load(\"grad.weights.npy\"))  # attn's own N(0, 1) draw from the seed";
          case U::Target: return "grad_weights = 2 * (weights - target.reshape(weights.shape)) / weights.numel()";
        }
      }
      return fmt::format("grad_weights = grad_{} @ {}.transpose(-2, -1)", heads || s.w.W_o ? "context" : "output", v);
    case StepId::GradVRepeat: return "grad_v_repeat = weights.transpose(-2, -1) @ grad_context";
    case StepId::GradVHeads:
      if (s.grouped()) return summed_copies_code(s, "grad_v_heads", "grad_v_repeat");
      return "grad_v_heads = weights.transpose(-2, -1) @ grad_context";
    case StepId::GradMasked:
    case StepId::GradCapped:
    case StepId::GradBiased:
    case StepId::GradScaled:
    case StepId::GradScores: {
      const std::string self(chain_id(step)), prev = before(s, self);
      if (self == logits(s)) return fmt::format("grad_{} = weights * (grad_weights - (grad_weights * weights).sum(-1, keepdim=True))", self);
      if (prev == "scaled") return fmt::format("grad_scores = grad_scaled * {}", c.scale_factor);
      if (prev == "biased") return fmt::format("grad_{} = grad_biased", self);
      if (prev == "capped") return fmt::format("grad_{0} = grad_capped * (1 - (capped / {1}) ** 2)", self, static_cast<Scalar>(*s.softcap));
      if (s.blocking()) {
        return fmt::format("grad_{} = grad_masked.masked_fill(mask{} == 0, 0.0)", self, s.H > 1 && s.batched && s.mask_per_batch() ? "[:, None]" : "");
      }
      return fmt::format("grad_{} = grad_masked", self);
    }
    case StepId::GradQRope: return fmt::format("grad_q_rope = grad_scores @ {}", s.grouped() ? "k_repeat" : "k_rope");
    case StepId::GradKRepeat: return fmt::format("grad_k_repeat = grad_scores.transpose(-2, -1) @ {}", s.rope ? "q_rope" : q);
    case StepId::GradKRope:
      if (s.grouped()) return summed_copies_code(s, "grad_k_rope", "grad_k_repeat");
      return "grad_k_rope = grad_scores.transpose(-2, -1) @ q_rope";
    case StepId::GradQkv: return "grad_qkv = torch.cat([grad_q, grad_k, grad_v], dim=-1)";
    case StepId::GradWqkv: return wgrad("W_qkv", x, "qkv");
    case StepId::GradBqkv: return bgrad("b_qkv", "qkv");
    case StepId::GradQHeads:
      if (s.rope) {
        return turned_back_code(s, "grad_q_heads", true);
      }
      return fmt::format("grad_q_heads = grad_scores @ {}", s.grouped() ? "k_repeat" : k);
    case StepId::GradKHeads:
      if (s.rope) {
        return turned_back_code(s, "grad_k_heads", false);
      }
      if (s.grouped()) return summed_copies_code(s, "grad_k_heads", "grad_k_repeat");
      return fmt::format("grad_k_heads = grad_scores.transpose(-2, -1) @ {}", q);
    case StepId::GradQ:
      if (heads) return "grad_q = grad_q_heads.transpose(-3, -2).flatten(-2)";
      if (s.rope) return turned_back_code(s, "grad_q", true);
      return "grad_q = grad_scores @ k";
    case StepId::GradK:
      if (heads) return "grad_k = grad_k_heads.transpose(-3, -2).flatten(-2)";
      if (s.rope) return turned_back_code(s, "grad_k", false);
      return "grad_k = grad_scores.transpose(-2, -1) @ q";
    case StepId::GradV:
      return heads ? "grad_v = grad_v_heads.transpose(-3, -2).flatten(-2)"
                   : fmt::format("grad_v = weights.transpose(-2, -1) @ grad_{}", s.w.W_o ? "context" : "output");
    case StepId::GradWq: return wgrad("W_q", x, "q");
    case StepId::GradBq: return bgrad("b_q", "q");
    case StepId::GradWk: return wgrad("W_k", s.cross() ? "source" : x, "k");
    case StepId::GradBk: return bgrad("b_k", "k");
    case StepId::GradWv: return wgrad("W_v", s.cross() ? "source" : x, "v");
    case StepId::GradBv: return bgrad("b_v", "v");
    case StepId::GradX:
      if (s.w.W_qkv) return fmt::format("grad_x = grad_qkv @ {}", wt("W_qkv"));
      if (s.cross()) return fmt::format("grad_x = grad_q @ {}", wt("W_q"));
      return fmt::format("grad_x = grad_q @ {} + grad_k @ {} + grad_v @ {}", wt("W_q"), wt("W_k"), wt("W_v"));
    case StepId::GradSource: return fmt::format("grad_source = grad_k @ {} + grad_v @ {}", wt("W_k"), wt("W_v"));
    default: return "";
  }
}

}  // namespace attn
