// attn heads: a checkpoint's every layer × head on one sentence, with a summary per head.
#include "cli.hpp"
#include "heads_evidence.hpp"

namespace attn_cli {
namespace {

struct HeadsOptions {
  Resources resources;
  std::string file;
  std::string format = "text";
  std::string color = "auto";
  int width = 0;  // 0: COLUMNS, else 120
  bool weights = false;  // keep (and write) every weight at any T
  std::string head;      // --head L3H7: that head's whole map
  HeadsEvidence evidence;  // [#43] --rollout, --ablate, --evidence (heads_evidence.cpp)
};

void setup_heads(CLI::App& app, HeadsOptions& o) {
  auto* heads = app.add_subcommand("heads", "A real model's attention at a glance: every layer × head of one sentence, with a summary per head");
  heads->footer(R"(Example:
  $ attn heads examples/tiny_gpt2.json
    GPT-2 (checkpoints/tiny-gpt2): 2 layers × 4 heads, C = 16
    ...

FILE is a checkpoint input: {"checkpoint": {"path": "DIR"}, "sentence": "..."} (its "layer" is not used).)");
  heads->add_option("file", o.file, "input JSON file naming a checkpoint (- reads standard input)")->required();
  heads->add_option("--format", o.format, "text (default), svg, html or json")->check(member_of({"text", "svg", "html", "json"}));
  heads->add_option("--color", o.color, "auto (default), always, never, 256 or truecolor")->check(member_of({"auto", "always", "never", "256", "truecolor"}));
  heads->add_option("--width", o.width, "columns the text grid may use (default: $COLUMNS, else the terminal's, else 80)")->check(CLI::Range(20, 1000));
  heads->add_flag("--weights", o.weights,
                  "keep every head's weights at any length, and write them in the JSON (by default: up to T = 256; longer inputs are "
                  "summarised from every weight and drawn pooled)");
  heads->add_option("--head", o.head,
                     "one head's whole map, every weight at any length, as L3H7 (layer 3, head 7): text in column blocks, SVG and HTML with "
                     "token labels and hover, JSON with its weights");
  add_resources(heads, o.resources);
  setup_heads_evidence(heads, o.evidence);  // [#43]
}

int run_heads(const HeadsOptions& o) {
  o.resources.apply();
  attn::model::HeadsKeep keep;
  keep.weights = o.weights;
  keep.head_name = o.head;  // checked against the model once it is read
  if (o.evidence.any()) {  // [#43] --rollout, --ablate, --evidence
    if (!o.head.empty()) throw attn::InputError(fmt::format("--head {}: draws one head of the clean model; leave out --rollout, --ablate and --evidence", o.head));
    return run_heads_evidence(o.evidence, o.file, o.format, color_mode(o.color), terminal_width(o.width), o.resources, keep);
  }
  const std::vector<attn::model::HeadsView> view = attn::model::load_heads(o.file, o.resources.max_bytes(), o.resources.why(), keep);
  if (!o.head.empty() && o.format == "text") {
    attn::model::render_head_text(view.front(), std::cout, color_mode(o.color), terminal_width(o.width));
    std::cout.flush();
    return kExitOk;
  }
  if (o.format == "json") attn::model::render_heads_json(view, std::cout);
  else if (o.format == "svg") attn::model::render_heads_svg(view, std::cout);
  else if (o.format == "html") attn::model::render_heads_html(view, std::cout);
  else attn::model::render_heads_text(view, std::cout, color_mode(o.color), terminal_width(o.width));
  std::cout.flush();
  return kExitOk;
}

}  // namespace

Runner add_heads(CLI::App& app) { return command(app, setup_heads, run_heads); }

}  // namespace attn_cli
