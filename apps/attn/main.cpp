// attn: the command-line wiring. Each subcommand has a file of its own with an options struct, a
// setup_* that declares its options and a run_* that only calls the library (cli.hpp).
// Exit codes: 0 ok, 1 a check/diff found differences, 2 bad input or usage, 3 internal error.
#include "cli.hpp"

namespace {

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
  attn backward examples/cat_sat.json            the backward pass: every gradient, from the output back
  echo '{"sentence": "cat sat", "embeddings": [[1,0,1],[0,1,1]],
         "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}}' | attn run -

Checking a document's printed numbers (the input's "expect" block):
  attn check examples/masked_4x4.json

Input format: docs/input-format.md; every option: docs/usage.md; the manual: docs/README.md.
Exit codes: 0 ok, 1 a check or diff found differences, 2 bad input or usage, 3 internal error.)";

}  // namespace

int main(int argc, char** argv) {
  using namespace attn_cli;
  CLI::App app{"attn — Attention Tracer: scaled dot-product attention step by step, every tensor with its shape", "attn"};
  app.set_version_flag("--version", std::string("attn ") + attn::kVersion);
  app.formatter(std::make_shared<FittedFormatter>(terminal_width(0)));  // (before the subcommands, which copy it)
  app.footer(kExamples);
  app.require_subcommand(1);
  // in this order in --help
  const std::vector<std::pair<std::string, Runner>> commands = {
      {"run", add_run(app)},         {"backward", add_backward(app)}, {"check", add_check(app)},   {"diff", add_diff(app)},   {"diagnose", add_diagnose(app)},
      {"cost", add_cost(app)},       {"decode", add_decode(app)}, {"heads", add_heads(app)}, {"tokenize", add_tokenize(app)},
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, version, or the usage error
    return code == 0 ? kExitOk : kExitBadInput;
  }
  try {
    for (const auto& [name, runner] : commands)
      if (app.got_subcommand(name)) return runner();
    return kExitBadInput;
  } catch (const attn::InputError& e) {
    print_error(e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {
    print_error(std::string("internal error (a bug in attn, please report it): ") + e.what());
    return kExitInternal;
  }
}
