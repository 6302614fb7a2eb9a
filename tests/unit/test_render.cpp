// Renderers: number formatting, the text layout, summarising, and JSON that reads back exactly.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <nlohmann/json.hpp>
#include <sstream>

#include "attn/io/trace_io.hpp"
#include "attn/render/render.hpp"
#include "attn/render/layout.hpp"
#include "helpers.hpp"

using namespace attn;
using namespace attn::test;

namespace {

const std::string kCatSat = R"({"title": "cat sat", "tokens": ["cat", "sat"], "embeddings": [[1, 0, 1], [0, 1, 1]],
  "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}})";

std::string text(const Trace& t, TextOptions o = {}) {
  std::ostringstream out;
  render_text(t, out, o);
  return out.str();
}

std::string json(const Trace& t) {
  std::ostringstream out;
  render_json(t, out);
  return out.str();
}

}  // namespace

TEST_CASE("display widths: wide characters count 2, combining marks 0", "[render]") {
  CHECK(attn::cells("cat") == 3);
  CHECK(attn::cells("猫") == 2);            // CJK: East Asian wide
  CHECK(attn::cells("e\u0301") == 1);      // e + a combining acute accent
  CHECK(attn::cells("🐈") == 2);            // emoji
  CHECK(attn::cells("☕") == 2);            // a wide symbol below the emoji planes
  CHECK(attn::cells("한국어") == 6);        // Hangul syllables
  CHECK(attn::cells("▁the") == 4);          // SentencePiece's space marker is narrow
  CHECK(attn::pad_right("猫", 4) == "猫  ");
  CHECK(attn::pad_left("🐈", 3) == " 🐈");
  CHECK(attn::clip("猫猫猫", 5) == "猫猫…");  // whole characters, never half of one
  CHECK(attn::clip("e\u0301e\u0301e\u0301", 2) == "e\u0301…");
  CHECK(attn::cells("\xff") == 1);          // a malformed byte: one replacement character
}

TEST_CASE("numbers: fixed decimals, no -0, non-finite spelled out", "[render]") {
  CHECK(format_fixed(0.64045745f, 4) == "0.6405");
  CHECK(format_fixed(-0.00001f, 4) == "0.0000");
  CHECK(format_fixed(-0.0f, 2) == "0.00");
  CHECK(format_fixed(-1.5f, 1) == "-1.5");
  CHECK(format_fixed(-std::numeric_limits<Scalar>::infinity(), 4) == "-inf");
  CHECK(format_fixed(std::numeric_limits<Scalar>::quiet_NaN(), 4) == "nan");
  CHECK(format_fixed(2.0f, 0) == "2");
  CHECK(format_fixed(0.125f, 2) == "0.12");  // a tie: the exact value, rounded half to even
  // beyond ten integer digits, scientific notation with the same decimals (not 39 digits)
  CHECK(format_fixed(3.0e38f, 1) == "3.0e+38");
  CHECK(format_fixed(-3.0e38f, 4) == "-3.0000e+38");
  CHECK(format_fixed(1.5e10f, 2) == "1.50e+10");
  CHECK(format_fixed(-1e9f, 2) == "-1000000000.00");  // ten digits still read as a number
}

TEST_CASE("numbers: the exact float rounded, as fmt's {:.Nf} (from 1e10, {:.Ne}) prints it", "[render]") {
  std::mt19937 rng(3);
  std::uniform_int_distribution<std::uint32_t> bits;
  int differ = 0;
  for (int i = 0; i < 100000; ++i) {
    std::uint32_t b = bits(rng);
    if (i % 2 == 0) b = (b & 0x807fffffu) | ((118u + b % 16u) << 23);  // half of them between 2^-9 and 2^6
    float v;
    std::memcpy(&v, &b, sizeof v);
    if (!std::isfinite(v)) continue;
    const int precision = i % 14;  // 0..12 in integers, 13 the general path
    // (from 1e10 on, scientific: as fmt's {:.Ne} prints it)
    std::string want = std::fabs(v) >= 1e10F ? fmt::format("{:.{}e}", v, precision) : fmt::format("{:.{}f}", v, precision);
    if (want.front() == '-' && want.find_first_not_of("-0.") == std::string::npos) want.erase(0, 1);
    differ += format_fixed(v, precision) != want;
  }
  // exact ties at every decimal (odd multiples of 2^-n, n = 1..24) round half to even, either sign
  for (int n = 1; n <= 24; ++n)
    for (std::uint32_t k = 1; k < 4000; k += 2) {
      const float v = std::ldexp(static_cast<float>(k), -n) * (k % 4 == 1 ? 1.0f : -1.0f);
      for (int precision = 0; precision <= 12; ++precision) {
        std::string want = fmt::format("{:.{}f}", v, precision);
        if (want.front() == '-' && want.find_first_not_of("-0.") == std::string::npos) want.erase(0, 1);
        differ += format_fixed(v, precision) != want;
      }
    }
  CHECK(differ == 0);
}

TEST_CASE("text: header, step heading, formula, symbolic and concrete shape, labelled rows", "[render]") {
  const auto out = text(trace_of(kCatSat));
  CHECK_THAT(out, Catch::Contains("Attention Tracer · cat sat\n"));
  CHECK_THAT(out, Catch::Contains("mode self · B = 1 (no batch dimension) · T = 2 · S = 2 · C = 3 · H = 1 · hs = 3\n"));
  CHECK_THAT(out, Catch::Contains("[8] weights · Attention weights\n    weights = softmax(scaled, dim=-1)\n    [T, T] = [2, 2]\n"));
  CHECK_THAT(out, Catch::Contains("            cat     sat  │    sum\n    cat  0.6405  0.3595  │ 1.0000\n"));
  CHECK_THAT(out, Catch::Contains("    d_k = C = 3: factor 1/√3 = 0.5774\n"));
}

TEST_CASE("text: --precision changes the decimals", "[render]") {
  TextOptions o;
  o.precision = 2;
  CHECK_THAT(text(trace_of(kCatSat), o), Catch::Contains("    cat  0.64  0.36  │ 1.00\n"));
}

TEST_CASE("text: large tensors are summarised with edge items", "[render]") {
  const Trace t = trace_of(R"({"mode": "multi-head", "heads": 8, "random": {"seed": 0, "B": 2, "T": 4, "C": 512}})");
  const auto out = text(t);
  CHECK_THAT(out, Catch::Contains("(summarised: 4096 values; edges of 3 shown; --summary-threshold 4096 shows\n     every value)"));  // (wrapped at 80)
  CHECK_THAT(out, Catch::Contains("… (H 3 .. 4 not shown)"));
  CHECK_THAT(out, Catch::Contains("batch 1 · head 7"));
  // a small tensor of the same run is printed whole
  CHECK_THAT(out, Catch::Contains("[B, H, T, T] = [2, 8, 4, 4]\n    scores[i, j]"));
  TextOptions whole;
  whole.view.summary_threshold = 1 << 20;
  CHECK(text(t, whole).find("summarised") == std::string::npos);
  // the threshold the note names shows that tensor whole; from Python, the note names the keyword
  TextOptions as_said;
  as_said.view.summary_threshold = 4096;
  CHECK(text(t, as_said).find("(summarised: 4096 values") == std::string::npos);
  TextOptions python;
  python.door = attn::Door::Python;
  python.width = 200;
  CHECK_THAT(text(t, python), Catch::Contains("(summarised: 4096 values; edges of 3 shown; summary_threshold=4096 shows every value)"));
}

TEST_CASE("text: --shapes-only prints the shape flow", "[render]") {
  TextOptions o;
  o.shapes_only = true;
  const auto out = text(trace_of(R"({"mode": "multi-head", "heads": 8, "random": {"seed": 0, "B": 2, "T": 4, "C": 512}})"), o);
  CHECK_THAT(out, Catch::Contains("  6. q.heads  Queries, heads first      [B, H, T, hs] = [2, 8, 4, 64]\n"));
  // header, notes, "Shape flow", one line per step: no tensor values
  CHECK(out.find("│") == std::string::npos);
  CHECK(out.find("batch 0") == std::string::npos);
  CHECK(std::count(out.begin(), out.end(), '\n') == 3 + 4 + 2 + 16);
}

TEST_CASE("json: valid, complete, and every number reads back to the same float32", "[render]") {
  const Trace t = trace_of(R"({"mode": "causal", "heads": 2, "random": {"seed": 4, "B": 2, "T": 3, "C": 4}})");
  const auto doc = nlohmann::json::parse(json(t));
  CHECK(doc["format"] == "attn-trace");
  CHECK(doc["config"]["H"] == 2);
  REQUIRE(doc["steps"].size() == t.steps.size());
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    const auto& js = doc["steps"][i];
    const auto& s = t.steps[i];
    CHECK(js["id"] == s.id);
    CHECK(js["shape"].get<Shape>() == s.value.shape());
    CHECK(js["dims"].get<std::vector<std::string>>() == letters(s.dims));
    const auto flat = js["data"].flatten();
    std::size_t n = 0;
    for (const auto& item : flat.items()) {
      const auto& v = item.value();
      const Scalar want = s.value.data()[n++];
      if (v.is_string()) CHECK(v.get<std::string>() == (want < 0 ? "-inf" : "inf"));
      else CHECK(static_cast<Scalar>(v.get<double>()) == want);
    }
    CHECK(n == static_cast<std::size_t>(s.value.size()));
  }
  for (const auto& js : doc["steps"]) {
    if (js["id"] != "weights") continue;
    CHECK(js["row_sums"].size() == 2);  // (B, H, T) = (2, 2, 3)
    CHECK(js["row_sums"][1][1].size() == 3);
  }
}

TEST_CASE("output is deterministic: the same input renders the same bytes", "[render]") {
  const std::string spec = R"({"mode": "cross", "heads": 2, "random": {"seed": 12, "B": 2, "T": 3, "S": 5, "C": 4, "output_projection": true}})";
  CHECK(json(trace_of(spec)) == json(trace_of(spec)));
  CHECK(text(trace_of(spec)) == text(trace_of(spec)));
}

TEST_CASE("json: unknown C is null and labels are escaped", "[render]") {
  const auto out = json(trace_of(R"({"tokens": ["a\"b", "c\\d"], "scores": [[1, 2], [3, 4]]})"));
  CHECK_THAT(out, Catch::Contains(R"("C": null)"));
  CHECK_THAT(out, Catch::Contains(R"("tokens": ["a\"b", "c\\d"])"));
  CHECK_NOTHROW(nlohmann::json::parse(out));
}

TEST_CASE("a JSON trace reads back whole: writing it again gives the same bytes", "[render][trace-io]") {
  const std::vector<std::string> inputs = {
      kCatSat,
      R"({"mode": "causal", "scores": [[0.2, 0.3], [0.5, 0.2]]})",
      R"({"mode": "cross", "heads": 2, "layout": "torch", "tokens": ["The", "cat"],
          "random": {"seed": 3, "T": 2, "S": 3, "C": 4, "output_projection": true}, "source": {"tokens": ["Le", "chat", "mange"]}})",
      R"({"mode": "self", "heads": 2, "random": {"seed": 1, "B": 2, "T": 3, "C": 4}, "padding": {"lengths": [3, 1]},
          "attn_mask": {"add": [[0, -1, 0], [0, 0, "-inf"], [0, 0, 0]]}})",
  };
  for (const auto& input : inputs) {
    const Trace t = trace_of(input);
    const std::string first = json(t);
    std::istringstream in(first);
    const Trace back = read_json_trace(in, "trace.json");
    CHECK(back.config.mode == t.config.mode);
    CHECK(back.config.entry == t.config.entry);
    CHECK(back.config.layout == t.config.layout);
    CHECK(back.config.lengths == t.config.lengths);
    REQUIRE(back.steps.size() == t.steps.size());
    CHECK(back.steps.back().dims == t.steps.back().dims);
    CHECK(json(back) == first);
  }
}

TEST_CASE("reading a JSON trace refuses what is not one", "[render][trace-io]") {
  std::istringstream not_json("{\"format\": ");
  CHECK_THROWS_WITH(read_json_trace(not_json, "a.json"), Catch::Contains("a.json: not a JSON trace"));
  std::istringstream other("{\"format\": \"something\", \"steps\": []}");
  CHECK_THROWS_WITH(read_json_trace(other, "b.json"), Catch::Contains("b.json: not an attn trace"));
  std::istringstream short_data(R"({"format": "attn-trace", "steps": [{"id": "x", "shape": [2], "data": [1]}]})");
  CHECK_THROWS_WITH(read_json_trace(short_data, "c.json"), Catch::Contains("c.json: step x: shape [2] does not hold 1 values"));
}

TEST_CASE("html: only the score-like steps grey out blocked cells, not a [T, C] step that happens to be square", "[render]") {
  // causal, T = C = 3: x, q, k, v and the context are [3, 3] like the masked scores, but on other axes
  const Trace t = trace_of(R"({"mode": "causal", "embeddings": [[1, 2, 3], [4, 5, 6], [7, 8, 9]],
                              "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}})");
  std::ostringstream out;
  render_html(t, out, TextOptions{});
  const std::string html = out.str();
  auto blocked_in = [&](const std::string& id) {
    const auto from = html.find("id=\"step-" + id + "\"");
    const auto to = html.find("<section", from + 1);
    REQUIRE(from != std::string::npos);
    const std::string part = html.substr(from, to - from);
    std::int64_t n = 0;
    for (auto p = part.find("class=\"blocked\""); p != std::string::npos; p = part.find("class=\"blocked\"", p + 1)) ++n;
    return n;
  };
  CHECK(blocked_in("x") == 0);
  CHECK(blocked_in("q") == 0);
  CHECK(blocked_in("context") == 0);
  CHECK(blocked_in("weights") == 3);  // the three entries above the diagonal
}

TEST_CASE("wrapping: a word wider than the line is cut where the line ends, and \"label:   value\" wraps under the value", "[render]") {
  // a 100-character path after a prefix: cut at 80 cells, the rest under the hanging indent
  const std::string path(100, 'x');
  const auto w = wrap("at " + path + " end", 80, "attn: ", "  ");
  CHECK(w == "attn: at\n  " + path.substr(0, 78) + "\n  " + path.substr(78) + " end\n");
  // wide characters are cut whole: 2 cells each, never split
  const auto cjk = wrap("北京北京北京北京北京北京北京北京北京北京北京北京", 20, "", "");
  CHECK(cjk == "北京北京北京北京北京\n北京北京北京北京北京\n北京北京\n");
  // a key-value line's value wraps under itself; a table row (more runs of spaces) is left whole
  const std::string kv = "  student:   /tmp/dump (3 steps compared: alpha, beta, gamma, delta, epsilon, zeta, eta, theta, iota)";
  CHECK(fit_lines(kv, 60) ==
        "  student:   /tmp/dump (3 steps compared: alpha, beta,\n"
        "             gamma, delta, epsilon, zeta, eta, theta, iota)\n");
  const std::string row = "    cat   1.0000   2.0000   3.0000   4.0000   5.0000   6.0000   7.0000   8.0000   9.0000";
  CHECK(fit_lines(row, 60) == row + "\n");
}
