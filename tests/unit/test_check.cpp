// attn check: printed precision read from the JSON text, tolerance, nulls, non-finite values, refusals.
#include <nlohmann/json.hpp>
#include <sstream>

#include "attn/tools/check.hpp"
#include "attn/tools/compare.hpp"
#include "attn/tools/diagnose.hpp"
#include "helpers.hpp"

using namespace attn;
using namespace attn::test;

namespace {

CheckReport check_of(const std::string& text) {
  const Spec spec = parse_spec(text, "t.json");
  auto be = make_cpu_backend();
  return check_trace(spec, run_pipeline(spec, *be));
}

std::string check_error(const std::string& text) {
  try {
    check_of(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// softmax([0.5, 0.2]) = [0.5744425, 0.4255575]
const std::string kHead = R"({"mode": "causal", "sentence": "a b", "scores": [[1, 0], [0.5, 0.2]], "expect": {"weights": [[1, 0], )";

}  // namespace

TEST_CASE("the tolerance is half a unit in the last printed decimal, read from the text", "[check]") {
  CHECK(check_of(kHead + "[0.57, 0.43]]}}").differences == 0);        // ±0.005
  CHECK(check_of(kHead + "[0.5744, 0.4256]]}}").differences == 0);    // ±0.00005
  CHECK(check_of(kHead + "[0.5745, 0.4255]]}}").differences == 2);    // 0.57444 is not 0.5745
  CHECK(check_of(kHead + "[0.6, 0.4]]}}").differences == 0);          // ±0.05
  CHECK(check_of(kHead + "[0.60, 0.40]]}}").differences == 2);        // ±0.005: a trailing zero is a printed digit
  CHECK(check_of(kHead + "[5.744e-1, 4.256e-1]]}}").differences == 0);  // 4 decimals through the exponent
  CHECK(check_of(kHead + "[1, 0]]}}").differences == 2);              // a printed integer claims the exact value
}

TEST_CASE("a printed integer is exact; a right value printed to 9 digits passes float32 rounding", "[check]") {
  // 2 does not pass for 2.4; 2.0 (one decimal) does not either, 2.4 passes
  CHECK(check_of(R"({"scores": [[2.4, 1]], "scale": "none", "expect": {"scores": [[2, 1]]}})").differences == 1);
  CHECK(check_of(R"({"scores": [[2.4, 1]], "scale": "none", "expect": {"scores": [[2.4, 1]]}})").differences == 0);
  CHECK(check_of(R"({"scores": [[2, 1]], "scale": "none", "expect": {"scores": [[2, 1]]}})").differences == 0);
  // softmax([0.5, 0.2]) = [0.574442516811659, 0.425557483188341]: float32 holds 0.57444251 and 0.42555749
  CHECK(check_of(kHead + "[0.574442517, 0.425557483]]}}").differences == 0);
  CHECK(check_of(kHead + "[0.574442817, 0.425557183]]}}").differences == 2);  // 3e-7 off: beyond 4 ulps
}

TEST_CASE("expect.tolerance overrides printed precision; null entries are not checked", "[check]") {
  const auto r = check_of(R"({"scores": [[2, 4, 1, 3]], "expect": {"weights": [[0.1, 0.6, null, 0.2]], "tolerance": 0.05}})");
  CHECK(r.checked == 3);
  CHECK(r.differences == 0);
  REQUIRE(r.tolerance);
  CHECK(*r.tolerance == 0.05);
  const auto strict = check_of(R"({"scores": [[2, 4, 1, 3]], "expect": {"weights": [[0.1, 0.6, null, 0.2]], "tolerance": 0.001}})");
  CHECK(strict.differences == 3);
}

TEST_CASE("a differing entry is reported with its position, labels, printed and computed values", "[check]") {
  const auto r = check_of(kHead + "[0.73, 0.27]]}}");
  REQUIRE(r.differing.size() == 2);
  const auto& e = r.differing[0];
  CHECK(e.step == "weights");
  CHECK(e.position == "[1, 0] (query \"b\", key \"a\")");
  CHECK(e.printed == 0.73);
  CHECK(e.decimals == 2);
  CHECK(e.computed == Approx(0.5744425).epsilon(1e-6));
  CHECK(e.difference == Approx(0.5744425 - 0.73).epsilon(1e-6));
  CHECK(e.tolerance == Approx(0.005));
  std::ostringstream text;
  render_check_text(r, text);
  CHECK_THAT(text.str(), Catch::Contains("weights  [1, 0] (query \"b\", key \"a\")     0.73    0.5744     -0.1556  ±0.005\n"));
  CHECK_THAT(text.str(), Catch::Contains("summary: 4 printed values checked: 2 match, 2 differ\n"));
}

TEST_CASE("the text report's header says in plain words when a printed number matches", "[check]") {
  const auto text_of = [](const CheckReport& r) {
    std::ostringstream out;
    render_check_text(r, out, 1000);  // one line a sentence
    return out.str();
  };
  const std::string plain = text_of(check_of(kHead + "[0.57, 0.43]]}}"));
  CHECK_THAT(plain, Catch::StartsWith("attn check\nA printed number matches when attn's value, rounded to the decimals the document printed, "
                                      "gives it (0.73 stands for 0.725 to 0.735; a printed integer must be exact). attn computes each value "
                                      "in float32 (PyTorch's default) and in float64 (NumPy's); a match in either counts, with a small "
                                      "allowance for float32's rounding: docs/check.md says how.\n\n"));
  CHECK_THAT(plain, Catch::Contains("\nweights: 4 printed, all match · float32 or float64\n"));
  for (const char* jargon : {"ulps", "(either)", "judged:", "tolerance:"}) CHECK_THAT(plain, !Catch::Contains(jargon));
  const std::string given = text_of(check_of(R"({"scores": [[2, 4, 1, 3]], "expect": {"weights": [[0.1, 0.6, null, 0.2]], "tolerance": 0.05}})"));
  CHECK_THAT(given, Catch::Contains("\nA printed number matches when attn's value is within ±0.05 of it (the document's expect.tolerance). "));
  // a float64 document's step: its line and the header say float64
  CheckReport wide;
  wide.steps.push_back({"weights", Judge::Float64, 2, 0, 0});
  const std::string f64 = text_of(wide);
  CHECK_THAT(f64, Catch::Contains("; a match in either counts (a step's line says \"float32 or float64\"), but a step printed with more digits "
                                  "than float32 holds, not all of them a float32 number's, is a float64 document's and is checked in "
                                  "float64 alone (\"float64\"). docs/check.md says how.\n"));
  CHECK_THAT(f64, Catch::Contains("\nweights: 2 printed, all match · float64\n"));
}

TEST_CASE("a printed 0 against a small computed weight shows digits that differ", "[check]") {
  attn::CheckReport r;
  r.checked = 1, r.differences = 1;
  r.differing.push_back({"weights", attn::Judge::Either, "[0, 3]", 0.0, attn::kExactInteger, 0.002334, 0.002334, 0.002334, 0.002334, 0});
  std::ostringstream text;
  render_check_text(r, text);
  // not "0.00 · +0.00": the computed value and the difference with two significant digits
  CHECK_THAT(text.str(), Catch::Contains("weights  [0, 3]          0    0.0023     +0.0023  ±0 (exact)\n"));
}

TEST_CASE("a check table wider than the width gives each entry two lines", "[check]") {
  attn::CheckReport r;
  r.checked = 1, r.differences = 1;
  r.differing.push_back({"x", attn::Judge::Either, "[0, 0, 2] (batch 0, token \"a long token label\", C 2)", 0.7319, 4, 0.731994, 0.731994, 0.731994, 0.000094, 0.00005});
  std::ostringstream narrow, wide;
  render_check_text(r, narrow, 80);
  render_check_text(r, wide, 200);
  CHECK_THAT(narrow.str(), Catch::Contains("\nx  [0, 0, 2] (batch 0, token \"a long token label\", C 2)\n    printed 0.7319 · computed 0.731994 · "
                                          "difference +0.000094 · allowed ±0.00005\n"));
  CHECK_THAT(wide.str(), Catch::Contains("step  position"));
}

TEST_CASE("a printed -inf matches only a computed -inf", "[check]") {
  const std::string spec = R"({"mode": "causal", "scores": [[1, 0], [0.5, 0.2]], "expect": {"masked": )";
  CHECK(check_of(spec + R"([[1, "-inf"], [0.5, 0.2]]}})").differences == 0);
  CHECK(check_of(spec + R"([[1, -1e9], [0.5, 0.2]]}})").differences == 1);
  CHECK(check_of(spec + R"([[1, "-inf"], ["-inf", 0.2]]}})").differences == 1);
}

TEST_CASE("diff: a finite value where the other side has -inf is an infinite difference", "[diff]") {
  const float inf = std::numeric_limits<float>::infinity();
  // a reference with -inf in the masked scores, a student with a large finite value there
  const Tensor ref({2, 2}, {0.5f, -inf, 0.25f, 0.75f}), student({2, 2}, {0.5f, -1e9f, 0.25f, 0.75f});
  const attn::StepDiff d = attn::compare_step("masked", ref, student, {1e-5, 1e-5}, std::nullopt, {});
  CHECK(d.differ == 1);
  CHECK(std::isinf(d.max_abs));
  CHECK(attn::value_text(d.max_abs) == "inf");
  // both -inf there: the same, and no difference
  const attn::StepDiff same = attn::compare_step("masked", ref, ref, {1e-5, 1e-5}, std::nullopt, {});
  CHECK(same.differ == 0);
  CHECK(same.max_abs == 0);
}

TEST_CASE("check refuses a missing expect, an unknown step and a wrong shape", "[check][bad]") {
  CHECK(check_error(R"({"scores": [[1, 2]]})").starts_with("expect: required by attn check"));
  CHECK(check_error(R"({"scores": [[1, 2]], "expect": {"weight": [[0.3, 0.7]]}})") ==
        "expect.weight: this trace has no step \"weight\" (did you mean \"weights\"?); its steps: scores, weights");
  CHECK(check_error(R"({"scores": [[1, 2]], "expect": {"weights": [[0.3], [0.7]]}})") ==
        "expect.weights: expected [1, 2] (the shape of step weights, [T, S]), got [2, 1]");
  CHECK(check_error(R"({"scores": [[1, 2]], "expect": {"weights": [[0.3, "x"]]}})") ==
        "expect.weights[0][1]: expected a number, null (not printed), \"-inf\", \"inf\" or \"nan\", got the string \"x\"");
  CHECK(check_error(R"({"scores": [[1, 2]], "expect": {"tolerance": -1}})") == "expect.tolerance: expected a non-negative number, got the number -1");
}

TEST_CASE("diagnose: a right student who saved a step under another name is correct, and told which", "[diagnose]") {
  const Spec spec = parse_spec(R"({"tokens": ["cat", "sat"], "embeddings": [[1, 0, 1], [0, 1, 1]],
                                   "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}})", "cat_sat.json");
  auto backend = make_cpu_backend();
  const Trace ref = run_pipeline(spec, *backend);
  LoadedTrace student;
  student.origin = "student/";
  student.steps.push_back({"scores", ref.find("scaled")->value, {}});  // saved after scaling
  student.steps.push_back({"weights", ref.find("weights")->value, {}});
  student.steps.push_back({"context", ref.find("context")->value, {}});
  const Diagnosis d = diagnose(spec, "cat_sat.json", student, {});
  CHECK(d.correct);
  REQUIRE(d.misnamed.size() == 1);
  CHECK(d.misnamed[0].student == "scores");
  CHECK(d.misnamed[0].reference == "scaled");
  CHECK(d.matching == std::vector<std::string>{"weights", "context"});
  std::ostringstream out;
  render_diagnosis_text(d, out);
  CHECK_THAT(out.str(), Catch::Contains("your scores.npy equals the reference's scaled: did you save after scaling?"));
  CHECK_THAT(out.str(), Catch::Contains("verdict: correct (rename the files above)"));
  // a student with a real mistake is still diagnosed, the matching steps named
  LoadedTrace wrong;
  wrong.origin = "wrong/";
  const Trace mistaken = run_pipeline(spec, *backend, {Mistake::ScaleMissing});
  for (const char* id : {"q", "scaled", "weights"}) wrong.steps.push_back({id, mistaken.find(id)->value, {}});
  const Diagnosis w = diagnose(spec, "cat_sat.json", wrong, {});
  CHECK(!w.correct);
  CHECK(w.matching == std::vector<std::string>{"q"});
  REQUIRE(!w.matches.empty());
  CHECK(w.matches.front().mistake->mistake == Mistake::ScaleMissing);
}

TEST_CASE("diagnose hints: the head average nn.MultiheadAttention returns; nn.Linear's layout", "[diagnose]") {
  const Spec spec = parse_spec(R"({"mode": "multi-head", "heads": 2, "random": {"seed": 4, "T": 3, "C": 4}})", "mh.json");
  auto backend = make_cpu_backend();
  const Trace ref = run_pipeline(spec, *backend);
  const Tensor& w = ref.find("weights")->value;  // [H, T, S] = [2, 3, 3]
  std::vector<Scalar> mean(9);
  for (int i = 0; i < 9; ++i) mean[static_cast<std::size_t>(i)] = static_cast<Scalar>((double(w.data()[i]) + w.data()[9 + i]) / 2);
  LoadedTrace averaged;
  averaged.origin = "avg/";
  averaged.steps.push_back({"weights", Tensor({3, 3}, mean), {}});
  const Diagnosis d = diagnose(spec, "mh.json", averaged, {});
  REQUIRE(!d.hints.empty());
  CHECK_THAT(d.hints[0], Catch::Contains("average over the H = 2 heads: nn.MultiheadAttention returns that by default"));
  LoadedTrace transposed;
  transposed.origin = "t/";
  const Trace wrong = run_pipeline(spec, *backend, {Mistake::WTransposed});
  transposed.steps.push_back({"q", wrong.find("q")->value, {}});
  const Diagnosis t = diagnose(spec, "mh.json", transposed, {});
  REQUIRE(!t.hints.empty());
  CHECK_THAT(t.hints.back(), Catch::Contains("\"layout\": \"torch\""));
}

TEST_CASE("diagnose hints: a step without its head axis (the heads never split)", "[diagnose]") {
  const Spec spec = parse_spec(R"({"mode": "multi-head", "heads": 2, "random": {"seed": 4, "T": 3, "C": 4}})", "mh.json");
  auto backend = make_cpu_backend();
  const Trace ref = run_pipeline(spec, *backend);
  // one head's worth of scores from the whole width: q kᵀ / √C, [T, S]
  const Tensor& q = ref.find("q")->value;
  const Tensor& k = ref.find("k")->value;
  std::vector<Scalar> s(9);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      double dot = 0;
      for (int c = 0; c < 4; ++c) dot += double(q.data()[i * 4 + c]) * k.data()[j * 4 + c];
      s[static_cast<std::size_t>(i * 3 + j)] = static_cast<Scalar>(dot / 2);
    }
  LoadedTrace unsplit;
  unsplit.origin = "u/";
  unsplit.steps.push_back({"scores", Tensor({3, 3}, s), {}});
  const Diagnosis d = diagnose(spec, "mh.json", unsplit, {});
  CHECK_FALSE(d.correct);
  REQUIRE(d.hints.size() == 1);
  CHECK_THAT(d.hints[0], Catch::Contains("your scores.npy has no head axis ([3, 3] where the reference's scores is [2, 3, 3], H = 2)"));
}

TEST_CASE("the report quotes the document's number as its text wrote it", "[check]") {
  // 0.28733302 is not a float32; 0.1290 has a trailing zero: both are quoted exactly, in text and JSON
  const attn::Spec spec = attn::parse_spec(R"({"mode": "self", "heads": 1, "embeddings": [[1, 0], [0, 1]],
      "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}, "scale": "none",
      "expect": {"scores": [[0.28733302, 0.1290], [0, 1]]}})", "quote.json");
  auto be = attn::make_cpu_backend();
  const attn::CheckReport r = attn::check_trace(spec, attn::run_pipeline(spec, *be));
  REQUIRE(r.differences == 2);
  std::ostringstream text, json;
  render_check_text(r, text);
  render_check_json(r, json);
  CHECK_THAT(text.str(), Catch::Contains(" 0.28733302 "));
  CHECK_THAT(text.str(), Catch::Contains(" 0.1290 "));
  CHECK_THAT(json.str(), Catch::Contains("\"printed\": 0.28733302,"));
  CHECK_THAT(json.str(), Catch::Contains("\"printed\": 0.1290,"));
  CHECK(nlohmann::json::parse(json.str())["differing"][0]["printed"].get<double>() == 0.28733302);
}
