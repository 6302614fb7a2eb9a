// attn: the command-line wiring. Each subcommand has an options struct, a setup_* that declares its
// options and a run_* that only calls the library. Exit codes: 0 ok, 1 a check/diff found
// differences, 2 bad input or usage, 3 internal error.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <string>

#include <filesystem>
#include <fstream>

#include "attn/backend.hpp"
#include "attn/check.hpp"
#include "attn/diagnose.hpp"
#include "attn/diff.hpp"
#include "attn/npy.hpp"
#include "attn/error.hpp"
#include "attn/pipeline.hpp"
#include "attn/render/render.hpp"
#include "attn/spec.hpp"
#include "attn/version.hpp"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitDiffers = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitInternal = 3;

constexpr const char* kExamples = R"(Worked example (003 "cat sat": identity weights, d = 3):
  $ attn run examples/cat_sat.json
    ...
    [8] weights · Attention weights
        weights = softmax(scaled, dim=-1)
        [T, T] = [2, 2]
        ...
                cat     sat  │    sum
        cat  0.6405  0.3595  │ 1.0000
        sat  0.3595  0.6405  │ 1.0000

More:
  attn run examples/masked_4x4.json              causal mask on given scores
  attn run examples/shape_flow_2x4x512.json --shapes-only
  attn run examples/the_cat_sat.json --format json
  echo '{"sentence": "cat sat", "embeddings": [[1,0,1],[0,1,1]],
         "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}}' | attn run -

Checking a document's printed numbers (the input's "expect" block):
  attn check examples/masked_4x4.json

Input format and every option: README.md.
Exit codes: 0 ok, 1 a check or diff found differences, 2 bad input or usage, 3 internal error.)";

struct RunOptions {
  std::string file;
  std::string format = "text";
  std::string backend = "cpu";
  int precision = 4;
  bool shapes_only = false;
  std::string dump_dir;
  std::string mistake;
};

void setup_run(CLI::App& app, RunOptions& o) {
  auto* run = app.add_subcommand("run", "Run attention on FILE and print every intermediate step with its shape");
  run->add_option("file", o.file, "input JSON file (- reads standard input)")->required();
  run->add_option("--format", o.format, "text (default) or json")->check(CLI::IsMember({"text", "json"}));
  run->add_option("--precision", o.precision, "decimals in text output (default 4)")->check(CLI::Range(0, 12));
  run->add_flag("--shapes-only", o.shapes_only, "print the shape flow alone");
  run->add_option("--backend", o.backend, "cpu (default) or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  run->add_option("--dump", o.dump_dir, "also write every step as DIR/<step id>.npy, plus DIR/trace.json");
  std::vector<std::string> names;
  for (const auto& m : attn::all_mistakes()) names.push_back(m.name);
  run->add_option("--mistake", o.mistake, "simulate a common mistake (for exercises and attn diagnose): " + fmt::format("{}", fmt::join(names, ", ")))
      ->check(CLI::IsMember(names));
}

struct Tolerances {
  double atol = 1e-5, rtol = 1e-4;
};

void add_tolerances(CLI::App* cmd, Tolerances& t) {
  cmd->add_option("--atol", t.atol, "absolute tolerance (default 1e-5)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--rtol", t.rtol, "relative tolerance, times |b| (default 1e-4)")->check(CLI::NonNegativeNumber);
}

struct DiffOptions {
  std::string a, b;
  Tolerances tol;
};

void setup_diff(CLI::App& app, DiffOptions& o) {
  auto* diff = app.add_subcommand("diff", "Compare two traces step by step (JSON traces or directories of <step id>.npy)");
  diff->add_option("a", o.a, "trace A: attn run --format json output, or a --dump directory")->required();
  diff->add_option("b", o.b, "trace B, compared against A")->required();
  add_tolerances(diff, o.tol);
}

struct DiagnoseOptions {
  std::string spec, student;
  Tolerances tol;
};

void setup_diagnose(CLI::App& app, DiagnoseOptions& o) {
  auto* d = app.add_subcommand("diagnose", "Find which common mistake reproduces a student's tensors");
  d->add_option("spec", o.spec, "the problem (input JSON)")->required();
  d->add_option("student", o.student, "the student's tensors: a directory of <step id>.npy files, or a JSON trace")->required();
  add_tolerances(d, o.tol);
}

struct CheckOptions {
  std::string file;
  std::string format = "text";
};

void setup_check(CLI::App& app, CheckOptions& o) {
  auto* check = app.add_subcommand("check", "Compare the numbers a document printed (the input's expect) with the computed ones");
  check->add_option("file", o.file, "input JSON file with an expect block (- reads standard input)")->required();
  check->add_option("--format", o.format, "text (default) or json")->check(CLI::IsMember({"text", "json"}));
}

std::unique_ptr<attn::Backend> make_backend(const std::string& name) {
  if (name == "cpu") return attn::make_cpu_backend();
  throw attn::InputError("--backend cuda: this build of attn has no CUDA backend (use --backend cpu)");
}

void dump_trace(const attn::Trace& trace, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw attn::InputError(fmt::format("--dump {}: cannot create the directory ({})", dir, ec.message()));
  for (const auto& step : trace.steps) attn::write_npy((std::filesystem::path(dir) / (step.id + ".npy")).string(), step.value);
  std::ofstream json((std::filesystem::path(dir) / "trace.json").string(), std::ios::binary | std::ios::trunc);
  if (!json) throw attn::InputError(fmt::format("--dump {}: cannot write trace.json", dir));
  attn::render_json(trace, json);
}

int run_run(const RunOptions& o) {
  const attn::Spec spec = attn::load_spec(o.file);
  auto backend = make_backend(o.backend);
  attn::PipelineOptions options;
  for (const auto& m : attn::all_mistakes())
    if (o.mistake == m.name) options.mistake = m.mistake;
  const attn::Trace trace = attn::run_pipeline(spec, *backend, options);
  if (!o.dump_dir.empty()) dump_trace(trace, o.dump_dir);
  if (o.format == "json") {
    attn::render_json(trace, std::cout);
  } else {
    attn::TextOptions t;
    t.precision = o.precision;
    t.shapes_only = o.shapes_only;
    attn::render_text(trace, std::cout, t);
  }
  std::cout.flush();
  return kExitOk;
}

int run_check(const CheckOptions& o) {
  const attn::Spec spec = attn::load_spec(o.file);
  auto backend = attn::make_cpu_backend();
  const attn::CheckReport report = attn::check_trace(spec, attn::run_pipeline(spec, *backend));
  if (o.format == "json") attn::render_check_json(report, std::cout);
  else attn::render_check_text(report, std::cout);
  std::cout.flush();
  return report.differences == 0 ? kExitOk : kExitDiffers;
}

int run_diff(const DiffOptions& o) {
  const auto report = attn::diff_traces(attn::load_trace(o.a), attn::load_trace(o.b), {o.tol.atol, o.tol.rtol});
  attn::render_diff_text(report, std::cout);
  return report.same() ? kExitOk : kExitDiffers;
}

int run_diagnose(const DiagnoseOptions& o) {
  const attn::Spec spec = attn::load_spec(o.spec);
  const auto d = attn::diagnose(spec, o.spec, attn::load_trace(o.student), {o.tol.atol, o.tol.rtol});
  attn::render_diagnosis_text(d, std::cout);
  return d.correct ? kExitOk : kExitDiffers;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"attn — Attention Tracer: scaled dot-product attention step by step, every tensor with its shape", "attn"};
  app.set_version_flag("--version", std::string("attn ") + attn::kVersion);
  app.footer(kExamples);
  app.require_subcommand(1);
  RunOptions run;
  setup_run(app, run);
  CheckOptions check;
  setup_check(app, check);
  DiffOptions diff;
  setup_diff(app, diff);
  DiagnoseOptions diag;
  setup_diagnose(app, diag);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, version, or the usage error
    return code == 0 ? kExitOk : kExitBadInput;
  }
  try {
    if (app.got_subcommand("run")) return run_run(run);
    if (app.got_subcommand("check")) return run_check(check);
    if (app.got_subcommand("diff")) return run_diff(diff);
    if (app.got_subcommand("diagnose")) return run_diagnose(diag);
    return kExitBadInput;
  } catch (const attn::InputError& e) {
    std::cerr << "attn: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "attn: internal error (a bug in attn, please report it): " << e.what() << "\n";
    return kExitInternal;
  }
}
