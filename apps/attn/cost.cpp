// attn cost: FLOPs and bytes of every step before running, and how they grow with T.
#include "cli.hpp"

namespace attn_cli {
namespace {

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
  cost->add_option("--B", o.sizes.B, "batch size (default 1)")->check(CLI::Range(std::int64_t{1}, kMaxSize));
  cost->add_option("--T", o.sizes.T, "query length")->check(CLI::Range(std::int64_t{1}, kMaxSize));
  cost->add_option("--S", o.sizes.S, "key/value length (cross; default T)")->check(CLI::Range(std::int64_t{1}, kMaxSize));
  cost->add_option("--C", o.sizes.C, "model width")->check(CLI::Range(std::int64_t{1}, kMaxSize));
  cost->add_option("--H", o.sizes.H, "heads (default 1)")->check(CLI::Range(std::int64_t{1}, kMaxSize));
  cost->add_option("--kv-heads", o.sizes.Hkv, "key/value heads, grouped-query attention (default H)")->check(CLI::Range(std::int64_t{1}, kMaxSize));
  cost->add_option("--Cs", o.sizes.Cs, "source width (cross; default C)")->check(CLI::Range(std::int64_t{1}, kMaxSize));
  cost->add_option("--dk", o.sizes.dk, "query/key width H·hs (default C)")->check(CLI::Range(std::int64_t{1}, kMaxSize));
  cost->add_option("--dv", o.sizes.dv, "value width H·hv (default dk)")->check(CLI::Range(std::int64_t{1}, kMaxSize));
  cost->add_option("--Co", o.sizes.Co, "output width (default C)")->check(CLI::Range(std::int64_t{1}, kMaxSize));
  cost->add_option("--mode", o.mode, "self (default), causal, cross or multi-head")->check(member_of({"self", "causal", "cross", "multi-head"}));
  cost->add_flag("--fused", o.sizes.fused, "one fused W_qkv projection");
  cost->add_flag("--no-output-projection", o.no_output_projection, "leave out W_o");
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

}  // namespace

Runner add_cost(CLI::App& app) { return command(app, setup_cost, run_cost); }

}  // namespace attn_cli
