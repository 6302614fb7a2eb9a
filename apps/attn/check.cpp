// attn check: the numbers a document printed (the input's "expect") against the computed ones.
#include "cli.hpp"

namespace attn_cli {
namespace {

struct CheckOptions {
  int width = 0;  // 0: $COLUMNS, else the terminal's, else 80
  Resources resources;
  std::string file;
  std::string format = "text";
};

void setup_check(CLI::App& app, CheckOptions& o) {
  auto* check = app.add_subcommand("check", "Compare the numbers a document printed (the input's expect) with the computed ones");
  check->add_option("--width", o.width, "display columns of the text (default: $COLUMNS, else the terminal's, else 80)")->check(CLI::Range(20, 1000));
  check->footer(R"(Example: a document's printed weights against the true ones
  $ attn check examples/masked_4x4.json
    ...
    summary: 48 printed values checked: 39 match, 9 differ

Each printed number may be off by half a unit in its last printed decimal ("tolerance" in expect overrides). Judged against float32 and float64 arithmetic (a match in either counts); a step printed beyond float32's precision (8-decimal NumPy output) against float64 alone. When some differ, the why: line names the mistake or convention (each of attn diagnose's mistakes, the printed steps rounded, both) that reproduces them on the document's own inputs, or says none does. See docs/check.md.

Exit codes: 0 every number matches, 1 some differ, 2 bad input.)");
  check->add_option("file", o.file, "input JSON file with an expect block (- reads standard input)")->required();
  check->add_option("--format", o.format, "text (default) or json")->check(member_of({"text", "json"}));
  add_resources(check, o.resources);
}

int run_check(const CheckOptions& o) {
  const attn::Spec spec = load_checked(o.file, o.resources);
  auto backend = attn::make_cpu_backend();
  const attn::CheckReport report = attn::check_spec(spec, *backend);
  if (o.format == "json") attn::render_check_json(report, std::cout);
  else print_report(terminal_width(o.width), [&](std::ostream& os) { attn::render_check_text(report, os, terminal_width(o.width)); });
  std::cout.flush();
  return report.differences == 0 ? kExitOk : kExitDiffers;
}

}  // namespace

Runner add_check(CLI::App& app) { return command(app, setup_check, run_check); }

}  // namespace attn_cli
