// attn grade --format html: the class summary with inline SVG charts (the score histogram, each
// step's success rate), the mistakes with their students, and every student's report, as one page
// with no script and no network (save it, mail it, open it offline).
#include <fmt/format.h>

#include <algorithm>

#include "attn/core/text.hpp"
#include "attn/render/grade.hpp"

namespace attn {
namespace {

std::string esc(std::string_view s) { return markup_escape(s); }

constexpr const char* kStyle = R"(<style>
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; }
td, th { border: 1px solid #ccc; padding: 0.2rem 0.5rem; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.right { color: #1a7f37; } .wrong { color: #b42318; } .problem { color: #8a5a00; }
section.student { border-top: 1px solid #ddd; padding-top: 0.5rem; }
svg text { font-family: system-ui, sans-serif; font-size: 11px; fill: #222; }
</style>
)";

// The score histogram: a bar a bin, its count above it and its range below.
void histogram_svg(const ClassSummary& s, std::ostream& out) {
  const int bar = 44, gap = 6, height = 120, n = static_cast<int>(s.histogram.size());
  int most = 1;
  for (const auto& b : s.histogram) most = std::max(most, b.count);
  out << fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" role="img" aria-label="score histogram">)", n * (bar + gap) + 10,
                     height + 40)
      << "\n";
  for (int i = 0; i < n; ++i) {
    const auto& b = s.histogram[static_cast<std::size_t>(i)];
    const int h = b.count * height / most, x = 5 + i * (bar + gap);
    out << fmt::format(R"(<rect class="bin" x="{}" y="{}" width="{}" height="{}" fill="#4c72b0"><title>{}–{}: {}</title></rect>)", x, height - h + 15,
                       bar, h, score_text(b.from), score_text(b.to), b.count)
        << fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">{}</text>)", x + bar / 2, height - h + 12, b.count)
        << fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">{}–{}</text>)", x + bar / 2, height + 30, score_text(b.from), score_text(b.to)) << "\n";
  }
  out << "</svg>\n";
}

// Each asked step's success rate as a horizontal bar of 0 … 100 %.
void steps_svg(const ClassSummary& s, std::ostream& out) {
  const int row = 22, label = 90, full = 300;
  out << fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" role="img" aria-label="success rate per step">)",
                     label + full + 60, row * static_cast<int>(s.steps.size()) + 6)
      << "\n";
  for (std::size_t i = 0; i < s.steps.size(); ++i) {
    const auto& r = s.steps[i];
    const int y = 3 + static_cast<int>(i) * row, w = static_cast<int>(r.success * full + 0.5);
    out << fmt::format(R"(<text x="0" y="{}">{}</text>)", y + 14, esc(r.step))
        << fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="#eee"/>)", label, y, full, row - 6)
        << fmt::format(R"(<rect class="rate" x="{}" y="{}" width="{}" height="{}" fill="#55a868"/>)", label, y, w, row - 6)
        << fmt::format(R"(<text x="{}" y="{}">{:.0f}%</text>)", label + full + 6, y + 14, 100 * r.success) << "\n";
  }
  out << "</svg>\n";
}

void mistakes_html(const ClassSummary& s, std::ostream& out) {
  if (s.mistakes.empty()) {
    out << "<p>No mistake of the catalogue was named.</p>\n";
    return;
  }
  out << "<table class=\"mistakes\"><tr><th>mistake</th><th>students</th><th>on</th><th>who</th><th>what they did</th></tr>\n";
  for (const auto& m : s.mistakes) {
    out << fmt::format("<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", esc(m.mistake), m.students.size(),
                       esc(fmt::format("{}", fmt::join(m.steps, ", "))), esc(fmt::format("{}", fmt::join(m.students, ", "))), esc(m.description));
  }
  out << "</table>\n";
}

void student_html(const StudentGrade& s, std::ostream& out) {
  out << fmt::format("<section class=\"student\" id=\"student-{}\">\n<h3>{}{} — {} / {}</h3>\n", esc(s.id), esc(s.id),
                     s.name.empty() ? "" : " " + esc(s.name), score_text(s.score), score_text(s.max_score));
  out << "<table><tr><th>step</th><th>score</th><th></th></tr>\n";
  for (const auto& st : s.steps) {
    const bool right = st.score >= 1;
    out << fmt::format("<tr><td>{}</td><td class=\"num\">{}</td><td class=\"{}\">{}</td></tr>\n", esc(st.step), score_text(st.score),
                       right ? "right" : "wrong", esc(st.message.empty() ? "right" : st.message));
  }
  out << "</table>\n";
  for (const auto& p : s.problems) out << "<p class=\"problem\">" << esc(p) << "</p>\n";
  out << "</section>\n";
}

void summary_html(const ClassGrade& c, std::ostream& out) {
  const auto& s = c.summary;
  out << fmt::format("<p>{} of {} students submitted; mean {} / {}, median {}.</p>\n", s.submitted, s.students, score_text(s.mean),
                     score_text(s.max_score), score_text(s.median));
  out << "<h2>Scores</h2>\n";
  histogram_svg(s, out);
  out << "<h2>Success rate per step</h2>\n";
  steps_svg(s, out);
  out << "<h2>Mistakes</h2>\n";
  mistakes_html(s, out);
  if (!s.missing.empty()) out << "<p class=\"problem\">No folder (graded 0): " << esc(fmt::format("{}", fmt::join(s.missing, ", "))) << "</p>\n";
  if (!s.not_in_roster.empty()) {
    out << "<p class=\"problem\">Folders not in the roster (not graded): " << esc(fmt::format("{}", fmt::join(s.not_in_roster, ", "))) << "</p>\n";
  }
}

}  // namespace

void render_grade_html(const ClassGrade& c, std::ostream& out) {
  const auto& m = c.manifest;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>attn grade: " << esc(m.dir) << "</title>\n" << kStyle
      << "</head>\n<body>\n";
  out << fmt::format("<h1>attn grade: {}</h1>\n<p>Asked: {}; answers to {} decimals, right within {}.</p>\n", esc(m.dir),
                     esc(fmt::format("{}", fmt::join(m.ask, ", "))), m.decimals, m.tolerance);
  summary_html(c, out);
  out << "<h2>Students</h2>\n";
  for (const auto& s : c.students) student_html(s, out);
  out << "</body>\n</html>\n";
}

}  // namespace attn
