// The diagnosis: compare, locate the first divergence, and try each mistake switch there.
#include "attn/tools/diagnose.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attn/numerics/backend.hpp"
#include "attn/core/error.hpp"
#include "attn/core/steps.hpp"
#include "attn/core/suggest.hpp"
#include "attn/core/text.hpp"

namespace attn {

namespace {

// Where a known framework habit explains the first difference, say how to get what attn shows.
void add_hints(const Trace& ref, const Tensor& student, const Tolerance& tol, Diagnosis& d) {
  const Step* w = ref.find("weights");
  if (d.first.id == "weights" && w != nullptr && ref.config.H > 1) {
    // nn.MultiheadAttention returns the weights averaged over the heads unless told otherwise
    const auto& shape = w->value.shape();  // [B, H, T, S] or [H, T, S]
    const std::int64_t S = shape.back(), T = shape[shape.size() - 2], H = ref.config.H, blocks = w->value.size() / (H * T * S);
    Shape mean_shape = shape;
    mean_shape.erase(mean_shape.end() - 3);
    Tensor mean = Tensor::uninitialized(mean_shape);
    for (std::int64_t b = 0; b < blocks; ++b)
      for (std::int64_t i = 0; i < T * S; ++i) {
        double s = 0;
        for (std::int64_t h = 0; h < H; ++h) s += w->value.data()[(b * H + h) * T * S + i];
        mean.mutable_data()[b * T * S + i] = static_cast<Scalar>(s / static_cast<double>(H));
      }
    if (compare_step("weights", mean, student, tol, ref.config, {}).status == StepStatus::Same) {
      d.hints.push_back(fmt::format("your weights.npy is the average over the H = {} heads: nn.MultiheadAttention returns that by "
                                    "default; call it with average_attn_weights=False for one [T, S] matrix per head", H));
    }
  }
  // the step without its head axis: the heads were never split (one [T, S] for H of them), unless it
  // is the head average found above
  if (const Step* r = ref.find(d.first.id); r != nullptr && ref.config.H > 1 && d.hints.empty()) {
    const auto at = std::find(r->dims.begin(), r->dims.end(), Dim::H);
    if (at != r->dims.end()) {
      Shape without = r->value.shape();
      without.erase(without.begin() + (at - r->dims.begin()));
      if (student.shape() == without) {
        d.hints.push_back(fmt::format("your {0}.npy has no head axis ({1} where the reference's {0} is {2}, H = {3}): split q, k and v into "
                                      "H = {3} heads of hs = dk / H features each (view, then transpose) before the scores, and merge them "
                                      "back after the context", d.first.id, shape_string(student.shape()), shape_string(r->value.shape()),
                                      ref.config.H));
      }
    }
  }
  for (const auto& m : d.matches) {
    if (m.mistake->mistake == Mistake::WTransposed || m.mistake->mistake == Mistake::OutputTransposed) {
      d.hints.push_back(std::string("if your weights are nn.Linear's (weight is [out, in]), give them as they are with \"layout\": "
                                    "\"torch\" in the problem, or transpose them: attn's default layout is x@W ([in, out])"));
      break;
    }
  }
}

// ---- the scale factor the student used ----

// b ≈ f · a by least squares, Σab / Σa², over the entries finite in both (and in `only_finite`: the
// reference's masked step, whose blocked entries carry no factor).
std::optional<double> ratio_factor(const Tensor& a, const Tensor& b, const Tensor* only_finite) {
  if (a.size() != b.size()) return std::nullopt;
  double ab = 0, aa = 0;
  for (std::int64_t i = 0; i < a.size(); ++i) {
    const double x = a.data()[i], y = b.data()[i];
    if (!std::isfinite(x) || !std::isfinite(y) || (only_finite != nullptr && !std::isfinite(only_finite->data()[i]))) continue;
    ab += x * y, aa += x * x;
  }
  return aa > 0 ? std::optional<double>(ab / aa) : std::nullopt;
}

// From the weights alone: within a row, log w = f · score + the row's constant over the keys both the
// student and the reference weigh (w > 0); f by least squares of the centred logs on the centred scores.
std::optional<double> weights_factor(const Tensor& scores, const Tensor& reference, const Tensor& student) {
  if (scores.size() != student.size() || reference.size() != student.size() || scores.shape().empty()) return std::nullopt;
  const std::int64_t S = scores.shape().back();
  double num = 0, den = 0;
  for (std::int64_t row = 0; row < scores.size() / S; ++row) {
    std::vector<std::pair<double, double>> kept;  // (score, log w)
    for (std::int64_t i = row * S; i < (row + 1) * S; ++i) {
      const double w = student.data()[i], x = scores.data()[i];
      if (w > 0 && std::isfinite(w) && reference.data()[i] > 0 && std::isfinite(x)) kept.emplace_back(x, std::log(w));
    }
    if (kept.size() < 2) continue;
    double ms = 0, ml = 0;
    for (const auto& [x, l] : kept) ms += x, ml += l;
    ms /= static_cast<double>(kept.size()), ml /= static_cast<double>(kept.size());
    for (const auto& [x, l] : kept) num += (x - ms) * (l - ml), den += (x - ms) * (x - ms);
  }
  return den > 0 ? std::optional<double>(num / den) : std::nullopt;
}

// The factor a scale mistake uses, as a formula of the problem's sizes ("" for the other mistakes).
std::string factor_formula(Mistake m, const Spec& s) {
  switch (m) {
    case Mistake::ScaleMissing: return "no scale at all";
    case Mistake::ScaleSqrtC: return fmt::format("1/√C = 1/√{}", s.C);
    case Mistake::ScaleDk: return fmt::format("1/d_k = 1/{}", s.hs());
    default: return "";
  }
}

// Where the student's first difference is the scaled, masked or weights step: the factor their scores
// were multiplied by, read from that step and kept only when the one pipeline, re-run with it as
// the scale, reproduces the step.
std::optional<ScaleEstimate> estimate_scale(const Spec& spec, const Trace& ref, const Tensor& student, const Diagnosis& d, const Tolerance& tol) {
  const Step* scores = ref.find("scores");
  const std::string& id = d.first.id;
  if (scores == nullptr || ref.find("scaled") == nullptr || d.first.status != StepStatus::Differ) return std::nullopt;
  std::optional<double> f;
  std::string from;
  if (id == "scaled") f = ratio_factor(scores->value, student, nullptr), from = "the student's scaled ÷ the scores";
  else if (id == "masked") f = ratio_factor(scores->value, student, &ref.find("masked")->value), from = "the student's masked ÷ the scores";
  else if (id == "weights") f = weights_factor(scores->value, ref.find("weights")->value, student), from = "the student's weights, from the log-ratios of a row's weights against its scores";
  if (!f || !std::isfinite(*f)) return std::nullopt;
  Spec scaled = spec;
  scaled.scale_kind = ScaleKind::Number;
  scaled.scale_number = *f;
  auto backend = make_cpu_backend();
  Trace t;
  try {
    t = run_pipeline(scaled, *backend);
  } catch (const InputError&) {
    return std::nullopt;
  }
  const Step* at = t.find(id);
  if (at == nullptr || compare_step(id, at->value, student, tol, t.config, at->dims).status != StepStatus::Same) return std::nullopt;
  ScaleEstimate e{*f, from, ref.config.scale, {}};
  for (const auto& m : d.matches)
    if (const auto formula = factor_formula(m.mistake->mistake, spec); !formula.empty()) e.named.push_back(fmt::format("{} ({})", formula, m.mistake->name));
  return e;
}

// ---- the mistakes ----

// Each mistake the input allows, run: those that reproduce the student's first differing step
// (ordered[first]), with how many of the student's later steps they reproduce too. Best first.
std::vector<MistakeMatch> try_mistakes(const Spec& spec, Backend& backend, const std::vector<const LoadedStep*>& ordered, std::size_t first,
                                       bool backward, const Tolerance& tol) {
  std::vector<MistakeMatch> matches;
  for (const auto& m : all_mistakes()) {
    if (is_backward(m.mistake) && !backward) continue;  // no gradient to compare
    Trace t;
    try {
      PipelineOptions options;
      options.mistake = m.mistake;
      t = is_backward(m.mistake) ? run_backward(spec, backend, options) : run_pipeline(spec, backend, options);
    } catch (const InputError&) {
      continue;  // the mistake cannot happen on this input (say, qk-swapped with T != S)
    }
    const Step* at = t.find(ordered[first]->id);
    if (at == nullptr) continue;
    if (compare_step(at->id, at->value, ordered[first]->value, tol, t.config, at->dims).status != StepStatus::Same) continue;
    MistakeMatch match{&m};
    for (std::size_t i = first + 1; i < ordered.size(); ++i) {
      const Step* later = t.find(ordered[i]->id);
      if (later == nullptr) continue;
      ++match.later_total;
      if (compare_step(later->id, later->value, ordered[i]->value, tol, t.config, later->dims).status == StepStatus::Same) {
        ++match.later_consistent;
      }
    }
    matches.push_back(match);
  }
  // The best explanation reproduces the most of what the student did after the divergence.
  const auto misses = [](const MistakeMatch& a) { return a.later_total - a.later_consistent; };
  std::stable_sort(matches.begin(), matches.end(), [&](const MistakeMatch& a, const MistakeMatch& b) { return misses(a) < misses(b); });
  return matches;
}

// How many of the first matches explain the student as well as the first: the same later steps
// reproduced of the same number. Two or more are a tie the student's tensors cannot settle.
std::size_t tied_matches(const std::vector<MistakeMatch>& matches) {
  std::size_t n = 0;
  while (n < matches.size() && matches[n].later_total == matches[0].later_total && matches[n].later_consistent == matches[0].later_consistent) ++n;
  return n;
}

}  // namespace

Diagnosis diagnose(const Spec& spec, const std::string& spec_origin, const LoadedTrace& student, const Tolerance& tol) {
  auto backend = make_cpu_backend();
  // gradients among the student's files: the reference (and each mistake's trace) includes the backward pass
  const bool backward = std::any_of(student.steps.begin(), student.steps.end(), [](const LoadedStep& s) { return s.id.starts_with("grad.") || s.id == "loss"; });
  const Trace ref = backward ? run_backward(spec, *backend) : run_pipeline(spec, *backend);
  Diagnosis d;
  d.reference = spec_origin;
  d.student = student.origin;
  for (const auto& s : student.steps)
    if (ref.find(s.id) == nullptr) d.unknown.push_back(s.id);
  // Reference order: the student's files are compared in the order the pipeline computes them.
  std::vector<const LoadedStep*> ordered;
  for (const auto& r : ref.steps)
    if (const LoadedStep* s = student.find(r.id)) ordered.push_back(s), d.compared.push_back(r.id);
  if (ordered.empty()) {
    throw InputError(fmt::format("{}: none of the student's files names a step of this trace (expected some of: {})", student.origin,
                                 [&] {
                                   std::string ids;
                                   for (const auto& r : ref.steps) ids += (ids.empty() ? "" : ", ") + r.id + ".npy";
                                   return ids;
                                 }()));
  }
  std::size_t first = ordered.size();
  std::vector<std::size_t> differing;
  for (std::size_t i = 0; i < ordered.size(); ++i) {
    const Step& r = *ref.find(ordered[i]->id);
    StepDiff sd = compare_step(r.id, r.value, ordered[i]->value, tol, ref.config, r.dims);
    if (sd.status == StepStatus::Same) {
      d.matching.push_back(r.id);
      continue;
    }
    differing.push_back(i);
    if (first == ordered.size()) d.first = std::move(sd), first = i;
  }
  if (first == ordered.size()) {
    d.correct = true;
    return d;
  }
  // A differing file may hold another step's values (the scaled scores saved as scores.npy).
  for (const auto i : differing) {
    for (const auto& r : ref.steps) {
      if (r.id == ordered[i]->id) continue;
      if (compare_step(r.id, r.value, ordered[i]->value, tol, ref.config, r.dims).status == StepStatus::Same) {
        d.misnamed.push_back({ordered[i]->id, r.id});
        break;
      }
    }
  }
  d.matches = try_mistakes(spec, *backend, ordered, first, backward, tol);
  d.tied = tied_matches(d.matches);
  // No mistake explains it, and every differing file is another reference step: the work is right,
  // saved under other names.
  if (d.matches.empty() && d.misnamed.size() == differing.size()) d.correct = true;
  d.scale = estimate_scale(spec, ref, ordered[first]->value, d, tol);
  add_hints(ref, ordered[first]->value, tol, d);
  return d;
}

namespace {

// What saving one step's values under another step's name usually means.
std::string misnamed_hint(const Misnamed& m) {
  const auto order = [](const std::string& id) { return step_order(id); };
  if (m.reference == "scaled" && m.student == "scores") return "did you save after scaling?";
  if (m.reference == "scores" && m.student == "scaled") return "did you save before scaling?";
  if (m.reference == "masked") return "did you save after masking?";
  if (m.student == "masked") return "did you save before masking?";
  return order(m.reference) > order(m.student) ? "saved from a later step?" : "saved from an earlier step?";
}

void render_misnamed(const Diagnosis& d, std::ostream& out) {
  for (const auto& m : d.misnamed) {
    out << fmt::format("  your {}.npy equals the reference's {}: {}\n", m.student, m.reference, misnamed_hint(m));
  }
}

// "a", "a and b", "a, b and c" (or with "or").
std::string listed(const std::vector<std::string>& names, std::string_view last) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : i + 1 == names.size() ? fmt::format(" {} ", last) : ", ") + names[i];
  return out;
}

void render_scale(const ScaleEstimate& e, std::ostream& out) {
  out << fmt::format("\nthe student's scale factor: {:.4g} ({}), where the right one is {}\n", e.factor, e.from, e.right);
  if (!e.named.empty()) out << fmt::format("  {:.4g} is {}\n", e.factor, listed(e.named, "and also"));
}

// The mistakes that reproduce the first differing step, and the verdict: one mistake, or a tie.
void render_matches(const Diagnosis& d, std::ostream& out) {
  const auto& f = d.first;
  out << fmt::format("\nmistakes that reproduce the student's {}:\n", f.id);
  for (const auto& m : d.matches) {
    out << fmt::format("  {}: {}\n", m.mistake->name, m.mistake->description);
    if (m.later_total > 0) {
      out << fmt::format("    and {} of the student's {} later steps\n", m.later_consistent, m.later_total);
    }
  }
  if (d.tied < 2) {
    out << fmt::format("verdict: {}\n", d.matches.front().mistake->name);
    return;
  }
  std::vector<std::string> names;
  for (std::size_t i = 0; i < d.tied; ++i) names.emplace_back(d.matches[i].mistake->name);
  const auto& best = d.matches.front();
  const std::string reproduced = best.later_total == 0 ? f.id : fmt::format("{} and {} of the {} later steps", f.id, best.later_consistent, best.later_total);
  out << fmt::format("{} {} here (each reproduces the student's {}): from these tensors attn cannot tell which the student made\n",
                     listed(names, "and"), best.later_consistent == best.later_total ? "give the same numbers" : "fit the student equally well",
                     reproduced);
  out << fmt::format("verdict: {} (a tie)\n", listed(names, "or"));
}

// "largest |reference − student| = 0.25", or which side holds NaN: a NaN makes every difference NaN, not a size.
std::string largest_difference(const StepDiff& f) {
  std::vector<std::string> nan;
  if (f.nan_b > 0) nan.push_back(fmt::format("NaN in the student's {} ({} of {} values)", f.id, f.nan_b, f.compared));
  if (f.nan_a > 0) nan.push_back(fmt::format("NaN in the reference's {} ({} of {} values)", f.id, f.nan_a, f.compared));
  if (nan.empty()) return fmt::format("largest |reference − student| = {}", value_text(f.max_abs));
  return fmt::format("{}", fmt::join(nan, "; "));
}

}  // namespace

void render_diagnosis_text(const Diagnosis& d, std::ostream& out) {
  out << fmt::format("attn diagnose\n  reference: {}\n  student:   {} ({} compared: {})\n", d.reference, d.student,
                     count_of(d.compared.size(), "step"), fmt::join(d.compared, ", "));
  if (!d.unknown.empty()) out << fmt::format("  ignored:   {} (no such step in the reference)\n", fmt::join(d.unknown, ", "));
  if (d.correct && d.misnamed.empty()) {
    out << fmt::format("\ncorrect: the student's {} {} the reference\n", count_of(d.compared.size(), "step"),
                       d.compared.size() == 1 ? "matches" : "all match");
    return;
  }
  if (d.correct) {
    out << fmt::format("\ncorrect, saved under other names: {} match the reference as named ({}), and\n",
                       count_of(d.matching.size(), "step"), fmt::join(d.matching, ", "));
    render_misnamed(d, out);
    out << "verdict: correct (rename the files above)\n";
    return;
  }
  if (!d.matching.empty()) out << fmt::format("  matching:  {}\n", fmt::join(d.matching, ", "));
  const auto& f = d.first;
  out << fmt::format("\nfirst step that differs from the reference: {}\n", f.id);
  if (f.status == StepStatus::ShapeMismatch) {
    out << fmt::format("  shapes differ: reference {} vs student {}\n", shape_string(f.shape_a), shape_string(f.shape_b));
  } else {
    out << fmt::format("  {} of {} entries differ; {}\n", f.differ, f.compared, largest_difference(f));
    std::size_t w = 8;
    for (const auto& e : f.worst) w = std::max(w, cells(e.position));  // in cells: "the₂" is 4 wide, 6 bytes
    out << fmt::format("  {:<{}}  {:>12}  {:>12}\n", "position", w, "reference", "student");
    for (const auto& e : f.worst) out << fmt::format("  {}  {:>12}  {:>12}\n", pad_right(e.position, w), value_text(e.a), value_text(e.b));
  }
  if (d.scale) render_scale(*d.scale, out);
  for (const auto& h : d.hints) out << "\nhint: " << h << "\n";
  if (d.matches.empty()) {
    out << fmt::format("\nno common mistake reproduces the student's {}; compare every step with attn diff\n", f.id);
    render_misnamed(d, out);
    out << "verdict: differs, cause not diagnosed\n";
    return;
  }
  render_matches(d, out);
}

}  // namespace attn
