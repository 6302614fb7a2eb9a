// libFuzzer target over the input path: JSON text -> spec -> cost check -> trace -> every renderer
// and attn check. Bad input must end in an InputError (exit 2); anything else (another exception,
// a crash, a sanitizer report, a hang) is a bug. Traces are capped at 8 MB so each input stays fast.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include "attn/spec/parse.hpp"
#include "attn/numerics/backend.hpp"
#include "attn/tools/check.hpp"
#include "attn/tools/cost.hpp"
#include "attn/core/error.hpp"
#include "attn/pipeline/pipeline.hpp"
#include "attn/render/render.hpp"
#include "attn/core/spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  constexpr std::int64_t kMaxBytes = 8 << 20;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    // base dir: an empty directory, so relative {"npy": ...} paths name nothing
    const attn::Spec spec = attn::parse_spec(text, "fuzz.json", "/nonexistent-attn-fuzz-dir", kMaxBytes);
    attn::require_fits(attn::plan_trace(spec), kMaxBytes, "fuzz limit");
    auto backend = attn::make_cpu_backend();
    const attn::Trace trace = attn::run_pipeline(spec, *backend);
    std::ostringstream out;
    attn::TextOptions o;
    o.explain = true;
    o.heatmaps = {"weights", "scores"};
    attn::render_text(trace, out, o);
    attn::render_json(trace, out);
    attn::render_markdown(trace, out, o);
    attn::render_svg(trace, out, o);
    if (!spec.expect.empty()) {
      const auto report = attn::check_trace(spec, trace);
      attn::render_check_text(report, out);
      attn::render_check_json(report, out);
    }
  } catch (const attn::InputError&) {
    // refused with a message: the expected outcome for bad input
  } catch (const std::exception& e) {
    std::cerr << "fuzz_spec: not an InputError: " << e.what() << "\n";
    std::abort();
  }
  return 0;
}
