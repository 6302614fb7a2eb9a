// attn decode: generation with a KV cache, a causal prefill, then a token at a time.
#include "cli.hpp"

#include "attn/model/tools/generate.hpp"
#include "attn/tools/cost.hpp"

namespace attn_cli {
namespace {

struct DecodeOptions {
  int width = 0;  // 0: $COLUMNS, else the terminal's, else 80
  Resources resources;
  std::string file;
  std::string backend = "cpu";
  std::optional<std::int64_t> prefill;  // not given: 1
  int precision = 4;
  std::string color = "auto";
  std::vector<std::string> steps;
  bool code = false;
  bool explain = false;
  std::optional<std::int64_t> tokens;  // --tokens N: generate N tokens with the whole model
  std::optional<std::int64_t> top;     // with --tokens: candidates shown (not given: 5)
  std::int64_t head = -1;
  std::string format = "text";
};

void setup_decode(CLI::App& app, DecodeOptions& o) {
  auto* dec = app.add_subcommand("decode", "Generate with a KV cache: a causal prefill, then one token at a time against the cache, "
                                           "each row checked against the full causal trace. On a checkpoint, --tokens N lets the whole "
                                           "model write N tokens, with its next-token probabilities");
  dec->add_option("--width", o.width, "display columns of the text (default: $COLUMNS, else the terminal's, else 80)")->check(in_range(attn::kWidthRange));
  dec->footer(R"(Example:
  $ attn decode examples/llama_like.json --prefill 3
    ...
    ══ token 3 "on" (position 3): one query against the 4 cached keys, its own appended ══
    ...
    largest |decoded − full| = ... ; tolerance 1e-06: the cache gives the attention of the full pass, ...

  $ attn decode examples/tiny_gpt2.json --tokens 3 --top 3
    ── the prompt's last token "␣mat" (position 5): layer 1's query against the 6 cached keys ──
      head 0  ␣on 0.9639 @3 · ␣the 0.0340 @4 · ␣cat 0.0014 @1
    ...

Exit codes: 0 every decoded row matches the full pass within 1e-6 (with --tokens: every step's logits within
1e-4 · max(1, |logit|) and the layer's weights within 1e-6 of one full pass, which picks the same tokens),
1 one does not, 2 bad input.)");
  dec->add_option("file", o.file, "input JSON file, mode causal (- reads standard input)")->required();
  dec->add_option("--prefill", o.prefill, "tokens in the first causal pass, P (default 1); tokens P .. T − 1 are decoded one by one "
                                     "(not with --tokens: there the sentence is the prefill)");
  dec->add_option("--precision", o.precision, "decimals in text output (default 4)")->check(in_range(attn::kPrecisionRange));
  dec->add_option("--color", o.color, "auto (default), always, never, 256 or truecolor")->check(member_of({"auto", "always", "never", "256", "truecolor"}));
  dec->add_flag("--code", o.code, "show each step as the PyTorch that computes it");
  dec->add_flag("--explain", o.explain, "explain each step and the cache for students, with this run's numbers");
  dec->add_option("--steps", o.steps, "only these step ids, in every pass (comma-separated: k.cache,weights)")->delimiter(',');
  dec->add_option("--backend", o.backend, "cpu (default) or cuda")->check(member_of({"cpu", "cuda"}));
  dec->add_option("--tokens", o.tokens,
                  "on a causal checkpoint: run the whole model and write N tokens after the sentence, the most probable each time, "
                  "showing each one's attention over the cache and the next-token probabilities")
      ->check(in_range(attn::kTokensRange));
  dec->add_option("--top", o.top, "with --tokens: the next-token candidates shown at each step (default 5)")->check(in_range(attn::kTopRange));
  dec->add_option("--head", o.head, "with --tokens: show this head's weight on every key (default: each head's three largest; text only)")
      ->check(in_range(attn::kDecodeHeadRange));
  dec->add_option("--format", o.format, "with --tokens: text (default) or json")->check(member_of({"text", "json"}));
  add_resources(dec, o.resources);
}

// --tokens N: the whole checkpoint writes N tokens (model/tools/generate.hpp)
int run_generation(const DecodeOptions& o) {
  if (o.code || !o.steps.empty()) {
    throw attn::InputError(fmt::format("{}: with --tokens decode shows each written token's attention and next-token probabilities, not the "
                                       "steps; use attn decode without --tokens for those", o.code ? "--code" : "--steps"));
  }
  if (o.head >= 0 && o.format == "json") throw attn::InputError("--head: --format json writes every head's weights; leave --head out");
  const attn::model::CheckpointInput in = attn::model::load_checkpoint_input(o.file, "attn decode --tokens");
  attn::model::require_model_fits(in, "attn decode --tokens", false, 0);  // the prompt's pass through the layers, before it runs
  if (o.head >= in.ckpt.arch().H) {
    throw attn::InputError(fmt::format("--head {}: expected 0 .. {} ({} has {} heads)", o.head, in.ckpt.arch().H - 1, in.ckpt.arch().name(), in.ckpt.arch().H));
  }
  auto backend = attn::make_backend(o.backend);
  const attn::model::Generation g = attn::model::generate(in, *backend, *o.tokens, o.top.value_or(5));
  if (o.format == "json") {
    attn::model::render_generation_json(g, std::cout);
  } else {
    attn::TextOptions t;
    t.precision = o.precision;
    t.width = terminal_width(o.width);
    print_report(t.width, [&](std::ostream& os) { attn::model::render_generation_text(g, os, t, o.head); });
  }
  std::cout.flush();
  return g.agrees ? kExitOk : kExitDiffers;
}

int run_decode(const DecodeOptions& o) {
  attn::check_decode_options(attn::Door::Cli, o.tokens, o.top, o.prefill);
  if (o.tokens) return run_generation(o);
  for (const auto& [given, name] : {std::pair{o.head >= 0, "--head"}, std::pair{o.format != "text", "--format"}}) {
    if (given) throw attn::InputError(fmt::format("{}: goes with --tokens N (the whole model writing N tokens)", name));
  }
  if (attn::model::names_checkpoint(o.file)) attn::model::require_model_fits(attn::model::load_checkpoint_input(o.file, "attn decode"), "attn decode", false, 0);
  const attn::Spec spec = load_checked(o.file, o.resources);
  attn::require_machine_fits(attn::kept_bytes(attn::plan_trace(spec)), "attn decode", "the full causal trace's tensors, as attn cost counts them");
  auto backend = attn::make_backend(o.backend);
  attn::require_fits_on(*backend, spec);  // the device's memory, as load_checked did the host's
  const attn::Decode d = attn::run_decode(spec, *backend, o.prefill);
  attn::TextOptions t;
  t.precision = o.precision;
  t.color = color_mode(o.color);
  t.width = terminal_width(o.width);
  t.code = o.code;
  t.explain = o.explain;
  // --steps must name steps of a decoding pass (the last token's holds every kind); unknown ids are refused there
  if (!o.steps.empty()) attn::select_steps(d.tokens.back(), o.steps, "", "");
  print_report(t.width, [&](std::ostream& os) { attn::render_decode_text(d, os, t, o.steps); });
  std::cout.flush();
  return d.agrees() ? kExitOk : kExitDiffers;
}

}  // namespace

Runner add_decode(CLI::App& app) { return command(app, setup_decode, run_decode); }

}  // namespace attn_cli
