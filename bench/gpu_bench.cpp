// attn's side of bench/gpu.py: one spec's trace on the CUDA backend, timed in process (the spec read
// once, a warm-up run, then each run until its trace is complete and checked; nothing rendered).
// Prints JSON: {"times": [seconds...], "downloaded": bytes, "uploaded": bytes} (bytes of one run).
// Usage: attn_gpu_bench SPEC.json [--reps N] [--fused] [--copy-back] [--kernel]
//   --fused      the context in one pass (attn run --fused)
//   --copy-back  every step copied to the host as it is made, as a run that shows them all does;
//                without it the trace stays on the GPU (as PyTorch eager keeps its tensors there)
//   --breakdown  each step's median time too (the GPU waited for after every step, as --timings
//                does: the total is then not the one to compare)
//   --kernel     the fused primitive alone, on the spec's B, T, H and hs: q, k and v random, on the GPU
//                before the clock starts (as the anchor's SDPA call alone), causal
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "attn/spec/parse.hpp"
#include "attn/numerics/backend.hpp"
#include "attn/core/error.hpp"
#include "attn/pipeline/pipeline.hpp"
#include "attn/core/spec.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: attn_gpu_bench SPEC.json [--reps N] [--fused] [--copy-back] [--kernel]\n";
    return 2;
  }
  int reps = 20;
  bool fused = false, copy_back = false, kernel = false, breakdown = false;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = std::stoi(argv[++i]);
    else if (std::strcmp(argv[i], "--fused") == 0) fused = true;
    else if (std::strcmp(argv[i], "--copy-back") == 0) copy_back = true;
    else if (std::strcmp(argv[i], "--kernel") == 0) kernel = true;
    else if (std::strcmp(argv[i], "--breakdown") == 0) breakdown = true;
    else {
      std::cerr << "attn_gpu_bench: unknown argument " << argv[i] << "\n";
      return 2;
    }
  }
  try {
    const attn::Spec spec = attn::load_spec(argv[1]);
    auto be = attn::make_backend("cuda");
    attn::PipelineOptions options;
    options.fused = fused;
    options.timings = breakdown;
    if (!copy_back) options.shown = {""};  // no step shown: none copied
    // --kernel: q, k, v (B, H, T, hs) uploaded once; each run is one fused_attention
    attn::BackendTensor q, k, v;
    if (kernel) {
      std::uint32_t state = 12345;
      auto random = [&state](attn::Shape shape) {
        attn::Tensor t = attn::Tensor::uninitialized(shape);
        for (std::int64_t i = 0; i < t.size(); ++i) {
          state = state * 1664525u + 1013904223u;
          t.mutable_data()[i] = static_cast<float>(state >> 8) / 16777216.0f - 0.5f;
        }
        return t;
      };
      const attn::Shape shape{spec.B, spec.H, spec.T, spec.hs()};
      q = be->upload(random(shape)), k = be->upload(random(shape)), v = be->upload(random(shape));
    }
    const attn::Backend::FusedMask causal{true, 0, 0, {}};
    const float scale = 1.0f / std::sqrt(static_cast<float>(spec.hs()));
    auto once = [&] {
      attn::Trace trace;
      if (kernel) {
        auto context = be->fused_attention(q, k, v, scale, causal, attn::Backend::EmptyRow::Nan);
        be->synchronize();
        return trace;
      }
      trace = attn::run_pipeline(spec, *be, options);
      be->synchronize();
      return trace;
    };
    once();  // warm-up: the weights generated and held on the host, cuBLAS's kernels loaded
    const auto before = be->traffic();
    std::vector<double> times;
    std::vector<std::pair<std::string, std::vector<double>>> steps;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      auto trace = once();
      times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      for (std::size_t i = 0; breakdown && i < trace.steps.size(); ++i) {
        if (steps.size() <= i) steps.emplace_back(trace.steps[i].id, std::vector<double>{});
        steps[i].second.push_back(trace.steps[i].seconds);
      }
    }
    for (auto& [id, ts] : steps) {
      std::sort(ts.begin(), ts.end());
      std::cerr << fmt::format("  {:<10} {:8.3f} ms\n", id, ts[ts.size() / 2] * 1000);
    }
    const auto after = be->traffic();
    std::cout << fmt::format(R"({{"times": [{}], "downloaded": {}, "uploaded": {}}})", fmt::join(times, ", "),
                             (after.downloaded - before.downloaded) / reps, (after.uploaded - before.uploaded) / reps)
              << "\n";
  } catch (const attn::InputError& e) {
    std::cerr << "attn_gpu_bench: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
