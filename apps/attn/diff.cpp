// attn diff: two traces compared step by step (JSON traces or directories of .npy files).
#include "cli.hpp"

namespace attn_cli {
namespace {

struct DiffOptions {
  int width = 0;  // 0: $COLUMNS, else the terminal's, else 80
  std::string a, b;
  attn::Tolerance tol;
};

void setup_diff(CLI::App& app, DiffOptions& o) {
  auto* diff = app.add_subcommand("diff", "Compare two traces step by step (JSON traces or directories of <step id>.npy)");
  diff->add_option("--width", o.width, "display columns of the text (default: $COLUMNS, else the terminal's, else 80)")->check(CLI::Range(20, 1000));
  diff->footer(R"(Example: yesterday's trace against today's
  $ attn run examples/cat_sat.json --format json > old.json
  $ attn diff old.json my_trace.json

Exit codes: 0 same within the tolerance, 1 they differ (the first diverging step is named), 2 bad input.)");
  diff->add_option("a", o.a, "trace A: attn run --format json output, or a --dump directory")->required();
  diff->add_option("b", o.b, "trace B, compared against A")->required();
  add_tolerances(diff, o.tol);
}

int run_diff(const DiffOptions& o) {
  const auto report = attn::diff_traces(attn::load_trace(o.a), attn::load_trace(o.b), o.tol);
  print_report(terminal_width(o.width), [&](std::ostream& os) { attn::render_diff_text(report, os); });
  return report.same() ? kExitOk : kExitDiffers;
}

}  // namespace

Runner add_diff(CLI::App& app) { return command(app, setup_diff, run_diff); }

}  // namespace attn_cli
