// attn grade's reports (tools/grade.hpp's ClassGrade): text, JSON, a CSV gradebook, an offline HTML
// page with inline SVG charts, and Gradescope's results.json per student. They compute nothing.
#pragma once

#include <ostream>
#include <string>

#include "attn/tools/grade.hpp"

namespace attn {

void render_grade_text(const ClassGrade& c, std::ostream& out);
void render_grade_json(const ClassGrade& c, std::ostream& out);
void render_grade_csv(const ClassGrade& c, std::ostream& out);
void render_grade_html(const ClassGrade& c, std::ostream& out);
// OUT/<id>/results.json for every roster student, into an OutputDir (refused where OUT holds files
// attn did not write, unless force).
void write_gradescope(const ClassGrade& c, const std::string& dir, bool force);

// A score as every report prints it: 2 decimals, a whole number without them ("3", "2.25").
std::string score_text(double score);

}  // namespace attn
