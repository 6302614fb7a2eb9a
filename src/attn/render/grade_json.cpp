// attn grade's JSON report ({"students": [...], "summary": {...}}) and Gradescope's autograder
// results.json, one per student (score, max_score, tests with name, score, max_score and output).
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "attn/core/error.hpp"
#include "attn/io/output_dir.hpp"
#include "attn/render/grade.hpp"

namespace attn {
namespace {

using ojson = nlohmann::ordered_json;

// Scores to 4 decimals: a third is 0.3333, never 0.33333333333333331.
double rounded(double v) { return std::round(v * 1e4) / 1e4; }

ojson student_json(const StudentGrade& s) {
  ojson steps = ojson::array();
  for (const auto& st : s.steps) {
    ojson j{{"step", st.step}, {"score", rounded(st.score)}, {"right", st.right}, {"values", st.total}};
    j["mistake"] = st.mistakes.empty() ? ojson(nullptr) : ojson(fmt::format("{}", fmt::join(st.mistakes, " or ")));
    if (st.mistakes.size() > 1) j["tied"] = st.mistakes;
    j["follows_from"] = st.follows_from.empty() ? ojson(nullptr) : ojson(st.follows_from);
    j["message"] = st.message;
    steps.push_back(std::move(j));
  }
  return ojson{{"id", s.id},         {"name", s.name},   {"submitted", s.submitted}, {"source", s.source}, {"score", rounded(s.score)},
               {"max_score", s.max_score}, {"steps", steps}, {"problems", s.problems}};
}

ojson summary_json(const ClassSummary& s) {
  ojson hist = ojson::array(), steps = ojson::array(), mistakes = ojson::array();
  for (const auto& b : s.histogram) hist.push_back({{"from", rounded(b.from)}, {"to", rounded(b.to)}, {"count", b.count}});
  for (const auto& r : s.steps) steps.push_back({{"step", r.step}, {"success_rate", rounded(r.success)}, {"all_right", r.all_right}});
  for (const auto& m : s.mistakes) {
    mistakes.push_back({{"mistake", m.mistake}, {"count", m.students.size()}, {"students", m.students}, {"steps", m.steps}, {"description", m.description}});
  }
  return ojson{{"students", s.students}, {"submitted", s.submitted}, {"max_score", s.max_score}, {"mean", rounded(s.mean)},
               {"median", rounded(s.median)}, {"histogram", hist}, {"steps", steps}, {"mistakes", mistakes},
               {"missing", s.missing}, {"not_in_roster", s.not_in_roster}};
}

// Gradescope's autograder format: a test per asked step; the problems as the submission's output.
ojson gradescope_json(const StudentGrade& s) {
  ojson tests = ojson::array();
  for (const auto& st : s.steps) {
    tests.push_back({{"name", st.step}, {"score", rounded(st.score)}, {"max_score", 1}, {"output", st.message.empty() ? "right" : st.message}});
  }
  ojson j{{"score", rounded(s.score)}, {"max_score", s.max_score}};
  if (!s.problems.empty()) j["output"] = fmt::format("{}", fmt::join(s.problems, "\n"));
  j["tests"] = tests;
  return j;
}

}  // namespace

void render_grade_json(const ClassGrade& c, std::ostream& out) {
  ojson students = ojson::array();
  for (const auto& s : c.students) students.push_back(student_json(s));
  const auto& m = c.manifest;
  ojson j{{"class", {{"dir", m.dir}, {"template", m.template_file}, {"ask", m.ask}, {"decimals", m.decimals}, {"tolerance", m.tolerance}}},
          {"submissions", c.submissions},
          {"students", students},
          {"summary", summary_json(c.summary)}};
  out << j.dump(2) << "\n";
}

void write_gradescope(const ClassGrade& c, const std::string& dir, bool force) {
  OutputDir out(dir, "--gradescope", force);
  for (const auto& s : c.students) {
    const std::string path = out.file(s.id + "/results.json");
    std::ofstream f(path);
    f << gradescope_json(s).dump(2) << "\n";
    if (!f) throw InputError(fmt::format("--gradescope: {} cannot be written", path));
  }
  out.finish();
}

}  // namespace attn
