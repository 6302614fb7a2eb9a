// The backward pass's explanations (attn backward --explain): the softmax's Jacobian-vector
// product written out for one row, the scale in the chain rule, grad.k's transpose, the values'
// gradient, x's paths and a parameter's sum over rows; the numbers are this run's.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "attn/explain_detail.hpp"

namespace attn::explain_detail {
namespace {

// The softmax's backward (the step grad.masked, grad.scaled or grad.scores that reads grad.weights):
// one row of this run written out, and why the rowsum term is there.
// Whether the trace simulates a mistake (attn backward --mistake): its numbers are then the
// student's, and a worked example of the correct rule beside them would contradict the table.
bool simulated_mistake(const Trace& t) {
  return std::any_of(t.config.notes.begin(), t.config.notes.end(), [](const std::string& n) { return n.starts_with("simulated mistake"); });
}

std::string explain_softmax_backward(const Trace& t, const Step& s, const ExplainBlock& b) {
  if (simulated_mistake(t)) return "";
  const Step* w = t.find("weights");
  const Step* dw = t.find("grad.weights");
  if (w == nullptr || dw == nullptr || !s.formula.starts_with("grad." + std::string(s.id.substr(5)) + " = weights")) return "";
  const Row r = pick_row(*w, b);
  const auto S = w->value.shape().back();
  const Scalar* g = dw->value.data() + (r.values - w->value.data());  // the same row of grad.weights
  double dot = 0;
  std::vector<std::string> terms, entries;
  for (std::int64_t j = 0; j < S; ++j) {
    dot += static_cast<double>(g[j]) * r.values[j];
    if (r.values[j] == 0) continue;
    terms.push_back(g[j] < 0 ? fmt::format("{:.3f} · ({:.3f})", r.values[j], g[j]) : fmt::format("{:.3f} · {:.3f}", r.values[j], g[j]));
  }
  for (std::int64_t j = 0; j < S; ++j) {
    if (r.values[j] == 0) continue;
    if (entries.size() == 4) {
      entries.push_back("…");
      break;
    }
    entries.push_back(fmt::format("{}: {:.3f} · ({:.3f} − {}) = {:.4f}", q(axis_label(t.config, w->dims.back(), j, b.batch)), r.values[j], g[j],
                                  dot < 0 ? fmt::format("({:.3f})", dot) : fmt::format("{:.3f}", dot), r.values[j] * (g[j] - dot)));
  }
  return fmt::format(
      "{}For query {}, the weights are a softmax of the row, so each weight depends on every score of the row, not only its own. "
      "The chain rule through that Jacobian is grad[j] = w[j] · (grad.weights[j] − Σ_k w[k] · grad.weights[k]). Here the sum is "
      "{} = {:.4f}, and {}. The entries of a row sum to 0. The weights sum to 1 whatever the scores are, so raising every score "
      "of a row by the same amount changes nothing, and the rowsum term takes out that common part. The softmax treated "
      "elementwise (w ⊙ grad.weights, no rowsum term) would miss it.{}",
      block_prefix(*w, b), tok(t, b, r.query), fmt::join(terms, " + "), dot, fmt::join(entries, "; "),
      t.find("masked") != nullptr ? " A masked key has w = 0, so its entry is 0." : "");
}

// The other backward steps: what each is, with one number of this run worked out.
// Where a [.., T, S] or [.., L, w] block starts for the view's batch row and head (other leading axes at 0).
const Scalar* block_of(const Step& s, const ExplainBlock& b) { return s.value.data() + block_offset(s, b); }

std::string explain_grad_weights(const Trace& t, const Step& s, const ExplainBlock& b) {
  if (s.formula.find(" · v") == std::string::npos) return "";  // the upstream gradient itself: its note says which
  const Row r = pick_row(s, b);
  const auto S = s.value.shape().back();
  std::int64_t big = 0;
  for (std::int64_t j = 1; j < S; ++j)
    if (std::fabs(r.values[j]) > std::fabs(r.values[big])) big = j;
  const auto key = q(axis_label(t.config, s.dims.back(), big, b.batch));
  return fmt::format("{}Entry [i, j] says how the loss would change if query i put a little more weight on key j (its value row "
                     "would count more in the context). For query {}, the largest in size is key {}: {:.4f}, {}. These are not yet "
                     "the scores' gradients: the weights of a row must sum to 1, which the next step (the softmax's backward) "
                     "accounts for.",
                     block_prefix(s, b), tok(t, b, r.query), key, r.values[big],
                     r.values[big] > 0 ? "so more weight there would raise the loss" : "so more weight there would lower the loss");
}

std::string explain_grad_scores(const Trace& t, const Step& s, const ExplainBlock& b) {
  if (!s.formula.starts_with("grad.scores = grad.scaled")) return explain_softmax_backward(t, s, b);
  const Step* scaled = t.find("grad.scaled");
  if (simulated_mistake(t)) return "";
  if (scaled == nullptr) return "";
  const Row r = pick_row(*scaled, b);
  const auto S = s.value.shape().back();
  std::int64_t j = 0;
  while (j + 1 < S && r.values[j] == 0) ++j;
  const Scalar* out = block_of(s, b) + r.query * S;
  return fmt::format("The forward pass multiplied the scores by {:.4f}, so a change in a score moved the scaled score {:.4f} times as "
                     "much: the chain rule multiplies the gradient by the same factor. For query {}, key {}: {:.4f} × {:.4f} = {:.4f}. "
                     "Forgetting this factor is a common slip in a hand-written backward pass.",
                     t.config.scale_factor, t.config.scale_factor, tok(t, b, r.query), q(axis_label(t.config, s.dims.back(), j, b.batch)),
                     r.values[j], t.config.scale_factor, out[j]);
}

std::string explain_grad_k(const Trace&, const Step& s, const ExplainBlock&) {
  if (s.formula.find("grad.scoresᵀ") == std::string::npos) {
    return s.formula.find("merged") != std::string::npos ? "The heads' gradients side by side again: the backward of the head split is the merge." : "";
  }
  return "scores = q · kᵀ: key j sits in column j of the scores, so its gradient gathers column j of grad.scores, one entry per "
         "query: grad.k[j] = Σ_i grad.scores[i, j] · q[i]. That is grad.scoresᵀ · q. Without the transpose (grad.scores · q) row j "
         "would be used, which belongs to query j, not key j. The queries' gradient is the mirror image: grad.q[i] = Σ_j "
         "grad.scores[i, j] · k[j], row i, no transpose.";
}

std::string explain_grad_v(const Trace& t, const Step& s, const ExplainBlock&) {
  if (s.formula.find("weightsᵀ") == std::string::npos) {
    if (s.formula.find("summed over the copies") != std::string::npos) {
      return fmt::format("Each kv head was repeated to serve H / Hkv = {} query heads, so each copy received gradients of its own; the "
                         "repeat's backward adds the copies up.",
                         t.config.H / t.config.Hkv);
    }
    return s.formula.find("merged") != std::string::npos ? "The heads' gradients side by side again: the backward of the head split is the merge." : "";
  }
  return "context[i] = Σ_j weights[i, j] · v[j]: value row j went into every query's context, with that query's weight. So its "
         "gradient collects from every query: grad.v[j] = Σ_i weights[i, j] · grad.context[i]. A key no query attends to gets 0.";
}

std::string explain_grad_x(const Trace& t, const Step& s, const ExplainBlock&) {
  if (s.formula.find(" + ") == std::string::npos) {
    return t.config.mode == Mode::Cross ? "In cross-attention x made only the queries, so only their path leads back to it; the source "
                                          "takes the keys' and values' paths (grad.source)."
                                        : "";
  }
  return "x was used three times: q = x · W_q, k = x · W_k and v = x · W_v. A small change in x moves all three, and the loss "
         "feels each, so the gradients of the three paths add. Taking only the queries' path is a common slip when the "
         "forward pass is read as \"x goes into the queries\".";
}

std::string explain_grad_param(const Trace& t, const Step& s, const ExplainBlock&) {
  const auto& c = t.config;
  const std::int64_t rows = c.B * (s.id == "grad.W_k" || s.id == "grad.W_v" || s.id == "grad.b_k" || s.id == "grad.b_v" ? c.S : c.T);
  const bool bias = t.find("grad.b_" + s.id.substr(s.id.find('_') + 1)) != nullptr;
  return fmt::format("The same parameter was used by every row: {} of them here ({}). Each row's contribution is its input row "
                     "times its output gradient row (an outer product); the parameter's gradient is their sum, which is what the "
                     "product of the transposed input with the gradient computes.{}",
                     rows, c.batched ? "every position of every batch row" : "every position",
                     bias ? " The bias was added to every row, so its gradient is the sum of the rows' gradients." : "");
}

}  // namespace

const std::map<std::string_view, Explainer>& backward_explainers() {
  static const std::map<std::string_view, Explainer> kTable = {
      {"grad.masked", explain_softmax_backward}, {"grad.scaled", explain_softmax_backward}, {"grad.scores", explain_grad_scores},
      {"grad.capped", explain_softmax_backward},  {"grad.biased", explain_softmax_backward},
      {"grad.weights", explain_grad_weights},     {"grad.k", explain_grad_k},       {"grad.k.heads", explain_grad_k},
      {"grad.v", explain_grad_v},                 {"grad.v.heads", explain_grad_v}, {"grad.x", explain_grad_x},
      {"grad.W_q", explain_grad_param},           {"grad.W_k", explain_grad_param}, {"grad.W_v", explain_grad_param},
      {"grad.W_o", explain_grad_param},           {"grad.W_qkv", explain_grad_param},
  };
  return kTable;
}

}  // namespace attn::explain_detail
