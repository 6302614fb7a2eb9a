// The float64 backend (attn check's judge): the same steps as the CPU backend on every example,
// values within float32's error of them; inputs taken as written; its own values exact in double.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "attn/tools/check.hpp"
#include "helpers.hpp"

using namespace attn;
using namespace attn::test;

namespace {

// Every example, its forward or backward pass (a checkpoint's where it is built here).
std::vector<std::filesystem::path> examples() {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(ATTN_SOURCE_DIR) / "examples")) {
    if (e.path().extension() == ".json") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("the float64 backend gives the CPU backend's steps on every example, within float32's error", "[float64]") {
  int compared = 0;
  for (const auto& path : examples()) {
    Spec spec;
    try {
      spec = load_spec(path.string());
    } catch (const InputError&) {
      continue;  // an example of a refusal, or one that needs a checkpoint not built here
    }
    INFO(path.filename().string());
    auto cpu = make_cpu_backend();
    auto wide = make_float64_backend();
    const bool backward = path.filename().string().find("backward") != std::string::npos;
    const Trace a = backward ? run_backward(spec, *cpu) : run_pipeline(spec, *cpu);
    const Trace b = backward ? run_backward(spec, *wide) : run_pipeline(spec, *wide);
    REQUIRE(ids(a) == ids(b));
    for (std::size_t s = 0; s < a.steps.size(); ++s) {
      INFO(a.steps[s].id);
      REQUIRE(a.steps[s].value.shape() == b.steps[s].value.shape());
      REQUIRE(b.steps[s].value.wide() != nullptr);
      const auto n = a.steps[s].value.size();
      for (std::int64_t i = 0; i < n; ++i) {
        const double x = a.steps[s].value.at(i), y = b.steps[s].value.wide_at(i);
        if (!std::isfinite(x) || !std::isfinite(y)) {
          CHECK((x == y || (std::isnan(x) && std::isnan(y))));
          continue;
        }
        // float32 rounding, grown by the sums (scores of size ~100 lose digits in float32)
        CHECK(std::fabs(x - y) <= 1e-5 + 1e-5 * std::fabs(y));
        // the float32 values shown are the float64 ones rounded
        CHECK(b.steps[s].value.at(i) == static_cast<Scalar>(y));
      }
    }
    ++compared;
  }
  CHECK(compared >= 35);  // 39 examples when this was written
}

TEST_CASE("the float64 backend computes from the inputs as written, in double", "[float64]") {
  // 0.1 and 0.7 are not float32 numbers; 1/√3 is the double one; softmax in double
  const Spec spec = parse_spec(R"({"mode": "self", "q": [[0.1, 0.7], [0.3, 0.2]], "k": [[0.1, 0.7], [0.3, 0.2]],
                                   "v": [[1, 0], [0, 1]], "scale": 0.5773502691896258})", "t.json");
  auto wide = make_float64_backend();
  const Trace t = run_pipeline(spec, *wide);
  const auto& scores = step(t, "scores").value;
  CHECK(scores.wide_at(0) == 0.1 * 0.1 + 0.7 * 0.7);
  CHECK(scores.wide_at(1) == 0.1 * 0.3 + 0.7 * 0.2);
  const double s0 = (0.1 * 0.1 + 0.7 * 0.7) * 0.5773502691896258, s1 = (0.1 * 0.3 + 0.7 * 0.2) * 0.5773502691896258;
  CHECK(step(t, "scaled").value.wide_at(0) == s0);
  const double w0 = 1 / (1 + std::exp(s1 - s0));
  CHECK(step(t, "weights").value.wide_at(0) == Approx(w0).epsilon(1e-15));
  CHECK(std::fabs(step(t, "weights").value.wide_at(0) - static_cast<double>(step(t, "weights").value.at(0))) > 0);  // not float32's
  // the same spec on the CPU backend rounds 0.1 to float32 first: its scores differ beyond double's error
  auto cpu = make_cpu_backend();
  CHECK(std::fabs(static_cast<double>(step(run_pipeline(spec, *cpu), "scores").value.at(0)) - scores.wide_at(0)) > 1e-9);
}

TEST_CASE("attn check judges a step printed beyond float32's precision in float64, others in either", "[float64][check]") {
  // softmax([0.1·√2, 0]) in float64: 0.53532 (printed to 8 decimals and to 3)
  const double w0 = 1 / (1 + std::exp(-0.1 * std::sqrt(2.0)));
  const std::string base = R"({"mode": "self", "scores": [[0.14142135623730951, 0]], "v": [[1], [2]], "expect": {"weights": [[)";
  const auto checked = [&](const std::string& printed) {
    const Spec spec = parse_spec(base + printed + "]]}}", "t.json");
    auto cpu = make_cpu_backend();
    return check_spec(spec, *cpu);
  };
  const std::string right = fmt::format("{:.8f}, {:.8f}", w0, 1 - w0);
  const CheckReport r8 = checked(right);
  CHECK(r8.differences == 0);
  REQUIRE(r8.steps.size() == 1);
  CHECK(r8.steps[0].judge == Judge::Float64);
  // one unit off in the 8th decimal: flagged in float64, though within 4 float32 ulps
  const CheckReport off = checked(fmt::format("{:.8f}, {:.8f}", w0 + 1e-8, 1 - w0));
  REQUIRE(off.differing.size() == 1);
  CHECK(off.differing[0].judge == Judge::Float64);
  CHECK(off.differing[0].computed == Approx(w0).epsilon(1e-15));
  CHECK(off.differing[0].tolerance == Approx(5e-9));
  const CheckReport r3 = checked(fmt::format("{:.3f}, {:.3f}", w0, 1 - w0));
  CHECK(r3.differences == 0);
  CHECK(r3.steps[0].judge == Judge::Either);
}

TEST_CASE("a gradient printed 0 that is 0 in the math matches, though float32 leaves 8e-8", "[float64][check]") {
  // every value row sums to 3, so the upstream gradient of sum(output) reaches the weights as 3s, and
  // grad.scaled = w ⊙ (3 − 3·Σw) = 0; float32's Σw is not exactly 1
  const Spec spec = parse_spec(R"({"mode": "self", "q": [[0.3, 0.7], [0.1, 0.9], [0.5, 0.2]], "k": [[0.2, 0.4], [0.9, 0.1], [0.3, 0.3]],
      "v": [[1, 2], [2, 1], [0, 3]], "expect": {"grad.scaled": [[0, 0, 0], [0, 0, 0], [0, 0, 0]]}})", "t.json");
  auto cpu = make_cpu_backend();
  const Trace t32 = run_backward(spec, *cpu);
  double largest = 0;
  for (const Scalar v : step(t32, "grad.scaled").value.values()) largest = std::max(largest, std::fabs(static_cast<double>(v)));
  CHECK(largest > 1e-8);  // float32 alone: not 0
  const CheckReport r = check_spec(spec, *cpu);
  CHECK(r.differences == 0);
  // a printed 0 where the gradient is not 0 is still flagged
  const Spec off = parse_spec(R"({"mode": "self", "q": [[0.3, 0.7], [0.1, 0.9], [0.5, 0.2]], "k": [[0.2, 0.4], [0.9, 0.1], [0.3, 0.3]],
      "v": [[1, 2], [2, 1], [0, 4]], "expect": {"grad.scaled": [[0, 0, 0], [0, 0, 0], [0, 0, 0]]}})", "t.json");
  CHECK(check_spec(off, *cpu).differences > 0);
}

TEST_CASE("a float64 step carries the size of the terms that made it", "[float64]") {
  // 1·1 + (−1)·0.999 = 0.001, from terms of size 1.999; the weights of a row move with its scores' terms
  const Spec spec = parse_spec(R"({"mode": "self", "q": [[1, -1]], "k": [[1, 0.999], [0.5, 0]], "v": [[1], [2]], "scale": "none"})", "t.json");
  auto wide = make_float64_backend();
  const Trace t = run_pipeline(spec, *wide);
  const Tensor& scores = step(t, "scores").value;
  REQUIRE(scores.wide_terms() != nullptr);
  CHECK(scores.wide_at(0) == Approx(0.001).epsilon(1e-12));
  CHECK((*scores.wide_terms())[0] == Approx(1.999).epsilon(1e-12));
  CHECK((*scores.wide_terms())[1] == Approx(0.5).epsilon(1e-12));
  const Tensor& weights = step(t, "weights").value;
  const double w0 = weights.wide_at(0), w1 = weights.wide_at(1);
  const double spread = w0 * 1.999 + w1 * 0.5;  // Σ_i w_i·terms_i
  CHECK((*weights.wide_terms())[0] == Approx(w0 * (1.999 + spread + 1)).epsilon(1e-12));
  // inputs carry no terms: only a float64 run's steps do
  CHECK(spec.q.wide_terms() == nullptr);
}
