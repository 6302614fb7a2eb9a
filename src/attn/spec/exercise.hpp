// attn exercise's inputs: a template's "exercise" block, the tensors a variant draws, a variant's
// problem.json (an ordinary attn input: the template with drawn values), and the class roster.
// Every refusal names its JSON path, or the roster's file and line. No drawing arithmetic here
// (tools/exercise's), no files written (render/exercise's and the CLI's).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attn/core/spec.hpp"
#include "attn/core/trace.hpp"
#include "attn/tools/exercise.hpp"

namespace attn {

// The block's keys, checked for any input that has one (parse_spec calls it): "ask", "values",
// "decimals", "variant"; "predict" is read by --predict, and other tools' keys are theirs.
ExerciseSettings read_exercise_block(const nlohmann::json& block);

// A tensor of the variant as the handout shows it: its JSON path ("embeddings", "weights.W_q"), its
// shape and values, or a word ("identity") where the template names the matrix instead.
struct ExerciseInput {
  std::string path;
  std::vector<std::int64_t> shape;
  std::vector<double> values;
  std::string word;
};

struct ExerciseTemplate {
  std::string origin;           // the file name as given
  nlohmann::ordered_json root;  // the template as written, its keys in their order
  ExerciseSettings settings;
  std::vector<std::string> drawn;  // the JSON paths of the tensors a variant draws, in document order
  std::size_t count = 0;           // how many values a variant draws
};
// Reads and checks a template: an ordinary input (parse_spec's refusals) with an "exercise" block that
// asks something, its embeddings, weights (or given q, k, v, scores) written out as numbers.
ExerciseTemplate load_exercise_template(const std::string& path);

// The variant of one draw: problem.json's text (the template with the drawn values, "expect" left
// out, the code as exercise.variant).
std::string variant_text(const ExerciseTemplate& t, std::uint64_t draw);

// One draw's variant, traced on the CPU as `attn run problem.json` traces it.
struct Variant {
  std::uint64_t draw = 0;
  std::string text;  // problem.json
  Trace trace;
  std::vector<ExerciseInput> inputs;
};
Variant make_variant(const ExerciseTemplate& t, std::uint64_t draw);

struct Student {
  std::string id, name;  // name "" when the roster has none
};
// A CSV with a header naming an "id" column ("name" optional), one student a line, ids unique and
// usable as a folder's name.
std::vector<Student> read_roster(const std::string& path);
// --students N: ids 1 … N, zero-padded to N's width ("01" … "30") so that folders sort in order.
std::vector<Student> numbered_students(std::int64_t n);

// Every student's variant, in roster order: tools/exercise's draw_class, a candidate refused while an
// asked row ties (tie_in). redraws: how many candidates were refused.
std::vector<Variant> draw_exercise_class(const ExerciseTemplate& t, const std::vector<Student>& students, std::uint64_t seed, int& redraws);

}  // namespace attn
