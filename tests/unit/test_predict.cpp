// --predict: the "exercise" block's "predict" key, the questions on a step, each answer checked with
// its reply, the tally, and the page's questions (the pager's are checked in tmux, step_tmux.sh).
#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <sstream>

#include "attn/render/pager_predict.hpp"
#include "attn/render/render.hpp"
#include "attn/tools/predict.hpp"
#include "helpers.hpp"

using namespace attn;
using namespace attn::test;

namespace {

std::string cross_text() {
  std::ifstream in(std::string(ATTN_SOURCE_DIR) + "/tests/data/predict_cross.json");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const std::string kUniform = R"({"scores": [[0, 0], [0, 0]], "exercise": {"predict": ["weights"]}})";

std::string reply(const Prediction& p, std::string_view answer) { return check_prediction(p, answer).text; }

}  // namespace

TEST_CASE("exercise.predict is read, the block's other keys are left to attn exercise's reader", "[predict]") {
  CHECK(parse_spec(cross_text(), "test.json").predict == std::vector<std::string>{"scores", "weights"});
  const std::string base = R"({"scores": [[1, 2]], "exercise": )";
  CHECK(parse_spec(base + R"({"ask": ["weights"], "values": {"low": -2}, "decimals": 2}})", "t.json").predict.empty());
  CHECK_THROWS_WITH(parse_spec(base + R"("weights"})", "t.json"), Catch::Contains("exercise: expected an object such as {\"ask\": [\"weights\"]}, got the string \"weights\""));
  CHECK_THROWS_WITH(parse_spec(base + R"({"predict": "weights"}})", "t.json"),
                    Catch::Contains("exercise.predict: expected a list of step ids to predict, such as [\"scores\", \"weights\"], got the string"));
  CHECK_THROWS_WITH(parse_spec(base + R"({"predict": ["weight"]}})", "t.json"),
                    Catch::Contains("exercise.predict[0]: expected a step id, got \"weight\" (did you mean \"weights\"?)"));
  CHECK_THROWS_WITH(parse_spec(base + R"({"predict": ["weights", "weights"]}})", "t.json"),
                    Catch::Contains("exercise.predict[1]: \"weights\" is listed twice"));
}

TEST_CASE("a queries-by-keys step is asked its shape, the key the last clear query attends to most, and another key's entry", "[predict]") {
  const Trace t = trace_of(cross_text());
  const auto q = predict_questions(t, step(t, "weights"));
  REQUIRE(q.size() == 3);
  CHECK(q[0].question == "What is the shape of weights, in numbers (like [2, 3])?");
  CHECK(q[0].truth == "weights is [3, 4]: T = 3 queries, S = 4 keys");
  CHECK(q[1].question == "Which key does \"sat\" attend to most? (a token)");
  CHECK(q[1].key == 1);
  CHECK(q[1].truth == "\"sat\" attends most to \"chat\"");
  CHECK(q[2].question == "What is weights[2, 0] (query \"sat\", key \"le₁\"), to two decimals?");  // (not chat's: that would tell)
  CHECK(q[2].value == Approx(0.230272).margin(1e-6));
  const auto s = predict_questions(t, step(t, "scores"));
  CHECK(s[1].question == "Which key has the largest scores in \"sat\"'s row? (a token)");
  CHECK(s[2].value == 1.0f);
  // every row of a uniform softmax is a tie: no key to name, one value instead
  const Trace u = trace_of(kUniform);
  const auto w = predict_questions(u, step(u, "weights"));
  REQUIRE(w.size() == 2);
  CHECK(w[1].kind == Prediction::Kind::Value);
  CHECK(w[1].where == "weights[1, 0] (query \"t1\", key \"t0\")");
}

TEST_CASE("each answer is checked and answered: what was said, what it is, how far off", "[predict]") {
  const Trace t = trace_of(cross_text());
  const auto q = predict_questions(t, step(t, "weights"));
  CHECK(reply(q[0], "[3, 4]") == "Right: weights is [3, 4]: T = 3 queries, S = 4 keys.");
  CHECK(check_prediction(q[0], "3 x 4").right);
  CHECK(reply(q[0], "[3, 3]") == "Not quite: you said [3, 3]; weights is [3, 4]: T = 3 queries, S = 4 keys (S, the keys, is 4, not 3).");
  CHECK(reply(q[0], "(4,3)") ==
        "Not quite: you said [4, 3]; weights is [3, 4]: T = 3 queries, S = 4 keys (the other way round: the rows are T, the queries, the columns S, the keys).");
  CHECK(reply(q[0], "12") == "Not quite: you said [12]; weights is [3, 4]: T = 3 queries, S = 4 keys (you gave 1 size; weights has 2 axes).");
  const auto unread = check_prediction(q[0], "T by S");
  CHECK((!unread.understood && unread.text == "I could not read \"T by S\" as a shape: type the sizes as numbers, like [2, 3]."));
  CHECK(reply(q[1], "chat") == "Right: \"sat\" attends most to \"chat\".");
  CHECK(check_prediction(q[1], "\"chat\"").right);
  // "le" is two keys (le₁, le₂): named plainly, neither is the one
  CHECK(reply(q[1], "le") == "Not quite: you said \"le₁\"; \"sat\" attends most to \"chat\".");
  const auto dog = check_prediction(q[1], "dog");
  CHECK((!dog.understood && dog.text == "There is no key \"dog\": the keys are le₁, chat, le₂, tapis. Type one of them."));
  CHECK(reply(q[2], "0.23") == "Right: weights[2, 0] (query \"sat\", key \"le₁\") is 0.2303; you said 0.23, 0.0003 off.");
  CHECK(check_prediction(q[2], ".23").right);
  CHECK(check_prediction(q[2], "0,23").right);
  CHECK(!check_prediction(q[2], "0.22").right);  // 0.0103 off: more than half a unit of the second decimal
  CHECK(reply(q[2], "0.5") == "Not quite: you said 0.5; weights[2, 0] (query \"sat\", key \"le₁\") is 0.2303: 0.27 too high.");
  CHECK(!check_prediction(q[2], "about half").understood);
  const auto none = check_prediction(q[2], "  ");
  CHECK((none.understood && !none.right && none.text == "No prediction: weights[2, 0] (query \"sat\", key \"le₁\") is 0.2303."));
}

TEST_CASE("the steps asked about: the exercise's, else the weights, one the trace lacks or none shown is refused", "[predict]") {
  const Trace t = trace_of(cross_text());
  const auto at = [&t](std::string_view id) { return static_cast<std::size_t>(&step(t, id) - t.steps.data()); };
  CHECK(predicted_steps(t, {}, {}) == std::vector<std::size_t>{at("weights")});
  CHECK(predicted_steps(t, {"weights", "scores"}, {}) == std::vector<std::size_t>{at("scores"), at("weights")});
  CHECK(predicted_steps(t, {"weights", "scores"}, {at("weights")}) == std::vector<std::size_t>{at("weights")});
  CHECK_THROWS_WITH(predicted_steps(t, {"scores", "grad.q"}, {}), "exercise.predict[1]: this trace has no step \"grad.q\"");
  CHECK_THROWS_WITH(predicted_steps(t, {}, {at("q")}), "--predict: none of the steps to predict (weights) is shown; show them too (--steps, --from, --to)");
  CHECK_THROWS_WITH(predicted_steps(t, {}, {at("q")}, Door::Python),
                    "predict=True: none of the steps to predict (weights) is shown; show them too (steps=)");
}

TEST_CASE("the pager's session asks, keeps the replies for the step and counts the right answers", "[predict]") {
  const Trace t = trace_of(cross_text());
  TextOptions o;
  o.predict = true;
  o.predict_ids = {"scores", "weights"};
  o.width = 120;  // (a reply a line)
  PredictSession session(t, o, {});
  const auto scores = static_cast<std::size_t>(&step(t, "scores") - t.steps.data());
  CHECK(session.pending(scores));
  CHECK(session.reply_lines(scores).empty());
  std::vector<std::string> answers = {"[3, 4]", "dog", "chat", "1.5"};
  std::ostringstream out;
  REQUIRE(session.ask(scores, out, [&answers]() -> std::optional<std::string> {
    if (answers.empty()) return std::nullopt;
    auto a = answers.front();
    answers.erase(answers.begin());
    return a;
  }));
  CHECK(!session.pending(scores));
  CHECK(out.str().find("There is no key \"dog\"") != std::string::npos);  // said, then asked again
  CHECK(session.reply_lines(scores).size() == 3);
  CHECK(session.reply_lines(scores)[2] == "    ▸ Not quite: you said 1.5; scores[2, 0] (query \"sat\", key \"le₁\") is 1.0000: 0.50 too high.");
  CHECK(session.tally() == "── 2 of 3 predictions right; 3 more on weights not reached ──");
}

TEST_CASE("the page asks before the predicted steps and keeps their values hidden until then", "[predict]") {
  const Trace t = trace_of(cross_text());
  TextOptions o;
  o.predict = true;
  o.predict_ids = {"weights"};
  std::ostringstream page;
  render_html(t, page, o);
  const std::string html = page.str();
  CHECK(html.find("<span id=\"tally\" aria-live=\"polite\" data-total=\"3\"></span>") != std::string::npos);
  const auto weights = html.find("<section class=\"step\" id=\"step-weights\">");
  const auto form = html.find("<form class=\"predict\"", weights);
  const auto hidden = html.find("<div class=\"revealed\" hidden>", form);
  const auto shape = html.find("<p class=\"shape\">", weights);
  const auto table = html.find("<table class=\"tensor\">", weights);
  CHECK((weights != std::string::npos && form != std::string::npos && hidden < shape && shape < table));
  CHECK(html.find("<form class=\"predict\"") == form);  // no other step asks
  CHECK(html.find("data-kind=\"value\" data-step=\"weights\"") != std::string::npos);
}

TEST_CASE("self-attention's two token axes read apart in a reply: T the queries, S = T the keys", "[predict]") {
  const Trace t = trace_of(kUniform);
  const auto q = predict_questions(t, step(t, "weights"));
  CHECK(reply(q[0], "[3, 3]") ==
        "Not quite: you said [3, 3]; weights is [2, 2]: T = 2 queries, S = T = 2 keys (T, the queries, is 2, not 3; S = T, the keys, is 2, not 3).");
}
