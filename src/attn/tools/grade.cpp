// attn grade: each student against their own key (compare.hpp's one comparison, the class's
// tolerance), a wrong step credited when it follows from the student's earlier answer, else named by
// the catalogue's mistake (mistakes.hpp, as attn diagnose runs it) that reproduces it on the
// student's variant; then the class summary. The files are grade_read.cpp's, the words render/'s.
#include "attn/tools/grade.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <filesystem>
#include <set>

#include "attn/core/error.hpp"
#include "attn/core/steps.hpp"
#include "attn/core/text.hpp"
#include "attn/numerics/backend.hpp"
#include "attn/pipeline/mistakes.hpp"
#include "attn/pipeline/pipeline.hpp"
#include "attn/tools/compare.hpp"

namespace attn {
namespace fs = std::filesystem;

namespace {

// A shape with its size-1 axes dropped: a notebook's [1, 4, 4] answers a [4, 4] step.
Shape squeezed(const Shape& s) {
  Shape out;
  for (const auto n : s)
    if (n != 1) out.push_back(n);
  return out;
}

// The class's rule, |answer − key| ≤ tolerance + 1e-9, on float32 values: a key's 0.125 rounded
// to the answer 0.12 is right, though float32's 0.12 lies 3e-9 further off (rtol: 2⁻²⁴ of each).
Tolerance within(double atol) { return Tolerance{atol + 1e-9, 1.2e-7}; }

// Whether every given value of `answer` is within `atol` of `expected` (non-finite only exactly).
bool all_within(const Tensor& answer, const Tensor& expected, double atol) {
  if (answer.size() != expected.size()) return false;
  const Tolerance tol = within(atol);
  for (std::int64_t i = 0; i < answer.size(); ++i)
    if (!values_match(expected.at(i), answer.at(i), tol)) return false;
  return true;
}

double max_difference(const Tensor& a, const Tensor& b) {
  double worst = 0;
  for (std::int64_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(static_cast<double>(a.at(i)) - b.at(i));
    if (std::isfinite(d)) worst = std::max(worst, d);
  }
  return worst;
}

std::string number_word(std::size_t n) {
  static const char* words[] = {"no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"};
  return n < 10 ? words[n] : std::to_string(n);
}

// What one student's grading needs at hand: their variant, its reference, their key and answers
// (reshaped to the key's shapes where they fit), and the catalogue's traces, run when first needed.
struct Grading {
  const ClassManifest& m;
  const Spec& spec;
  const Trace& ref;
  const std::map<std::string, Tensor>& key;
  std::map<std::string, Tensor> answers;  // steps whose shape fits the key's
  std::vector<std::pair<const MistakeInfo*, Trace>> mistaken;
  bool ran = false;

  double atol() const { return m.tolerance; }
  const std::vector<std::pair<const MistakeInfo*, Trace>>& mistakes() {
    if (ran) return mistaken;
    ran = true;
    auto backend = make_cpu_backend();
    for (const auto& info : all_mistakes()) {
      if (is_backward(info.mistake)) continue;  // the forward pass's steps are asked
      try {
        PipelineOptions options;
        options.mistake = info.mistake;
        mistaken.emplace_back(&info, run_pipeline(spec, *backend, options));
      } catch (const InputError&) {
        // the mistake cannot happen on this variant (rope-on-v without RoPE, qk-swapped with T != S)
      }
    }
    return mistaken;
  }
};

// Scores the step against the key, value by value; records NaN and shape faults as problems.
StepGrade score_step(Grading& g, const std::string& id, const Submission& sub, std::vector<std::string>& problems) {
  StepGrade sg;
  sg.step = id;
  const Tensor& k = g.key.at(id);
  sg.total = k.size();
  const auto it = sub.answers.find(id);
  if (it == sub.answers.end()) {
    sg.message = "no answer";
    return sg;
  }
  const Answer& a = it->second;
  if (a.value.shape() != k.shape() && squeezed(a.value.shape()) != squeezed(k.shape())) {
    sg.message = fmt::format("shape {} where the question's is {}: not graded", shape_string(a.value.shape()), shape_string(k.shape()));
    problems.push_back(fmt::format("{}: {}", id, sg.message));
    return sg;
  }
  sg.answered = true;
  const Tensor value = a.value.reshaped(k.shape());
  const Tolerance tol = within(g.atol());
  std::int64_t nan = 0;
  for (std::int64_t i = 0; i < sg.total; ++i) {
    const bool given = a.given[static_cast<std::size_t>(i)];
    if (given && std::isnan(value.at(i))) ++nan;
    if (given && values_match(k.at(i), value.at(i), tol)) ++sg.right;
  }
  if (nan > 0) problems.push_back(fmt::format("{}: {} of {} values are NaN (graded wrong)", id, nan, sg.total));
  sg.score = static_cast<double>(sg.right) / static_cast<double>(std::max<std::int64_t>(sg.total, 1));
  g.answers.emplace(id, value);
  return sg;
}

// The student's earlier wrong step this one is right from, nearest first; "" when none. Right means
// within the tolerance widened by twice what rounding the earlier step to the key's decimals changes
// in this one (measured on the key itself): the student's earlier answer is rounded too.
std::string follows_from(Grading& g, const StepGrade& sg, const std::vector<StepGrade>& steps) {
  std::vector<const StepGrade*> earlier;
  for (const auto& e : steps)
    if (e.answered && e.right < e.total && step_order(e.step) < step_order(sg.step)) earlier.push_back(&e);
  std::sort(earlier.begin(), earlier.end(), [](const StepGrade* a, const StepGrade* b) { return step_order(a->step) > step_order(b->step); });
  const Tensor& answer = g.answers.at(sg.step);
  for (const StepGrade* e : earlier) {
    const auto theirs = recompute_from(g.spec, g.ref, e->step, g.answers.at(e->step), sg.step);
    const auto keyed = recompute_from(g.spec, g.ref, e->step, g.key.at(e->step), sg.step);
    if (!theirs || !keyed) continue;
    const double rounding = max_difference(*keyed, g.ref.find(sg.step)->value);
    if (all_within(answer, *theirs, g.atol() + 2 * rounding)) return e->step;
  }
  return "";
}

// The catalogue's mistakes whose trace gives the student's step; of several, those that also give
// most of the student's other wrong steps (a tie when still several).
std::vector<const MistakeInfo*> naming(Grading& g, const StepGrade& sg, const std::vector<StepGrade>& steps) {
  std::vector<std::pair<const MistakeInfo*, int>> found;
  for (const auto& [info, t] : g.mistakes()) {
    const Step* at = t.find(sg.step);
    if (at == nullptr || !all_within(g.answers.at(sg.step), at->value, g.atol())) continue;
    int others = 0;
    for (const auto& e : steps) {
      const Step* o = t.find(e.step);
      if (e.step != sg.step && e.answered && e.right < e.total && o != nullptr && all_within(g.answers.at(e.step), o->value, g.atol())) ++others;
    }
    found.emplace_back(info, others);
  }
  int best = -1;
  for (const auto& f : found) best = std::max(best, f.second);
  std::vector<const MistakeInfo*> named;
  for (const auto& f : found)
    if (f.second == best) named.push_back(f.first);
  return named;
}

// The sentence a student reads for a wrong step.
std::string wrong_message(const StepGrade& sg, const std::vector<const MistakeInfo*>& named) {
  const std::string share = fmt::format("{} of {} values right", sg.right, sg.total);
  if (named.empty()) return fmt::format("{}; no known mistake reproduces it", share);
  if (named.size() == 1) return fmt::format("{}; the mistake that gives your {}: {} ({})", share, sg.step, named[0]->description, named[0]->name);
  std::vector<std::string> each;
  for (const auto* n : named) each.push_back(fmt::format("{} ({})", n->description, n->name));
  return fmt::format("{}; it matches {} mistakes equally: {}", share, number_word(named.size()), fmt::join(each, "; or "));
}

// A wrong, answered step: its credit when it follows from an earlier answer, else its mistake.
void explain_wrong(Grading& g, StepGrade& sg, const std::vector<StepGrade>& steps) {
  if (const auto from = follows_from(g, sg, steps); !from.empty()) {
    sg.follows_from = from;
    sg.score = 1;
    sg.message = fmt::format("follows from your {}: right for the {} you gave (full credit)", from, from);
    return;
  }
  const auto named = naming(g, sg, steps);
  for (const auto* n : named) sg.mistakes.emplace_back(n->name);
  sg.message = wrong_message(sg, named);
}

StudentGrade not_submitted(const ClassManifest& m, const ClassStudent& s, const std::string& folder) {
  StudentGrade g;
  g.id = s.id, g.name = s.name;
  g.max_score = static_cast<double>(m.ask.size());
  g.problems.push_back(fmt::format("no folder {}: nothing submitted", folder));
  for (const auto& id : m.ask) {
    StepGrade st;
    st.step = id, st.message = "not submitted";
    g.steps.push_back(st);
  }
  return g;
}

// One roster student, from their files.
StudentGrade grade_one(const ClassManifest& m, const ClassStudent& s, const std::string& submissions, const SpecLoader& load) {
  const fs::path mine = fs::path(m.dir) / s.id;
  const Spec spec = load((mine / "problem.json").string());
  auto backend = make_cpu_backend();
  const Trace ref = run_pipeline(spec, *backend);
  const auto key = read_key((mine / "key.json").string(), m.ask, ref);
  const std::string folder = (fs::path(submissions) / s.id).string();
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return not_submitted(m, s, folder);
  return grade_student(m, s, spec, ref, key, read_submission(folder, m.ask, key));
}

// ---- the summary ----

std::vector<HistogramBin> histogram(const std::vector<StudentGrade>& students, double max_score) {
  constexpr int kBins = 10;
  std::vector<HistogramBin> bins(kBins);
  for (int b = 0; b < kBins; ++b) bins[b].from = max_score * b / kBins, bins[b].to = max_score * (b + 1) / kBins;
  for (const auto& s : students) {
    const int b = max_score > 0 ? static_cast<int>(std::floor(s.score / max_score * kBins + 1e-9)) : 0;
    ++bins[std::clamp(b, 0, kBins - 1)].count;
  }
  return bins;
}

std::vector<MistakeCount> mistake_counts(const std::vector<StudentGrade>& students) {
  std::vector<MistakeCount> out;
  for (const auto& s : students)
    for (const auto& st : s.steps) {
      if (st.mistakes.empty()) continue;
      const std::string name = fmt::format("{}", fmt::join(st.mistakes, " or "));
      auto it = std::find_if(out.begin(), out.end(), [&](const MistakeCount& c) { return c.mistake == name; });
      if (it == out.end()) {
        std::vector<std::string> words;
        for (const auto& n : st.mistakes) words.emplace_back(mistake_info(mistake_from_name(n)).description);
        it = out.insert(out.end(), MistakeCount{name, fmt::format("{}", fmt::join(words, "; or ")), {}, {}});
      }
      if (it->students.empty() || it->students.back() != s.id) it->students.push_back(s.id);
      if (std::find(it->steps.begin(), it->steps.end(), st.step) == it->steps.end()) it->steps.push_back(st.step);
    }
  std::stable_sort(out.begin(), out.end(), [](const MistakeCount& a, const MistakeCount& b) {
    return a.students.size() != b.students.size() ? a.students.size() > b.students.size() : a.mistake < b.mistake;
  });
  return out;
}

ClassSummary summarise(const ClassManifest& m, const std::vector<StudentGrade>& students, const std::string& submissions) {
  ClassSummary s;
  s.students = static_cast<int>(students.size());
  s.max_score = static_cast<double>(m.ask.size());
  std::vector<double> scores;
  for (const auto& st : students) {
    scores.push_back(st.score);
    if (st.submitted) ++s.submitted;
    else s.missing.push_back(st.id);
  }
  std::sort(scores.begin(), scores.end());
  if (!scores.empty()) {
    for (const double x : scores) s.mean += x / static_cast<double>(scores.size());
    const auto n = scores.size();
    s.median = n % 2 ? scores[n / 2] : (scores[n / 2 - 1] + scores[n / 2]) / 2;
  }
  s.histogram = histogram(students, s.max_score);
  for (std::size_t i = 0; i < m.ask.size(); ++i) {
    StepRate r{m.ask[i]};
    for (const auto& st : students) {
      if (!st.submitted) continue;
      r.success += st.steps[i].score / std::max(1, s.submitted);
      if (st.steps[i].score >= 1) ++r.all_right;
    }
    s.steps.push_back(r);
  }
  s.mistakes = mistake_counts(students);
  std::set<std::string> roster;
  for (const auto& st : m.students) roster.insert(st.id);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(submissions, ec))
    if (e.is_directory() && !roster.contains(e.path().filename().string())) s.not_in_roster.push_back(e.path().filename().string());
  std::sort(s.not_in_roster.begin(), s.not_in_roster.end());
  return s;
}

}  // namespace

StudentGrade grade_student(const ClassManifest& m, const ClassStudent& s, const Spec& spec, const Trace& reference,
                           const std::map<std::string, Tensor>& key, const Submission& sub) {
  StudentGrade g;
  g.id = s.id, g.name = s.name, g.submitted = true, g.source = sub.source;
  g.max_score = static_cast<double>(m.ask.size());
  g.problems = sub.problems;
  Grading grading{m, spec, reference, key, {}, {}, false};
  for (const auto& id : m.ask) g.steps.push_back(score_step(grading, id, sub, g.problems));
  for (auto& st : g.steps)
    if (st.answered && st.right < st.total) explain_wrong(grading, st, g.steps);
  for (const auto& st : g.steps) g.score += st.score;
  return g;
}

ClassGrade grade_class(const std::string& dir, const std::string& submissions, const SpecLoader& load) {
  ClassGrade c{read_class(dir), submissions, {}, {}};
  std::error_code ec;
  if (!fs::is_directory(submissions, ec)) throw InputError(fmt::format("{}: no such directory (SUBMISSIONS: a folder per student, named by id)", submissions));
  const auto& roster = c.manifest.students;
  c.students.resize(roster.size());
  std::vector<std::exception_ptr> errors(roster.size());
  const auto n = static_cast<std::int64_t>(roster.size());
  // each student's slot is theirs alone: the result is the same for any thread count
#pragma omp parallel for schedule(dynamic, 4)
  for (std::int64_t i = 0; i < n; ++i) {
    try {
      c.students[i] = grade_one(c.manifest, roster[i], submissions, load);
    } catch (...) {
      errors[i] = std::current_exception();  // (nothing may leave the parallel loop)
    }
  }
  // the first in roster order: a problem.json or key.json of the instructor's, named by its file
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  c.summary = summarise(c.manifest, c.students, submissions);
  return c;
}

}  // namespace attn
