// attn tokenize: the token ids and pieces a checkpoint's tokenizer makes of a text.
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "cli.hpp"

namespace attn_cli {
namespace {

struct TokenizeOptions {
  int width = 0;  // 0: $COLUMNS, else the terminal's, else 80
  std::string dir;
  std::string text;
  bool text_given = false;  // "" is a text too
  std::string texts_file;   // --texts: a JSON array of texts
  std::string format = "text";
  attn::model::TokenizeOptions tokens;
};

void setup_tokenize(CLI::App& app, TokenizeOptions& o) {
  auto* tok = app.add_subcommand("tokenize", "The token ids and pieces a checkpoint's tokenizer makes of a text (no special tokens added unless asked)");
  tok->add_option("--width", o.width, "display columns of the text (default: $COLUMNS, else the terminal's, else 80)")->check(CLI::Range(20, 1000));
  tok->add_option("dir", o.dir, "checkpoint directory (tokenizer.json, vocab.json + merges.txt, vocab.txt or tokenizer.model), one of those "
                                "tokenizer files itself, or a model hub id (org/name) in the hub's local cache")->required();
  auto* text = tok->add_option_function<std::string>("text", [&o](const std::string& t) { o.text = t, o.text_given = true; }, "the text");
  tok->add_option("--texts", o.texts_file, "a file holding a JSON array of texts (\"-\": standard input), each tokenized in turn "
                                           "(with --format json, one line each)")->excludes(text);
  tok->add_flag("--split-special-tokens", o.tokens.split_special_tokens,
                "cut a special token written in the text (\"<|im_start|>\", \"</s>\") as text, instead of matching it as one token");
  tok->add_flag("--add-special-tokens", o.tokens.add_special_tokens,
                "put the tokenizer's own special tokens around the text (BOS, [CLS] ... [SEP]) as the hub's tokenizer does");
  tok->footer("Example:\n  $ attn tokenize examples/checkpoints/tiny-gpt2 \"The cat sat\"\n    byte-level BPE from vocab.json + merges.txt (457 tokens)\n    3 tokens\n       0       268  The\n       1       279  Ġcat\n       2       332  Ġsat");
  tok->add_option("--format", o.format, "text (default) or json")->check(member_of({"text", "json"}));
}

// --texts FILE's array of strings.
std::vector<std::string> read_texts(const std::string& file) {
  std::string content;
  if (file == "-") {
    content.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw attn::InputError(fmt::format("--texts {}: cannot open the file", file));
    content.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const auto j = nlohmann::json::parse(content, nullptr, false);
  if (j.is_discarded() || !j.is_array()) throw attn::InputError(fmt::format("--texts {}: expected a JSON array of texts", file));
  std::vector<std::string> texts;
  for (std::size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_string()) throw attn::InputError(fmt::format("--texts {}: [{}]: expected a string, got {}", file, i, j[i].dump()));
    texts.push_back(j[i].get<std::string>());
  }
  return texts;
}

int run_tokenize(const TokenizeOptions& o) {
  if (o.texts_file.empty() && !o.text_given) throw attn::InputError("tokenize: give the text to tokenize, or --texts FILE");
  const std::vector<std::string> texts = o.texts_file.empty() ? std::vector<std::string>{o.text} : read_texts(o.texts_file);
  // a directory, or else a hub id ("org/name") found in the hub's local cache
  std::string dir = o.dir;
  if (!std::filesystem::exists(dir) && attn::model::looks_like_hub_id(dir)) dir = attn::model::find_in_hub_cache(dir, "main", "tokenize " + o.dir);
  if (o.format == "json") attn::model::render_tokenized(dir, texts, o.tokens, std::cout, true);
  else print_report(terminal_width(o.width), [&](std::ostream& os) { attn::model::render_tokenized(dir, texts, o.tokens, os, false); });
  std::cout.flush();
  return kExitOk;
}

}  // namespace

Runner add_tokenize(CLI::App& app) { return command(app, setup_tokenize, run_tokenize); }

}  // namespace attn_cli
