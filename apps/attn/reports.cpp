// attn check, diff, diagnose and cost: reports on a trace, or before one.
#include "cli.hpp"

namespace attn_cli {

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

void setup_check(CLI::App& app, CheckOptions& o) {
  auto* check = app.add_subcommand("check", "Compare the numbers a document printed (the input's expect) with the computed ones");
  check->add_option("--width", o.width, "display columns of the text (default: $COLUMNS, else the terminal's, else 80)")->check(CLI::Range(20, 1000));
  check->footer(R"(Example: a document's printed weights against the true ones
  $ attn check examples/masked_4x4.json
    ...
    summary: 48 printed values checked: 39 match, 9 differ

Each printed number may be off by half a unit in its last printed decimal ("tolerance" in expect
overrides). Exit codes: 0 every number matches, 1 some differ, 2 bad input.)");
  check->add_option("file", o.file, "input JSON file with an expect block (- reads standard input)")->required();
  check->add_option("--format", o.format, "text (default) or json")->check(CLI::IsMember({"text", "json"}));
  add_resources(check, o.resources);
}

void setup_cost(CLI::App& app, CostOptions& o) {
  auto* cost = app.add_subcommand("cost", "FLOPs and bytes of every step before running, and how they grow with T");
  cost->add_option("--width", o.width, "display columns of the text (default: $COLUMNS, else the terminal's, else 80)")->check(CLI::Range(20, 1000));
  cost->footer(R"(Examples:
  $ attn cost examples/cross_narrow_source.json
  $ attn cost --T 100000 --C 768 --H 12 --mode causal
    ...
    one [T, S] attention matrix: 100000 × 100000 × 4 bytes = 40.0 GB)");
  cost->add_option("file", o.file, "an input JSON (or give the sizes below)");
  cost->add_option("--B", o.sizes.B, "batch size (default 1)");
  cost->add_option("--T", o.sizes.T, "query length");
  cost->add_option("--S", o.sizes.S, "key/value length (cross; default T)");
  cost->add_option("--C", o.sizes.C, "model width");
  cost->add_option("--H", o.sizes.H, "heads (default 1)");
  cost->add_option("--kv-heads", o.sizes.Hkv, "key/value heads, grouped-query attention (default H)")->check(CLI::Range(std::int64_t{1}, kMaxSize));
  cost->add_option("--Cs", o.sizes.Cs, "source width (cross; default C)")->check(CLI::Range(std::int64_t{1}, kMaxSize));
  cost->add_option("--dk", o.sizes.dk, "query/key width H·hs (default C)")->check(CLI::Range(std::int64_t{1}, kMaxSize));
  cost->add_option("--dv", o.sizes.dv, "value width H·hv (default dk)")->check(CLI::Range(std::int64_t{1}, kMaxSize));
  cost->add_option("--Co", o.sizes.Co, "output width (default C)")->check(CLI::Range(std::int64_t{1}, kMaxSize));
  cost->add_option("--mode", o.mode, "self (default), causal, cross or multi-head")->check(CLI::IsMember({"self", "causal", "cross", "multi-head"}));
  cost->add_flag("--fused", o.sizes.fused, "one fused W_qkv projection");
  cost->add_flag("--no-output-projection", o.no_output_projection, "leave out W_o");
}

int run_check(const CheckOptions& o) {
  const attn::Spec spec = load_checked(o.file, o.resources);
  auto backend = attn::make_cpu_backend();
  const attn::CheckReport report = attn::check_trace(spec, attn::run_pipeline(spec, *backend));
  if (o.format == "json") attn::render_check_json(report, std::cout);
  else print_report(terminal_width(o.width), [&](std::ostream& os) { attn::render_check_text(report, os, terminal_width(o.width)); });
  std::cout.flush();
  return report.differences == 0 ? kExitOk : kExitDiffers;
}

int run_diff(const DiffOptions& o) {
  const auto report = attn::diff_traces(attn::load_trace(o.a), attn::load_trace(o.b), o.tol);
  print_report(terminal_width(o.width), [&](std::ostream& os) { attn::render_diff_text(report, os); });
  return report.same() ? kExitOk : kExitDiffers;
}

int run_diagnose(const DiagnoseOptions& o) {
  const attn::Spec spec = load_checked(o.spec, o.resources);
  const auto d = attn::diagnose(spec, o.spec, attn::load_trace(o.student), o.tol);
  print_report(terminal_width(o.width), [&](std::ostream& os) { attn::render_diagnosis_text(d, os); });
  return d.correct ? kExitOk : kExitDiffers;
}

int run_cost(const CostOptions& o) {
  if (!o.file.empty()) {
    print_report(terminal_width(o.width), [&](std::ostream& os) { attn::render_cost(attn::load_spec(o.file), os); });
    return kExitOk;
  }
  if (o.sizes.T <= 0 || o.sizes.C <= 0) throw attn::InputError("cost: give an input file, or at least --T and --C (and --B, --S, --H, --mode)");
  attn::SizeArgs sizes = o.sizes;
  sizes.mode = o.mode == "causal" ? attn::Mode::Causal : o.mode == "cross" ? attn::Mode::Cross
               : o.mode == "multi-head" ? attn::Mode::MultiHead : attn::Mode::Self;
  sizes.output_projection = !o.no_output_projection;
  print_report(terminal_width(o.width), [&](std::ostream& os) { attn::render_cost(attn::spec_from_sizes(sizes), os); });
  return kExitOk;
}

}  // namespace attn_cli
