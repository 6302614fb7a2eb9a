// CPU against CUDA on every example and on random problems with awkward sizes: the same step ids and
// shapes exactly, values within compare.hpp's |cpu - gpu| <= atol + rtol * |gpu| (non-finite values exactly).
// Prints each step's largest difference and the first mismatches. Exit 0 agree, 1 differ,
// 77 skipped (no CUDA backend in this build, no device, a busy or unusable one, or one without room
// for a problem's trace), saying which.
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "attn/backend.hpp"
#include "attn/compare.hpp"
#include "attn/error.hpp"
#include "attn/pipeline.hpp"
#include "attn/spec.hpp"

namespace {

constexpr attn::Tolerance kTolerance{1e-5, 1e-4};

struct Problem {
  std::string name;
  attn::Spec spec;
};

std::string random_spec(const std::string& mode, int B, int T, int S, int C, int H, const std::string& extra = "") {
  return fmt::format(R"({{"mode": "{}", "heads": {}, "random": {{"seed": 7, "B": {}, "T": {}, "S": {}, "C": {}, "output_projection": true}}{}}})",
                     mode, H, B, T, S, C, extra.empty() ? "" : ", " + extra);
}

// Returns the number of mismatching entries; prints a line per step and the worst mismatches.
int compare(const std::string& name, const attn::Trace& cpu, const attn::Trace& gpu) {
  if (cpu.steps.size() != gpu.steps.size()) {
    std::cout << fmt::format("FAIL {}: {} steps on cpu, {} on cuda\n", name, cpu.steps.size(), gpu.steps.size());
    return 1;
  }
  int bad = 0;
  for (std::size_t i = 0; i < cpu.steps.size(); ++i) {
    const auto& a = cpu.steps[i];
    const auto& b = gpu.steps[i];
    if (a.id != b.id || a.value.shape() != b.value.shape()) {
      std::cout << fmt::format("FAIL {} step {}: id/shape {} {} vs {} {}\n", name, i, a.id, attn::shape_string(a.value.shape()), b.id,
                               attn::shape_string(b.value.shape()));
      ++bad;
      continue;
    }
    const auto d = attn::compare_step(a.id, a.value, b.value, kTolerance, cpu.config, a.dims);
    for (std::size_t k = 0; k < d.worst.size() && k < 3; ++k) {
      std::cout << fmt::format("  {} {} {}: cpu {} cuda {}\n", name, a.id, d.worst[k].position, attn::value_text(d.worst[k].a),
                               attn::value_text(d.worst[k].b));
    }
    bad += static_cast<int>(d.differ);
    std::cout << fmt::format("{} {:<28} {:<8} max |cpu - cuda| = {:.2e}\n", d.differ ? "FAIL" : "ok  ", name, a.id, d.max_abs);
  }
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  std::unique_ptr<attn::Backend> gpu;
  try {
    gpu = attn::make_backend("cuda");
  } catch (const attn::InputError& e) {
    std::cout << "SKIPPED: CPU/CUDA parity not checked: " << e.what() << "\n";
    return 77;
  }
  auto cpu = attn::make_cpu_backend();
  std::vector<Problem> problems;
  const std::string examples = argc > 1 ? argv[1] : "examples";
  for (const auto& f : std::filesystem::directory_iterator(examples)) {
    if (f.path().extension() == ".json") problems.push_back({f.path().filename().string(), attn::load_spec(f.path().string())});
  }
  const std::vector<std::pair<std::string, std::string>> randoms = {
      {"T=1", random_spec("self", 1, 1, 1, 4, 1)},
      {"odd sizes, H=3", random_spec("causal", 2, 7, 7, 15, 3)},
      {"larger than a block", random_spec("causal", 1, 300, 300, 64, 4)},
      {"H=16", random_spec("multi-head", 1, 33, 33, 64, 16)},
      {"cross S!=T", random_spec("cross", 2, 5, 9, 24, 2)},
      {"padding", random_spec("self", 2, 6, 6, 8, 2, R"("padding": {"lengths": [6, 3]})")},
      {"bottom-right", R"({"mode": "causal", "causal_align": "bottom-right", "q": [[1, 0], [0, 1]], "k": [[1, 0], [0, 1], [1, 1]], "v": [[1, 2], [3, 4], [5, 6]]})"},
      {"masked row nan", R"({"embeddings": [[1, 0], [0, 1]], "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}, "attn_mask": {"block": [[false, false], [true, true]]}, "masked_row": "nan"})"},
      {"masked row zeros", R"({"embeddings": [[1, 0], [0, 1]], "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}, "attn_mask": {"block": [[false, false], [true, true]]}, "masked_row": "zeros"})"},
      {"T=2048 C=768 H=12", random_spec("causal", 1, 2048, 2048, 768, 12)},
      {"dk != C, dv != dk, Co != dv", R"({"mode": "causal", "heads": 3, "random": {"seed": 9, "B": 2, "T": 7, "C": 10, "dk": 6, "dv": 9, "Co": 5, "output_projection": true}})"},
      {"cross Cs != C", R"({"mode": "cross", "heads": 2, "random": {"seed": 9, "T": 5, "S": 3, "C": 8, "Cs": 3, "dk": 4, "dv": 2, "output_projection": true}})"},
      {"fused 2dk+dv", R"({"mode": "multi-head", "heads": 2, "dv": 6, "random": {"seed": 9, "B": 2, "T": 4, "C": 5, "dk": 4, "fused": true}})"},
      // today's variants past a thread block: RoPE (both styles, partial, offset), grouped heads, windows, ALiBi, capping
      {"rope half, kv_heads 2 of 8, window", random_spec("causal", 2, 300, 300, 64, 8, R"("kv_heads": 2, "window": 37, "rope": {"offset": 5})")},
      {"rope interleaved partial, multi-query", random_spec("causal", 1, 129, 129, 48, 4, R"("kv_heads": 1, "rope": {"style": "interleaved", "dims": 6})")},
      {"alibi H=6, softcap, sinusoidal", random_spec("causal", 2, 65, 65, 24, 6, R"("alibi": true, "softcap": 5, "positions": "sinusoidal")")},
      {"cross, rope, kv_heads, fused", R"({"mode": "cross", "heads": 4, "kv_heads": 2, "rope": {}, "random": {"seed": 3, "T": 9, "S": 5, "C": 16, "fused": true}})"},
  };
  for (const auto& [name, text] : randoms) problems.push_back({name, attn::parse_spec(text, name)});
  int bad = 0;
  for (const auto& p : problems) {
    attn::Trace on_gpu;
    try {
      attn::require_fits_on(*gpu, p.spec);
      on_gpu = attn::run_pipeline(p.spec, *gpu);
    } catch (const attn::DeviceError& e) {  // the device's limits, not a difference: the check cannot be made here
      std::cout << "SKIPPED: CPU/CUDA parity not checked: " << p.name << ": " << e.what() << "\n";
      return 77;
    }
    bad += compare(p.name, attn::run_pipeline(p.spec, *cpu), on_gpu);
  }
  std::cout << fmt::format("parity: {} problems, {} mismatching entries (atol {}, rtol {})\n", problems.size(), bad, kTolerance.atol,
                           kTolerance.rtol);
  return bad == 0 ? 0 : 1;
}
