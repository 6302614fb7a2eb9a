// attn grade's text report (each student's steps with the sentence they read, then the class
// summary) and its CSV gradebook (a row a student, a column a step). Words only: the grading is
// tools/grade.cpp's.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attn/core/text.hpp"
#include "attn/render/grade.hpp"

namespace attn {

std::string score_text(double score) {
  const double r = std::round(score * 100) / 100;
  if (r == std::floor(r)) return fmt::format("{}", static_cast<std::int64_t>(r));
  std::string s = fmt::format("{:.2f}", r);
  if (s.back() == '0') s.pop_back();
  return s;
}

namespace {

std::string who(const StudentGrade& s) { return s.name.empty() ? s.id : fmt::format("{} {}", s.id, s.name); }

void student_text(const StudentGrade& s, std::size_t width, std::ostream& out) {
  out << fmt::format("{} — {} / {}{}\n", who(s), score_text(s.score), score_text(s.max_score), s.source.empty() ? "" : fmt::format(" ({})", s.source));
  for (const auto& st : s.steps) {
    const std::string said = st.message.empty() ? "right" : st.message;
    out << fmt::format("  {}  {:>4}  {}\n", pad_right(st.step, width), score_text(st.score), said);
  }
  for (const auto& p : s.problems) out << "  problem: " << p << "\n";
}

std::string bar(long n) {
  std::string s;
  for (long i = 0; i < n; ++i) s += "█";
  return s;
}

// One bar a histogram bin: the students whose score lies in it.
void histogram_text(const ClassSummary& s, std::ostream& out) {
  out << "scores:\n";
  int most = 1;
  for (const auto& b : s.histogram) most = std::max(most, b.count);
  for (std::size_t i = 0; i < s.histogram.size(); ++i) {
    const auto& b = s.histogram[i];
    const std::string range = fmt::format("[{}, {}{}", score_text(b.from), score_text(b.to), i + 1 == s.histogram.size() ? "]" : ")");
    out << fmt::format("  {:<10} {:>4}  {}\n", range, b.count, bar(std::lround(30.0 * b.count / most)));
  }
}

void summary_text(const ClassGrade& c, std::size_t width, std::ostream& out) {
  const auto& s = c.summary;
  out << fmt::format("\nclass: {} of {} students submitted; mean {} / {}, median {}\n", s.submitted, s.students, score_text(s.mean),
                     score_text(s.max_score), score_text(s.median));
  histogram_text(s, out);
  out << "steps (of the students who submitted; full credit: right, or right from their own earlier answer):\n";
  for (const auto& r : s.steps) {
    out << fmt::format("  {}  {:>3.0f}% of the values' credit; {} of {} students with full credit\n", pad_right(r.step, width), 100 * r.success,
                       r.all_right, s.submitted);
  }
  out << (s.mistakes.empty() ? "mistakes: none named\n" : "mistakes, most frequent first:\n");
  for (const auto& m : s.mistakes) {
    out << fmt::format("  {} — {} student{} (on {}): {}\n    {}\n", m.mistake, m.students.size(), m.students.size() == 1 ? "" : "s",
                       fmt::join(m.steps, ", "), fmt::join(m.students, ", "), m.description);
  }
  if (!s.missing.empty()) out << fmt::format("no folder (graded 0): {}\n", fmt::join(s.missing, ", "));
  if (!s.not_in_roster.empty()) out << fmt::format("folders not in the roster (not graded): {}\n", fmt::join(s.not_in_roster, ", "));
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (const char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

}  // namespace

void render_grade_text(const ClassGrade& c, std::ostream& out) {
  const auto& m = c.manifest;
  out << fmt::format("attn grade {} {}\n  {} students; asked: {}; answers to {} decimals, right within {}\n\n", m.dir, c.submissions,
                     m.students.size(), fmt::join(m.ask, ", "), m.decimals, m.tolerance);
  std::size_t width = 4;
  for (const auto& id : m.ask) width = std::max(width, id.size());
  for (const auto& s : c.students) student_text(s, width, out);
  summary_text(c, width, out);
}

void render_grade_csv(const ClassGrade& c, std::ostream& out) {
  out << "id,name,score,max_score";
  for (const auto& id : c.manifest.ask) out << "," << csv_field(id);
  out << ",mistakes,problems\n";
  for (const auto& s : c.students) {
    out << csv_field(s.id) << "," << csv_field(s.name) << "," << score_text(s.score) << "," << score_text(s.max_score);
    std::vector<std::string> mistakes;
    for (const auto& st : s.steps) {
      out << "," << score_text(st.score);
      if (!st.mistakes.empty()) mistakes.push_back(fmt::format("{}: {}", st.step, fmt::join(st.mistakes, " or ")));
    }
    out << "," << csv_field(fmt::format("{}", fmt::join(mistakes, "; "))) << "," << csv_field(fmt::format("{}", fmt::join(s.problems, "; "))) << "\n";
  }
}

}  // namespace attn
