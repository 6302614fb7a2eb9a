// Google Benchmark cases for attn's own side of bench/run.py: the pipeline at each benchmark shape
// (every intermediate kept), rendering a large trace as summarised text, --dump of every step, and
// loading a 768 x 2304 float32 weight from .npy and from JSON. Threads: OMP_NUM_THREADS.
// Timings live here, never in tests/.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "attn/spec/parse.hpp"
#include "attn/numerics/backend.hpp"
#include "attn/tools/cost.hpp"
#include "attn/numerics/cpu/gemm.hpp"
#include "attn/io/npy.hpp"
#include "attn/pipeline/pipeline.hpp"
#include "attn/render/render.hpp"
#include "attn/core/spec.hpp"

namespace {

std::string causal_spec(int T) {
  return "{\"mode\": \"causal\", \"heads\": 12, \"random\": {\"seed\": 0, \"B\": 1, \"T\": " + std::to_string(T) +
         ", \"C\": 768, \"fused\": true, \"output_projection\": true}}";
}

const std::string kShapeFlow = R"({"mode": "multi-head", "heads": 8, "random": {"seed": 0, "B": 2, "T": 4, "C": 512, "fused": true, "output_projection": true}})";

std::string read(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Parse + pipeline + summarised text: what `attn run` does, without process start.
void BM_CatSatInProcess(benchmark::State& state) {
  const std::string text = read(ATTN_SOURCE_DIR "/examples/cat_sat.json");
  for (auto _ : state) {
    auto be = attn::make_cpu_backend();
    const auto trace = attn::run_pipeline(attn::parse_spec(text, "cat_sat.json"), *be);
    std::ostringstream out;
    attn::render_text(trace, out, {});
    benchmark::DoNotOptimize(out.str().size());
  }
}
BENCHMARK(BM_CatSatInProcess)->Unit(benchmark::kMicrosecond);

// The pipeline alone (spec parsed once): every intermediate computed and kept.
void BM_Pipeline(benchmark::State& state, const std::string& text) {
  const attn::Spec spec = attn::parse_spec(text, "bench");
  auto be = attn::make_cpu_backend();
  for (auto _ : state) {
    auto trace = attn::run_pipeline(spec, *be);
    benchmark::DoNotOptimize(trace.steps.back().value.data());
  }
  state.counters["kept_bytes"] = attn::kept_bytes(attn::plan_trace(spec));
}
BENCHMARK_CAPTURE(BM_Pipeline, shape_flow_2x4x512, kShapeFlow)->Unit(benchmark::kMicrosecond);

// What a trace costs (the dry run): its FLOPs, and the bytes a fully materialised trace keeps.
void BM_Plan(benchmark::State& state) {
  const attn::Spec spec = attn::parse_spec(causal_spec(static_cast<int>(state.range(0))), "bench");
  attn::Trace plan;
  for (auto _ : state) benchmark::DoNotOptimize(plan = attn::plan_trace(spec));
  double flops = 0;
  for (const auto& s : plan.steps) flops += s.flops;
  state.counters["flops"] = flops;
  state.counters["kept_bytes"] = attn::kept_bytes(plan);
  state.SetLabel(attn::gemm::kernel_name());
}
BENCHMARK(BM_Plan)->Arg(1024)->Arg(2048)->Arg(4096)->Unit(benchmark::kMicrosecond);

// The machine's fresh-memory write rate: 256 MB mapped, populated and written, as attn's large
// tensors are (bench/run.py's limit divides bytes written by it).
void BM_FreshWrite(benchmark::State& state) {
  const std::int64_t n = std::int64_t{64} << 20;  // floats
  for (auto _ : state) {
    attn::Tensor t = attn::Tensor::uninitialized({n});
    float* p = t.mutable_data();
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(i & 7);
    benchmark::DoNotOptimize(p);
  }
  state.SetBytesProcessed(state.iterations() * n * static_cast<std::int64_t>(sizeof(float)));
}
BENCHMARK(BM_FreshWrite)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Pipeline, causal_T1024, causal_spec(1024))->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK_CAPTURE(BM_Pipeline, causal_T2048, causal_spec(2048))->Unit(benchmark::kMillisecond)->MinTime(4.0);

// Rendering a T = 1024 trace as summarised text (the default output).
void BM_RenderText_T1024(benchmark::State& state) {
  auto be = attn::make_cpu_backend();
  const auto trace = attn::run_pipeline(attn::parse_spec(causal_spec(1024), "bench"), *be);
  for (auto _ : state) {
    std::ostringstream out;
    attn::render_text(trace, out, {});
    benchmark::DoNotOptimize(out.str().size());
  }
}
BENCHMARK(BM_RenderText_T1024)->Unit(benchmark::kMillisecond);

// --dump: every step of a T = 1024 trace as .npy (the trace.json beside them is metadata only).
void BM_Dump_T1024(benchmark::State& state) {
  auto be = attn::make_cpu_backend();
  const auto trace = attn::run_pipeline(attn::parse_spec(causal_spec(1024), "bench"), *be);
  const auto dir = std::filesystem::temp_directory_path() / "attn_bench_dump";
  std::filesystem::create_directories(dir);
  for (auto _ : state) {
    for (const auto& s : trace.steps) attn::write_npy((dir / (s.id + ".npy")).string(), s.value);
    std::ofstream json(dir / "trace.json");
    attn::render_json(trace, json, true);
  }
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_Dump_T1024)->Unit(benchmark::kMillisecond);

// Loading a 768 x 2304 float32 weight (GPT-2 small's c_attn) from .npy and from JSON text.
struct Weight {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "attn_bench_weight";
  std::string json;
  Weight() {
    std::filesystem::create_directories(dir);
    std::mt19937 g(0);
    std::normal_distribution<float> n(0.0f, 0.02f);
    std::vector<float> v(768 * 2304);
    for (auto& x : v) x = n(g);
    attn::write_npy((dir / "w.npy").string(), attn::Tensor({768, 2304}, v));
    std::ostringstream o;
    o << "{\"embeddings\": [[" << std::string(767 * 3, ' ') << "0";
    for (int i = 1; i < 768; ++i) o << ", 0";
    o << "]], \"weights\": {\"W_qkv\": [";
    o.precision(9);
    for (int r = 0; r < 768; ++r) {
      o << (r ? ",\n[" : "[");
      for (int c = 0; c < 2304; ++c) o << (c ? ", " : "") << v[static_cast<std::size_t>(r * 2304 + c)];
      o << "]";
    }
    o << "]}}";
    json = o.str();
  }
};

void BM_LoadWeightNpy(benchmark::State& state) {
  static Weight w;
  for (auto _ : state) benchmark::DoNotOptimize(attn::read_npy((w.dir / "w.npy").string(), "W_qkv").data());
}
BENCHMARK(BM_LoadWeightNpy)->Unit(benchmark::kMillisecond);

void BM_LoadWeightJson(benchmark::State& state) {
  static Weight w;
  for (auto _ : state) benchmark::DoNotOptimize(attn::parse_spec(w.json, "w.json").w.W_qkv->data());
  state.counters["json_bytes"] = static_cast<double>(w.json.size());
}
BENCHMARK(BM_LoadWeightJson)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
