// Cost estimates: the dry run's shapes and FLOPs, kept bytes against a real trace, the memory guard.
#include <sstream>

#include "attn/cost.hpp"
#include "helpers.hpp"

using namespace attn;
using namespace attn::test;

TEST_CASE("the dry run has the real run's steps and shapes, with no values", "[cost]") {
  const std::string text = R"({"mode": "causal", "heads": 4, "random": {"seed": 2, "B": 2, "T": 6, "C": 8, "fused": true, "output_projection": true}})";
  const Trace real = trace_of(text);
  const Trace plan = plan_trace(parse_spec(text, "t"));
  REQUIRE(ids(plan) == ids(real));
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    CHECK(plan.steps[i].value.shape() == real.steps[i].value.shape());
    CHECK(plan.steps[i].dims == real.steps[i].dims);
    CHECK_FALSE(plan.steps[i].value.has_data());
  }
  CHECK(kept_bytes(plan) == kept_bytes(real));
}

TEST_CASE("FLOPs: 2mnk per product, softmax about 5 per entry", "[cost]") {
  const Trace p = plan_trace(spec_from_sizes({.B = 1, .T = 10, .C = 8, .H = 2, .mode = Mode::Causal}));
  CHECK(step(p, "q").flops == 2.0 * 10 * 8 * 8);
  CHECK(step(p, "scores").flops == 2.0 * 2 * 10 * 4 * 10);  // H · T · hs · S, times 2
  CHECK(step(p, "context").flops == 2.0 * 2 * 10 * 10 * 4);
  CHECK(step(p, "weights").flops == 5.0 * 2 * 10 * 10 + 2 * 10 * 10);  // softmax + row sums
  CHECK(step(p, "q.view").view);
  CHECK(step_bytes(step(p, "q.view")) == 0);
  CHECK(step_bytes(step(p, "scores")) == 2 * 10 * 10 * 4);
}

TEST_CASE("the memory guard refuses with the estimate and the largest step", "[cost][bad]") {
  const Trace p = plan_trace(spec_from_sizes({.B = 1, .T = 100000, .C = 768, .H = 12, .mode = Mode::Causal}));
  CHECK_THROWS_WITH(require_fits(p, std::int64_t{8} << 30, "as given"),
                    Catch::StartsWith("this trace would keep 2.0 TB of tensors, more than --max-memory 8.6 GB (as given); the largest "
                                      "step is weights [H, T, T] = [12, 100000, 100000] = 480.0 GB"));
  CHECK_NOTHROW(require_fits(plan_trace(spec_from_sizes({.T = 16, .C = 8})), 1 << 20, "as given"));
  CHECK(error_of(R"({"random": {"seed": 0, "T": 1000000000, "C": 1000000000}})") ==
        "embeddings: generating [1, 1000000000, 1000000000] floats would take 4000.0 PB, more than --max-memory " +
            human_bytes(static_cast<double>(default_max_memory())));
  CHECK(parse_bytes("8G", "--max-memory") == 8000000000LL);
  CHECK(parse_bytes("512M", "--max-memory") == 512000000LL);
  CHECK_THROWS_WITH(parse_bytes("lots", "--max-memory"), "--max-memory lots: expected a size such as 512M, 8G or 1000000 (bytes)");
}

TEST_CASE("attn cost computes the documents' 40 GB attention matrix at T = 100,000", "[cost]") {
  std::ostringstream out;
  render_cost(spec_from_sizes({.T = 100000, .C = 512, .H = 1}), out);
  CHECK_THAT(out.str(), Catch::Contains("one [T, S] attention matrix: 100000 × 100000 × 4 bytes = 40.0 GB"));
  CHECK_THAT(out.str(), Catch::Contains("scores   [100000, 100000]"));
  CHECK_THAT(out.str(), Catch::Contains("200000"));  // the growth table doubles T
}
