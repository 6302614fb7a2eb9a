// attn diagnose on students made in memory: ties between mistakes that give the same numbers, and the
// scale factor read from the student's tensors. (The CLI fixtures and the NumPy students are in
// tests/CMakeLists.txt and tests/reference/.)
#include <algorithm>
#include <limits>
#include <sstream>

#include "attn/tools/diagnose.hpp"
#include "attn/io/trace_io.hpp"
#include "helpers.hpp"

using namespace attn;
using namespace attn::test;

namespace {

// C = 4, H = 2, hs = 2: 1/√C = 1/d_k = 0.5, the right factor 1/√2
const std::string kTwoHeads = R"({"mode": "causal", "heads": 2, "random": {"generator": "numpy", "distribution": "randn", "seed": 7,
                                  "T": 4, "C": 4, "output_projection": true}})";
// C = 8, H = 2, hs = 4: 1/√C = 0.3536 and 1/d_k = 0.25 differ
const std::string kWide = R"({"mode": "causal", "heads": 2, "random": {"seed": 5, "T": 4, "C": 8, "output_projection": true}})";

// A student who made `m`, saving only the steps named.
LoadedTrace student_of(const std::string& text, Mistake m, const std::vector<std::string>& saved) {
  auto backend = make_cpu_backend();
  PipelineOptions o;
  o.mistake = m;
  const Trace t = run_pipeline(parse_spec(text, "t.json"), *backend, o);
  LoadedTrace s;
  s.origin = "student/";
  for (const auto& id : saved) s.steps.push_back({id, step(t, id).value, {}});
  return s;
}

Diagnosis diagnosed(const std::string& text, const LoadedTrace& student) { return diagnose(parse_spec(text, "t.json"), "t.json", student, {}); }

std::string report(const Diagnosis& d) {
  std::ostringstream out;
  render_diagnosis_text(d, out);
  return out.str();
}

}  // namespace

TEST_CASE("diagnose: dividing by d_k where 1/√C = 1/d_k is a tie, said as one, with the factor used", "[diagnose]") {
  const Diagnosis d = diagnosed(kTwoHeads, student_of(kTwoHeads, Mistake::ScaleDk, {"scores", "scaled", "weights", "context"}));
  REQUIRE(d.matches.size() >= 2);
  CHECK(d.tied == 2);
  CHECK(std::string(d.matches[0].mistake->name) == "scale-sqrt-c");
  CHECK(std::string(d.matches[1].mistake->name) == "scale-dk");
  REQUIRE(d.scale.has_value());
  CHECK(d.scale->factor == Approx(0.5).epsilon(1e-6));
  CHECK(d.scale->right == "1/√2 = 0.7071");
  CHECK(d.scale->named == std::vector<std::string>{"1/√C = 1/√4 (scale-sqrt-c)", "1/d_k = 1/2 (scale-dk)"});
  const std::string text = report(d);
  CHECK_THAT(text, Catch::Contains("\nthe student's scale factor: 0.5 (the student's scaled ÷ the scores), where the right one is 1/√2 = 0.7071\n"));
  CHECK_THAT(text, Catch::Contains("\nscale-sqrt-c and scale-dk give the same numbers here (each reproduces the student's scaled and 2 of the 2 "
                                   "later steps): from these tensors attn cannot tell which the student made\n"));
  CHECK_THAT(text, Catch::EndsWith("\nverdict: scale-sqrt-c or scale-dk (a tie)\n"));
}

TEST_CASE("diagnose: the factor read from the weights alone; the scale mistakes told apart where C ≠ hs²", "[diagnose]") {
  // only the weights saved: the factor from the log-ratios of each row's weights against its scores
  const Diagnosis tie = diagnosed(kTwoHeads, student_of(kTwoHeads, Mistake::ScaleSqrtC, {"weights"}));
  REQUIRE(tie.scale.has_value());
  CHECK(tie.scale->factor == Approx(0.5).epsilon(1e-4));
  CHECK_THAT(tie.scale->from, Catch::StartsWith("the student's weights"));
  CHECK(tie.tied == 2);

  const Diagnosis dk = diagnosed(kWide, student_of(kWide, Mistake::ScaleDk, {"scaled", "weights"}));
  REQUIRE(dk.scale.has_value());
  CHECK(dk.scale->factor == Approx(0.25).epsilon(1e-6));
  CHECK(dk.tied == 1);
  CHECK(std::string(dk.matches.front().mistake->name) == "scale-dk");
  CHECK(dk.scale->named == std::vector<std::string>{"1/d_k = 1/4 (scale-dk)"});
  CHECK_THAT(report(dk), Catch::EndsWith("\nverdict: scale-dk\n"));

  const Diagnosis c = diagnosed(kWide, student_of(kWide, Mistake::ScaleSqrtC, {"masked"}));
  REQUIRE(c.scale.has_value());
  CHECK(c.scale->factor == Approx(1 / std::sqrt(8.0)).epsilon(1e-6));
  CHECK(c.tied == 1);
  CHECK(std::string(c.matches.front().mistake->name) == "scale-sqrt-c");
}

TEST_CASE("diagnose: no factor where the difference is not the scale's", "[diagnose]") {
  const Diagnosis d = diagnosed(kWide, student_of(kWide, Mistake::SoftmaxWrongAxis, {"scaled", "weights"}));
  CHECK_FALSE(d.scale.has_value());
  CHECK(d.tied == 1);
  CHECK_THAT(report(d), Catch::EndsWith("\nverdict: softmax-wrong-axis\n"));
}

TEST_CASE("diagnose: a student's NaN is said as NaN, with its count, not as an infinite difference", "[diagnose]") {
  LoadedTrace student = student_of(kWide, Mistake::None, {"weights"});
  Tensor& w = student.steps.front().value;  // (H, T, T) = (2, 4, 4): 32 values
  std::fill(w.mutable_data(), w.mutable_data() + w.size(), std::numeric_limits<Scalar>::quiet_NaN());
  const Diagnosis d = diagnosed(kWide, student);
  CHECK(d.first.nan_b == 32);
  const std::string text = report(d);
  CHECK_THAT(text, Catch::Contains("\n  32 of 32 entries differ; NaN in the student's weights (32 of 32 values)\n"));
  CHECK_THAT(text, !Catch::Contains("= inf"));
  // half of them NaN: still NaN, counted
  w.mutable_data()[0] = 0.5f;
  CHECK_THAT(report(diagnosed(kWide, student)), Catch::Contains("NaN in the student's weights (31 of 32 values)"));
}
