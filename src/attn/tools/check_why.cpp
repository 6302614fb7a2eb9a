// attn check's why: the variants of the computation (attn diagnose's mistakes, the printed steps
// rounded before the next steps use them, and both) run on the document's own inputs, and the one
// that reproduces its differing values. It changes no verdict: the exit status is the report's.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <utility>

#include "attn/core/error.hpp"
#include "attn/io/json_text.hpp"
#include "attn/tools/check.hpp"

namespace attn {

namespace {

// The printed steps for PipelineOptions::rounded: each entry's value and decimals, an integer
// literal as 0 decimals, an entry not printed (null) or not finite ("-inf") left as computed.
std::map<std::string, PrintedStep, std::less<>> printed_steps(const Spec& spec) {
  std::map<std::string, PrintedStep, std::less<>> out;
  for (const auto& x : spec.expect) {
    PrintedStep p{std::vector<int>(x.values.size(), -1), x.values};
    for (std::size_t i = 0; i < x.values.size(); ++i)
      if (x.present[i] && std::isfinite(x.values[i])) p.decimals[i] = x.decimals[i] == kExactInteger ? 0 : x.decimals[i];
    out.emplace(x.id, std::move(p));
  }
  return out;
}

constexpr const char* kRounded = "each step is computed from the printed, rounded numbers of the steps before it";

// What completes "the document's weights match when …", with the sizes a scale mistake uses.
std::string condition(Mistake m, bool rounded, const Spec& spec) {
  if (m == Mistake::None) return kRounded;
  std::string c = mistake_info(m).condition;
  if (m == Mistake::ScaleSqrtC) c += fmt::format(" (C = {}, d_k = {})", spec.C, spec.hs());
  if (m == Mistake::ScaleDk) c += fmt::format(" (d_k = {})", spec.hs());
  return rounded ? c + ", and " + kRounded : c;
}

// The flat indices of the values the report found differing, per step, in order (check_trace
// lists a step's entries by index).
using Differing = std::map<std::string, std::vector<std::int64_t>, std::less<>>;
Differing differing_of(const CheckReport& r) {
  Differing d;
  for (const auto& e : r.differing) d[e.step].push_back(e.index);
  return d;
}

// How many of the sorted indices `a` are not in the sorted `b`.
int missing_from(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
  int n = 0;
  for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i) {
    while (j != b.end() && *j < *i) ++j;
    n += j == b.end() || *j != *i;
  }
  return n;
}

// The variant's report against the document's as computed: per step, the differing values it
// reproduces and the matching ones it breaks.
void compare(const CheckReport& computed, const CheckReport& under, WhyVariant& v) {
  const Differing before = differing_of(computed), after = differing_of(under);
  static const std::vector<std::int64_t> none;
  auto of = [](const Differing& d, const std::string& id) -> const std::vector<std::int64_t>& {
    const auto it = d.find(id);
    return it == d.end() ? none : it->second;
  };
  for (const auto& s : computed.steps) {
    WhyStep w{s.id, s.differ};
    w.explained = missing_from(of(before, s.id), of(after, s.id));
    w.broken = missing_from(of(after, s.id), of(before, s.id));
    v.explained += w.explained;
    v.broken += w.broken;
    if (w.differing > 0 || w.broken > 0) v.steps.push_back(w);
  }
}

// One variant run and judged as the document was; nullopt where it cannot happen on this input
// (qk-swapped with T ≠ S, a mask mistake without a mask, …).
std::optional<WhyVariant> run_variant(const Spec& spec, Backend& backend, const CheckReport& computed, Mistake m, bool rounded) {
  PipelineOptions options;
  options.mistake = m;
  if (rounded) options.rounded = printed_steps(spec);
  WhyVariant v;
  v.mistake = m;
  v.rounded = rounded;
  v.name = m == Mistake::None ? "rounded" : std::string(mistake_info(m).name) + (rounded ? " + rounded" : "");
  v.condition = condition(m, rounded, spec);
  try {
    const CheckTraces t = traces_to_check(spec, backend, options);
    compare(computed, check_trace(spec, t.shown, &t.wide, /*labels=*/false), v);
  } catch (const InputError&) {
    return std::nullopt;
  }
  return v;
}

int remaining(const CheckWhy& why, const WhyVariant& v) { return why.differing - v.explained + v.broken; }

// Whether the variant reproduces every differing value of some step and breaks none there: a value
// or two that a wrong variant lands on by chance (a 3×3 softmax over the other axis) explain nothing.
bool explains_a_step(const WhyVariant& v) {
  return std::any_of(v.steps.begin(), v.steps.end(), [](const WhyStep& s) { return s.differing > 0 && s.explained == s.differing && s.broken == 0; });
}

// The variants that explain the most, equally: fewest values left differing, then fewest broken.
// A mistake with the rounding counts only where it does better than each of the two alone (else
// it is one of them with a change that does nothing).
void choose(CheckWhy& why, std::vector<WhyVariant> all) {
  std::map<std::pair<Mistake, bool>, const WhyVariant*> by;
  for (const auto& v : all) by[{v.mistake, v.rounded}] = &v;
  std::vector<WhyVariant> kept;
  for (const auto& v : all) {
    if (!explains_a_step(v) || remaining(why, v) >= why.differing) continue;
    if (v.rounded && v.mistake != Mistake::None) {
      const WhyVariant* alone = by.at({v.mistake, false});
      const auto r = by.find({Mistake::None, true});
      if (remaining(why, v) >= remaining(why, *alone) || (r != by.end() && remaining(why, v) >= remaining(why, *r->second))) continue;
    }
    kept.push_back(v);
  }
  std::stable_sort(kept.begin(), kept.end(), [&](const WhyVariant& a, const WhyVariant& b) {
    return std::pair(remaining(why, a), a.broken) < std::pair(remaining(why, b), b.broken);
  });
  for (const auto& v : kept)
    if (remaining(why, v) == remaining(why, kept[0]) && v.broken == kept[0].broken) why.best.push_back(v);
  if (why.best.size() != 1 || !why.best[0].rounded || why.best[0].mistake == Mistake::None) return;
  for (const auto& key : {std::pair(why.best[0].mistake, false), std::pair(Mistake::None, true)})
    if (const auto it = by.find(key); it != by.end() && explains_a_step(*it->second)) why.parts.push_back(*it->second);
}

}  // namespace

CheckWhy why_differs(const Spec& spec, Backend& backend, const CheckReport& report) {
  CheckWhy why;
  why.differing = report.differences;
  const bool backward = prints_gradients(spec);
  std::vector<WhyVariant> all;
  auto add = [&](Mistake m, bool rounded) {
    if (auto v = run_variant(spec, backend, report, m, rounded)) all.push_back(std::move(*v));
  };
  add(Mistake::None, true);
  for (const auto& m : all_mistakes()) {
    if (is_backward(m.mistake) != backward) continue;  // a document's gradients come from attn backward, which takes only its own
    add(m.mistake, false);
    if (std::any_of(all.begin(), all.end(), [&](const WhyVariant& v) { return v.mistake == m.mistake; })) add(m.mistake, true);
  }
  why.tried = static_cast<int>(all.size());
  choose(why, std::move(all));
  return why;
}

// ---- the words ----

namespace {

// "weights matches", "weights and context match", "q, k and weights match": the steps a variant
// reproduces values of.
std::string steps_match(const WhyVariant& v) {
  std::vector<std::string> ids;
  for (const auto& s : v.steps)
    if (s.explained > 0) ids.push_back(s.id);
  if (ids.size() == 1) return ids[0] + (ids[0].ends_with('s') ? " match" : " matches");  // weights, scores; context, q
  return fmt::format("{} and {} match", fmt::join(ids.begin(), ids.end() - 1, ", "), ids.back());
}

// "weights 9/9, context 6/12", and the values it breaks: "; 3 that match as computed differ under it (scores 3)".
std::string per_step(const WhyVariant& v) {
  std::vector<std::string> parts, broken;
  for (const auto& s : v.steps) {
    if (s.differing > 0) parts.push_back(fmt::format("{} {}/{}", s.id, s.explained, s.differing));
    if (s.broken > 0) broken.push_back(fmt::format("{} {}", s.id, s.broken));
  }
  std::string text = fmt::format("{}", fmt::join(parts, ", "));
  if (v.broken > 0) {
    text += fmt::format("; {} that {} as computed {} under it ({})", v.broken, v.broken == 1 ? "matches" : "match", v.broken == 1 ? "differs" : "differ",
                        fmt::join(broken, ", "));
  }
  return text;
}

// "(21/21 values)" when it reproduces every one; else how many, per step.
std::string counts(const CheckWhy& why, const WhyVariant& v) {
  if (v.explained == why.differing && v.broken == 0) return fmt::format("({}/{} values)", v.explained, why.differing);
  return fmt::format("({} of the {} differing values: {})", v.explained, why.differing, per_step(v));
}

std::string sentence(const CheckWhy& why, const WhyVariant& v) {
  return fmt::format("the document's {} when {} {}", steps_match(v), v.condition, counts(why, v));
}

}  // namespace

void render_why_text(const CheckWhy& why, std::ostream& out) {
  if (why.best.empty()) {
    out << fmt::format("why: no variant explains it: none of the {} that attn tried on the document's own inputs (attn diagnose's "
                       "mistakes, the printed steps rounded before the next step uses them, and both) reproduces {}\n",
                       why.tried, why.differing == 1 ? "the 1 differing value" : fmt::format("any of the {} differing values", why.differing));
    return;
  }
  const bool whole = why.best[0].explained == why.differing && why.best[0].broken == 0;
  const std::string head = whole ? "why" : "why, in part";
  if (why.best.size() == 1) {
    out << head << ": " << sentence(why, why.best[0]) << "\n";
  } else {
    out << fmt::format("{}: {} variants explain it equally; the document cannot tell them apart:\n", head, why.best.size());
    for (const auto& v : why.best) out << "  " << v.name << ": " << sentence(why, v) << "\n";
  }
  for (const auto& p : why.parts) out << "  " << p.name << " alone: " << p.explained << " of " << why.differing << " (" << per_step(p) << ")\n";
}

void render_why_json(const CheckWhy& why, std::ostream& out) {
  auto variant = [&](const WhyVariant& v) {
    std::vector<std::string> steps;
    for (const auto& s : v.steps) {
      steps.push_back(fmt::format("{{\"id\": {}, \"differing\": {}, \"explained\": {}, \"broken\": {}}}", json_quote(s.id), s.differing,
                                  s.explained, s.broken));
    }
    return fmt::format("{{\"variant\": {}, \"mistake\": {}, \"rounded\": {}, \"condition\": {}, \"explained\": {}, \"broken\": {}, "
                       "\"steps\": [{}]}}",
                       json_quote(v.name), v.mistake == Mistake::None ? "null" : json_quote(mistake_info(v.mistake).name), v.rounded,
                       json_quote(v.condition), v.explained, v.broken, fmt::join(steps, ", "));
  };
  // one variant a line, as the report's steps and differing entries are
  auto list = [&](const std::vector<WhyVariant>& vs) {
    std::string text;
    for (const auto& v : vs) text += (text.empty() ? "\n      " : ",\n      ") + variant(v);
    return vs.empty() ? std::string("[]") : "[" + text + "\n    ]";
  };
  std::ostringstream text;
  render_why_text(why, text);
  out << fmt::format("{{\n    \"differing\": {}, \"tried\": {},\n    \"explained_by\": {},\n    \"parts\": {},\n    \"text\": {}\n  }}",
                     why.differing, why.tried, list(why.best), list(why.parts), json_quote(text.str()));
}

}  // namespace attn
