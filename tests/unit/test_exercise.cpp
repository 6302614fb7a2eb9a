// attn exercise: variant codes, the draws, the class without repeats or ties, the key, the block's and
// the roster's refusals, and the quiz files' counts.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <unistd.h>
#include <set>
#include <sstream>

#include "attn/render/exercise.hpp"
#include "attn/spec/exercise.hpp"
#include "attn/tools/exercise.hpp"
#include "helpers.hpp"

using namespace attn;
using namespace attn::test;
using json = nlohmann::json;

namespace {

// A scratch file holding `text`, removed with the object.
struct ScratchFile {
  std::string path;
  explicit ScratchFile(const std::string& name, const std::string& text)
      : path((std::filesystem::temp_directory_path() / fmt::format("attn-exercise-{}-{}", ::getpid(), name)).string()) {
    std::ofstream(path) << text;
  }
  ~ScratchFile() { std::filesystem::remove(path); }
};

std::string input_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const std::string kTemplate = R"({"tokens": ["I", "like", "tea"], "embeddings": [[1, 0, 0], [0, 1, 1], [1, 1, 0]],
  "weights": {"W_q": [[1, 0], [0, 1], [1, 1]], "W_k": [[0, 1], [1, 0], [1, 0]], "W_v": "identity"},
  "exercise": {"ask": ["scores", "weights"], "values": {"low": -1, "high": 1}}})";

}  // namespace

TEST_CASE("a variant code writes a 40-bit draw in 8 letters and reads back, whatever the case", "[exercise]") {
  for (const std::uint64_t draw : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{0x7FFFFFFFF}, first_draw(2026, "s01")}) {
    const auto code = variant_code(draw);
    CHECK(code.size() == 9);
    CHECK(code[4] == '-');
    CHECK(parse_variant_code(code) == draw);
    std::string lower = code;
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    CHECK(parse_variant_code(lower) == draw);
  }
  CHECK(variant_code(0) == "0000-0000");
  CHECK(variant_code(0x7FFFFFFFF) == "ZZZZ-ZZZ0");  // seven Zs: 31 · (1 + … + 7), 0 mod 31
  CHECK(variant_code(0x421) == "0000-111J");      // the check letter: (5 + 6 + 7) mod 31 = 18, J
  REQUIRE(parse_variant_code("0000-111J"));
  CHECK(parse_variant_code("0OOO-IIIJ") == parse_variant_code("0000-111J"));  // the letters read as digits
  // a mistyped letter, or two neighbours swapped, does not check
  CHECK_FALSE(parse_variant_code("0000-111K"));
  CHECK_FALSE(parse_variant_code("0000-112J"));
  CHECK_FALSE(parse_variant_code("0001-011J"));
  CHECK_FALSE(parse_variant_code("7KQ2-MX4"));     // 7 letters
  CHECK_FALSE(parse_variant_code("7KQ2-MX4ND"));   // 9
  CHECK_FALSE(parse_variant_code("7KQ2-MX4U"));    // U is not Crockford's
}

TEST_CASE("a student's draw comes from (seed, id): the same every time, another for another id or seed", "[exercise]") {
  CHECK(first_draw(2026, "s01") == first_draw(2026, "s01"));
  CHECK(first_draw(2026, "s01") != first_draw(2026, "s02"));
  CHECK(first_draw(2026, "s01") != first_draw(2027, "s01"));
  CHECK(first_draw(2026, "s01") < (std::uint64_t{1} << 35));
  CHECK(next_draw(first_draw(2026, "s01")) != first_draw(2026, "s01"));
  // the values lie on the grid low, low + 0.5, ..., high and come back for the same draw
  ExerciseSettings s;
  s.low = -1;
  s.high = 1;
  s.value_decimals = 1;
  CHECK(s.levels() == 21);
  const auto values = draw_values(12345, 200, s);
  CHECK(values == draw_values(12345, 200, s));
  std::set<double> seen(values.begin(), values.end());
  for (const double v : seen) {
    CHECK(v >= -1);
    CHECK(v <= 1);
    CHECK(std::fabs(v * 10 - std::round(v * 10)) < 1e-9);
  }
  CHECK(seen.size() > 15);  // 200 draws of 21 values reach nearly all of them
  CHECK(seen.contains(0.0));
}

TEST_CASE("10,000 students get 10,000 different variants, and a class larger than the template allows is refused", "[exercise]") {
  ExerciseSettings s;  // -2 … 2, whole numbers
  std::vector<std::string> ids;
  for (int i = 1; i <= 10000; ++i) ids.push_back(fmt::format("s{:05}", i));
  const auto always = [](std::uint64_t, const std::vector<double>&) { return true; };
  const auto drawn = draw_class(7, ids, 15, s, always);
  std::set<std::vector<double>> variants;
  std::set<std::string> codes;
  for (const auto d : drawn.draws) {
    variants.insert(draw_values(d, 15, s));
    codes.insert(variant_code(d));
  }
  CHECK(variants.size() == 10000);
  CHECK(codes.size() == 10000);
  CHECK(draw_class(7, ids, 15, s, always).draws == drawn.draws);  // deterministic
  // two values of five levels: 25 variants, so 25 students take every one of them (redrawn on a repeat)
  const std::vector<std::string> class25(ids.begin(), ids.begin() + 25);
  const auto all = draw_class(7, class25, 2, s, always);
  std::set<std::vector<double>> small;
  for (const auto d : all.draws) small.insert(draw_values(d, 2, s));
  CHECK(small.size() == 25);
  CHECK(all.redraws > 0);
  const std::vector<std::string> class26(ids.begin(), ids.begin() + 26);
  CHECK(input_error([&] { draw_class(7, class26, 2, s, always); }).starts_with("exercise.values: 26 students need as many different variants"));
  // a draw that `acceptable` refuses (a tie) is redrawn, never kept
  std::set<std::uint64_t> refused;
  const auto odd_refused = [&refused](std::uint64_t d, const std::vector<double>&) {
    if (d % 2 == 1) refused.insert(d);
    return d % 2 == 0;
  };
  for (const auto d : draw_class(7, class25, 15, s, odd_refused).draws) CHECK(d % 2 == 0);
  CHECK_FALSE(refused.empty());
}

TEST_CASE("a tie in an asked row of weights is found; a row of one unmasked key is none", "[exercise]") {
  ExerciseSettings s;
  s.ask = {"weights"};
  // rows "a" and "b" are the same vector: each row's two keys score alike
  const auto tied = trace_of(R"({"tokens": ["a", "b"], "embeddings": [[1, 0], [1, 0]],
    "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}})");
  CHECK(tie_in(tied, s).value_or("") == "weights[0] (query \"a\")");
  // cat/sat: 0.6405 against 0.3595, far apart
  const auto apart = trace_of(R"({"tokens": ["cat", "sat"], "embeddings": [[1, 0, 1], [0, 1, 1]],
    "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}})");
  CHECK_FALSE(tie_in(apart, s));
  // causal: row 0 sees one key (no tie), row 1 sees two that score alike (a tie)
  const auto causal = trace_of(R"({"mode": "causal", "scores": [[0, 0], [0.5, 0.5]]})");
  CHECK(tie_in(causal, s).value_or("") == "weights[1] (query \"t1\")");
  // within the tolerance: 0.502 against 0.498 ties at 2 decimals (±0.005), not at 3
  const auto near = trace_of(R"({"scores": [[0.008, 0]], "v": [[1], [2]]})");
  CHECK(tie_in(near, s));
  s.decimals = 3;
  CHECK_FALSE(tie_in(near, s));
  // context is asked alone: its rows are no argmax question
  s.ask = {"context"};
  CHECK_FALSE(tie_in(tied, s));
}

TEST_CASE("the key is the asked steps rounded to the decimals, in their order; an unknown step is named with the closest", "[exercise]") {
  const auto t = trace_of(R"({"tokens": ["cat", "sat"], "embeddings": [[1, 0, 1], [0, 1, 1]],
    "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}})");
  ExerciseSettings s;
  s.ask = {"weights", "scores"};
  const auto key = exercise_key(t, s);
  REQUIRE(key.size() == 2);
  CHECK(key[0].step->id == "weights");
  CHECK(key[0].values == std::vector<std::string>{"0.64", "0.36", "0.36", "0.64"});
  CHECK(key[1].values == std::vector<std::string>{"2.00", "1.00", "1.00", "2.00"});
  s.decimals = 0;
  CHECK(exercise_key(t, s)[0].values == std::vector<std::string>{"1", "0", "0", "1"});
  s.ask = {"scores", "weigths"};
  CHECK(input_error([&] { check_asked_steps(t, s); }) ==
        "exercise.ask[1]: no step \"weigths\" (did you mean \"weights\"?); this template's steps: x, q, k, v, k.T, scores, scaled, weights, context");
}

TEST_CASE("the exercise block's refusals name their JSON path", "[exercise]") {
  const auto refusal = [](const std::string& block) { return input_error([&] { read_exercise_block(json::parse(block)); }); };
  CHECK(refusal(R"({"ask": []})").starts_with("exercise.ask: expected a list of step ids"));
  CHECK(refusal(R"({"ask": ["weights", 3]})").starts_with("exercise.ask[1]: "));
  CHECK(refusal(R"({"decimals": -1})") == "exercise.decimals: expected a whole number from 0 to 6, got -1");
  CHECK(refusal(R"({"decimals": 2.5})") == "exercise.decimals: expected a whole number from 0 to 6, got 2.5");
  CHECK(refusal(R"({"values": {"low": 1, "high": 1}})") == "exercise.values: expected low < high, got low 1 and high 1");
  CHECK(refusal(R"({"values": {"hgih": 1}})").starts_with("exercise.values.hgih: unknown key (did you mean \"high\"?)"));
  CHECK(refusal(R"({"values": {"decimals": 4}})") == "exercise.values.decimals: expected a whole number from 0 to 3, got 4");
  CHECK(refusal(R"({"variant": "nope"})") == "exercise.variant: expected a variant code such as \"7KQ2-MX4N\", got \"nope\"");
  CHECK(refusal(R"({"predict": ["weights"], "ask": ["scores"]})").empty());  // --predict's key is its own
  // attn run reads an input with a block, and checks it
  CHECK(error_of(R"({"scores": [[1, 0]], "exercise": {"ask": ["weights"], "decimals": 9}})") ==
        "exercise.decimals: expected a whole number from 0 to 6, got 9");
  CHECK(error_of(R"({"scores": [[1, 0]], "exercise": {"ask": ["weights"]}})").empty());
}

TEST_CASE("a roster: id and name columns in any order, quotes, a byte-order mark; refusals name file and line", "[exercise]") {
  const ScratchFile ok("ok.csv", "\xEF\xBB\xBF" "Name,email,ID\r\n\"Lovelace, Ada\",ada@x,s1\r\n\r\nBob \"B\",b@x,s2\r\n");
  const auto students = read_roster(ok.path);
  REQUIRE(students.size() == 2);
  CHECK(students[0].id == "s1");
  CHECK(students[0].name == "Lovelace, Ada");
  CHECK(students[1].name == "Bob \"B\"");
  const ScratchFile ids_only("ids.csv", "id\n7\n8\n");
  CHECK(read_roster(ids_only.path)[1].id == "8");
  CHECK(read_roster(ids_only.path)[1].name.empty());
  const ScratchFile dup("dup.csv", "id,name\na,A\nb,B\na,C\n");
  CHECK(input_error([&] { read_roster(dup.path); }) == dup.path + ":4: duplicate id \"a\" (first on line 2)");
  const ScratchFile short_line("short.csv", "name,id\nAda\n");
  CHECK(input_error([&] { read_roster(short_line.path); }) == short_line.path + ":2: 1 fields, the header's columns need 2");
  const ScratchFile hidden("hidden.csv", "id\n.git\n");
  CHECK(input_error([&] { read_roster(hidden.path); }).starts_with(hidden.path + ":2: the id \".git\" names the student's folder"));
  CHECK(numbered_students(9).back().id == "9");
  CHECK(numbered_students(30).front().id == "01");
  CHECK(numbered_students(30).back().id == "30");
}

TEST_CASE("a class's files: a key per student in the step's shape, a Moodle and a GIFT question per asked value", "[exercise]") {
  const ScratchFile tmpl("template.json", kTemplate);
  const auto t = load_exercise_template(tmpl.path);
  CHECK(t.drawn == std::vector<std::string>{"embeddings", "weights.W_q", "weights.W_k"});
  CHECK(t.count == 21);
  const auto students = numbered_students(3);
  int redraws = 0;
  const auto variants = draw_exercise_class(t, students, 1, redraws);
  REQUIRE(variants.size() == 3);
  for (const auto& v : variants) CHECK_FALSE(tie_in(v.trace, t.settings));
  std::vector<std::pair<std::string, std::string>> files;
  exercise_files(t, students, 1, variants, [&files](const std::string& name, const std::string& text) { files.emplace_back(name, text); });
  CHECK(files.back().first == "class.json");  // written last
  std::map<std::string, std::string> by_name(files.begin(), files.end());
  CHECK(files.size() == 3 * 5 + 5);
  // 3 students × (9 scores + 9 weights)
  const auto count = [](const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  CHECK(count(by_name["moodle.xml"], "<question type=\"numerical\">") == 54);
  CHECK(count(by_name["moodle.xml"], "<tolerance>0.005</tolerance>") == 54);
  CHECK(count(by_name["class.gift"], ":0.005}") == 54);
  CHECK(count(by_name["key.csv"], "\n") == 55);
  CHECK(count(by_name["class.html"], "<section class=\"handout\">") == 3);
  // key.json: the variant's own values, rounded, in [T, S] rows
  const auto key = json::parse(by_name["1/key.json"]);
  const Step& weights = step(variants[0].trace, "weights");
  CHECK(key["weights"].size() == 3);
  CHECK(key["weights"][1][2].get<double>() == Approx(weights.value.at(5)).margin(0.005));
  // the handout: the student's code, the inputs' numbers, each asked step an empty table with its labels
  const std::string& handout = by_name["1/handout.md"];
  CHECK_THAT(handout, Catch::Contains("Name: ____________________ · id 1 · variant " + variant_code(variants[0].draw)));
  CHECK_THAT(handout, Catch::Contains("W_v = identity"));
  CHECK_THAT(handout, Catch::Contains("### 2. weights: Attention weights\n\nweights = softmax(scaled, dim=-1) · [T, T] = [3, 3]\n\n"
                                      "|  | I | like | tea |\n|---|---:|---:|---:|\n| **I** |  |  |  |\n| **like** |  |  |  |\n"));
  CHECK_THAT(by_name["1/handout.html"], Catch::Contains("<tr><th>like</th><td class=\"answer\"></td>"));
  CHECK_THAT(by_name["1/solution.md"], Catch::Contains("## 8. Attention weights (`weights`)"));
  // the problem parses as attn run parses it, and says its variant
  CHECK(json::parse(by_name["2/problem.json"])["exercise"]["variant"] == variant_code(variants[1].draw));
  CHECK(by_name["2/problem.json"] == make_variant(t, variants[1].draw).text);
}
