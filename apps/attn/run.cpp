// attn run: the walkthrough, in every format, with its options.
#include "cli.hpp"

#include "attn/tools/predict.hpp"

namespace attn_cli {
namespace {

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
  bool predict = false;  // ask before the exercise's steps (weights by default), then reveal them
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
  bool backward = false;  // attn backward: the forward trace, then the gradients
};


// The options run and backward share, on the subcommand `run`.
void declare_options(CLI::App* run, RunOptions& o) {
  run->add_option("file", o.file, o.backward ? "input JSON file (- reads standard input), with an optional \"backward\" block (the loss)"
                                             : "input JSON file (- reads standard input); it may name a checkpoint: {\"checkpoint\": {\"path\": \"DIR\", "
                                               "\"layer\": 5}, \"sentence\": \"...\"}")
      ->required();
  run->add_option("--format", o.format,
                  "text (default), json, markdown (a handout), svg (heatmap pictures) or html (one self-contained page: a step "
                  "at a time, head and batch selectors, each number's computation on hover)")
      ->check(member_of({"text", "json", "markdown", "svg", "html"}));
  run->add_option("--precision", o.precision, "decimals in text output (default 4)")->check(in_range(attn::kPrecisionRange));
  run->add_option("--flash", o.flash, o.backward ? "BQxBK: after the trace, FlashAttention-2's tiled backward pass tile by tile (e.g. 2x3), "
                                                   "checked against grad.q, grad.k and grad.v"
                                                 : "BQxBK: after the trace, FlashAttention's tiled pass tile by tile (e.g. 2x3), checked against the context")
      ->each([&o](const std::string&) { o.flash_given = true; });
  run->add_flag("--shapes-only", o.shapes_only, "print the shape flow alone");
  if (!o.backward) {
    run->add_flag("--fused", o.fused, "the context straight from q, k and v in one pass (FlashAttention's running max and sum): no "
                                      "[T, S] step (k.T, scores, scaled, masked, weights) is computed or kept (not attn cost's --fused, "
                                      "which is one W_qkv projection)");
  }
  run->add_option("--color", o.color,
                  "auto (default: colour on a terminal, unless NO_COLOR is set or TERM=dumb), always, never, 256 or truecolor; "
                  "without colour heatmaps use the shades ' ░▒▓█'")
      ->check(member_of({"auto", "always", "never", "256", "truecolor"}));
  run->add_option("--heatmap", o.heatmaps, "steps drawn as heatmaps too (default weights; e.g. weights,scores; none)")
      ->delimiter(',')
      ->each([&o](const std::string&) { o.heatmap_given = true; });
  run->add_option("--heat-range", o.heat_range,
                  "heatmap colours: fixed (default: weights 0 to 1, other steps their whole range) or fit (each head's own "
                  "smallest to largest value, for near-uniform heads; the legend says which)")
      ->check(member_of({"fixed", "fit"}));
  run->add_flag("--step", o.step, "one step at a time (when standard input is a terminal): → or Enter next, Space a page and then next; ← or b back; ↑/↓, "
                "PgUp/PgDn and Home/End scroll a tall step; a number and Enter goes to that step; q or Ctrl-D quits. Redrawn in place; line "
                "by line where the terminal cannot (TERM=dumb)");
  if (!o.backward) {
    run->add_flag("--predict", o.predict, "ask for a prediction before the steps of the input's \"exercise\": {\"predict\": [...]} (default "
                                          "the weights): their shape, the key a query attends to most, one value to two decimals; then reveal "
                                          "them, say how far off each answer was, and at the end how many were right. In a terminal (it "
                                          "implies --step), or in the page with --format html");
  }
  run->add_flag("--explain", o.explain, "explain each step for students, with this run's numbers");
  run->add_flag("--code", o.code, "show each step as the PyTorch that computes it (always in json, markdown and html; --dump writes "
                                  "the inputs it names, to run it)");
  run->add_option("--width", o.width, "display columns of text output (default: $COLUMNS, else the terminal's, else 80)")->check(in_range(attn::kWidthRange));
  run->add_option("--steps", o.steps, "show only these steps, by id (e.g. scores,weights)")->delimiter(',');
  run->add_option("--from", o.from, "show steps from this id on");
  run->add_option("--to", o.to, "show steps up to this id");
  run->add_option("--head", o.head, "show only head N (0-based)");
  run->add_option("--batch", o.batch, "show only batch row N (0-based)");
  run->add_option("--summary-threshold", o.summary_threshold, "summarise tensors with more values than this (default 1000)")
      ->check(in_range(attn::kPositiveRange));
  run->add_option("--svg-dir", o.svg_dir, "also write the heatmap pictures as DIR/<step id>[.b<batch>.h<head>].svg");
  run->add_flag("--timings", o.timings, "print each step's time on the chosen backend (text output), and with --backend cuda the bytes copied "
                                        "to and from the GPU");
  run->add_option("--check-against", o.check_against,
                  o.backward ? "run the forward and backward passes on this backend too and print each step's and gradient's largest difference"
                             : "run the trace on this backend too and print each step's largest difference")
      ->check(member_of({"cpu", "cuda"}));
  add_resources(run, o.resources);
  run->add_option("--backend", o.backend, "cpu (default) or cuda")->check(member_of({"cpu", "cuda"}));
  run->add_option("--dump", o.dump_dir, "also write every step as DIR/<step id>.npy, plus DIR/trace.json, and the inputs the steps' "
                                        "code names as DIR/inputs/<name>.npy (a new or empty DIR, or one holding attn's own earlier "
                                        "output, which is replaced)");
  run->add_flag("--force", o.force, "let --dump and --svg-dir write into a directory holding other files (same-named files are replaced)");
  // run's mistakes are the forward pass's, backward's the backward pass's; the name is checked by the
  // library (run_run), in the words it says to Python
  run->add_option("--mistake", o.mistake, "simulate a common mistake (for exercises and attn diagnose): " + attn::mistake_names(o.backward))
      ->type_name("NAME");  // (the names are in the description, which wraps; as a type they would not)
}

void setup_run(CLI::App& app, RunOptions& o) {
  declare_options(app.add_subcommand("run", "Run attention on FILE and print every intermediate step with its shape"), o);
}

void setup_backward(CLI::App& app, RunOptions& o) {
  o.backward = true;
  declare_options(app.add_subcommand("backward", "Run attention on FILE, then its backward pass: the gradient of every step and "
                                                 "parameter, from the output back (the input's \"backward\" block says of which loss; "
                                                 "without it, of sum(output))"),
                  o);
  app.get_subcommands([](const CLI::App* a) { return a->get_name() == "backward"; })[0]->footer(R"(Example: the cat/sat walkthrough with a loss, backward
  $ attn backward examples/cat_sat_backward.json --from loss
    ...
    [13] grad.scaled · Gradient through the softmax
        grad.scaled = weights ⊙ (grad.weights − rowsum(grad.weights ⊙ weights))
    ...
The input's "backward" block: {"grad_output": [...]} (the output's shape), {"seed": N} or {"target": [...]} (loss = mean((output − target)²)); without it, the gradient of sum(output).)");
}

// --predict: asked in a terminal (the pager: standard input and output both one, the input a file)
// or in the page; refused anywhere else, before anything is run.
void check_predict(const RunOptions& o) {
  if (!o.predict) return;
  if (o.format != "text" && o.format != "html") {
    throw attn::InputError(fmt::format("--predict: the questions are asked in a terminal (text) or in the page (--format html), not in "
                                       "--format {}", o.format));
  }
  if (o.format == "html") return;
  const std::string page = "or write a page that asks the same questions: attn run FILE --format html --predict > page.html";
  const char* terminal = !isatty(STDIN_FILENO)    ? "standard input is not a terminal, so no answer can be typed"
                         : !isatty(STDOUT_FILENO) ? "standard output is not a terminal, so the questions would go unseen"
                                                  : nullptr;
  if (o.file == "-") throw attn::InputError("--predict: the answers are typed on standard input, which holds the input JSON here (-); name the input file");
  if (terminal != nullptr) throw attn::InputError(fmt::format("--predict: {}. Run it in a terminal, {}", terminal, page));
  if (o.shapes_only) throw attn::InputError("--predict: --shapes-only shows no values to predict; leave one of them out");
  if (o.flash_given) throw attn::InputError("--predict: --flash shows the tiled pass after the whole walkthrough, not step by step; leave one of them out");
}

// --predict's steps (exercise.predict, else the weights) for the pager and the page; an id the
// trace lacks, or none of them shown, is refused before a question is asked.
void predict_options(const RunOptions& o, const attn::Spec& spec, const attn::Trace& trace, attn::TextOptions& t) {
  t.predict = o.predict;
  t.predict_ids = spec.predict;
  if (o.predict) attn::predicted_steps(trace, t.predict_ids, t.steps);
}

// The input read, refused up front (exit 2, with the estimate) when it would not fit: a checkpoint's
// layers before they run (they run while the spec is read), then the trace in --max-memory and in the
// machine's available memory.
attn::Spec load_fitting(const RunOptions& o) {
  if (attn::model::names_checkpoint(o.file)) attn::model::require_model_fits(attn::model::load_checkpoint_input(o.file, "attn run"), "attn run", false, 0);
  attn::Spec spec = load_checked(o.file, o.resources, o.fused);
  attn::require_machine_fits(attn::kept_bytes(attn::plan_trace(spec, o.fused)), "attn run", "the trace's tensors, as attn cost counts them");
  return spec;
}

int run_run(const RunOptions& o) {
  check_predict(o);
  attn::PipelineOptions options;
  if (!o.mistake.empty()) options.mistake = attn::mistake_for_pass(o.mistake, o.backward, attn::Door::Cli);  // before the input is read
  const attn::Spec spec = load_fitting(o);
  auto backend = attn::make_backend(o.backend);
  attn::require_fits_on(*backend, spec, o.fused);  // the device's memory, as load_checked did the host's
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
  if (!o.backward && o.format == "text" && o.dump_dir.empty() && o.check_against.empty() && !o.explain && !o.step && !o.predict && !o.flash_given &&
      (!o.steps.empty() || !o.from.empty() || !o.to.empty())) {
    const attn::Trace plan = attn::plan_trace(spec);
    for (const auto i : attn::select_steps(plan, o.steps, o.from, o.to)) options.shown.push_back(plan.steps[i].id);
    if (options.shown.empty()) options.shown.push_back("");  // (none: an id no step has)
  }
  const attn::Trace trace = o.backward ? attn::run_backward(spec, *backend, options) : attn::run_pipeline(spec, *backend, options);
  if (!o.dump_dir.empty()) attn::dump_trace(trace, spec, o.dump_dir, o.force);
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
  t.code = o.code;
  t.fit_range = o.heat_range == "fit";
  t.timings = o.timings;
  predict_options(o, spec, trace, t);
  if (!o.svg_dir.empty()) attn::write_svg_pictures(trace, t, o.svg_dir, o.force);
  t.picture_dir = o.svg_dir;  // the handout links the pictures written there (else carries them inline)
  if (o.step && o.format != "text") throw attn::InputError("--step: pacing works with --format text");
  std::optional<attn::Flash> flash;
  std::optional<attn::FlashBackward> flash_backward;  // attn backward --flash: FlashAttention-2's backward tiles
  if (o.flash_given) {
    if (o.format != "text" || o.step || o.shapes_only) throw attn::InputError("--flash: the tiled pass is shown in text output (no --format, --step or --shapes-only)");
    attn::require_tileable(options);
    const auto [bq, bk] = attn::parse_tile_sizes(o.flash);
    if (o.backward) flash_backward = attn::run_flash_backward(spec, trace, bq, bk);
    else flash = attn::run_flash(spec, trace, bq, bk);
  }
  if (o.format == "json") {
    attn::render_json(trace, std::cout, false, t.steps);  // --steps, --from, --to: only those
  } else if (o.format == "markdown") {
    attn::render_markdown(trace, std::cout, t);
  } else if (o.format == "html") {
    attn::render_html(trace, std::cout, t);
  } else if (o.format == "svg") {
    attn::render_svg(trace, std::cout, t);
  } else if ((o.step || o.predict) && isatty(STDIN_FILENO) && o.file != "-" && !o.shapes_only) {
    // single keys, redrawn in place, on a terminal that can; lines otherwise (TERM=dumb, output to a file)
    const char* term = std::getenv("TERM");
    const bool raw = isatty(STDOUT_FILENO) && term != nullptr && std::string_view(term) != "dumb";
    attn::page_steps(trace, t, STDIN_FILENO, std::cout, raw);
  } else {
    attn::render_text(trace, std::cout, t);
    if (flash) print_report(t.width, [&](std::ostream& os) { attn::render_flash_text(*flash, trace, os, t); });
    if (flash_backward) print_report(t.width, [&](std::ostream& os) { attn::render_flash_backward_text(*flash_backward, trace, os, t); });
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
  if (flash_backward && flash_backward->max_diff > 1e-5) return kExitDiffers;
  if (!o.check_against.empty()) {
    const auto report = attn::check_against(spec, trace, o.backend, o.check_against, options, o.backward);
    attn::render_check_against_text(report, std::cout);
    if (!report.same()) return kExitDiffers;
  }
  std::cout.flush();
  return kExitOk;
}

}  // namespace

Runner add_run(CLI::App& app) { return command(app, setup_run, run_run); }
Runner add_backward(CLI::App& app) { return command(app, setup_backward, run_run); }

}  // namespace attn_cli
