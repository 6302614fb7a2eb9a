// attn: the command-line wiring. Each subcommand has an options struct, a setup_* that declares its
// options and a run_* that only calls the library. Exit codes: 0 ok, 1 a check/diff found
// differences, 2 bad input or usage, 3 internal error.
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

namespace {

constexpr int kExitOk = 0;
constexpr int kExitDiffers = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitInternal = 3;
constexpr std::int64_t kMaxSize = std::int64_t{1} << 40;  // a size option's upper bound

constexpr const char* kExamples = R"(Worked example ("cat sat" from Self-Attention: Complete Deep Dive; identity weights, d = 3):
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
  attn run examples/tiny_gpt2.json               a layer of a (tiny) GPT-2 checkpoint on a sentence
  attn heads examples/tiny_llama.json            every layer and head of a checkpoint at a glance
  attn decode examples/llama_like.json --prefill 3   generation with a KV cache, a token at a time
  echo '{"sentence": "cat sat", "embeddings": [[1,0,1],[0,1,1]],
         "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}}' | attn run -

Checking a document's printed numbers (the input's "expect" block):
  attn check examples/masked_4x4.json

Input format: docs/input-format.md; every option: docs/usage.md; the manual: docs/README.md.
Exit codes: 0 ok, 1 a check or diff found differences, 2 bad input or usage, 3 internal error.)";

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

void add_resources(CLI::App* cmd, Resources& r) {
  cmd->add_option("--max-memory", r.max_memory, "refuse runs whose kept tensors exceed this (e.g. 8G; default half of physical memory)");
  cmd->add_option("--threads", r.threads, "threads for the CPU backend (default: all cores); results are the same for any count")
      ->check(CLI::PositiveNumber);
}

// Reads the spec and refuses it, with the estimate, when its trace would not fit in memory.
// fused: the trace of attn run --fused, which holds no [T, S] step.
attn::Spec load_checked(const std::string& file, const Resources& r, bool fused = false) {
  r.apply();
  const auto max = r.max_bytes();
  attn::Spec spec = attn::load_spec(file, max);
  attn::require_fits(attn::plan_trace(spec, fused), max, r.why());
  return spec;
}

// --width, else $COLUMNS when it is a number from 20 to 1000, else the terminal's width when standard
// output is one, else 80.
int terminal_width(int given) {
  if (given > 0) return given;
  if (const char* c = std::getenv("COLUMNS")) {
    char* end = nullptr;
    const long w = std::strtol(c, &end, 10);
    if (end != c && *end == '\0' && w >= 20 && w <= 1000) return static_cast<int>(w);
  }
  struct winsize ws {};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20) return std::min<int>(ws.ws_col, 1000);
  return 80;
}

// Writes a report's text fitted to `width` columns: a line that would pass it wraps, indented under
// its own start (+2): between its " · " parts where it has them, else at word boundaries. Lines with
// colour escapes, and table rows (runs of spaces inside), are left as they are.
void print_fitted(const std::string& text, int width) {
  const auto w = static_cast<std::size_t>(width);
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto indent = line.find_first_not_of(' ');
    const std::string lead(indent == std::string::npos ? 0 : indent, ' ');
    const std::string body = line.substr(lead.size());
    if (attn::cells(line) <= w || line.find('\x1b') != std::string::npos || body.find("  ") != std::string::npos) {
      std::cout << line << "\n";
      continue;
    }
    // between parts, unless a part alone is too long for a line: then at words
    bool parts_fit = body.find(" · ") != std::string::npos;
    for (std::size_t at = 0; parts_fit && at != std::string::npos;) {
      const auto next = body.find(" · ", at);
      parts_fit = attn::cells(body.substr(at, next == std::string::npos ? std::string::npos : next - at)) + lead.size() + 4 <= w;
      at = next == std::string::npos ? next : next + std::string_view(" · ").size();
    }
    if (!parts_fit) {
      std::cout << attn::wrap(body, w, lead, lead + "  ");
      continue;
    }
    std::string out = lead;
    bool fresh = true;
    for (std::size_t at = 0; at != std::string::npos;) {
      const auto next = body.find(" · ", at);
      const std::string part = body.substr(at, next == std::string::npos ? std::string::npos : next - at);
      at = next == std::string::npos ? next : next + std::string_view(" · ").size();
      if (!fresh && attn::cells(out) + 3 + attn::cells(part) + (at != std::string::npos ? 2 : 0) > w) {
        std::cout << out << " ·\n";
        out = lead + "  ";
        fresh = true;
      }
      out += (fresh ? "" : " · ") + part;
      fresh = false;
    }
    std::cout << out << "\n";
  }
}

// Runs `render` into a string, then prints it fitted to the width.
template <typename Render>
void print_report(int width, Render&& render) {
  std::ostringstream text;
  render(text);
  print_fitted(text.str(), width);
}

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

void setup_run(CLI::App& app, RunOptions& o) {
  auto* run = app.add_subcommand("run", "Run attention on FILE and print every intermediate step with its shape");
  run->add_option("file", o.file, "input JSON file (- reads standard input); it may name a checkpoint: {\"checkpoint\": {\"path\": \"DIR\", \"layer\": 5}, \"sentence\": \"...\"}")->required();
  run->add_option("--format", o.format,
                  "text (default), json, markdown (a handout), svg (heatmap pictures) or html (one self-contained page: a step "
                  "at a time, head and batch selectors, each number's computation on hover)")
      ->check(CLI::IsMember({"text", "json", "markdown", "svg", "html"}));
  run->add_option("--precision", o.precision, "decimals in text output (default 4)")->check(CLI::Range(0, 12));
  run->add_option("--flash", o.flash, "BQxBK: after the trace, FlashAttention's tiled pass tile by tile (e.g. 2x3), checked against the context")
      ->each([&o](const std::string&) { o.flash_given = true; });
  run->add_flag("--shapes-only", o.shapes_only, "print the shape flow alone");
  run->add_flag("--fused", o.fused, "the context straight from q, k and v in one pass (FlashAttention's running max and sum): no "
                                    "[T, S] step (kT, scores, scaled, masked, weights) is computed or kept (not attn cost's --fused, "
                                    "which is one W_qkv projection)");
  run->add_option("--color", o.color,
                  "auto (default: colour on a terminal, unless NO_COLOR is set or TERM=dumb), always, never, 256 or truecolor; "
                  "without colour heatmaps use the shades ' ░▒▓█'")
      ->check(CLI::IsMember({"auto", "always", "never", "256", "truecolor"}));
  run->add_option("--heatmap", o.heatmaps, "steps drawn as heatmaps too (default weights; e.g. weights,scores; none)")
      ->delimiter(',')
      ->each([&o](const std::string&) { o.heatmap_given = true; });
  run->add_option("--heat-range", o.heat_range,
                  "heatmap colours: fixed (default: weights 0 to 1, other steps their whole range) or fit (each head's own "
                  "smallest to largest value, for near-uniform heads; the legend says which)")
      ->check(CLI::IsMember({"fixed", "fit"}));
  run->add_flag("--step", o.step, "one step at a time (when standard input is a terminal): →, Space or Enter next; ← or b back; a number and Enter goes to "
                "that step; q or Ctrl-D quits. Redrawn in place; line by line where the terminal cannot (TERM=dumb)");
  run->add_flag("--explain", o.explain, "explain each step for students, with this run's numbers");
  run->add_option("--width", o.width, "display columns of text output (default: $COLUMNS, else the terminal's, else 80)")->check(CLI::Range(20, 1000));
  run->add_option("--steps", o.steps, "show only these steps, by id (e.g. scores,weights)")->delimiter(',');
  run->add_option("--from", o.from, "show steps from this id on");
  run->add_option("--to", o.to, "show steps up to this id");
  run->add_option("--head", o.head, "show only head N (0-based)");
  run->add_option("--batch", o.batch, "show only batch row N (0-based)");
  run->add_option("--summary-threshold", o.summary_threshold, "summarise tensors with more values than this (default 1000)")
      ->check(CLI::PositiveNumber);
  run->add_option("--svg-dir", o.svg_dir, "also write the heatmap pictures as DIR/<step id>[.b<batch>.h<head>].svg");
  run->add_flag("--timings", o.timings, "print each step's time on the chosen backend (text output), and with --backend cuda the bytes copied "
                                        "to and from the GPU");
  run->add_option("--check-against", o.check_against, "run the trace on this backend too and print each step's largest difference")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  add_resources(run, o.resources);
  run->add_option("--backend", o.backend, "cpu (default) or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  run->add_option("--dump", o.dump_dir, "also write every step as DIR/<step id>.npy, plus DIR/trace.json (a new or empty DIR, or one "
                                        "holding attn's own earlier output, which is replaced)");
  run->add_flag("--force", o.force, "let --dump and --svg-dir write into a directory holding other files (same-named files are replaced)");
  std::vector<std::string> names;
  for (const auto& m : attn::all_mistakes()) names.push_back(m.name);
  run->add_option("--mistake", o.mistake, "simulate a common mistake (for exercises and attn diagnose): " + fmt::format("{}", fmt::join(names, ", ")))
      ->check(CLI::IsMember(names));
}

void add_tolerances(CLI::App* cmd, attn::Tolerance& t) {
  cmd->add_option("--atol", t.atol, "absolute tolerance (default 1e-5)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--rtol", t.rtol, "relative tolerance, times |b| (default 1e-4)")->check(CLI::NonNegativeNumber);
}

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

Each printed number may be off by half a unit in its last printed decimal ("tolerance" in expect
overrides). Exit codes: 0 every number matches, 1 some differ, 2 bad input.)");
  check->add_option("file", o.file, "input JSON file with an expect block (- reads standard input)")->required();
  check->add_option("--format", o.format, "text (default) or json")->check(CLI::IsMember({"text", "json"}));
  add_resources(check, o.resources);
}

struct CostOptions {
  int width = 0;  // 0: $COLUMNS, else the terminal's, else 80
  std::string file;
  attn::SizeArgs sizes;
  std::string mode = "self";
  bool no_output_projection = false;
};

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

struct DecodeOptions {
  int width = 0;  // 0: $COLUMNS, else the terminal's, else 80
  Resources resources;
  std::string file;
  std::string backend = "cpu";
  std::int64_t prefill = -1;  // −1: not given (1)
  int precision = 4;
  std::string color = "auto";
  std::vector<std::string> steps;
};

void setup_decode(CLI::App& app, DecodeOptions& o) {
  auto* dec = app.add_subcommand("decode", "Generate with a KV cache: a causal prefill, then one token at a time against the cache, "
                                           "each row checked against the full causal trace");
  dec->add_option("--width", o.width, "display columns of the text (default: $COLUMNS, else the terminal's, else 80)")->check(CLI::Range(20, 1000));
  dec->footer(R"(Example:
  $ attn decode examples/llama_like.json --prefill 3
    ...
    ══ token 3 "on" (position 3): one query against the 4 cached keys, its own appended ══
    ...
    largest |decoded − full| = ... ; tolerance 1e-06: the cache gives the attention of the full pass, ...

Exit codes: 0 every decoded row matches the full pass within 1e-6, 1 one does not, 2 bad input.)");
  dec->add_option("file", o.file, "input JSON file, mode causal (- reads standard input)")->required();
  dec->add_option("--prefill", o.prefill, "tokens in the first causal pass, P (default 1); tokens P .. T − 1 are decoded one by one");
  dec->add_option("--precision", o.precision, "decimals in text output (default 4)")->check(CLI::Range(0, 12));
  dec->add_option("--color", o.color, "auto (default), always, never, 256 or truecolor")->check(CLI::IsMember({"auto", "always", "never", "256", "truecolor"}));
  dec->add_option("--steps", o.steps, "only these step ids, in every pass (comma-separated: k.cache,weights)")->delimiter(',');
  dec->add_option("--backend", o.backend, "cpu (default) or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  add_resources(dec, o.resources);
}

struct HeadsOptions {
  Resources resources;
  std::string file;
  std::string format = "text";
  std::string color = "auto";
  int width = 0;  // 0: COLUMNS, else 120
};

void setup_heads(CLI::App& app, HeadsOptions& o) {
  auto* heads = app.add_subcommand("heads", "A real model's attention at a glance: every layer × head of one sentence, with a summary per head");
  heads->footer(R"(Example:
  $ attn heads examples/tiny_gpt2.json
    GPT-2 (checkpoints/tiny-gpt2): 2 layers × 4 heads, C = 16
    ...

FILE is a checkpoint input: {"checkpoint": {"path": "DIR"}, "sentence": "..."} (its "layer" is not used).)");
  heads->add_option("file", o.file, "input JSON file naming a checkpoint (- reads standard input)")->required();
  heads->add_option("--format", o.format, "text (default), svg, html or json")->check(CLI::IsMember({"text", "svg", "html", "json"}));
  heads->add_option("--color", o.color, "auto (default), always, never, 256 or truecolor")->check(CLI::IsMember({"auto", "always", "never", "256", "truecolor"}));
  heads->add_option("--width", o.width, "columns the text grid may use (default: $COLUMNS, else the terminal's, else 80)")->check(CLI::Range(20, 1000));
  add_resources(heads, o.resources);
}

struct TokenizeOptions {
  int width = 0;  // 0: $COLUMNS, else the terminal's, else 80
  std::string dir;
  std::string text;
  std::string format = "text";
};

void setup_tokenize(CLI::App& app, TokenizeOptions& o) {
  auto* tok = app.add_subcommand("tokenize", "The token ids and pieces a checkpoint's tokenizer makes of a text (no special tokens added)");
  tok->add_option("--width", o.width, "display columns of the text (default: $COLUMNS, else the terminal's, else 80)")->check(CLI::Range(20, 1000));
  tok->add_option("dir", o.dir, "checkpoint directory (tokenizer.json, vocab.json + merges.txt, or tokenizer.model), or a model hub id "
                                "(org/name) in the hub's local cache")->required();
  tok->add_option("text", o.text, "the text")->required();
  tok->footer("Example:\n  $ attn tokenize examples/checkpoints/tiny-gpt2 \"The cat sat\"\n    byte-level BPE from vocab.json + merges.txt (457 tokens)\n    3 tokens\n       0       268  The\n       1       279  Ġcat\n       2       332  Ġsat");
  tok->add_option("--format", o.format, "text (default) or json")->check(CLI::IsMember({"text", "json"}));
}

attn::ColorMode color_mode(const std::string& choice) {
  if (choice == "never") return attn::ColorMode::None;
  if (choice == "256") return attn::ColorMode::Ansi256;
  if (choice == "truecolor") return attn::ColorMode::TrueColor;
  if (choice == "auto") {
    const char* no_color = std::getenv("NO_COLOR");  // https://no-color.org: set and not empty
    const char* term = std::getenv("TERM");          // a dumb terminal shows escape codes as text
    if (!isatty(STDOUT_FILENO) || (no_color != nullptr && *no_color != '\0') || (term != nullptr && std::string_view(term) == "dumb")) {
      return attn::ColorMode::None;
    }
  }
  const char* colorterm = std::getenv("COLORTERM");
  const std::string ct = colorterm != nullptr ? colorterm : "";
  return ct == "truecolor" || ct == "24bit" ? attn::ColorMode::TrueColor : attn::ColorMode::Ansi256;
}

int run_run(const RunOptions& o) {
  const attn::Spec spec = load_checked(o.file, o.resources, o.fused);
  auto backend = attn::make_backend(o.backend);
  attn::require_fits_on(*backend, spec, o.fused);  // the device's memory, as load_checked did the host's
  attn::PipelineOptions options;
  if (!o.mistake.empty()) options.mistake = attn::mistake_from_name(o.mistake);
  options.fused = o.fused;
  options.timings = o.timings;
  if (o.fused) {
    // what draws or tiles the [T, S] steps has nothing to work on: said, not an empty picture
    const char* what = o.format == "svg" ? "--format svg" : !o.svg_dir.empty() ? "--svg-dir" : o.flash_given ? "--flash" : nullptr;
    if (what == nullptr && o.heatmap_given && !(o.heatmaps.size() == 1 && o.heatmaps[0] == "none")) what = "--heatmap";
    if (what != nullptr) {
      throw attn::InputError(fmt::format("--fused: {} draws or tiles the scores and weights, which the fused pass never keeps; run without "
                                         "--fused",
                                         what));
    }
  }
  // text output of some steps shows only those: the others stay on a device unless read
  if (o.format == "text" && o.dump_dir.empty() && o.check_against.empty() && !o.explain && !o.step && !o.flash_given &&
      (!o.steps.empty() || !o.from.empty() || !o.to.empty())) {
    const attn::Trace plan = attn::plan_trace(spec);
    for (const auto i : attn::select_steps(plan, o.steps, o.from, o.to)) options.shown.push_back(plan.steps[i].id);
    if (options.shown.empty()) options.shown.push_back("");  // (none: an id no step has)
  }
  const attn::Trace trace = attn::run_pipeline(spec, *backend, options);
  if (!o.dump_dir.empty()) attn::dump_trace(trace, o.dump_dir, o.force);
  attn::TextOptions t;
  t.precision = o.precision;
  t.width = terminal_width(o.width);
  t.shapes_only = o.shapes_only;
  t.view.summary_threshold = o.summary_threshold;
  t.view.head = o.head;
  t.view.batch = o.batch;
  attn::check_view(trace, t.view);
  try {
    t.steps = attn::select_steps(trace, o.steps, o.from, o.to);
  } catch (const attn::InputError& e) {
    if (!o.fused) throw;
    throw attn::InputError(std::string(e.what()) + " (--fused computes none of k.T, scores, scaled, mask, masked and weights)");
  }
  // (a fused trace has no weights to draw by default)
  t.heatmaps = attn::heatmap_steps(trace, o.fused && !o.heatmap_given ? std::vector<std::string>{} : o.heatmaps);
  t.color = color_mode(o.color);
  t.explain = o.explain;
  t.fit_range = o.heat_range == "fit";
  t.timings = o.timings;
  if (!o.svg_dir.empty()) attn::write_svg_pictures(trace, t, o.svg_dir, o.force);
  t.picture_dir = o.svg_dir;  // the handout links the pictures written there (else carries them inline)
  if (o.step && o.format != "text") throw attn::InputError("--step: pacing works with --format text");
  std::optional<attn::Flash> flash;
  if (o.flash_given) {
    if (o.format != "text" || o.step || o.shapes_only) throw attn::InputError("--flash: the tiled pass is shown in text output (no --format, --step or --shapes-only)");
    if (options.mistake != attn::Mistake::None) throw attn::InputError("--flash: tiles the correct pass; leave out --mistake");
    const auto [bq, bk] = attn::parse_tile_sizes(o.flash);
    flash = attn::run_flash(spec, trace, bq, bk);
  }
  if (o.format == "json") {
    attn::render_json(trace, std::cout, false, t.steps);  // --steps, --from, --to: only those
  } else if (o.format == "markdown") {
    attn::render_markdown(trace, std::cout, t);
  } else if (o.format == "html") {
    attn::render_html(trace, std::cout, t);
  } else if (o.format == "svg") {
    attn::render_svg(trace, std::cout, t);
  } else if (o.step && isatty(STDIN_FILENO) && o.file != "-" && !o.shapes_only) {
    // single keys, redrawn in place, on a terminal that can; lines otherwise (TERM=dumb, output to a file)
    const char* term = std::getenv("TERM");
    const bool raw = isatty(STDOUT_FILENO) && term != nullptr && std::string_view(term) != "dumb";
    attn::page_steps(trace, t, STDIN_FILENO, std::cout, raw);
  } else {
    attn::render_text(trace, std::cout, t);
    if (flash) print_report(t.width, [&](std::ostream& os) { attn::render_flash_text(*flash, trace, os, t); });
  }
  if (o.timings && o.format == "text") {
    const auto moved = backend->traffic();  // rendering included: what it read from the device moved too
    if (moved.uploaded + moved.downloaded > 0) {
      std::cout << fmt::format("{}: {} copied to the device, {} copied back ({} and {} bytes)\n", o.backend,
                               attn::human_bytes(static_cast<double>(moved.uploaded)), attn::human_bytes(static_cast<double>(moved.downloaded)),
                               moved.uploaded, moved.downloaded);
    }
  }
  if (flash && flash->max_diff > 1e-5) return kExitDiffers;
  if (!o.check_against.empty()) {
    const auto report = attn::check_against(spec, trace, o.backend, o.check_against, options);
    attn::render_check_against_text(report, std::cout);
    if (!report.same()) return kExitDiffers;
  }
  std::cout.flush();
  return kExitOk;
}

int run_decode(const DecodeOptions& o) {
  const attn::Spec spec = load_checked(o.file, o.resources);
  auto backend = attn::make_backend(o.backend);
  attn::require_fits_on(*backend, spec);  // the device's memory, as load_checked did the host's
  const attn::Decode d = attn::run_decode(spec, *backend, o.prefill);
  attn::TextOptions t;
  t.precision = o.precision;
  t.color = color_mode(o.color);
  t.width = terminal_width(o.width);
  // --steps must name steps of a decoding pass (the last token's holds every kind); unknown ids are refused there
  if (!o.steps.empty()) attn::select_steps(d.tokens.back(), o.steps, "", "");
  print_report(t.width, [&](std::ostream& os) { attn::render_decode_text(d, os, t, o.steps); });
  std::cout.flush();
  return d.agrees() ? kExitOk : kExitDiffers;
}


int run_heads(const HeadsOptions& o) {
  o.resources.apply();
  const attn::model::HeadsView view = attn::model::load_heads(o.file, o.resources.max_bytes(), o.resources.why());
  if (o.format == "json") attn::model::render_heads_json(view, std::cout);
  else if (o.format == "svg") attn::model::render_heads_svg(view, std::cout);
  else if (o.format == "html") attn::model::render_heads_html(view, std::cout);
  else attn::model::render_heads_text(view, std::cout, color_mode(o.color), terminal_width(o.width));
  std::cout.flush();
  return kExitOk;
}

int run_tokenize(const TokenizeOptions& o) {
  // a directory, or else a hub id ("org/name") found in the hub's local cache
  std::string dir = o.dir;
  if (!std::filesystem::exists(dir) && attn::model::looks_like_hub_id(dir)) dir = attn::model::find_in_hub_cache(dir, "main", "tokenize " + o.dir);
  if (o.format == "json") attn::model::render_tokenized(dir, o.text, std::cout, true);
  else print_report(terminal_width(o.width), [&](std::ostream& os) { attn::model::render_tokenized(dir, o.text, os, false); });
  std::cout.flush();
  return kExitOk;
}

int run_check(const CheckOptions& o) {
  const attn::Spec spec = load_checked(o.file, o.resources);
  auto backend = attn::make_cpu_backend();
  const attn::CheckReport report = attn::check_trace(spec, attn::run_pipeline(spec, *backend));
  if (o.format == "json") attn::render_check_json(report, std::cout);
  else print_report(terminal_width(o.width), [&](std::ostream& os) { attn::render_check_text(report, os); });
  std::cout.flush();
  return report.differences == 0 ? kExitOk : kExitDiffers;
}

int run_diff(const DiffOptions& o) {
  const auto report = attn::diff_traces(attn::load_trace(o.a), attn::load_trace(o.b), o.tol);
  print_report(terminal_width(o.width), [&](std::ostream& os) { attn::render_diff_text(report, os); });
  return report.same() ? kExitOk : kExitDiffers;
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

int run_diagnose(const DiagnoseOptions& o) {
  const attn::Spec spec = load_checked(o.spec, o.resources);
  const auto d = attn::diagnose(spec, o.spec, attn::load_trace(o.student), o.tol);
  print_report(terminal_width(o.width), [&](std::ostream& os) { attn::render_diagnosis_text(d, os); });
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
  CostOptions cost;
  setup_cost(app, cost);
  DecodeOptions decode;
  setup_decode(app, decode);
  HeadsOptions heads;
  setup_heads(app, heads);
  TokenizeOptions tokenize;
  setup_tokenize(app, tokenize);
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
    if (app.got_subcommand("cost")) return run_cost(cost);
    if (app.got_subcommand("decode")) return run_decode(decode);
    if (app.got_subcommand("heads")) return run_heads(heads);
    if (app.got_subcommand("tokenize")) return run_tokenize(tokenize);
    return kExitBadInput;
  } catch (const attn::InputError& e) {
    std::cerr << "attn: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "attn: internal error (a bug in attn, please report it): " << e.what() << "\n";
    return kExitInternal;
  }
}
