// The CLI's shared wiring: exit codes, the options every pipeline command takes, the text width, and
// the subcommands' entry points (one file each, below); common.cpp holds what they share.
#pragma once

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include <omp.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>

#include "attn/spec/parse.hpp"
#include "attn/numerics/backend.hpp"
#include "attn/tools/check.hpp"
#include "attn/tools/cost.hpp"
#include "attn/tools/cross_check.hpp"
#include "attn/pipeline/decode.hpp"
#include "attn/tools/diagnose.hpp"
#include "attn/pipeline/flash.hpp"
#include "attn/pipeline/flash_backward.hpp"
#include "attn/model/architectures/checkpoint.hpp"
#include "attn/spec/checkpoint_input.hpp"
#include "attn/model/formats/hub_cache.hpp"
#include "attn/tools/diff.hpp"
#include "attn/io/npy.hpp"
#include "attn/core/options.hpp"
#include "attn/core/select_steps.hpp"
#include "attn/render/pager.hpp"
#include "attn/core/error.hpp"
#include "attn/pipeline/pipeline.hpp"
#include "attn/render/render.hpp"
#include "attn/render/model_views.hpp"
#include "attn/render/dump.hpp"
#include "attn/core/spec.hpp"
#include "attn/io/trace_io.hpp"
#include "attn/version.hpp"
#include <sstream>

namespace attn_cli {

constexpr int kExitOk = 0;
constexpr int kExitDiffers = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitInternal = 3;
constexpr std::int64_t kMaxSize = std::int64_t{1} << 40;  // a size option's upper bound

// Options every command that runs the pipeline takes.
struct Resources {
  std::string max_memory;  // "" = half of physical memory
  int threads = 0;         // 0 = all cores

  std::int64_t max_bytes() const {
    return max_memory.empty() ? attn::default_max_memory() : attn::parse_bytes(max_memory, "--max-memory");
  }
  std::string why() const { return max_memory.empty() ? "half of physical memory" : "as given"; }
  void apply() const {
    if (threads > 0) omp_set_num_threads(threads);
  }
};

void add_resources(CLI::App* cmd, Resources& r);
attn::Spec load_checked(const std::string& file, const Resources& r, bool fused = false);
// --width, else $COLUMNS when it is a number from 20 to 1000, else the terminal's width when standard
// output is one, else 80.
int terminal_width(int given);
// A report's text fitted to `width` columns (common.cpp says how), and written to standard output.
std::string fitted(const std::string& text, int width);
void print_fitted(const std::string& text, int width);
// --help fitted to the width: an option's description wraps under its own column, other long lines
// under their own indent.
class FittedFormatter : public CLI::Formatter {
 public:
  explicit FittedFormatter(int width) : width_(width) {}
  std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override;

 private:
  int width_;
};

// "attn: <message>" on standard error: wrapped to the terminal's width when it is one (COLUMNS,
// else the terminal's), else one line per message, whole, for pipes and logs.
void print_error(const std::string& message);

// Runs `render` into a string, then prints it fitted to the width.
template <typename Render>
void print_report(int width, Render&& render) {
  std::ostringstream text;
  render(text);
  print_fitted(text.str(), width);
}

void add_tolerances(CLI::App* cmd, attn::Tolerance& t);
// CLI11 checks that are the library's (attn/core/options.hpp), in its words, so that attn and attn_tracer
// refuse the same values alike: an integer option's range, a tolerance. A value that is no number is
// left to CLI11's conversion, which refuses it.
CLI::Validator in_range(attn::IntRange range);
CLI::Validator tolerance_check();
// CLI11's IsMember (the same words and --help), and a value that is none of `names` gets the closest:
// "--mistake: scale_dk not in {…} (did you mean "scale-dk"?)".
CLI::Validator member_of(std::vector<std::string> names);
attn::ColorMode color_mode(const std::string& choice);









// The subcommands, one file each (run.cpp, check.cpp, diff.cpp, diagnose.cpp, exercise.cpp, grade.cpp, cost.cpp,
// decode.cpp, heads.cpp, tokenize.cpp), each with its options struct, a setup_* that declares them and a run_*
// that only calls the library. add_* declares the subcommand on the app and returns what runs it
// once the command line is parsed (its exit code).
using Runner = std::function<int()>;
// The options held for the runner, declared by setup, run by run.
template <typename Options>
Runner command(CLI::App& app, void (*setup)(CLI::App&, Options&), int (*run)(const Options&)) {
  auto o = std::make_shared<Options>();
  setup(app, *o);
  return [o, run] { return run(*o); };
}
Runner add_run(CLI::App& app);
Runner add_backward(CLI::App& app);
Runner add_check(CLI::App& app);
Runner add_diff(CLI::App& app);
Runner add_diagnose(CLI::App& app);
Runner add_grade(CLI::App& app);
Runner add_cost(CLI::App& app);
Runner add_decode(CLI::App& app);
Runner add_heads(CLI::App& app);
Runner add_tokenize(CLI::App& app);
Runner add_exercise(CLI::App& app);

}  // namespace attn_cli
