// attn decode, heads and tokenize: generation with a KV cache, and a real model's heads and tokens.
#include "cli.hpp"

namespace attn_cli {

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
  dec->add_flag("--code", o.code, "show each step as the PyTorch that computes it");
  dec->add_option("--steps", o.steps, "only these step ids, in every pass (comma-separated: k.cache,weights)")->delimiter(',');
  dec->add_option("--backend", o.backend, "cpu (default) or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  add_resources(dec, o.resources);
}

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

void setup_tokenize(CLI::App& app, TokenizeOptions& o) {
  auto* tok = app.add_subcommand("tokenize", "The token ids and pieces a checkpoint's tokenizer makes of a text (no special tokens added)");
  tok->add_option("--width", o.width, "display columns of the text (default: $COLUMNS, else the terminal's, else 80)")->check(CLI::Range(20, 1000));
  tok->add_option("dir", o.dir, "checkpoint directory (tokenizer.json, vocab.json + merges.txt, or tokenizer.model), or a model hub id "
                                "(org/name) in the hub's local cache")->required();
  tok->add_option("text", o.text, "the text")->required();
  tok->footer("Example:\n  $ attn tokenize examples/checkpoints/tiny-gpt2 \"The cat sat\"\n    byte-level BPE from vocab.json + merges.txt (457 tokens)\n    3 tokens\n       0       268  The\n       1       279  Ġcat\n       2       332  Ġsat");
  tok->add_option("--format", o.format, "text (default) or json")->check(CLI::IsMember({"text", "json"}));
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
  t.code = o.code;
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

}  // namespace attn_cli
