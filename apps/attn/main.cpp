// attn: the command-line wiring. Each subcommand has a file of its own with an options struct, a
// setup_* that declares its options and a run_* that only calls the library (cli.hpp).
// Exit codes: 0 ok, 1 a check/diff found differences, 2 bad input or usage, 3 internal error.
#include "cli.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/ranges.h>

#include "attn/core/suggest.hpp"

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
  attn run examples/masked_4x4.json              # causal mask on given scores
  attn run examples/shape_flow_2x4x512.json --shapes-only
  attn run examples/the_cat_sat.json --format json
  attn run examples/tiny_gpt2.json               # a layer of a (tiny) GPT-2 checkpoint on a sentence
  attn heads examples/tiny_llama.json            # every layer and head of a checkpoint at a glance
  attn decode examples/llama_like.json --prefill 3   # generation with a KV cache, a token at a time
  attn backward examples/cat_sat.json            # the backward pass: every gradient, from the output back

Standard input (- as the file): the JSON from another program
  echo '{"sentence": "cat sat",' \
       '"embeddings": [[1,0,1], [0,1,1]],' \
       '"weights": {"W_q": "identity",' \
       '"W_k": "identity", "W_v": "identity"}}' | attn run -

Checking a document's printed numbers (the input's "expect" block):
  attn check examples/masked_4x4.json

Input format: docs/input-format.md; every option: docs/usage.md; the manual: docs/README.md.
Exit codes: 0 ok, 1 a check or diff found differences, 2 bad input or usage, 3 internal error.)";

// A command's long option names as typed ("--explain"), and the subcommands' names, in --help's order.
std::vector<std::string> option_names(const CLI::App& cmd) {
  std::vector<std::string> names;
  for (const CLI::Option* o : cmd.get_options())
    for (const auto& l : o->get_lnames()) names.push_back("--" + l);
  return names;
}
std::vector<const CLI::App*> subcommands(const CLI::App& app) { return app.get_subcommands([](const CLI::App*) { return true; }); }
std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : subcommands(app)) names.push_back(sub->get_name());
  return names;
}

// " (did you mean --explain?)" for an unknown option of `cmd` ("--explian", "--explian=1", "-explain");
// for one that only another subcommand has, " (--step is an option of attn run)"; else "".
std::string option_hint(const CLI::App& app, const CLI::App& cmd, const std::string& arg) {
  const std::string name = arg.substr(0, arg.find('='));
  const std::string bare = name.substr(std::min(name.find_first_not_of('-'), name.size()));
  const auto names = option_names(cmd);
  std::vector<std::string_view> bare_names;
  for (const auto& n : names) bare_names.push_back(std::string_view(n).substr(2));
  // (one letter is close to every short name: it only differs in case, "--t" for --T)
  const auto one_letter = [&](std::string_view n) { return bare.empty() || n.size() != 1 || std::tolower(static_cast<unsigned char>(n[0])) != std::tolower(static_cast<unsigned char>(bare[0])); };
  auto best = attn::closest_all(bare, bare_names);
  if (bare.size() < 2) best.erase(std::remove_if(best.begin(), best.end(), one_letter), best.end());
  if (!best.empty()) return fmt::format(" (did you mean {}?)", attn::either(best, "--", ""));
  std::vector<std::string> owners;
  for (const CLI::App* sub : subcommands(app)) {
    const auto theirs = option_names(*sub);
    if (sub != &cmd && std::find(theirs.begin(), theirs.end(), name) != theirs.end()) owners.push_back("attn " + sub->get_name());
  }
  return owners.empty() ? "" : fmt::format(" ({} is an option of {})", name, fmt::join(owners, ", "));
}

// A usage error's message: CLI11's, but a mistyped subcommand or option gets the closest name (among
// the subcommands, or among the options of the subcommand given), and a missing subcommand the list.
std::string usage_message(CLI::App& app, const CLI::ParseError& e) {
  const auto parsed = app.get_subcommands();
  const CLI::App& cmd = parsed.empty() ? app : *parsed.front();
  const auto extras = app.remaining(true);
  const auto subs = subcommand_names(app);
  const std::string more = parsed.empty() ? "Run attn --help for more information." : fmt::format("Run attn {} --help for its options.", cmd.get_name());
  const bool no_subcommand = parsed.empty() && std::string_view(e.what()).starts_with("A subcommand is required");
  const auto word = std::find_if(extras.begin(), extras.end(), [](const std::string& a) { return !a.starts_with("-"); });
  if (no_subcommand && word != extras.end()) {
    const std::vector<std::string_view> candidates(subs.begin(), subs.end());
    const auto best = attn::closest(*word, candidates);
    return fmt::format("\"{}\" is not a subcommand{}; the subcommands: {}\n{}\n", *word, best ? fmt::format(" (did you mean \"{}\"?)", *best) : "",
                       fmt::join(subs, ", "), more);
  }
  if (no_subcommand && extras.empty()) return fmt::format("A subcommand is required: one of {}\n{}\n", fmt::join(subs, ", "), more);
  // (an ExtrasError's get_name() is its command's name: the type tells)
  if (dynamic_cast<const CLI::ExtrasError*>(&e) == nullptr && !no_subcommand) return fmt::format("{}\n{}\n", e.what(), more);
  std::vector<std::string> shown;
  for (const auto& a : extras) shown.push_back(a.starts_with("-") ? a + option_hint(app, cmd, a) : a);
  return fmt::format("The following argument{} not expected: {}\n{}\n", extras.size() > 1 ? "s were" : " was", fmt::join(shown, " "), more);
}

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
      {"exercise", add_exercise(app)}, {"grade", add_grade(app)},
      {"cost", add_cost(app)},       {"decode", add_decode(app)}, {"heads", add_heads(app)}, {"tokenize", add_tokenize(app)},
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::cerr << usage_message(app, e) << std::flush;
    return kExitBadInput;
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
