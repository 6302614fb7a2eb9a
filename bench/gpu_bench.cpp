// attn's side of bench/gpu.py: one spec's trace on the CUDA backend, timed in process (the spec read
// once, a warm-up run, then each run until its trace is complete; nothing rendered). Prints JSON:
// {"device": ..., "times": [seconds...], "downloaded": bytes, "uploaded": bytes} (bytes of one run).
// Usage: attn_gpu_bench SPEC.json [--reps N] [--fused]
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "attn/backend.hpp"
#include "attn/error.hpp"
#include "attn/pipeline.hpp"
#include "attn/spec.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: attn_gpu_bench SPEC.json [--reps N] [--fused]\n";
    return 2;
  }
  int reps = 20;
  bool fused = false;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = std::stoi(argv[++i]);
    else if (std::strcmp(argv[i], "--fused") == 0) fused = true;
    else {
      std::cerr << "attn_gpu_bench: unknown argument " << argv[i] << "\n";
      return 2;
    }
  }
  try {
    const attn::Spec spec = attn::load_spec(argv[1]);
    auto be = attn::make_backend("cuda");
    attn::PipelineOptions options;
    if (fused) throw attn::InputError("--fused: not built yet");
    auto once = [&] {
      auto trace = attn::run_pipeline(spec, *be, options);
      be->synchronize();
      return trace;
    };
    once();  // warm-up: the weights generated and held on the host, cuBLAS's kernels loaded
    const auto before = be->traffic();
    std::vector<double> times;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      auto trace = once();
      times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
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
