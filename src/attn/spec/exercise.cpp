// attn exercise's template and variants: the "exercise" block checked, the tensors a variant draws
// found and replaced, the variant written as an ordinary input and parsed as `attn run` parses it.
// The roster is read in exercise_roster.cpp.
#include "attn/spec/exercise.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <functional>

#include "attn/core/error.hpp"
#include "attn/io/json_read.hpp"
#include "attn/numerics/backend.hpp"
#include "attn/pipeline/pipeline.hpp"
#include "attn/spec/parse.hpp"

namespace attn {

using ordered_json = nlohmann::ordered_json;

namespace {

constexpr double kValueLimit = 100;       // drawn inputs are for working by hand
constexpr std::int64_t kMaxLevels = 1000000;

// ---- the block ------------------------------------------------------------------------------

std::vector<std::string> read_ask(const json& j) {
  if (!j.is_array() || j.empty()) fail("exercise.ask", fmt::format("expected a list of step ids such as [\"scores\", \"weights\"], got {}", describe(j)));
  std::vector<std::string> ask;
  for (std::size_t i = 0; i < j.size(); ++i) ask.push_back(read_string(j[i], fmt::format("exercise.ask[{}]", i)));
  return ask;
}

int read_int_in(const json& j, const std::string& path, int low, int high) {
  if (!j.is_number_integer() || j.get<std::int64_t>() < low || j.get<std::int64_t>() > high)
    fail(path, fmt::format("expected a whole number from {} to {}, got {}", low, high, j.is_number() ? j.dump() : describe(j)));
  return j.get<int>();
}

double read_bound(const json& j, const std::string& path) {
  if (!j.is_number() || !std::isfinite(j.get<double>()) || std::fabs(j.get<double>()) > kValueLimit)
    fail(path, fmt::format("expected a number from {0} to {1}, got {2}", -kValueLimit, kValueLimit, j.is_number() ? j.dump() : describe(j)));
  return j.get<double>();
}

// "values": {"low", "high", "decimals"}: the grid the drawn inputs lie on.
void read_values(const json& j, ExerciseSettings& s) {
  if (!j.is_object()) fail("exercise.values", fmt::format("expected {{\"low\": -2, \"high\": 2, \"decimals\": 0}}, got {}", describe(j)));
  check_keys(j, "exercise.values", {"low", "high", "decimals"});
  if (j.contains("low")) s.low = read_bound(j["low"], "exercise.values.low");
  if (j.contains("high")) s.high = read_bound(j["high"], "exercise.values.high");
  if (j.contains("decimals")) s.value_decimals = read_int_in(j["decimals"], "exercise.values.decimals", 0, 3);
  if (s.low >= s.high) fail("exercise.values", fmt::format("expected low < high, got low {} and high {}", s.low, s.high));
  const double unit = std::pow(10.0, s.value_decimals);
  for (const auto& [name, v] : {std::pair{"low", s.low}, std::pair{"high", s.high}}) {
    if (std::fabs(v * unit - std::round(v * unit)) > 1e-9)
      fail(fmt::format("exercise.values.{}", name), fmt::format("{} has more than the {} decimals values are drawn to", v, s.value_decimals));
  }
  if (s.levels() > kMaxLevels)
    fail("exercise.values", fmt::format("{} values from {} to {}: at most {} (fewer decimals, or a narrower range)", s.levels(), s.low, s.high, kMaxLevels));
}

// ---- the tensors a variant draws --------------------------------------------------------------

// Refuses {"npy": ...} anywhere: the variant is copied into each student's folder, and a file beside
// the template would not be found from there.
void refuse_npy(const ordered_json& j, const std::string& path) {
  if (j.is_object()) {
    if (j.contains("npy")) fail(path, "a template's tensors are copied into every student's problem.json: write them out as numbers, not as a .npy file");
    for (const auto& [key, v] : j.items()) refuse_npy(v, key_path(path, key));
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) refuse_npy(j[i], fmt::format("{}[{}]", path, i));
  }
}

// Each drawable tensor of the root, in document order: embeddings, q, k, v, scores, source.embeddings
// and every weight (a matrix given as numbers, or a word such as "identity").
void for_each_drawable(ordered_json& root, const std::function<void(const std::string&, ordered_json&)>& visit) {
  static const std::vector<std::string> kTensors = {"embeddings", "q", "k", "v", "scores"};
  for (auto& [key, value] : root.items()) {
    if (std::find(kTensors.begin(), kTensors.end(), key) != kTensors.end()) visit(key, value);
    if (key == "source" && value.is_object() && value.contains("embeddings")) visit("source.embeddings", value["embeddings"]);
    if (key == "weights" && value.is_object())
      for (auto& [name, w] : value.items()) visit(key_path("weights", name), w);
  }
}

void for_each_leaf(ordered_json& j, const std::function<void(ordered_json&)>& visit) {
  if (!j.is_array()) return visit(j);
  for (auto& e : j) for_each_leaf(e, visit);
}

std::vector<std::int64_t> shape_of(const ordered_json& j) {
  std::vector<std::int64_t> shape;
  for (const ordered_json* at = &j; at->is_array() && !at->empty(); at = &(*at)[0]) shape.push_back(static_cast<std::int64_t>(at->size()));
  return shape;
}

// The template with one draw's values in place of its drawn tensors'.
ordered_json variant_root(const ExerciseTemplate& t, std::uint64_t draw) {
  ordered_json root = t.root;
  const auto values = draw_values(draw, t.count, t.settings);
  std::size_t next = 0;
  for_each_drawable(root, [&](const std::string&, ordered_json& tensor) {
    if (!tensor.is_array()) return;
    for_each_leaf(tensor, [&](ordered_json& leaf) {
      const double v = values[next++];
      if (t.settings.value_decimals == 0) leaf = static_cast<std::int64_t>(v);
      else leaf = v;
    });
  });
  root.erase("expect");  // a document's printed numbers: not this variant's
  root["exercise"]["variant"] = variant_code(draw);
  return root;
}

// ---- problem.json's text: two-space indents, a tensor's innermost rows on one line each ----------

void write_json(const ordered_json& j, std::string& out, int indent) {
  const std::string pad(static_cast<std::size_t>(indent + 2), ' ');
  const bool scalars = j.is_array() && std::none_of(j.begin(), j.end(), [](const ordered_json& e) { return e.is_structured(); });
  if (!j.is_structured() || j.empty() || scalars) {
    if (!j.is_array() || j.empty()) {
      out += j.dump(-1, ' ', false, ordered_json::error_handler_t::strict);
      return;
    }
    out += "[";
    for (std::size_t i = 0; i < j.size(); ++i) out += (i ? ", " : "") + j[i].dump(-1, ' ', false);
    out += "]";
    return;
  }
  out += j.is_object() ? "{\n" : "[\n";
  bool first = true;
  for (const auto& [key, value] : j.items()) {
    out += (first ? "" : ",\n") + pad;
    if (j.is_object()) out += ordered_json(key).dump(-1, ' ', false) + ": ";
    write_json(value, out, indent + 2);
    first = false;
  }
  out += "\n" + std::string(static_cast<std::size_t>(indent), ' ') + (j.is_object() ? "}" : "]");
}

// The template's own checks: it runs, it asks steps it has, nothing is drawn from a seed.
void check_template(const ExerciseTemplate& t, const Spec& spec) {
  for (const char* key : {"random", "checkpoint"}) {
    if (t.root.contains(key)) {
      fail(key, "a template gives its embeddings and weights as numbers (they fix the shapes), and each student's are drawn "
                "from exercise.values; write them out instead of generating them");
    }
  }
  if (!t.root.contains("exercise")) fail("exercise", "required in a template: {\"exercise\": {\"ask\": [\"scores\", \"weights\"]}} (the steps each student computes)");
  if (!t.root["exercise"].contains("ask")) fail("exercise.ask", "required: the step ids each student computes, e.g. [\"scores\", \"weights\"]");
  if (t.count == 0) fail("", "a template draws its embeddings, weights (or given q, k, v, scores) per student: it gives none as numbers");
  auto backend = make_cpu_backend();
  check_asked_steps(run_pipeline(spec, *backend), t.settings);
}

}  // namespace

ExerciseSettings read_exercise_block(const json& block) {
  if (!block.is_object()) fail("exercise", fmt::format("expected an object such as {{\"ask\": [\"weights\"]}}, got {}", describe(block)));
  check_keys(block, "exercise", {"ask", "values", "decimals", "variant", "predict"});
  ExerciseSettings s;
  if (block.contains("ask")) s.ask = read_ask(block["ask"]);
  if (block.contains("values")) read_values(block["values"], s);
  if (block.contains("decimals")) s.decimals = read_int_in(block["decimals"], "exercise.decimals", 0, 6);
  if (block.contains("variant") && !parse_variant_code(read_string(block["variant"], "exercise.variant")))
    fail("exercise.variant", fmt::format("expected a variant code such as \"7KQ2-MX4N\", got {}", block["variant"].dump()));
  return s;
}

ExerciseTemplate load_exercise_template(const std::string& path) {
  const std::string text = read_input(path);
  const std::string dir = path == "-" ? "" : std::filesystem::path(path).parent_path().string();
  const std::string origin = path == "-" ? "<stdin>" : path;
  parse_json(text, origin);  // JSON's refusals (line and column) before the template's
  ExerciseTemplate t;
  t.origin = path;
  t.root = ordered_json::parse(text);
  refuse_npy(t.root, "");
  const Spec spec = parse_spec(text, origin, dir);  // then every ordinary refusal
  if (t.root.contains("exercise")) t.settings = read_exercise_block(json::parse(t.root["exercise"].dump()));
  for_each_drawable(t.root, [&t](const std::string& at, ordered_json& tensor) {
    if (!tensor.is_array()) return;
    t.drawn.push_back(at);
    for_each_leaf(tensor, [&t](ordered_json&) { ++t.count; });
  });
  check_template(t, spec);
  return t;
}

std::string variant_text(const ExerciseTemplate& t, std::uint64_t draw) {
  std::string out;
  write_json(variant_root(t, draw), out, 0);
  return out + "\n";
}

namespace {

std::vector<ExerciseInput> variant_inputs(ordered_json root) {
  std::vector<ExerciseInput> inputs;
  for_each_drawable(root, [&inputs](const std::string& at, ordered_json& tensor) {
    ExerciseInput in{at, shape_of(tensor), {}, tensor.is_string() ? tensor.get<std::string>() : ""};
    for_each_leaf(tensor, [&in](ordered_json& leaf) {
      if (leaf.is_number()) in.values.push_back(leaf.get<double>());
    });
    inputs.push_back(std::move(in));
  });
  return inputs;
}

}  // namespace

Variant make_variant(const ExerciseTemplate& t, std::uint64_t draw) {
  Variant v{draw, variant_text(t, draw), {}, variant_inputs(variant_root(t, draw))};
  auto backend = make_cpu_backend();
  v.trace = run_pipeline(parse_spec(v.text, "problem.json"), *backend);
  return v;
}

std::vector<Variant> draw_exercise_class(const ExerciseTemplate& t, const std::vector<Student>& students, std::uint64_t seed, int& redraws) {
  std::vector<std::string> ids;
  for (const auto& s : students) ids.push_back(s.id);
  std::vector<Variant> variants;
  const auto acceptable = [&](std::uint64_t draw, const std::vector<double>&) {
    Variant v = make_variant(t, draw);
    if (tie_in(v.trace, t.settings)) return false;
    variants.push_back(std::move(v));
    return true;
  };
  redraws = draw_class(seed, ids, t.count, t.settings, acceptable).redraws;
  return variants;
}

}  // namespace attn
