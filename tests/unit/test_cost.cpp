// Cost estimates: the dry run's shapes and FLOPs, kept bytes against a real trace, the memory guard.
#include <regex>
#include <sstream>

#include "attn/tools/cost.hpp"
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

TEST_CASE("attn cost says what its bytes count and prints counts as grouped integers", "[cost]") {
  std::ostringstream out;
  render_cost(spec_from_sizes({.B = 1, .T = 2, .S = 3, .C = 4, .H = 2, .Cs = 3, .dv = 2, .mode = Mode::Cross}), out);
  const std::string text = out.str();
  CHECK_THAT(text, Catch::Contains("\nbytes: what the trace keeps of each step, its elements × 4 (float32); a view shares the bytes of the "
                                   "step it views, and the weights keep each row's sum too\n"
                                   "FLOPs: floating-point operations, a multiply and an add counting as two\n"));
  // the weights and the scores have one shape; the weights' 16 B more are their row sums, and the report says so
  CHECK(std::regex_search(text, std::regex("\nscores +\\[2, 2, 3\\] +12 +48 +48 B  ← grows with T·S\n")));
  CHECK(std::regex_search(text, std::regex("\nweights +\\[2, 2, 3\\] +12 \\+ 4 +72 +64 B  ← grows with T·S\n")));
  CHECK_THAT(text, Catch::Contains("\nweights' 64 B: its 12 values (48 B) and its 4 row sums (16 B; [2, 2], each row's sum: the \"sum\" column "
                                   "the walkthrough shows beside the weights)\n"));
  CHECK(std::regex_search(text, std::regex("\ntotal +137 +360 +548 B\n")));  // 137 values kept × 4 = 548 B
  CHECK_FALSE(std::regex_search(text, std::regex("[0-9]\\.[0-9] ?[kMGT]?FLOP")));
  std::ostringstream big;
  render_cost(spec_from_sizes({.T = 100000, .C = 768, .H = 12, .mode = Mode::Causal}), big);
  CHECK(std::regex_search(big.str(), std::regex("\nq +\\[100000, 768\\] +76,800,000 +117,964,800,000 +307\\.2 MB\n")));
}
