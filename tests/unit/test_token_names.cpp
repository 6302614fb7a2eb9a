// Issue 41, point 3: attn check, diff, diagnose and heads name a repeated token as the tables name its
// row (the₁, the₂), so a line of their prose points at one position. (--explain's: test_explain_claims.)
#include <sstream>

#include "attn/io/trace_io.hpp"
#include "attn/model/tools/heads.hpp"
#include "attn/render/model_views.hpp"
#include "attn/tools/check.hpp"
#include "attn/tools/diagnose.hpp"
#include "attn/tools/diff.hpp"
#include "helpers.hpp"

using namespace attn;
using namespace attn::test;

namespace {

// "the cat the", identity weights: scores = x xᵀ = [[1, 0, 2], [0, 1, 0], [2, 0, 4]]; the₂'s row is
// twice the₁'s, so the two rows (and columns) of "the" hold different numbers.
const std::string kTheCatThe = R"({"mode": "self", "tokens": ["the", "cat", "the"], "embeddings": [[1, 0], [0, 1], [2, 0]],
                                   "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}})";

Trace traced(const std::string& text, Mistake m = Mistake::None) {
  auto backend = make_cpu_backend();
  PipelineOptions o;
  o.mistake = m;
  return run_pipeline(parse_spec(text, "t.json"), *backend, o);
}

}  // namespace

TEST_CASE("token names: the table's rows the₁ and the₂, and position_label's words for them", "[token-names]") {
  const Trace t = traced(kTheCatThe);
  CHECK(distinct_axis_label(t.config, Dim::T, 0, 0) == "the₁");
  CHECK(distinct_axis_label(t.config, Dim::T, 2, 0) == "the₂");
  CHECK(distinct_axis_label(t.config, Dim::T, 1, 0) == "cat");
  const Step& scores = step(t, "scores");
  CHECK(position_label(t.config, scores.dims, scores.value.shape(), 6) == R"([2, 0] (query "the₂", key "the₁"))");
  CHECK(position_label(t.config, scores.dims, scores.value.shape(), 1) == R"([0, 1] (query "the₁", key "cat"))");
  CHECK(subscript(12) == "₁₂");
}

TEST_CASE("token names: attn check names the row and key of a wrong printed number as the tables do", "[token-names][check]") {
  // the document printed scores[2][0] = 3; it is 2: query the₂ (not the₁, whose row is right), key the₁
  std::string text = kTheCatThe;
  text.insert(text.rfind('}'), R"(, "expect": {"scores": [[1, 0, 2], [0, 1, 0], [3, 0, 4]]})");
  const Spec spec = parse_spec(text, "t.json");
  auto backend = make_cpu_backend();
  const CheckReport r = check_spec(spec, *backend);
  REQUIRE(r.differing.size() == 1);
  CHECK(r.differing[0].position == R"([2, 0] (query "the₂", key "the₁"))");
  std::ostringstream out;
  render_check_text(r, out, 120);
  CHECK_THAT(out.str(), Catch::Contains("step    position                           printed  computed  difference  tol.\n"
                                        R"(scores  [2, 0] (query "the₂", key "the₁")        3      2.00       -1.00  ±0 (exact))" "\n"));
  std::ostringstream json;
  render_check_json(r, json);
  CHECK_THAT(json.str(), Catch::Contains(R"j("position": "[2, 0] (query \"the₂\", key \"the₁\")")j"));
}

TEST_CASE("token names: attn diagnose's worst entries name the₂, not a bare \"the\"", "[token-names][diagnose]") {
  // a student who left out the scale: scaled = scores, off by (1 − 1/√2) · score, most at the₂ · the₂ (4)
  const Trace wrong = traced(kTheCatThe, Mistake::ScaleMissing);
  LoadedTrace student;
  student.origin = "student/";
  student.steps.push_back({"scaled", step(wrong, "scaled").value, {}});
  const Diagnosis d = diagnose(parse_spec(kTheCatThe, "t.json"), "t.json", student, {});
  REQUIRE(d.first.worst.size() >= 2);
  CHECK(d.first.worst[0].position == R"([2, 2] (query "the₂", key "the₂"))");
  CHECK(d.first.worst[1].position == R"([0, 2] (query "the₁", key "the₂"))");
  std::ostringstream out;
  render_diagnosis_text(d, out);
  // padded in cells, not bytes: the columns stand where the header's do
  CHECK_THAT(out.str(), Catch::Contains("  position                              reference       student\n"
                                        R"(  [2, 2] (query "the₂", key "the₂")       2.82843             4)" "\n"
                                        R"(  [0, 2] (query "the₁", key "the₂")       1.41421             2)" "\n"));
  CHECK_THAT(out.str(), !Catch::Contains(R"("the")"));
}

TEST_CASE("token names: attn diff of two traces names the differing entries as the tables do", "[token-names][diff]") {
  const DiffReport r = diff_traces(loaded_from(traced(kTheCatThe), "a.json"), loaded_from(traced(kTheCatThe, Mistake::ScaleMissing), "b.json"), {});
  REQUIRE(r.first_diverging >= 0);
  const StepDiff& first = r.steps[static_cast<std::size_t>(r.first_diverging)];
  CHECK(first.id == "scaled");
  REQUIRE(!first.worst.empty());
  CHECK(first.worst[0].position == R"([2, 2] (query "the₂", key "the₂"))");
  std::ostringstream out;
  render_diff_text(r, out);
  CHECK_THAT(out.str(), Catch::Contains("  position                                      A             B       |a − b|\n"
                                        R"(  [2, 2] (query "the₂", key "the₂")       2.82843             4       1.17157)" "\n"));
}

TEST_CASE("token names: attn heads names a pair's two end tokens as its tokens line does, [SEP]₁ + [SEP]₂", "[token-names][heads]") {
  using namespace attn::model;
  // [CLS] a [SEP] b [SEP]: every query puts 0.5 on each [SEP], the end-token share 1.0 over both
  HeadsView v;
  v.model = "tiny pair (hand-made)";
  v.tokens = {"[CLS]", "a", "[SEP]", "b", "[SEP]"};
  v.layers = 1, v.heads = 1, v.T = 5, v.bidirectional = true;
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 5; ++j) v.weights.push_back(j == 2 || j == 4 ? 0.5f : 0.f);
  const EncoderSpecials sp{0, {2, 4}, "[CLS]", "[SEP]"};
  v.summaries = {summarise_encoder_head(v.weights.data(), v.T, sp)};
  CHECK(v.summaries[0].pattern == HeadPattern::EndToken);
  CHECK(v.summaries[0].pattern_share == Approx(1.0));
  CHECK(v.summaries[0].label == "to [SEP]₁ + [SEP]₂");
  std::ostringstream text;
  render_heads_text(v, text, ColorMode::None, 100);
  CHECK_THAT(text.str(), Catch::Contains("tokens (5): 0 [CLS]  1 a  2 [SEP]₁  3 b  4 [SEP]₂"));
  CHECK_THAT(text.str(), Catch::Contains("L0 h0  to [SEP]₁ + [SEP]₂ 1.00"));
  CHECK_THAT(text.str(), Catch::Contains("max off-diagonal 0.50 ([CLS] → [SEP]₁)"));
  std::ostringstream html;
  render_heads_html(v, html);
  CHECK_THAT(html.str(), Catch::Contains("<span>[SEP]₁ + [SEP]₂ 1.00</span>"));
  // one end token keeps its plain name, as its row does
  const EncoderSpecials one{0, {2}, "[CLS]", "[SEP]"};
  CHECK(summarise_encoder_head(v.weights.data(), v.T, one).label == "to [SEP]");
}
