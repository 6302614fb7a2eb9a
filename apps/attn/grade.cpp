// attn grade: a class's submissions graded against each student's key, each mistake named.
#include "attn/render/grade.hpp"
#include "cli.hpp"

namespace attn_cli {
namespace {

struct GradeOptions {
  int width = 0;  // 0: $COLUMNS, else the terminal's, else 80
  Resources resources;
  std::string dir, submissions, format = "text", gradescope;
  bool force = false;
};

void setup_grade(CLI::App& app, GradeOptions& o) {
  auto* g = app.add_subcommand("grade", "Grade a class's submissions against each student's own key, naming each mistake");
  g->add_option("--width", o.width, "display columns of the text (default: $COLUMNS, else the terminal's, else 80)")->check(CLI::Range(20, 1000));
  g->footer(R"(Example: a class made by attn exercise, and a folder per student of answers.json (or <step>.npy files, or answers.csv)
  $ attn grade class/ submissions/ --gradescope gradescope/
    ...
    s03 Grace Hopper — 2 / 3 (answers.json)
      scores   1  right
      weights  0  0 of 16 values right; the mistake that gives your weights: softmax was taken over the queries (dim=-2) instead of the keys (dim=-1) (softmax-wrong-axis)
      context  1  follows from your weights: right for the weights you gave (full credit)
    ...
  $ attn grade class/ submissions/ --format csv > gradebook.csv

A value is right within class.json's tolerance of the key. A wrong step is credited when it is right from the student's own earlier answer, else named by the mistake of attn diagnose's catalogue that reproduces it on the student's variant. A missing folder, a wrong shape, NaN or an unknown step is reported in that student's report; the rest of the class is graded. See docs/classroom.md.

Exit codes: 0 the class was graded, 2 bad input (class.json, a student's problem.json or key.json, the options).)");
  g->add_option("dir", o.dir, "the class directory (class.json and a folder per student, as attn exercise writes it)")->required();
  g->add_option("submissions", o.submissions, "a folder per student, named by id: answers.json, <step id>.npy files or answers.csv")->required();
  g->add_option("--format", o.format, "text (default), json, csv (a gradebook) or html (a page with charts)")->check(member_of({"text", "json", "csv", "html"}));
  g->add_option("--gradescope", o.gradescope, "also write OUT/<id>/results.json in Gradescope's autograder format");
  g->add_flag("--force", o.force, "let --gradescope write into a directory holding files attn did not write");
  add_resources(g, o.resources);
}

int run_grade(const GradeOptions& o) {
  o.resources.apply();
  const auto max = o.resources.max_bytes();
  const attn::ClassGrade c = attn::grade_class(o.dir, o.submissions, [max](const std::string& path) { return attn::load_spec(path, max); });
  if (!o.gradescope.empty()) attn::write_gradescope(c, o.gradescope, o.force);
  if (o.format == "json") attn::render_grade_json(c, std::cout);
  else if (o.format == "csv") attn::render_grade_csv(c, std::cout);
  else if (o.format == "html") attn::render_grade_html(c, std::cout);
  else print_report(terminal_width(o.width), [&](std::ostream& os) { attn::render_grade_text(c, os); });
  std::cout.flush();
  return kExitOk;
}

}  // namespace

Runner add_grade(CLI::App& app) { return command(app, setup_grade, run_grade); }

}  // namespace attn_cli
