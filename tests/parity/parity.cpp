// CPU against CUDA, the whole pipeline, step by step: every example, every --mistake, masks of every
// kind, biases, every masked-row policy, every variant (general widths, RoPE, grouped kv heads,
// windows, ALiBi, soft-capping, absolute positions), attn decode's prefill and tokens, the tiled
// softmax (--flash), real checkpoints, a B = 8, T = 1024 GPT-2-sized layer, attn backward (every
// gradient, and the backward pass's mistakes), and --fused (the fused
// trace on both backends, and against the materialised context of the same backend: bit-identical
// on the CPU, within a tolerance on CUDA). Each problem runs on both backends and is compared with
// one function: the same step ids and shapes exactly, values within compare.hpp's
// |cpu - gpu| <= atol + rtol * |gpu| (non-finite values exactly); inputs refused are refused by both
// with the same message.
//
// Prints one line per problem (grouped by name) with its largest difference, the first mismatches
// under a failing one, and a summary line. Exit 0 agree, 1 differ, 77 skipped (no CUDA backend in
// this build, no device, a busy or unusable one, or one without room for a problem's trace),
// saying which.
//
// Developer switch: ATTN_PARITY_SELF=1 in the environment runs the CPU backend in place of CUDA
// (cpu against cpu, where every value must agree exactly: the tolerances become 0). It exercises
// every problem end to end on a machine without a GPU; it checks the test, not the CUDA backend.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attn/spec/parse.hpp"
#include "attn/numerics/backend.hpp"
#include "attn/tools/compare.hpp"
#include "attn/pipeline/decode.hpp"
#include "attn/core/error.hpp"
#include "attn/pipeline/flash.hpp"
#include "attn/pipeline/pipeline.hpp"
#include "attn/core/spec.hpp"
#include "attn/tools/cost.hpp"

namespace {

// cpu against cuda; a fused context against the materialised one on CUDA (a different summation)
constexpr attn::Tolerance kTolerance{1e-5, 1e-4};
constexpr attn::Tolerance kFusedTolerance{1e-5, 1e-4};
constexpr attn::Tolerance kExact{0, 0};
constexpr double kFlashTolerance = 1e-5;  // |flash − context|, as attn run --flash

// ---- inputs ------------------------------------------------------------------------------------

// Deterministic numbers for the JSON the problems give (biases, masks, tables, q/k/v): an LCG, four
// decimals, in (-1, 1).
struct Numbers {
  std::uint64_t state;
  explicit Numbers(std::uint64_t seed) : state(seed * 6364136223846793005ULL + 1442695040888963407ULL) {}
  double next() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(static_cast<std::int64_t>((state >> 33) % 20001) - 10000) / 10000.0;
  }
};

// A nested JSON array of `shape`, each entry made by `entry` (flat index -> JSON text).
std::string json_array(const std::vector<std::int64_t>& shape, const std::function<std::string(std::int64_t)>& entry) {
  std::int64_t flat = 0;
  std::function<std::string(std::size_t)> level = [&](std::size_t axis) {
    std::string out = "[";
    for (std::int64_t i = 0; i < shape[axis]; ++i) {
      if (i > 0) out += ", ";
      out += axis + 1 == shape.size() ? entry(flat++) : level(axis + 1);
    }
    return out + "]";
  };
  return level(0);
}

std::string numbers(const std::vector<std::int64_t>& shape, std::uint64_t seed, double scale = 1) {
  Numbers n(seed);
  return json_array(shape, [&](std::int64_t) { return fmt::format("{}", n.next() * scale); });
}

// An additive mask: numbers in (-2, 2), "-inf" where `blocked` says so.
std::string additive(const std::vector<std::int64_t>& shape, std::uint64_t seed, const std::function<bool(std::int64_t)>& blocked) {
  Numbers n(seed);
  return json_array(shape, [&](std::int64_t i) {
    const double x = n.next() * 2;
    return blocked(i) ? std::string("\"-inf\"") : fmt::format("{}", x);
  });
}

// A boolean mask of `shape`, true where `on` says so.
std::string booleans(const std::vector<std::int64_t>& shape, const std::function<bool(std::int64_t)>& on) {
  return json_array(shape, [&](std::int64_t i) { return on(i) ? std::string("true") : std::string("false"); });
}

// A seeded problem: mode, H, the random block's sizes, and any further keys.
std::string random_spec(const std::string& mode, int B, int T, int S, int C, int H, const std::string& extra = "") {
  return fmt::format(R"({{"mode": "{}", "heads": {}, "random": {{"seed": 7, "B": {}, "T": {}, "S": {}, "C": {}, "output_projection": true}}{}}})",
                     mode, H, B, T, S, C, extra.empty() ? "" : ", " + extra);
}

// Given q [B, T, dk], k [B, S, dk], v [B, S, dv] (S may differ from T outside cross mode), and any further keys.
std::string given_qkv(const std::string& mode, int H, int B, int T, int S, int dk, int dv, std::uint64_t seed, const std::string& extra = "") {
  return fmt::format(R"({{"mode": "{}", "heads": {}, "q": {}, "k": {}, "v": {}{}}})", mode, H, numbers({B, T, dk}, seed), numbers({B, S, dk}, seed + 1),
                     numbers({B, S, dv}, seed + 2), extra.empty() ? "" : ", " + extra);
}

// ---- the comparison ----------------------------------------------------------------------------

struct Sides {
  std::string a = "cpu", b = "cuda";
};

// What one problem found.
struct Outcome {
  std::int64_t bad = 0;        // mismatching entries (a missing step, a shape or a refusal counts 1)
  double worst = 0;            // largest |a - b| over finite pairs
  std::string worst_where;     // "context (fused vs materialised, cuda)"
  std::vector<std::string> mismatches;  // the first ones, printed under the problem's line
  std::string note;            // said on the problem's line ("refused on both: ...")
  bool skipped = false;        // the device's limits: no check made
  void fail(const std::string& line) {
    ++bad;
    if (mismatches.size() < 12) mismatches.push_back(line);
  }
};

// The one comparison. Every step of `a` against `b`'s: in order, the same ids and shapes (by_id
// false), or each of `a`'s steps against `b`'s step of that id (by_id true: a fused trace against
// the materialised one). `what` says which pair of traces this is.
void compare(Outcome& o, const std::string& what, const attn::Trace& a, const attn::Trace& b, const attn::Tolerance& tol, const Sides& sides,
             bool by_id = false) {
  if (!by_id && a.steps.size() != b.steps.size()) {
    std::vector<std::string> ia, ib;
    for (const auto& s : a.steps) ia.push_back(s.id);
    for (const auto& s : b.steps) ib.push_back(s.id);
    o.fail(fmt::format("{}: {} steps on {} ({}), {} on {} ({})", what, a.steps.size(), sides.a, fmt::join(ia, " "), b.steps.size(), sides.b,
                       fmt::join(ib, " ")));
    return;
  }
  for (std::size_t i = 0; i < a.steps.size(); ++i) {
    const auto& x = a.steps[i];
    const attn::Step* y = by_id ? b.find(x.id) : &b.steps[i];
    if (y == nullptr) {
      o.fail(fmt::format("{}: step {} is on {} only", what, x.id, sides.a));
      continue;
    }
    if (x.id != y->id || x.value.shape() != y->value.shape()) {
      o.fail(fmt::format("{}: step {}: {} {} on {}, {} {} on {}", what, i, x.id, attn::shape_string(x.value.shape()), sides.a, y->id,
                         attn::shape_string(y->value.shape()), sides.b));
      continue;
    }
    const auto d = attn::compare_step(x.id, x.value, y->value, tol, a.config, x.dims);
    if (d.max_abs > o.worst || o.worst_where.empty()) {
      o.worst = std::max(o.worst, d.max_abs);
      if (d.max_abs >= o.worst) o.worst_where = fmt::format("{} ({})", x.id, what);
    }
    if (d.differ > 0) {
      o.bad += d.differ - 1;
      for (std::size_t k = 0; k < d.worst.size() && k < 3; ++k) {
        const std::string line = fmt::format("{}: {} {}: {} {} {} {} ({} of {} entries differ)", what, x.id, d.worst[k].position, sides.a,
                                             attn::value_text(d.worst[k].a), sides.b, attn::value_text(d.worst[k].b), d.differ, d.compared);
        if (k == 0) o.fail(line);
        else if (o.mismatches.size() < 12) o.mismatches.push_back(line);
      }
    }
  }
}

// ---- running ------------------------------------------------------------------------------------

struct Ctx {
  attn::Backend* cpu;
  attn::Backend* gpu;
  Sides sides;
  bool self = false;  // ATTN_PARITY_SELF: the "gpu" is a second CPU backend
  attn::Tolerance tol(const attn::Tolerance& t) const { return self ? kExact : t; }
};

// A run on one backend: its trace, or the InputError it refused with.
struct Run {
  std::optional<attn::Trace> trace;
  std::string refused;
};

// backward: attn backward's trace (the forward steps, then every gradient)
Run run_on(attn::Backend& be, bool device, const attn::Spec& spec, const attn::PipelineOptions& options, bool backward = false) {
  Run r;
  try {
    if (device) attn::require_fits_on(be, spec);
    r.trace = backward ? attn::run_backward(spec, be, options) : attn::run_pipeline(spec, be, options);
  } catch (const attn::DeviceError&) {
    throw;  // the device's limits: the problem is skipped, not failed
  } catch (const attn::InputError& e) {
    r.refused = e.what();
  }
  return r;
}

// The two runs agree on whether the input is refused, and how. False when either refused.
bool both_ran(Outcome& o, const std::string& what, const Run& a, const Run& b, const Sides& sides) {
  if (a.trace && b.trace) return true;
  if (!a.trace && !b.trace) {
    if (a.refused != b.refused) o.fail(fmt::format("{}: refused differently: {}: {} | {}: {}", what, sides.a, a.refused, sides.b, b.refused));
    return false;
  }
  o.fail(fmt::format("{}: refused on {} only: {}", what, a.trace ? sides.b : sides.a, a.trace ? b.refused : a.refused));
  return false;
}

// The problem on both backends, every step compared (with backward, attn backward's: every gradient
// too). Returns the CPU refusal ("" when it ran).
std::string pipeline(Ctx& c, Outcome& o, const attn::Spec& spec, const attn::PipelineOptions& options = {}, bool backward = false) {
  const Run a = run_on(*c.cpu, false, spec, options, backward);
  const Run b = run_on(*c.gpu, true, spec, options, backward);
  if (both_ran(o, "trace", a, b, c.sides)) compare(o, "trace", *a.trace, *b.trace, c.tol(kTolerance), c.sides);
  return a.trace ? "" : a.refused;
}

// An input both backends must refuse, with the same message (containing `expect`).
void refusal(Ctx& c, Outcome& o, const attn::Spec& spec, const std::string& expect, const attn::PipelineOptions& options = {}) {
  const Run a = run_on(*c.cpu, false, spec, options);
  const Run b = run_on(*c.gpu, true, spec, options);
  if (both_ran(o, "refusal", a, b, c.sides)) {
    o.fail("refusal: ran on both; expected it refused (" + expect + ")");
    return;
  }
  if (a.refused.empty() || a.refused.find(expect) == std::string::npos) o.fail(fmt::format("refusal: expected \"{}\", got: {}", expect, a.refused));
  o.note = "refused on both: " + a.refused;
}

// --fused on both backends: the fused traces against each other, and each against the materialised
// trace of its own backend (every step the fused trace has; exact on the CPU); the materialised
// traces against each other too. `must_fuse`: a refusal of --fused is a failure. Returns whether it fused.
bool fused(Ctx& c, Outcome& o, const attn::Spec& spec, bool must_fuse, bool compare_materialised = true) {
  attn::PipelineOptions f;
  f.fused = true;
  const Run fa = run_on(*c.cpu, false, spec, f);
  const Run fb = run_on(*c.gpu, true, spec, f);
  const Run ma = run_on(*c.cpu, false, spec, {});
  const Run mb = run_on(*c.gpu, true, spec, {});
  if (compare_materialised && both_ran(o, "materialised", ma, mb, c.sides)) compare(o, "materialised", *ma.trace, *mb.trace, c.tol(kTolerance), c.sides);
  if (!both_ran(o, "fused", fa, fb, c.sides)) {
    if (must_fuse && !fa.trace && !fb.trace) o.fail("fused: refused: " + fa.refused);
    // a fused refusal of a fully masked row ("masked_row": "error") says what the materialised run says
    if (!fa.trace && !ma.trace && fa.refused != ma.refused) o.fail(fmt::format("fused: refused \"{}\", materialised \"{}\"", fa.refused, ma.refused));
    // what --fused does not cover is refused up front, saying "--fused: ..."; anything else the
    // materialised pass accepts, the fused one must too
    if (!must_fuse && !fa.trace && ma.trace && fa.refused.rfind("--fused: ", 0) != 0) o.fail("fused: refused what the materialised run accepts: " + fa.refused);
    if (!fa.trace && !fb.trace && o.note.empty()) o.note = "--fused refused on both: " + fa.refused;
    return false;
  }
  compare(o, "fused", *fa.trace, *fb.trace, c.tol(kTolerance), c.sides);
  if (!fa.trace->find("context")) o.fail("fused: no context step");
  if (fa.trace->find("weights") || fa.trace->find("scores")) o.fail("fused: the fused trace holds a [T, S] step");
  if (ma.trace) compare(o, "fused vs materialised, " + c.sides.a, *fa.trace, *ma.trace, kExact, {"fused", "materialised"}, true);
  if (mb.trace) compare(o, "fused vs materialised, " + c.sides.b, *fb.trace, *mb.trace, c.tol(kFusedTolerance), {"fused", "materialised"}, true);
  if (!ma.trace || !mb.trace) o.fail(fmt::format("fused ran, materialised refused: {}", ma.trace ? mb.refused : ma.refused));
  return true;
}

// attn decode on both backends: the prefill's trace and every token's, step by step; each backend's
// decoded rows against its own full causal trace within Decode::kTolerance.
void decode(Ctx& c, Outcome& o, const attn::Spec& spec, std::int64_t prefill) {
  attn::require_fits_on(*c.gpu, spec);
  const attn::Decode a = attn::run_decode(spec, *c.cpu, prefill);
  const attn::Decode b = attn::run_decode(spec, *c.gpu, prefill);
  compare(o, "prefill", a.prefill_trace, b.prefill_trace, c.tol(kTolerance), c.sides);
  if (a.tokens.size() != b.tokens.size()) {
    o.fail(fmt::format("decode: {} tokens on {}, {} on {}", a.tokens.size(), c.sides.a, b.tokens.size(), c.sides.b));
    return;
  }
  for (std::size_t k = 0; k < a.tokens.size(); ++k)
    compare(o, fmt::format("token {}", prefill + static_cast<std::int64_t>(k)), a.tokens[k], b.tokens[k], c.tol(kTolerance), c.sides);
  for (const auto* d : {&a, &b}) {
    if (!d->agrees())
      o.fail(fmt::format("decode on {}: decoded rows differ from the full trace by {:.3g} (prefill {:.3g}), above {:g}", d == &a ? c.sides.a : c.sides.b,
                         d->decoded_max, d->prefill_max, attn::Decode::kTolerance));
  }
  o.note = fmt::format("{} tokens after a prefill of {}; |decoded - full| {:.2e} on {}, {:.2e} on {}", a.tokens.size(), prefill,
                       a.decoded_max, c.sides.a, b.decoded_max, c.sides.b);
}

// A flash pass's outputs as a trace, one step per (batch row, head, query block), so the one
// comparison reads them.
attn::Trace flash_trace(const attn::Flash& f, const attn::Trace& from) {
  attn::Trace t;
  t.config = from.config;
  for (const auto& blk : f.blocks) {
    attn::Step s;
    s.id = fmt::format("flash.out b{} h{} q{}..{}", blk.b, blk.h, blk.q0, blk.q0 + blk.qn - 1);
    s.value = attn::Tensor({blk.qn, f.hv}, blk.out);
    t.steps.push_back(std::move(s));
  }
  return t;
}

// The tiled pass on each backend's trace: its outputs against each other, each within 1e-5 of its
// own trace's context, the same tiles skipped.
void flash(Ctx& c, Outcome& o, const attn::Spec& spec, std::int64_t BQ, std::int64_t BK) {
  attn::require_fits_on(*c.gpu, spec);
  const attn::Trace ta = attn::run_pipeline(spec, *c.cpu), tb = attn::run_pipeline(spec, *c.gpu);
  compare(o, "trace", ta, tb, c.tol(kTolerance), c.sides);
  const attn::Flash a = attn::run_flash(spec, ta, BQ, BK), b = attn::run_flash(spec, tb, BQ, BK);
  compare(o, fmt::format("flash {}x{}", BQ, BK), flash_trace(a, ta), flash_trace(b, tb), c.tol(kTolerance), c.sides);
  if (a.tiles_done != b.tiles_done || a.tiles_skipped != b.tiles_skipped)
    o.fail(fmt::format("flash: tiles done/skipped {}/{} on {}, {}/{} on {}", a.tiles_done, a.tiles_skipped, c.sides.a, b.tiles_done, b.tiles_skipped,
                       c.sides.b));
  for (const auto* f : {&a, &b}) {
    if (!(f->max_diff <= kFlashTolerance))
      o.fail(fmt::format("flash on {}'s trace: |flash - context| = {:.3g}, above {:g}", f == &a ? c.sides.a : c.sides.b, f->max_diff, kFlashTolerance));
  }
  o.note = fmt::format("{} tiles, {} skipped; |flash - context| {:.2e} on {}, {:.2e} on {}", a.tiles_done + a.tiles_skipped, a.tiles_skipped,
                       a.max_diff, c.sides.a, b.max_diff, c.sides.b);
}

struct Problem {
  std::string group, name;
  std::function<void(Ctx&, Outcome&)> run;
};

}  // namespace

int main(int argc, char** argv) {
  const char* self_env = std::getenv("ATTN_PARITY_SELF");
  const bool self = self_env != nullptr && std::string(self_env) == "1";
  std::unique_ptr<attn::Backend> gpu;
  if (self) {
    gpu = attn::make_cpu_backend();
    std::cout << "ATTN_PARITY_SELF=1: the CPU backend stands in for CUDA (cpu against cpu, exact)\n";
  } else {
    try {
      gpu = attn::make_backend("cuda");
    } catch (const attn::InputError& e) {
      std::cout << "SKIPPED: CPU/CUDA parity not checked: " << e.what() << "\n";
      return 77;
    }
  }
  auto cpu = attn::make_cpu_backend();
  Ctx ctx{cpu.get(), gpu.get(), Sides{"cpu", self ? "cpu'" : "cuda"}, self};
  const std::string examples = argc > 1 ? argv[1] : "examples";
  auto example = [&](const std::string& file) { return attn::load_spec((std::filesystem::path(examples) / file).string()); };
  auto text = [](const std::string& name, const std::string& json) { return attn::parse_spec(json, name); };

  std::vector<Problem> problems;
  auto add = [&](const std::string& group, const std::string& name, std::function<void(Ctx&, Outcome&)> run) {
    problems.push_back({group, name, std::move(run)});
  };
  auto add_spec = [&](const std::string& group, const std::string& name, const std::string& json) {
    add(group, name, [=](Ctx& c, Outcome& o) {
      const auto r = pipeline(c, o, attn::parse_spec(json, name));
      if (!r.empty()) o.fail("refused on both: " + r);
    });
  };

  // ---- every example, as given; and --fused wherever it is accepted ----
  std::vector<std::string> files;
  for (const auto& f : std::filesystem::directory_iterator(examples))
    if (f.path().extension() == ".json") files.push_back(f.path().filename().string());
  std::sort(files.begin(), files.end());
  for (const auto& required : {"tiny_gpt2.json", "tiny_llama.json", "diagnose_causal_2heads.json", "llama_like.json", "alibi_softcap.json"}) {
    if (std::find(files.begin(), files.end(), required) == files.end()) {
      std::cout << fmt::format("FAIL: {}/{} is missing (the checkpoints and mistakes need it)\n", examples, required);
      return 1;
    }
  }
  for (const auto& f : files) {
    add("examples", f, [=](Ctx& c, Outcome& o) {
      const auto r = pipeline(c, o, example(f));
      if (!r.empty()) o.fail("refused on both: " + r);
    });
  }
  int examples_fused = 0;
  for (const auto& f : files) {
    add("examples --fused", f, [=, &examples_fused](Ctx& c, Outcome& o) {
      if (fused(c, o, example(f), false, /*compare_materialised=*/false)) ++examples_fused;
    });
  }

  // ---- awkward sizes ----
  const std::vector<std::pair<std::string, std::string>> sizes = {
      {"T=1", random_spec("self", 1, 1, 1, 4, 1)},
      {"odd sizes, H=3", random_spec("causal", 2, 7, 7, 15, 3)},
      {"larger than a block", random_spec("causal", 1, 300, 300, 64, 4)},
      {"H=16", random_spec("multi-head", 1, 33, 33, 64, 16)},
      {"cross S!=T", random_spec("cross", 2, 5, 9, 24, 2)},
      {"padding", random_spec("self", 2, 6, 6, 8, 2, R"("padding": {"lengths": [6, 3]})")},
      {"bottom-right", R"({"mode": "causal", "causal_align": "bottom-right", "q": [[1, 0], [0, 1]], "k": [[1, 0], [0, 1], [1, 1]], "v": [[1, 2], [3, 4], [5, 6]]})"},
      {"T=2048 C=768 H=12", random_spec("causal", 1, 2048, 2048, 768, 12)},
      {"softmax row of 1025 keys", random_spec("cross", 1, 3, 1025, 16, 2)},
  };
  for (const auto& [name, json] : sizes) add_spec("sizes", name, json);

  // ---- B = 8, T = 1024: GPT-2 small's attention layer, fused W_qkv and W_o; materialised and --fused ----
  add("big", "B=8 T=1024 C=768 H=12 causal, W_qkv, W_o (materialised and --fused)", [=](Ctx& c, Outcome& o) {
    fused(c, o,
          text("big", R"({"mode": "causal", "heads": 12, "random": {"seed": 1, "B": 8, "T": 1024, "C": 768, "fused": true, "output_projection": true}})"),
          true);
  });

  // ---- every --mistake on every spec that accepts it ----
  const std::vector<std::pair<std::string, std::function<attn::Spec()>>> mistake_specs = {
      {"diagnose_causal_2heads.json", [=] { return example("diagnose_causal_2heads.json"); }},
      {"diagnose_general_2heads.json", [=] { return example("diagnose_general_2heads.json"); }},
      {"llama_like.json", [=] { return example("llama_like.json"); }},
      {"alibi_softcap.json", [=] { return example("alibi_softcap.json"); }},
      {"causal B=2 T=67 C=32 H=4, padding",
       [=] { return text("m1", random_spec("causal", 2, 67, 67, 32, 4, R"("padding": {"lengths": [67, 40]})")); }},
      {"causal B=2 T=70 H=4 kv 2, rope, window 9, alibi, softcap",
       [=] {
         return text("m2", random_spec("causal", 2, 70, 70, 32, 4, R"("kv_heads": 2, "window": 9, "rope": {"dims": 6}, "alibi": true, "softcap": 8)"));
       }},
  };
  std::map<std::string, int> mistake_runs;
  for (const auto& info : attn::all_mistakes()) {
    mistake_runs[info.name] = 0;
    for (const auto& entry : mistake_specs) {
      // (named copies, not structured bindings: clang 14, the hardening build's, cannot capture those)
      const std::string spec_name = entry.first;
      const auto make = entry.second;
      const attn::Mistake m = info.mistake;
      const std::string mistake = info.name;
      add("mistakes", fmt::format("{} on {}", mistake, spec_name), [=, &mistake_runs](Ctx& c, Outcome& o) {
        const attn::Spec spec = make();
        try {
          attn::require_applicable(m, spec);
        } catch (const attn::InputError& e) {
          o.note = std::string("not applicable: ") + e.what();
          return;
        }
        attn::PipelineOptions options;
        options.mistake = m;
        const auto refused = pipeline(c, o, spec, options, attn::is_backward(m));  // a backward mistake: attn backward
        if (refused.empty()) ++mistake_runs[mistake];
        else if (o.note.empty()) o.note = "refused on both: " + refused;
      });
    }
  }

  // ---- attn backward on every mistake spec: the forward steps and every gradient ----
  for (const auto& entry : mistake_specs) {
    const std::string spec_name = entry.first;
    const auto make = entry.second;
    add("backward", spec_name, [=](Ctx& c, Outcome& o) {
      const auto refused = pipeline(c, o, make(), {}, true);
      if (!refused.empty()) o.fail("backward refused on both: " + refused);
    });
  }

  // ---- masks: additive, per-batch boolean, the masked-row policies, a numeric fill; biases ----
  {
    const int B = 2, T = 7, S = 7, C = 12, H = 3;
    const std::string base = fmt::format(R"("heads": {}, "random": {{"seed": 21, "B": {}, "T": {}, "C": {}, "output_projection": true}})", H, B, T, C);
    // -inf on a scattering of entries, never a whole row
    const auto sparse_inf = [=](std::int64_t i) { return (i * 7) % 5 == 1 && i % S != 0; };
    add_spec("masks", "add [T,S] with -inf", fmt::format(R"({{"mode": "self", {}, "attn_mask": {{"add": {}}}}})", base, additive({T, S}, 1, sparse_inf)));
    add_spec("masks", "add [B,T,S] with -inf, causal",
             fmt::format(R"({{"mode": "causal", {}, "attn_mask": {{"add": {}}}}})", base, additive({B, T, S}, 2, sparse_inf)));
    add_spec("masks", "add [B,T,S], padding",
             fmt::format(R"({{"mode": "self", {}, "attn_mask": {{"add": {}}}, "padding": {{"lengths": [7, 4]}}}})", base, additive({B, T, S}, 3, sparse_inf)));
    add_spec("masks", "block [B,T,S]",
             fmt::format(R"({{"mode": "self", {}, "attn_mask": {{"block": {}}}}})", base, booleans({B, T, S}, [=](std::int64_t i) { return i % 3 == 1 && i % S != 2; })));
    add_spec("masks", "keep [B,T,S], causal",
             fmt::format(R"({{"mode": "causal", {}, "attn_mask": {{"keep": {}}}}})", base, booleans({B, T, S}, [=](std::int64_t i) { return i % 4 != 3 || i % S == 0; })));
    add_spec("masks", "keep [T,S] (B=2), window 3",
             fmt::format(R"({{"mode": "causal", {}, "window": 3, "attn_mask": {{"keep": {}}}}})", base, booleans({T, S}, [=](std::int64_t i) { return i % 5 != 2 || i % S == i / S; })));
    add_spec("masks", "keep [B,T,S] as 0/1, cross S=5",
             fmt::format(R"({{"mode": "cross", "heads": 3, "random": {{"seed": 22, "B": 2, "T": 7, "S": 5, "C": 12, "output_projection": true}}, "attn_mask": {{"keep": {}}}}})",
                         json_array({2, 7, 5}, [](std::int64_t i) { return (i % 3 == 2 && i % 5 != 0) ? std::string("0") : std::string("1"); })));
    // rows with every key blocked: row 1 of batch 0 by the boolean mask, row 4 of batch 1 by -inf, and padding's
    const auto full_row_block = booleans({B, T, S}, [=](std::int64_t i) { return (i / S == 1) || (i % 5 == 0 && i % S != 0); });
    const auto full_row_add = additive({B, T, S}, 4, [=](std::int64_t i) { return i / S == T + 4 || (i * 3) % 11 == 5; });
    for (const std::string policy : {"nan", "zeros", "uniform"}) {
      add_spec("masks", fmt::format("masked_row {}: block [B,T,S] with empty rows", policy),
               fmt::format(R"({{"mode": "self", {}, "masked_row": "{}", "attn_mask": {{"block": {}}}}})", base, policy, full_row_block));
      add_spec("masks", fmt::format("masked_row {}: add [B,T,S] with -inf rows", policy),
               fmt::format(R"({{"mode": "causal", {}, "masked_row": "{}", "attn_mask": {{"add": {}}}}})", base, policy, full_row_add));
      add_spec("masks", fmt::format("masked_row {}: bottom-right T > S, padding", policy),
               given_qkv("causal", 2, 2, 9, 4, 8, 6, 90, fmt::format(R"("causal_align": "bottom-right", "masked_row": "{}", "padding": {{"lengths": [4, 1]}})", policy)));
    }
    add("masks", "masked_row error: block [B,T,S] refused alike", [=](Ctx& c, Outcome& o) {
      refusal(c, o, text("e1", fmt::format(R"({{"mode": "self", {}, "attn_mask": {{"block": {}}}}})", base, full_row_block)),
              "masked: query row 1 \"t1\" (batch 0, head 0) has every key masked");
    });
    add("masks", "masked_row error: add -inf row refused alike", [=](Ctx& c, Outcome& o) {
      refusal(c, o, text("e2", fmt::format(R"({{"mode": "causal", {}, "masked_row": "error", "attn_mask": {{"add": {}}}}})", base, full_row_add)),
              "masked: query row 4 \"t4\" (batch 1, head 0) has every key masked");
    });
    add_spec("masks", "mask_fill -1e9, causal", fmt::format(R"({{"mode": "causal", {}, "mask_fill": -1e9}})", base));
    add_spec("masks", "mask_fill -1e9, block with empty rows",
             fmt::format(R"({{"mode": "self", {}, "mask_fill": -1e9, "attn_mask": {{"block": {}}}}})", base, full_row_block));
    add_spec("masks", "mask_fill -30, padding and add",
             fmt::format(R"({{"mode": "causal", {}, "mask_fill": -30, "padding": {{"lengths": [5, 7]}}, "attn_mask": {{"add": {}}}}})", base,
                         additive({T, S}, 5, [](std::int64_t) { return false; })));
    add_spec("masks", "mask_fill \"-inf\" given", fmt::format(R"({{"mode": "causal", {}, "mask_fill": "-inf"}})", base));
    // biases: separate (b_q, b_k, b_v, b_o), fused (b_qkv), grouped, general widths
    add_spec("biases", "b_q b_k b_v b_o",
             fmt::format(R"({{"mode": "causal", {}, "weights": {{"b_q": {}, "b_k": {}, "b_v": {}, "b_o": {}}}}})", base, numbers({C}, 31),
                         numbers({C}, 32), numbers({C}, 33), numbers({C}, 34)));
    add_spec("biases", "b_qkv b_o, fused",
             fmt::format(R"({{"mode": "causal", "heads": 3, "random": {{"seed": 24, "B": 2, "T": 7, "C": 12, "fused": true, "output_projection": true}}, "weights": {{"b_qkv": {}, "b_o": {}}}}})",
                         numbers({36}, 35), numbers({12}, 36)));
    add_spec("biases", "b_qkv, fused, kv_heads 1, dv != dk",
             fmt::format(R"({{"mode": "causal", "heads": 4, "kv_heads": 1, "random": {{"seed": 25, "B": 2, "T": 9, "C": 16, "dk": 8, "dv": 12, "fused": true, "output_projection": true}}, "weights": {{"b_qkv": {}}}}})",
                         numbers({8 + 2 + 3}, 37)));
    add_spec("biases", "b_q b_k b_v b_o, cross Cs != C, Co",
             fmt::format(R"({{"mode": "cross", "heads": 2, "random": {{"seed": 26, "B": 2, "T": 5, "S": 8, "C": 8, "Cs": 6, "dk": 4, "dv": 10, "Co": 3, "output_projection": true}}, "weights": {{"b_q": {}, "b_k": {}, "b_v": {}, "b_o": {}}}}})",
                         numbers({4}, 38), numbers({4}, 39), numbers({10}, 40), numbers({3}, 41)));
    add_spec("biases", "torch layout, b_q b_k b_v, kv_heads 2",
             fmt::format(R"({{"mode": "causal", "layout": "torch", "heads": 4, "kv_heads": 2, "random": {{"seed": 27, "T": 6, "C": 8}}, "weights": {{"b_q": {}, "b_k": {}, "b_v": {}}}}})",
                         numbers({8}, 42), numbers({4}, 43), numbers({4}, 44)));
  }

  // ---- variants ----
  {
    const std::vector<std::pair<std::string, std::string>> variants = {
        // general widths
        {"dk != C, dv != dk, Co != dv", R"({"mode": "causal", "heads": 3, "random": {"seed": 9, "B": 2, "T": 7, "C": 10, "dk": 6, "dv": 9, "Co": 5, "output_projection": true}})"},
        {"cross Cs != C", R"({"mode": "cross", "heads": 2, "random": {"seed": 9, "T": 5, "S": 3, "C": 8, "Cs": 3, "dk": 4, "dv": 2, "output_projection": true}})"},
        {"fused 2dk+dv", R"({"mode": "multi-head", "heads": 2, "dv": 6, "random": {"seed": 9, "B": 2, "T": 4, "C": 5, "dk": 4, "fused": true}})"},
        {"general widths past a block", R"({"mode": "causal", "heads": 4, "random": {"seed": 10, "B": 2, "T": 130, "C": 40, "dk": 24, "dv": 36, "Co": 20, "output_projection": true}})"},
        {"unscaled, scale 0.3", R"({"mode": "self", "heads": 2, "scale": 0.3, "random": {"seed": 11, "B": 2, "T": 6, "C": 8}})"},
        // RoPE
        {"rope half", random_spec("causal", 2, 19, 19, 32, 4, R"("rope": {})")},
        {"rope interleaved", random_spec("causal", 2, 19, 19, 32, 4, R"("rope": {"style": "interleaved"})")},
        {"rope partial dims 4 of 8, theta 500000", random_spec("causal", 2, 19, 19, 32, 4, R"("rope": {"dims": 4, "theta": 500000})")},
        {"rope offset 17, interleaved partial", random_spec("self", 1, 23, 23, 24, 2, R"("rope": {"style": "interleaved", "dims": 6, "offset": 17})")},
        {"rope cross S != T", random_spec("cross", 2, 6, 11, 16, 2, R"("rope": {"offset": 3})")},
        {"rope bottom-right, q k v given S > T", fmt::format(R"({{"mode": "causal", "causal_align": "bottom-right", "heads": 2, "rope": {{"offset": 6}}, "q": {}, "k": {}, "v": {}}})",
                                                              numbers({2, 3, 8}, 51), numbers({2, 7, 8}, 52), numbers({2, 7, 6}, 53))},
        {"rope half, kv_heads 2 of 8, window", random_spec("causal", 2, 300, 300, 64, 8, R"("kv_heads": 2, "window": 37, "rope": {"offset": 5})")},
        {"rope interleaved partial, multi-query", random_spec("causal", 1, 129, 129, 48, 4, R"("kv_heads": 1, "rope": {"style": "interleaved", "dims": 6})")},
        // grouped-query heads
        {"kv_heads 1 of 4", random_spec("multi-head", 2, 9, 9, 16, 4, R"("kv_heads": 1)")},
        {"kv_heads 3 of 6, dv != dk", R"({"mode": "causal", "heads": 6, "kv_heads": 3, "random": {"seed": 12, "B": 2, "T": 11, "C": 12, "dk": 18, "dv": 24, "output_projection": true}})"},
        {"kv_heads 2 of 4, fused W_qkv", R"({"mode": "causal", "heads": 4, "kv_heads": 2, "random": {"seed": 13, "B": 2, "T": 10, "C": 16, "fused": true, "output_projection": true}})"},
        {"cross, rope, kv_heads, fused", R"({"mode": "cross", "heads": 4, "kv_heads": 2, "rope": {}, "random": {"seed": 3, "T": 9, "S": 5, "C": 16, "fused": true}})"},
        // sliding windows
        {"window 1", random_spec("causal", 2, 9, 9, 8, 2, R"("window": 1)")},
        {"window > T", random_spec("causal", 2, 9, 9, 8, 2, R"("window": 40)")},
        {"window 3, padding", random_spec("causal", 2, 9, 9, 8, 2, R"("window": 3, "padding": {"lengths": [9, 7]})")},
        {"window 3, padding empties rows, masked_row zeros", random_spec("causal", 2, 9, 9, 8, 2, R"("window": 3, "padding": {"lengths": [9, 5]}, "masked_row": "zeros")")},
        {"window 4, bottom-right S > T", given_qkv("causal", 2, 2, 5, 12, 8, 6, 91, R"("causal_align": "bottom-right", "window": 4)")},
        // ALiBi and soft-capping
        {"alibi H=8", random_spec("causal", 2, 17, 17, 32, 8, R"("alibi": true)")},
        {"alibi H=6, softcap, sinusoidal", random_spec("causal", 2, 65, 65, 24, 6, R"("alibi": true, "softcap": 5, "positions": "sinusoidal")")},
        {"alibi given slopes, self", random_spec("self", 1, 8, 8, 12, 3, R"("alibi": {"slopes": [0.5, 0.125, 0.03125]})")},
        {"alibi bottom-right S > T", R"({"mode": "causal", "causal_align": "bottom-right", "heads": 2, "alibi": true, "q": [[1, 0, 0.5, 1], [0, 1, 1, -1]], "k": [[1, 0, 0, 1], [0, 1, 0, 0], [1, 1, 1, 1], [0.5, -1, 0, 2]], "v": [[1, 2], [3, 4], [5, 6], [7, 8]]})"},
        {"softcap 0.5 alone", random_spec("self", 2, 7, 7, 8, 2, R"("softcap": 0.5)")},
        {"softcap 30, causal, padding", random_spec("causal", 2, 7, 7, 8, 2, R"("softcap": 30, "padding": {"lengths": [7, 2]})")},
        // absolute positions
        {"positions sinusoidal", random_spec("causal", 2, 13, 13, 10, 2, R"("positions": "sinusoidal")")},
        {"positions learned P > T", random_spec("causal", 2, 6, 6, 8, 2, fmt::format(R"("positions": {{"learned": {}}})", numbers({9, 8}, 61)))},
        {"positions sinusoidal, cross", random_spec("cross", 2, 5, 7, 8, 2, R"("positions": "sinusoidal")")},
        // given q, k, v and given scores
        {"q k v given, dv != dk, batched", fmt::format(R"({{"mode": "causal", "heads": 2, "q": {}, "k": {}, "v": {}}})", numbers({2, 5, 4}, 62),
                                                       numbers({2, 5, 4}, 63), numbers({2, 5, 6}, 64))},
        {"q k given, no v", fmt::format(R"({{"mode": "self", "q": {}, "k": {}}})", numbers({4, 3}, 65), numbers({4, 3}, 66))},
        {"scores [B,H,T,S] given with v", fmt::format(R"({{"mode": "causal", "heads": 2, "scores": {}, "v": {}}})", numbers({2, 2, 5, 5}, 67, 3),
                                                      numbers({2, 5, 4}, 68))},
    };
    for (const auto& [name, json] : variants) add_spec("variants", name, json);

    // attn decode: the prefill and every token, both backends
    const std::vector<std::tuple<std::string, std::function<attn::Spec()>, std::int64_t>> decodes = {
        {"llama_like.json, prefill 2", [=] { return example("llama_like.json"); }, 2},
        {"alibi_softcap.json, prefill 1", [=] { return example("alibi_softcap.json"); }, 1},
        {"diagnose_general_2heads.json, prefill 3", [=] { return example("diagnose_general_2heads.json"); }, 3},
        {"tiny_llama.json (checkpoint), prefill 2", [=] { return example("tiny_llama.json"); }, 2},
        {"tiny_gpt2.json (checkpoint), prefill 4", [=] { return example("tiny_gpt2.json"); }, 4},
        {"B=2, rope interleaved partial offset, kv 1, window 5, softcap, sinusoidal, prefill 5",
         [=] {
           return text("d1", random_spec("causal", 2, 12, 12, 16, 4,
                                         R"("kv_heads": 1, "window": 5, "rope": {"style": "interleaved", "dims": 2, "offset": 3}, "softcap": 6, "positions": "sinusoidal")"));
         },
         5},
        {"T=40 fused W_qkv, learned positions, biases, prefill 30",
         [=] {
           return text("d2", fmt::format(R"({{"mode": "causal", "heads": 2, "positions": {{"learned": {}}}, "random": {{"seed": 15, "T": 40, "C": 24, "fused": true, "output_projection": true}}, "weights": {{"b_qkv": {}, "b_o": {}}}}})",
                                         numbers({40, 24}, 71), numbers({72}, 72), numbers({24}, 73)));
         },
         30},
        {"T=70 alibi H=4, kv 2, prefill 1", [=] { return text("d3", random_spec("causal", 1, 70, 70, 32, 4, R"("kv_heads": 2, "alibi": true)")); }, 1},
    };
    for (const auto& d : decodes) {
      const std::string name = std::get<0>(d);
      const auto make = std::get<1>(d);
      const std::int64_t prefill = std::get<2>(d);
      add("decode", name, [=](Ctx& c, Outcome& o) { decode(c, o, make(), prefill); });
    }

    // the tiled softmax on both backends' traces
    const std::vector<std::tuple<std::string, std::function<attn::Spec()>, std::int64_t, std::int64_t>> flashes = {
        {"llama_like.json 2x3", [=] { return example("llama_like.json"); }, 2, 3},
        {"alibi_softcap.json 1x1", [=] { return example("alibi_softcap.json"); }, 1, 1},
        {"padding_batch2.json 2x2", [=] { return example("padding_batch2.json"); }, 2, 2},
        {"tiny_llama.json 4x4", [=] { return example("tiny_llama.json"); }, 4, 4},
        {"cross_translation.json 1x2", [=] { return example("cross_translation.json"); }, 1, 2},
        {"B=2 T=67 causal, padding, H=4, 16x8",
         [=] { return text("f1", random_spec("causal", 2, 67, 67, 32, 4, R"("padding": {"lengths": [67, 31]})")); }, 16, 8},
        {"B=2 T=50 rope, kv 2, window 7, alibi, softcap 10, 8x16",
         [=] { return text("f2", random_spec("causal", 2, 50, 50, 32, 4, R"("kv_heads": 2, "window": 7, "rope": {}, "alibi": true, "softcap": 10)")); }, 8, 16},
        {"mask add [B,T,S], mask_fill -1e9, 3x5",
         [=] {
           return text("f3", fmt::format(R"({{"mode": "causal", "heads": 2, "mask_fill": -1e9, "random": {{"seed": 16, "B": 2, "T": 9, "C": 8}}, "attn_mask": {{"add": {}}}}})",
                                         additive({2, 9, 9}, 6, [](std::int64_t i) { return i % 7 == 3; })));
         },
         3, 5},
        {"bottom-right S > T, window 30, 64x64", [=] { return text("f4", given_qkv("causal", 2, 1, 20, 90, 16, 12, 92, R"("causal_align": "bottom-right", "window": 30)")); }, 64, 64},
    };
    for (const auto& f : flashes) {
      const std::string name = std::get<0>(f);
      const auto make = std::get<1>(f);
      const std::int64_t BQ = std::get<2>(f), BK = std::get<3>(f);
      add("flash", name, [=](Ctx& c, Outcome& o) { flash(c, o, make(), BQ, BK); });
    }
  }

  // ---- --fused: accepted problems; the fused trace on both, and against the materialised context ----
  {
    const std::vector<std::pair<std::string, std::string>> fused_problems = {
        {"self, no mask", random_spec("self", 2, 9, 9, 16, 2)},
        {"causal, H=4", random_spec("causal", 2, 33, 33, 32, 4)},
        {"causal past a block, T=300", random_spec("causal", 1, 300, 300, 64, 4)},
        {"padding lengths", random_spec("self", 3, 10, 10, 16, 2, R"("padding": {"lengths": [10, 4, 1]})")},
        {"causal, padding lengths", random_spec("causal", 2, 10, 10, 16, 2, R"("padding": {"lengths": [3, 10]})")},
        {"window 3", random_spec("causal", 2, 20, 20, 16, 2, R"("window": 3)")},
        {"window 5, padding", random_spec("causal", 2, 20, 20, 16, 2, R"("window": 5, "padding": {"lengths": [20, 17]})")},
        {"window 5, padding empties rows, masked_row uniform", random_spec("causal", 2, 20, 20, 16, 2, R"("window": 5, "padding": {"lengths": [20, 12]}, "masked_row": "uniform")")},
        {"window 5, padding empties rows, masked_row zeros", random_spec("causal", 2, 20, 20, 16, 2, R"("window": 5, "padding": {"lengths": [20, 12]}, "masked_row": "zeros")")},
        {"kv_heads 2 of 8, rope, window", random_spec("causal", 2, 70, 70, 64, 8, R"("kv_heads": 2, "window": 11, "rope": {"offset": 5})")},
        {"kv_heads 1 of 4 (multi-query), dv != dk", R"({"mode": "causal", "heads": 4, "kv_heads": 1, "random": {"seed": 18, "B": 2, "T": 13, "C": 16, "dk": 8, "dv": 20, "output_projection": true}})"},
        {"T=1", random_spec("self", 1, 1, 1, 4, 1)},
        {"T=1, causal, H=2, B=3", random_spec("causal", 3, 1, 1, 8, 2)},
        {"cross S != T", random_spec("cross", 2, 5, 9, 24, 2)},
        {"cross S != T, padding, Cs != C", R"({"mode": "cross", "heads": 2, "random": {"seed": 19, "B": 2, "T": 7, "S": 11, "C": 8, "Cs": 6, "output_projection": true}, "padding": {"lengths": [11, 2]}})"},
        {"bottom-right S > T", given_qkv("causal", 2, 2, 5, 12, 8, 6, 93, R"("causal_align": "bottom-right")")},
        {"bottom-right S > T, window 3, rope", given_qkv("causal", 2, 2, 5, 12, 8, 6, 94, R"("causal_align": "bottom-right", "window": 3, "rope": {"offset": 7})")},
        {"bottom-right S > T, kv_heads 1 of 4", fmt::format(R"({{"mode": "causal", "causal_align": "bottom-right", "heads": 4, "kv_heads": 1, "q": {}, "k": {}, "v": {}}})",
                                                             numbers({2, 5, 8}, 95), numbers({2, 70, 2}, 96), numbers({2, 70, 3}, 97))},
        {"bottom-right, q k v given", R"({"mode": "causal", "causal_align": "bottom-right", "q": [[1, 0], [0, 1]], "k": [[1, 0], [0, 1], [1, 1]], "v": [[1, 2], [3, 4], [5, 6]]})"},
        {"rope interleaved partial, positions sinusoidal", random_spec("causal", 2, 15, 15, 16, 2, R"("rope": {"style": "interleaved", "dims": 4}, "positions": "sinusoidal")")},
        {"biases, fused W_qkv", fmt::format(R"({{"mode": "causal", "heads": 2, "random": {{"seed": 21, "B": 2, "T": 9, "C": 8, "fused": true, "output_projection": true}}, "weights": {{"b_qkv": {}, "b_o": {}}}}})",
                                            numbers({24}, 81), numbers({8}, 82))},
        {"scale none", R"({"mode": "causal", "heads": 2, "scale": "none", "random": {"seed": 22, "B": 2, "T": 6, "C": 8}})"},
        {"scale 0.3", R"({"mode": "causal", "heads": 2, "scale": 0.3, "random": {"seed": 22, "B": 2, "T": 6, "C": 8}})"},
        {"H=16, hs=4", random_spec("multi-head", 1, 33, 33, 64, 16)},
        {"hs = 128, T=200", random_spec("causal", 1, 200, 200, 256, 2)},
    };
    for (const auto& problem : fused_problems) {
      const std::string name = problem.first, json = problem.second;
      add("--fused", name, [=](Ctx& c, Outcome& o) { fused(c, o, attn::parse_spec(json, name), true); });
    }
    // fully masked rows (bottom-right, T > S; padding to 1 with a window) under every policy
    for (const std::string policy : {"nan", "zeros", "uniform"}) {
      add("--fused", fmt::format("masked_row {}: bottom-right T > S, padding", policy), [=](Ctx& c, Outcome& o) {
        fused(c, o, text("fm", given_qkv("causal", 2, 2, 9, 4, 8, 6, 90, fmt::format(R"("causal_align": "bottom-right", "masked_row": "{}", "padding": {{"lengths": [4, 1]}})", policy))),
              true);
      });
    }
    // the first empty row: batch 0's row 0 (bottom-right, T - S = 5 rows see no key); batch 1's padding empties none earlier
    for (const bool use_fused : {true, false}) {
      add("--fused", fmt::format("masked_row error: bottom-right T > S refused ({})", use_fused ? "fused" : "materialised"), [=](Ctx& c, Outcome& o) {
        attn::PipelineOptions f;
        f.fused = use_fused;
        refusal(c, o, text("fe", given_qkv("causal", 2, 2, 9, 4, 8, 6, 90, R"("causal_align": "bottom-right", "padding": {"lengths": [4, 1]})")),
                "masked: query row 0 \"t0\" (batch 0, head 0) has every key masked; its softmax is undefined", f);
      });
    }
    // what --fused refuses, refused alike on both
    const std::vector<std::tuple<std::string, std::string, std::string>> fused_refusals = {
        {"alibi", random_spec("causal", 1, 5, 5, 8, 2, R"("alibi": true)"), "--fused: ALiBi's bias is a step of its own"},
        {"softcap", random_spec("causal", 1, 5, 5, 8, 2, R"("softcap": 5)"), "--fused: soft-capping is a step of its own"},
        {"attn_mask", random_spec("self", 1, 2, 2, 4, 1, R"("attn_mask": {"block": [[false, true], [false, false]]})"), "--fused: a given attn_mask"},
        {"mask_fill", random_spec("causal", 1, 5, 5, 8, 2, R"("mask_fill": -1e9)"), "--fused: mask_fill"},
        {"scores given", R"({"scores": [[1, 2], [3, 4]]})", "--fused: the scores are given"},
        {"no v", R"({"q": [[1, 0]], "k": [[1, 0]]})", "--fused: no v is given"},
    };
    for (const auto& r : fused_refusals) {
      const std::string name = std::get<0>(r), json = std::get<1>(r), expect = std::get<2>(r);
      add("--fused refused", name, [=](Ctx& c, Outcome& o) {
        attn::PipelineOptions f;
        f.fused = true;
        refusal(c, o, attn::parse_spec(json, name), expect, f);
      });
    }
    add("--fused refused", "with a --mistake", [=](Ctx& c, Outcome& o) {
      attn::PipelineOptions f;
      f.fused = true;
      f.mistake = attn::Mistake::ScaleMissing;
      refusal(c, o, example("diagnose_causal_2heads.json"), "--fused: a --mistake", f);
    });
  }

  // ---- run ----
  std::int64_t bad = 0;
  int failed = 0, skipped_device = 0, ran = 0;
  std::vector<std::string> device_reasons;
  std::string group;
  const auto start = std::chrono::steady_clock::now();
  for (const auto& p : problems) {
    if (p.group != group) {
      group = p.group;
      std::cout << fmt::format("== {} ==\n", group);
    }
    Outcome o;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      p.run(ctx, o);
    } catch (const attn::DeviceError& e) {  // the device's limits, not a difference: the check cannot be made here
      o.skipped = true;
      o.note = e.what();
    } catch (const std::exception& e) {
      o.fail(std::string("threw: ") + e.what());
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const bool not_applicable = o.bad == 0 && o.note.rfind("not applicable", 0) == 0;
    const char* tag = o.skipped ? "SKIP" : o.bad > 0 ? "FAIL" : not_applicable ? "n/a " : "ok  ";
    std::string line = fmt::format("{} {:<70}", tag, p.name);
    if (!o.skipped && !not_applicable && !o.worst_where.empty()) line += fmt::format(" max |diff| {:.2e} at {}", o.worst, o.worst_where);
    if (!o.note.empty()) line += (o.worst_where.empty() ? "  " : "; ") + o.note;
    if (secs >= 1) line += fmt::format(" [{:.1f} s]", secs);
    std::cout << line << "\n";
    for (const auto& m : o.mismatches) std::cout << "    " << m << "\n";
    if (o.skipped) {
      ++skipped_device;
      device_reasons.push_back(p.name + ": " + o.note);
    } else if (!not_applicable) {
      ++ran;
    }
    if (o.bad > 0) ++failed;
    bad += o.bad;
  }
  // every mistake ran on at least one spec
  for (const auto& [name, runs] : mistake_runs) {
    if (runs == 0) {
      std::cout << fmt::format("FAIL --mistake {} ran on no spec (refused or not applicable on every one)\n", name);
      ++failed, ++bad;
    }
  }
  if (examples_fused == 0) {
    std::cout << "FAIL --fused was accepted on no example\n";
    ++failed, ++bad;
  }
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << fmt::format("parity: {} problems ({} run, {} not applicable, {} skipped), {} failing, {} mismatching entries "
                           "({} against {}; atol {}, rtol {}{}) in {:.1f} s\n",
                           problems.size(), ran, problems.size() - static_cast<std::size_t>(ran) - static_cast<std::size_t>(skipped_device),
                           skipped_device, failed, bad, ctx.sides.a, ctx.sides.b, kTolerance.atol, kTolerance.rtol,
                           self ? "; ATTN_PARITY_SELF=1: exact" : "", total);
  if (bad > 0) return 1;
  if (skipped_device > 0) {
    std::cout << "SKIPPED: CPU/CUDA parity not checked on every problem: the device has no room:\n";
    for (const auto& r : device_reasons) std::cout << "  " << r << "\n";
    return 77;
  }
  return 0;
}
