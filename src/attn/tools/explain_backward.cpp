// The backward pass's explanations (attn backward --explain): the softmax's Jacobian-vector
// product written out for one row, the scale in the chain rule, grad.k's transpose, the values'
// gradient, x's paths and a parameter's sum over rows; the numbers are this run's.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "attn/tools/explain_detail.hpp"
#include "attn/core/text.hpp"

namespace attn::explain_detail {
namespace {

// Whether the trace simulates a mistake (attn backward --mistake): its numbers are then the
// student's, and a worked example of the correct rule beside them would contradict the table.
bool simulated_mistake(const Trace& t) {
  return std::any_of(t.config.notes.begin(), t.config.notes.end(), [](const std::string& n) { return n.starts_with("simulated mistake"); });
}

// A token as the tables name it, quoted: a repeated one with its occurrence ("the₂").
std::string named(const Trace& t, Dim d, std::int64_t i, const ExplainBlock& b) { return q(distinct_axis_label(t.config, d, i, b.batch)); }

// Worked arithmetic that reproduces: a number printed with d decimals and read back, as a reader
// recomputes from it; a result reproduces when the sum recomputed from the printed operands lies
// within half a unit of its last printed digit. Each worked group prints the fewest decimals, 4 or
// more, at which all its results reproduce (tests/explain_arithmetic.py recomputes them).
double as_printed(double v, int d) { return std::stod(fmt::format("{:.{}f}", v, d)); }
bool reproduces(double recomputed, double result, int d) { return std::fabs(recomputed - as_printed(result, d)) <= 0.5 * std::pow(10.0, -d) + 1e-12; }
template <class Worked>
int decimals_for(const Worked& worked) {
  int d = 4;
  while (d < 12 && !worked(d)) ++d;
  return d;
}

// The keys a row's vectors and Jacobian show: all of up to 6, else the first 3, a gap (−1), the last 2.
std::vector<std::int64_t> shown_keys(std::int64_t S) {
  if (S > 6) return {0, 1, 2, -1, S - 2, S - 1};
  std::vector<std::int64_t> all;
  for (std::int64_t j = 0; j < S; ++j) all.push_back(j);
  return all;
}

// "[0.6405, 0.3595]": the shown entries, "…" for the gap.
std::string vector_text(const std::vector<double>& v, const std::vector<std::int64_t>& shown, int d) {
  std::vector<std::string> parts;
  for (const auto j : shown) parts.push_back(j < 0 ? "…" : signed_num(v[static_cast<std::size_t>(j)], d));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

// The indices k with a[k] ≠ 0, the terms a worked sum Σ_k a[k] · b[k] writes out.
std::vector<std::size_t> nonzero(const std::vector<double>& a) {
  std::vector<std::size_t> out;
  for (std::size_t k = 0; k < a.size(); ++k)
    if (a[k] != 0) out.push_back(k);
  return out;
}
constexpr std::size_t kTermsShown = 6;  // a worked sum of more terms shows the first 4 and "…"

// "0.6405 · (−0.1198) + 0.3595 · 0.1198": the products with a nonzero first factor, all of up to 6.
std::string products_text(const std::vector<double>& a, const std::vector<double>& b, int d) {
  const auto terms = nonzero(a);
  std::vector<std::string> parts;
  for (const auto k : terms) {
    if (terms.size() > kTermsShown && parts.size() == 4) {
      parts.emplace_back("…");
      break;
    }
    parts.push_back(fmt::format("{} · {}", signed_operand(a[k], d), signed_operand(b[k], d)));
  }
  return fmt::format("{}", fmt::join(parts, " + "));
}

// Σ_k a[k] · b[k] recomputed from the operands as printed with d decimals.
double printed_dot(const std::vector<double>& a, const std::vector<double>& b, int d) {
  double sum = 0;
  for (const auto k : nonzero(a)) sum += as_printed(a[k], d) * as_printed(b[k], d);
  return sum;
}

// J = diag(w) − w wᵀ of one row: J[j][k] = w[j] · (δ_jk − w[k]).
std::vector<std::vector<double>> softmax_jacobian(const std::vector<double>& w) {
  std::vector<std::vector<double>> J(w.size(), std::vector<double>(w.size()));
  for (std::size_t j = 0; j < w.size(); ++j)
    for (std::size_t k = 0; k < w.size(); ++k) J[j][k] = w[j] * ((j == k ? 1.0 : 0.0) - w[k]);
  return J;
}

// J as preformatted lines (each starts with two spaces: shown as written, see explain.hpp), the keys
// as row and column labels, right-aligned columns.
std::string matrix_lines(const std::vector<std::vector<double>>& J, const std::vector<std::string>& keys, const std::vector<std::int64_t>& shown, int d) {
  const auto cell = [&](std::int64_t j, std::int64_t k) {
    return j < 0 || k < 0 ? std::string("…") : signed_num(J[static_cast<std::size_t>(j)][static_cast<std::size_t>(k)], d);
  };
  const auto label = [&](std::int64_t j) { return j < 0 ? std::string("…") : keys[static_cast<std::size_t>(j)]; };
  std::size_t lw = 1, cw = 1;
  for (const auto j : shown) {
    lw = std::max(lw, cells(label(j)));
    cw = std::max(cw, cells(label(j)));
    for (const auto k : shown) cw = std::max(cw, cells(cell(j, k)));
  }
  std::string out = "\n  " + pad_right("", lw);
  for (const auto k : shown) out += "  " + pad_left(label(k), cw);
  for (const auto j : shown) {
    out += "\n  " + pad_right(label(j), lw);
    for (const auto k : shown) out += "  " + pad_left(cell(j, k), cw);
  }
  return out + "\n";
}

// One row of the softmax's backward, in double: the weights w, the row's grad.weights g, the
// Jacobian J, J · g, Σ_k w[k] · g[k], and the decimals each worked group needs.
struct SoftmaxRow {
  std::vector<double> w, g, jg;
  std::vector<std::vector<double>> J;
  double dot = 0;
  std::vector<std::string> keys;     // as the tables name them
  std::vector<std::int64_t> shown;   // shown_keys(S)
  std::size_t first = 0;             // the first key with w ≠ 0: its row of J is worked out
  int dj = 4, dc = 4;                // decimals of J's group (w, J, g, J · g) and of the rowsum form's
};

// The rowsum form's entries worked out: the keys with w ≠ 0, the first 4 of them.
std::vector<std::size_t> rowsum_entries(const SoftmaxRow& m) {
  auto keys = nonzero(m.w);
  if (keys.size() > 4) keys.resize(4);
  return keys;
}

// Whether J's group reproduces at d decimals: each shown J entry from the printed w; J · g from the
// printed J and g when every key is shown; the worked row of J when its terms are all written.
bool jacobian_reproduces(const SoftmaxRow& m, int d) {
  for (const auto j : m.shown)
    for (const auto k : m.shown) {
      if (j < 0 || k < 0) continue;
      const auto uj = static_cast<std::size_t>(j), uk = static_cast<std::size_t>(k);
      if (!reproduces(as_printed(m.w[uj], d) * ((j == k ? 1.0 : 0.0) - as_printed(m.w[uk], d)), m.J[uj][uk], d)) return false;
    }
  std::vector<double> printed_j(m.w.size());
  for (std::size_t j = 0; j < m.w.size(); ++j) {
    for (std::size_t k = 0; k < m.w.size(); ++k) printed_j[k] = as_printed(m.J[j][k], d);
    const bool worked = m.shown.size() == m.w.size() || (j == m.first && nonzero(m.J[j]).size() <= kTermsShown);
    if (worked && !reproduces(printed_dot(printed_j, m.g, d), m.jg[j], d)) return false;
  }
  return true;
}

// Whether the rowsum form reproduces at d decimals: Σ_k w[k] · g[k], then w[j] · (g[j] − Σ) for each
// entry written, from the printed w, g and Σ.
bool rowsum_reproduces(const SoftmaxRow& m, int d) {
  if (nonzero(m.w).size() <= kTermsShown && !reproduces(printed_dot(m.w, m.g, d), m.dot, d)) return false;
  for (const auto j : rowsum_entries(m))
    if (!reproduces(as_printed(m.w[j], d) * (as_printed(m.g[j], d) - as_printed(m.dot, d)), m.jg[j], d)) return false;
  return true;
}

SoftmaxRow softmax_row(const Trace& t, const Step& ws, const Step& dw, const Row& r, const ExplainBlock& b) {
  SoftmaxRow m;
  const auto S = ws.value.shape().back();
  const Scalar* gp = dw.value.data() + (r.values - ws.value.data());  // the same row of grad.weights
  m.w.assign(r.values, r.values + S), m.g.assign(gp, gp + S);
  for (std::int64_t j = 0; j < S; ++j) m.keys.push_back(distinct_axis_label(t.config, ws.dims.back(), j, b.batch));
  m.J = softmax_jacobian(m.w);
  m.jg.assign(m.w.size(), 0.0);
  for (std::size_t j = 0; j < m.w.size(); ++j) {
    m.dot += m.w[j] * m.g[j];
    for (std::size_t k = 0; k < m.w.size(); ++k) m.jg[j] += m.J[j][k] * m.g[k];
  }
  m.shown = shown_keys(S);
  m.first = static_cast<std::size_t>(std::find_if(m.w.begin(), m.w.end(), [](double x) { return x != 0; }) - m.w.begin());
  if (m.first < m.w.size()) {
    m.dj = decimals_for([&](int d) { return jacobian_reproduces(m, d); });
    m.dc = decimals_for([&](int d) { return rowsum_reproduces(m, d); });
  }
  return m;
}

// The rowsum form's entries: "cat": 0.6405 · (−0.1198 − (−0.0337)) = −0.0552; …
std::string rowsum_text(const SoftmaxRow& m) {
  std::vector<std::string> entries;
  for (const auto j : rowsum_entries(m)) {
    entries.push_back(fmt::format("{}: {} · ({} − {}) = {}", q(m.keys[j]), signed_num(m.w[j], m.dc), signed_num(m.g[j], m.dc), signed_operand(m.dot, m.dc),
                                  signed_num(m.jg[j], m.dc)));
  }
  if (nonzero(m.w).size() > entries.size()) entries.emplace_back("…");
  return fmt::format("{}", fmt::join(entries, "; "));
}

// The softmax's backward (the step grad.masked, grad.scaled or grad.scores that reads grad.weights):
// the Jacobian of one row with this run's numbers, J times the row's grad.weights, and the same
// without J, as the code computes it.
std::string explain_softmax_backward(const Trace& t, const Step& s, const ExplainBlock& b) {
  if (simulated_mistake(t)) return "";
  const Step* ws = t.find("weights");
  const Step* dw = t.find("grad.weights");
  if (ws == nullptr || dw == nullptr || !s.formula.starts_with("grad." + std::string(s.id.substr(5)) + " = weights")) return "";
  const Row r = pick_row(*ws, b);
  const SoftmaxRow m = softmax_row(t, *ws, *dw, r, b);
  if (m.first == m.w.size()) {  // an empty row (attn backward refuses masked_row today; kept so a row of 0s never indexes past the keys)
    // claim: softmax-backward-empty-row
    return fmt::format("{}For query {}, every key is masked and the weights are all 0, so the softmax's Jacobian J = diag(w) − w wᵀ is "
                       "0 and so is the row's gradient.",
                       block_prefix(*ws, b), named(t, Dim::T, r.query, b));
  }
  // "a masked key has w = 0" holds with −inf, and with a finite mask_fill only where exp underflowed
  const MaskFacts mf = mask_facts(t);
  const bool masked = mf.blocked > 0 && std::isinf(mf.fill);
  return fmt::format(
      // claim: softmax-jacobian
      "{}For query {}, the weights are a softmax of the row, so each weight depends on every score of the row, not only its own: "
      "∂w[j]/∂score[k] = w[j] · (δ[j, k] − w[k]). Together these are the softmax's Jacobian, J = diag(w) − w wᵀ; with this row's "
      "weights, w = {}, it is:{}"
      "The chain rule multiplies J by the row's grad.weights, g = {}: J · g = {}, the row of {} above. Row {} of J, for one: {} = {}.{}\n"
      // claim: softmax-rowsum
      "The code computes the same without building J: grad[j] = w[j] · (g[j] − Σ_k w[k] · g[k]). Here Σ_k w[k] · g[k] = {} = {}, and {}. "
      "The entries of a row sum to 0. The weights sum to 1 whatever the scores are, so raising every score of a row by the same amount "
      "changes nothing, and the rowsum term takes out that common part. The softmax treated elementwise (w ⊙ grad.weights, no rowsum "
      "term) would miss it.",
      block_prefix(*ws, b), named(t, Dim::T, r.query, b), vector_text(m.w, m.shown, m.dj), matrix_lines(m.J, m.keys, m.shown, m.dj),
      vector_text(m.g, m.shown, m.dj), vector_text(m.jg, m.shown, m.dj), s.id, q(m.keys[m.first]), products_text(m.J[m.first], m.g, m.dj),
      // claim: softmax-jacobian-masked
      signed_num(m.jg[m.first], m.dj), masked ? " A masked key has w = 0, so its row and column of J are 0 and its entry is 0." : "",
      products_text(m.w, m.g, m.dc), signed_num(m.dot, m.dc), rowsum_text(m));
}

// The other backward steps: what each is, with one number of this run worked out.
// Where a [.., T, S] or [.., L, w] block starts for the view's batch row and head (other leading axes at 0).
const Scalar* block_of(const Step& s, const ExplainBlock& b) { return s.value.data() + block_offset(s, b); }

// The keys of a grad.weights row largest in size at the printed digits (several: a tie), and what
// more weight on them would do to the loss.
std::string largest_keys(const Trace& t, const Step& s, const ExplainBlock& b, const Row& r) {
  const auto S = s.value.shape().back();
  const auto size = [&](std::int64_t j) { return signed_num(std::fabs(r.values[j])); };  // |value| as printed
  std::int64_t big = 0;
  for (std::int64_t j = 1; j < S; ++j)
    if (std::fabs(r.values[j]) > std::fabs(r.values[big])) big = j;
  std::vector<std::string> all, raise, lower;
  for (std::int64_t j = 0; j < S; ++j) {
    if (size(j) != size(big)) continue;
    const auto key = named(t, s.dims.back(), j, b);
    all.push_back(key);
    (r.values[j] > 0 ? raise : lower).push_back(key);
  }
  const auto effect = [](bool up) { return up ? "raise" : "lower"; };
  if (all.size() == 1) {
    return fmt::format("the largest in size is key {}: {}, so more weight there would {} the loss", all[0], signed_num(r.values[big]),
                       effect(r.values[big] > 0));
  }
  const auto listed = [](const std::vector<std::string>& keys) {
    return keys.size() == 1 ? keys[0] : fmt::format("{} and {}", fmt::join(keys.begin(), keys.end() - 1, ", "), keys.back());
  };
  if (raise.empty() || lower.empty()) {
    // claim: grad-weights-tie
    return fmt::format("keys {} tie for the largest in size at {}, so more weight on any of them would {} the loss", listed(all),
                       signed_num(r.values[big]), effect(lower.empty()));
  }
  // claim: grad-weights-tie
  return fmt::format("keys {} tie for the largest in size at ±{}: more weight on {} would lower the loss, on {} raise it", listed(all), size(big),
                     listed(lower), listed(raise));
}

std::string explain_grad_weights(const Trace& t, const Step& s, const ExplainBlock& b) {
  if (s.formula.find(" · v") == std::string::npos) return "";  // the upstream gradient itself: its note says which
  const Row r = pick_row(s, b);
  // claim: grad-weights
  return fmt::format("{}Entry [i, j] says how the loss would change if query i put a little more weight on key j (its value row "
                     "would count more in the context). For query {}, {}. These are not yet the scores' gradients: the weights of a row "
                     "must sum to 1, which the next step (the softmax's backward) accounts for.",
                     block_prefix(s, b), named(t, Dim::T, r.query, b), largest_keys(t, s, b, r));
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
  const double f = t.config.scale_factor;
  const int d = decimals_for([&](int d) { return reproduces(as_printed(r.values[j], d) * as_printed(f, d), out[j], d); });
  // claim: grad-scale-chain-rule
  return fmt::format("The forward pass multiplied the scores by {0}, so a change in a score moved the scaled score {0} times as "
                     "much: the chain rule multiplies the gradient by the same factor. For query {1}, key {2}: {3} × {5} = {4}. "
                     "Forgetting this factor is a common slip in a hand-written backward pass.",
                     signed_num(f), named(t, Dim::T, r.query, b), named(t, s.dims.back(), j, b), signed_operand(r.values[j], d),
                     signed_num(out[j], d), signed_num(f, d));
}

std::string explain_grad_k(const Trace&, const Step& s, const ExplainBlock&) {
  if (s.formula.find("grad.scoresᵀ") == std::string::npos) {
    // claim: grad-heads-merge
    return s.formula.find("merged") != std::string::npos ? "The heads' gradients side by side again: the backward of the head split is the merge." : "";
  }
  // claim: grad-k-transpose
  return "scores = q · kᵀ: key j sits in column j of the scores, so its gradient gathers column j of grad.scores, one entry per "
         "query: grad.k[j] = Σ_i grad.scores[i, j] · q[i]. That is grad.scoresᵀ · q. Without the transpose (grad.scores · q) row j "
         "would be used, which belongs to query j, not key j. The queries' gradient is the mirror image: grad.q[i] = Σ_j "
         "grad.scores[i, j] · k[j], row i, no transpose.";
}

std::string explain_grad_v(const Trace& t, const Step& s, const ExplainBlock&) {
  if (s.formula.find("weightsᵀ") == std::string::npos) {
    if (s.formula.find("summed over the copies") != std::string::npos) {
      // claim: grad-repeat-sum
      return fmt::format("Each kv head was repeated to serve H / Hkv = {} query heads, so each copy received gradients of its own; the "
                         "repeat's backward adds the copies up.",
                         t.config.H / t.config.Hkv);
    }
    // claim: grad-heads-merge
    return s.formula.find("merged") != std::string::npos ? "The heads' gradients side by side again: the backward of the head split is the merge." : "";
  }
  // claim: grad-v-gather
  return "context[i] = Σ_j weights[i, j] · v[j]: value row j went into every query's context, with that query's weight. So its "
         "gradient collects from every query: grad.v[j] = Σ_i weights[i, j] · grad.context[i]. A key no query attends to gets 0.";
}

std::string explain_grad_x(const Trace& t, const Step& s, const ExplainBlock&) {
  if (s.formula.find(" + ") == std::string::npos) {
    // claim: grad-x-cross
    return t.config.mode == Mode::Cross ? "In cross-attention x made only the queries, so only their path leads back to it; the source "
                                          "takes the keys' and values' paths (grad.source)."
                                        : "";
  }
  // claim: grad-x-three-paths
  return "x was used three times: q = x · W_q, k = x · W_k and v = x · W_v. A small change in x moves all three, and the loss "
         "feels each, so the gradients of the three paths add. Taking only the queries' path is a common slip when the "
         "forward pass is read as \"x goes into the queries\".";
}

std::string explain_grad_param(const Trace& t, const Step& s, const ExplainBlock&) {
  const auto& c = t.config;
  const std::int64_t rows = c.B * (s.id == "grad.W_k" || s.id == "grad.W_v" || s.id == "grad.b_k" || s.id == "grad.b_v" ? c.S : c.T);
  const bool bias = t.find("grad.b_" + s.id.substr(s.id.find('_') + 1)) != nullptr;
  // claim: grad-param-sum
  return fmt::format("The same parameter was used by every row: {} of them here ({}). Each row's contribution is its input row "
                     "times its output gradient row (an outer product); the parameter's gradient is their sum, which is what the "
                     "product of the transposed input with the gradient computes.{}",
                     rows, c.batched ? "every position of every batch row" : "every position",
                     // claim: grad-bias-sum
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
