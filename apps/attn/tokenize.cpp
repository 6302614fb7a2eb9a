// attn tokenize: the token ids and pieces a checkpoint's tokenizer makes of a text.
#include "cli.hpp"

namespace attn_cli {
namespace {

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

int run_tokenize(const TokenizeOptions& o) {
  // a directory, or else a hub id ("org/name") found in the hub's local cache
  std::string dir = o.dir;
  if (!std::filesystem::exists(dir) && attn::model::looks_like_hub_id(dir)) dir = attn::model::find_in_hub_cache(dir, "main", "tokenize " + o.dir);
  if (o.format == "json") attn::model::render_tokenized(dir, o.text, std::cout, true);
  else print_report(terminal_width(o.width), [&](std::ostream& os) { attn::model::render_tokenized(dir, o.text, os, false); });
  std::cout.flush();
  return kExitOk;
}

}  // namespace

Runner add_tokenize(CLI::App& app) { return command(app, setup_tokenize, run_tokenize); }

}  // namespace attn_cli
