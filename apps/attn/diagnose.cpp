// attn diagnose: which common mistake reproduces a student's tensors.
#include "cli.hpp"

namespace attn_cli {
namespace {

struct DiagnoseOptions {
  int width = 0;  // 0: $COLUMNS, else the terminal's, else 80
  Resources resources;
  std::string spec, student;
  attn::Tolerance tol;
};

void setup_diagnose(CLI::App& app, DiagnoseOptions& o) {
  auto* d = app.add_subcommand("diagnose", "Find which common mistake reproduces a student's tensors");
  d->add_option("--width", o.width, "display columns of the text (default: $COLUMNS, else the terminal's, else 80)")->check(CLI::Range(20, 1000));
  d->footer(R"(Example: a student's .npy files (named by step id: q.npy, scores.npy, weights.npy, ...)
  $ attn run examples/diagnose_causal_2heads.json --mistake scale-missing --dump student/
  $ attn diagnose examples/diagnose_causal_2heads.json student/
    ...
    verdict: scale-missing

Exit codes: 0 the student is correct, 1 a difference (with the mistake that explains it, if any), 2 bad input.)");
  d->add_option("spec", o.spec, "the problem (input JSON)")->required();
  d->add_option("student", o.student, "the student's tensors: a directory of <step id>.npy files, or a JSON trace")->required();
  add_tolerances(d, o.tol);
  add_resources(d, o.resources);
}

int run_diagnose(const DiagnoseOptions& o) {
  const attn::Spec spec = load_checked(o.spec, o.resources);
  const auto d = attn::diagnose(spec, o.spec, attn::load_trace(o.student), o.tol);
  print_report(terminal_width(o.width), [&](std::ostream& os) { attn::render_diagnosis_text(d, os); });
  return d.correct ? kExitOk : kExitDiffers;
}

}  // namespace

Runner add_diagnose(CLI::App& app) { return command(app, setup_diagnose, run_diagnose); }

}  // namespace attn_cli
