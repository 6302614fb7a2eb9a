// The CLI's shared wiring: exit codes, the options every pipeline command takes, the text width,
// and each subcommand's options struct with its setup_* (declares the options) and run_* (calls the
// library). One file per group of subcommands: run.cpp, reports.cpp (check, diff, diagnose, cost),
// models.cpp (decode, heads, tokenize); common.cpp holds what they share.
#pragma once

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include <omp.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>

#include "attn/backend.hpp"
#include "attn/check.hpp"
#include "attn/cost.hpp"
#include "attn/cross_check.hpp"
#include "attn/decode.hpp"
#include "attn/diagnose.hpp"
#include "attn/flash.hpp"
#include "attn/model/checkpoint.hpp"
#include "attn/model/hub_cache.hpp"
#include "attn/diff.hpp"
#include "attn/npy.hpp"
#include "attn/pager.hpp"
#include "attn/error.hpp"
#include "attn/pipeline.hpp"
#include "attn/render/render.hpp"
#include "attn/spec.hpp"
#include "attn/trace_io.hpp"
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
attn::ColorMode color_mode(const std::string& choice);

struct RunOptions {
  Resources resources;
  std::string file;
  int width = 0;  // 0: $COLUMNS, else the terminal's, else 80
  std::string format = "text";
  std::string backend = "cpu";
  int precision = 4;
  bool shapes_only = false;
  std::string dump_dir;
  std::string mistake;
  std::string color = "auto";
  std::vector<std::string> heatmaps = {"weights"};
  std::string heat_range = "fixed";
  bool step = false;
  bool explain = false;
  bool code = false;
  std::vector<std::string> steps;
  std::string from, to;
  std::optional<std::int64_t> head, batch;
  std::int64_t summary_threshold = 1000;
  std::string svg_dir;
  bool force = false;
  bool timings = false;
  std::string check_against;
  std::string flash;
  bool flash_given = false;
  bool fused = false;
  bool heatmap_given = false;
};
void setup_run(CLI::App& app, RunOptions& o);
int run_run(const RunOptions& o);

struct DiffOptions {
  int width = 0;  // 0: $COLUMNS, else the terminal's, else 80
  std::string a, b;
  attn::Tolerance tol;
};
void setup_diff(CLI::App& app, DiffOptions& o);
int run_diff(const DiffOptions& o);

struct DiagnoseOptions {
  int width = 0;  // 0: $COLUMNS, else the terminal's, else 80
  Resources resources;
  std::string spec, student;
  attn::Tolerance tol;
};
void setup_diagnose(CLI::App& app, DiagnoseOptions& o);
int run_diagnose(const DiagnoseOptions& o);

struct CheckOptions {
  int width = 0;  // 0: $COLUMNS, else the terminal's, else 80
  Resources resources;
  std::string file;
  std::string format = "text";
};
void setup_check(CLI::App& app, CheckOptions& o);
int run_check(const CheckOptions& o);

struct CostOptions {
  int width = 0;  // 0: $COLUMNS, else the terminal's, else 80
  std::string file;
  attn::SizeArgs sizes;
  std::string mode = "self";
  bool no_output_projection = false;
};
void setup_cost(CLI::App& app, CostOptions& o);
int run_cost(const CostOptions& o);

struct DecodeOptions {
  int width = 0;  // 0: $COLUMNS, else the terminal's, else 80
  Resources resources;
  std::string file;
  std::string backend = "cpu";
  std::int64_t prefill = -1;  // −1: not given (1)
  int precision = 4;
  std::string color = "auto";
  std::vector<std::string> steps;
  bool code = false;
};
void setup_decode(CLI::App& app, DecodeOptions& o);
int run_decode(const DecodeOptions& o);

struct HeadsOptions {
  Resources resources;
  std::string file;
  std::string format = "text";
  std::string color = "auto";
  int width = 0;  // 0: COLUMNS, else 120
};
void setup_heads(CLI::App& app, HeadsOptions& o);
int run_heads(const HeadsOptions& o);

struct TokenizeOptions {
  int width = 0;  // 0: $COLUMNS, else the terminal's, else 80
  std::string dir;
  std::string text;
  std::string format = "text";
};
void setup_tokenize(CLI::App& app, TokenizeOptions& o);
int run_tokenize(const TokenizeOptions& o);

}  // namespace attn_cli
