// attn grade's parts: a later step recomputed from an earlier answer (each entry point against the
// reference trace), the class's tolerance on float32 values, follow-through credit and mistake naming
// on one student, and the files read: class.json refused by path, a submission's faults reported.
#include <filesystem>
#include <fstream>

#include "attn/io/npy.hpp"
#include "attn/tools/grade.hpp"
#include "helpers.hpp"

using namespace attn;
using namespace attn::test;
namespace fs = std::filesystem;

namespace {

// T = 3, C = 4, two heads of hs = 2, causal, with W_o: the classroom test's template.
const std::string kProblem = R"({"mode": "causal", "heads": 2, "tokens": ["the", "cat", "sat"],
  "embeddings": [[1, 0, -0.5, 0.5], [0, 1, 0.5, -1], [-1, 0.5, 1, 0]],
  "weights": {"W_q": [[1, 0, 0.5, 0], [0, -1, 0, 0.5], [0.5, 0, 1, 0], [0, 0.5, 0, -1]],
              "W_k": [[0, 1, 0, -0.5], [1, 0, 0.5, 0], [0, 0.5, -1, 0], [-0.5, 0, 0, 1]],
              "W_v": [[1, 0.5, 0, 0], [0, 1, -0.5, 0], [0, 0, 1, 0.5], [0.5, 0, 0, 1]],
              "W_o": [[1, 0, 0, 0.5], [0, 1, 0.5, 0], [0, -0.5, 1, 0], [0.5, 0, 0, 1]]}})";

Tensor copy(const Step& s) { return Tensor(s.value.shape(), values(s)); }

void require_close(const Tensor& got, const Step& want) {
  REQUIRE(got.shape() == want.value.shape());
  for (std::int64_t i = 0; i < got.size(); ++i) REQUIRE(got.at(i) == Approx(want.value.at(i)).margin(1e-5));
}

// A temporary folder, removed at the end of the test.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) : path(fs::temp_directory_path() / ("attn-test-grade-" + name)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  void write(const std::string& name, const std::string& text) const {
    fs::create_directories((path / name).parent_path());
    std::ofstream(path / name) << text;
  }
};

ClassManifest manifest(std::vector<std::string> ask) {
  ClassManifest m;
  m.ask = std::move(ask);
  return m;
}

std::map<std::string, Tensor> key_of(const Trace& t, const std::vector<std::string>& ask) {
  std::map<std::string, Tensor> key;
  for (const auto& id : ask) {
    Tensor k = copy(step(t, id));
    for (std::int64_t i = 0; i < k.size(); ++i) k.mutable_data()[i] = static_cast<Scalar>(std::round(k.at(i) * 100) / 100);
    key.emplace(id, k);
  }
  return key;
}

Submission answering(std::map<std::string, Tensor> steps) {
  Submission s;
  s.source = "answers.json";
  for (auto& [id, t] : steps) s.answers.emplace(id, Answer{t, std::vector<bool>(static_cast<std::size_t>(t.size()), true)});
  return s;
}

}  // namespace

TEST_CASE("grade: every entry point, given the reference's own earlier step, gives the reference's later steps") {
  const Spec spec = parse_spec(kProblem, "test.json");
  const Trace ref = trace_of(kProblem);
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"q", "scores"},      {"k", "weights"},     {"v", "context"},     {"scores", "weights"}, {"scores", "output"},
      {"scaled", "weights"}, {"masked", "weights"}, {"weights", "context"}, {"weights", "output"}, {"context", "merged"},
      {"merged", "output"}};
  for (const auto& [from, target] : pairs) {
    INFO(from << " -> " << target);
    const auto got = recompute_from(spec, ref, from, copy(step(ref, from)), target);
    REQUIRE(got.has_value());
    require_close(*got, step(ref, target));
  }
  // backwards, or to a step the trace lacks: nothing
  CHECK_FALSE(recompute_from(spec, ref, "weights", copy(step(ref, "weights")), "scores").has_value());
  CHECK_FALSE(recompute_from(spec, ref, "weights", copy(step(ref, "weights")), "grad.x").has_value());
}

TEST_CASE("grade: a value rounded half to even is right at exactly the tolerance, in float32") {
  // key -0.125 (the exact value, rounded to 2 decimals by half-even: -0.12); float32's -0.12 lies
  // 0.0050000027 from -0.125, which |a − b| ≤ 0.005 + 1e-9 alone refuses
  const Spec spec = parse_spec(R"({"scores": [[-0.125, 0.5]], "v": [[1], [0]]})", "test.json");
  const Trace ref = trace_of(R"({"scores": [[-0.125, 0.5]], "v": [[1], [0]]})");
  const std::map<std::string, Tensor> key = {{"scores", Tensor({1, 2}, {-0.125f, 0.5f})}};
  const auto g = grade_student(manifest({"scores"}), {"s1", "", ""}, spec, ref, key, answering({{"scores", Tensor({1, 2}, {-0.12f, 0.5f})}}));
  CHECK(g.steps[0].right == 2);
  const auto off = grade_student(manifest({"scores"}), {"s1", "", ""}, spec, ref, key, answering({{"scores", Tensor({1, 2}, {-0.119f, 0.5f})}}));
  CHECK(off.steps[0].right == 1);
}

TEST_CASE("grade: a wrong step is named by the catalogue, and the next one follows from it") {
  const Spec spec = parse_spec(kProblem, "test.json");
  const Trace ref = trace_of(kProblem);
  const std::vector<std::string> ask = {"scores", "weights", "context"};
  auto backend = make_cpu_backend();
  PipelineOptions wrong_axis;
  wrong_axis.mistake = Mistake::SoftmaxWrongAxis;
  const Trace student = run_pipeline(spec, *backend, wrong_axis);
  const auto g = grade_student(manifest(ask), {"s1", "Ada", ""}, spec, ref, key_of(ref, ask), answering(key_of(student, ask)));
  REQUIRE(g.steps.size() == 3);
  CHECK(g.steps[0].score == 1);
  CHECK(g.steps[1].mistakes == std::vector<std::string>{"softmax-wrong-axis"});
  CHECK_THAT(g.steps[1].message, Catch::Contains("softmax was taken over the queries"));
  CHECK(g.steps[2].follows_from == "weights");
  CHECK(g.steps[2].score == 1);
  CHECK(g.score == Approx(2 + g.steps[1].score));
  // weights no mistake gives: each row reversed
  Tensor odd = key_of(ref, ask).at("weights");
  for (std::int64_t r = 0; r < odd.size() / 3; ++r) std::swap(odd.mutable_data()[r * 3], odd.mutable_data()[r * 3 + 2]);
  auto answers = key_of(ref, ask);
  answers.at("weights") = odd;
  const auto u = grade_student(manifest(ask), {"s2", "", ""}, spec, ref, key_of(ref, ask), answering(answers));
  CHECK(u.steps[1].mistakes.empty());
  CHECK_THAT(u.steps[1].message, Catch::Contains("no known mistake reproduces it"));
  CHECK(u.steps[2].follows_from.empty());  // the context was the key's own: right for the key, not for those weights
}

TEST_CASE("grade: class.json refused by its file and JSON path") {
  TempDir d("class");
  CHECK_THROWS_WITH(read_class(d.path.string()), Catch::Contains("class.json: no such file"));
  d.write("class.json", R"({"attn_exercise": 1, "ask": ["scores"], "students": [{"id": "a"}, {"id": "a"}]})");
  CHECK_THROWS_WITH(read_class(d.path.string()), Catch::Contains("class.json: students[1].id: \"a\" is another student's id too"));
  d.write("class.json", R"({"attn_exercise": 1, "ask": ["scores"], "students": [{"id": "../x"}]})");
  CHECK_THROWS_WITH(read_class(d.path.string()), Catch::Contains("class.json: students[0].id"));
  d.write("class.json", R"({"attn_exercise": 1, "ask": ["scores"], "decimals": 3, "students": [{"id": "a", "name": "Ada"}]})");
  const auto m = read_class(d.path.string());
  CHECK(m.tolerance == Approx(0.0005));  // check's rule: half a unit in the last decimal
  CHECK(m.students[0].name == "Ada");
}

TEST_CASE("grade: a submission's faults are its problems: Python's NaN, a CSV's gaps, a step not asked") {
  TempDir d("answers");
  const std::map<std::string, Tensor> key = {{"scores", Tensor({2, 2})}, {"weights", Tensor({2, 2})}};
  d.write("a/answers.json", R"({"scores": [[1, NaN], [-Infinity, 0]], "scroes": [[1]]})");
  const auto a = read_submission((d.path / "a").string(), {"scores", "weights"}, key);
  REQUIRE(a.answers.count("scores") == 1);
  CHECK(std::isnan(a.answers.at("scores").value.at(1)));
  CHECK(a.answers.at("scores").value.at(2) == -std::numeric_limits<Scalar>::infinity());
  REQUIRE(a.problems.size() == 1);
  CHECK_THAT(a.problems[0], Catch::Contains("\"scroes\" is not an asked step (did you mean \"scores\"?)"));
  d.write("b/answers.csv", "step,index,value\nscores,0,1\nscores,0,2\nscores,9,1\nweights,x,1\n");
  const auto b = read_submission((d.path / "b").string(), {"scores", "weights"}, key);
  CHECK(b.source == "answers.csv");
  CHECK(b.answers.at("scores").value.at(0) == 1);
  CHECK(b.answers.at("scores").given == std::vector<bool>{true, false, false, false});
  std::string all;
  for (const auto& p : b.problems) all += p + "\n";
  CHECK_THAT(all, Catch::Contains("line 3: scores index 0 is given twice"));
  CHECK_THAT(all, Catch::Contains("line 4: scores index 9 is outside 0 … 3"));
  CHECK_THAT(all, Catch::Contains("line 5: expected an index"));
  CHECK_THAT(all, Catch::Contains("scores has no row for 3 of its 4 values"));
  fs::create_directories(d.path / "c");
  CHECK_THAT(read_submission((d.path / "c").string(), {"scores"}, key).problems.at(0), Catch::Contains("nothing to grade"));
}

TEST_CASE("grade: -inf and minus signs as a handout prints them (−inf, −∞, −0.25) are read, in answers.json and answers.csv") {
  TempDir d("minus");
  const std::map<std::string, Tensor> key = {{"masked", Tensor({2, 2})}};
  constexpr Scalar inf = std::numeric_limits<Scalar>::infinity();
  d.write("a/answers.json", "{\"masked\": [[\"\u22120.25\", \"\u2212inf\"], [\"-\u221e\", \"-Infinity\"]]}");
  const auto a = read_submission((d.path / "a").string(), {"masked"}, key);
  CHECK(a.problems.empty());
  REQUIRE(a.answers.count("masked") == 1);
  const Tensor& m = a.answers.at("masked").value;
  CHECK(m.at(0) == -0.25f);
  CHECK(m.at(1) == -inf);
  CHECK(m.at(2) == -inf);
  CHECK(m.at(3) == -inf);
  d.write("b/answers.csv", "step,index,value\nmasked,0,\u22120.25\nmasked,1,\u2212inf\nmasked,2,-inf\nmasked,3,2\n");
  const auto b = read_submission((d.path / "b").string(), {"masked"}, key);
  CHECK(b.problems.empty());
  CHECK(b.answers.at("masked").value.at(0) == -0.25f);
  CHECK(b.answers.at("masked").value.at(1) == -inf);
  // a word that is no number says what is read
  d.write("c/answers.json", R"({"masked": [["minus infinity", 0], [0, 0]]})");
  const auto c = read_submission((d.path / "c").string(), {"masked"}, key);
  REQUIRE(!c.problems.empty());
  CHECK_THAT(c.problems[0], Catch::Contains("expected a number (or \"-inf\" for a blocked entry, \"nan\"), got the string \"minus infinity\""));
}

TEST_CASE("grade: a folder of every step (attn run --dump) names the steps not asked in one line; a mistyped file on its own") {
  TempDir d("dump");
  const std::map<std::string, Tensor> key = {{"weights", Tensor({2, 2})}};
  fs::create_directories(d.path / "a");
  for (const char* name : {"q", "k.T", "scores", "weights", "wieghts"}) write_npy((d.path / "a" / (std::string(name) + ".npy")).string(), Tensor({2, 2}));
  const auto a = read_submission((d.path / "a").string(), {"weights"}, key);
  REQUIRE(a.answers.count("weights") == 1);
  std::string all;
  for (const auto& p : a.problems) all += p + "\n";
  CHECK(a.problems.size() == 2);
  CHECK_THAT(all, Catch::Contains("3 steps not asked, left out; asked: weights"));
  CHECK_THAT(all, Catch::Contains("wieghts.npy: \"wieghts\" is not an asked step (did you mean \"weights\"?)"));
}
