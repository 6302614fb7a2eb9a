// attn grade's files read: the class manifest and each student's key (the instructor's: a fault is
// an InputError naming the file and JSON path), and a student's submission (answers.json,
// answers.csv or <step>.npy files: a fault is one of that student's problems, never an abort).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include "attn/core/error.hpp"
#include "attn/core/steps.hpp"
#include "attn/core/suggest.hpp"
#include "attn/io/json_read.hpp"
#include "attn/io/npy.hpp"
#include "attn/tools/grade.hpp"

namespace attn {
namespace fs = std::filesystem;

namespace {

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot be read", path));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Python's json.dump writes NaN, Infinity and -Infinity bare (not JSON): made the strings attn
// reads as non-finite numbers, so that a notebook's NaN is graded, not refused.
std::string python_literals(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    const auto word = [&](std::string_view w) { return text.compare(i, w.size(), w) == 0; };
    if (word("NaN")) out += "\"nan\"", i += 2;
    else if (word("-Infinity")) out += "\"-inf\"", i += 8;
    else if (word("Infinity")) out += "\"inf\"", i += 7;
    else out += c;
  }
  return out;
}

// A number as a student writes it in text: "0.25", "-inf", and as the handouts print them, with the
// typographic minus (U+2212) or the infinity sign: "−0.25", "−inf", "−∞"; "nan" and Python's
// "Infinity" too. Nothing for anything else.
std::optional<double> student_number(std::string_view s) {
  constexpr std::string_view kMinus = "\u2212", kInfinity = "\u221e";
  bool negative = false;
  if (s.substr(0, kMinus.size()) == kMinus) s.remove_prefix(kMinus.size()), negative = true;
  else if (!s.empty() && (s[0] == '-' || s[0] == '+')) negative = s[0] == '-', s.remove_prefix(1);
  std::string word(s);
  for (char& c : word) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const double sign = negative ? -1.0 : 1.0;
  if (word == "inf" || word == "infinity" || word == kInfinity) return sign * std::numeric_limits<double>::infinity();
  if (word == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (word.empty() || !(std::isdigit(static_cast<unsigned char>(word[0])) || word[0] == '.')) return std::nullopt;
  std::size_t used = 0;
  try {
    const double v = std::stod(word, &used);
    if (used == word.size()) return sign * v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// A nested array of numbers (or "nan", "inf", "-inf", or a number written as a string, as
// student_number reads it) as a tensor; InputError naming the JSON path.
Tensor read_values(const json& j, const std::string& path) {
  const auto leaf_value = [&](const json& leaf, const std::string& at) -> Scalar {
    if (leaf.is_number()) return static_cast<Scalar>(leaf.get<double>());
    if (leaf.is_string()) {
      if (const auto v = student_number(leaf.get<std::string>())) return static_cast<Scalar>(*v);
    }
    fail(at, fmt::format("expected a number (or \"-inf\" for a blocked entry, \"nan\"), got {}", describe(leaf)));
  };
  if (!j.is_array()) return Tensor({1}, {leaf_value(j, path)});
  NestedArray nested(j, path, {"expected a nested array of numbers, got an empty array"});
  std::vector<Scalar> values;
  nested.for_each_leaf([&](const json& leaf, const LeafPath& at) { values.push_back(leaf_value(leaf, at.str())); });
  return Tensor(nested.shape(), values);
}

// A message from an InputError of a reader, prefixed with the file it was reading.
[[noreturn]] void refile(const std::string& file, const InputError& e) { throw InputError(fmt::format("{}: {}", file, e.what())); }

json parsed(const std::string& file, bool python) {
  const std::string text = file_text(file);
  return parse_json(python ? python_literals(text) : text, file).root;
}

std::string asked_list(const std::vector<std::string>& ask) { return fmt::format("asked: {}", fmt::join(ask, ", ")); }

// "scroes" is not asked: with the closest asked id, and the list.
std::string not_asked(const std::string& id, const std::vector<std::string>& ask) {
  const std::vector<std::string_view> names(ask.begin(), ask.end());
  return fmt::format("\"{}\" is not an asked step{}; {}", id, did_you_mean(id, names), asked_list(ask));
}

ClassStudent read_student(const json& j, const std::string& path, std::set<std::string>& ids) {
  if (!j.is_object()) fail(path, fmt::format("expected an object {{\"id\", \"name\", \"variant\"}}, got {}", describe(j)));
  check_keys(j, path, {"id", "name", "variant"});
  if (!j.contains("id")) fail(key_path(path, "id"), "required: the student's id (a string)");
  ClassStudent s{read_string(j["id"], key_path(path, "id")), "", ""};
  if (s.id.empty() || s.id == "." || s.id == ".." || s.id.find_first_of("/\\") != std::string::npos) {
    fail(key_path(path, "id"), fmt::format("\"{}\" cannot name a folder (no '/', '\\', \".\" or \"..\")", s.id));
  }
  if (!ids.insert(s.id).second) fail(key_path(path, "id"), fmt::format("\"{}\" is another student's id too", s.id));
  if (j.contains("name")) s.name = read_string(j["name"], key_path(path, "name"));
  if (j.contains("variant")) s.variant = read_string(j["variant"], key_path(path, "variant"));
  return s;
}

std::vector<std::string> read_ask(const json& j) {
  if (!j.is_array() || j.empty()) fail("ask", fmt::format("expected a non-empty array of step ids, got {}", describe(j)));
  std::vector<std::string> ask;
  std::vector<std::string_view> known;
  for (const auto& s : all_steps()) known.push_back(s.id);
  for (std::size_t i = 0; i < j.size(); ++i) {
    const auto path = fmt::format("ask[{}]", i);
    const std::string id = read_string(j[i], path);
    if (!step_from_id(id)) fail(path, fmt::format("\"{}\" is no step id{}", id, did_you_mean(id, known)));
    if (std::find(ask.begin(), ask.end(), id) != ask.end()) fail(path, fmt::format("\"{}\" is asked twice", id));
    ask.push_back(id);
  }
  return ask;
}

ClassManifest read_manifest(const json& root, const std::string& dir) {
  if (!root.is_object()) fail("", fmt::format("expected an object, got {}", describe(root)));
  check_keys(root, "", {"attn_exercise", "template", "seed", "ask", "decimals", "tolerance", "students"});
  for (const char* key : {"attn_exercise", "ask", "students"})
    if (!root.contains(key)) fail(key, "required (class.json is what attn exercise writes)");
  if (root["attn_exercise"] != 1) fail("attn_exercise", fmt::format("expected 1 (this attn reads version 1), got {}", root["attn_exercise"].dump()));
  ClassManifest m;
  m.dir = dir;
  if (root.contains("template")) m.template_file = read_string(root["template"], "template");
  if (root.contains("seed")) {
    if (!root["seed"].is_number_integer()) fail("seed", fmt::format("expected an integer, got {}", describe(root["seed"])));
    m.seed = root["seed"].get<std::int64_t>();
  }
  m.ask = read_ask(root["ask"]);
  if (root.contains("decimals")) {
    const auto& d = root["decimals"];
    if (!d.is_number_integer() || d.get<std::int64_t>() < 0 || d.get<std::int64_t>() > 12) fail("decimals", fmt::format("expected an integer from 0 to 12, got {}", d.dump()));
    m.decimals = d.get<int>();
  }
  // check's rule when none is given: half a unit in the last decimal
  m.tolerance = 0.5 * std::pow(10.0, -m.decimals);
  if (root.contains("tolerance")) {
    const auto& t = root["tolerance"];
    if (!t.is_number() || !(t.get<double>() >= 0) || !std::isfinite(t.get<double>())) fail("tolerance", fmt::format("expected a number ≥ 0, got {}", t.dump()));
    m.tolerance = t.get<double>();
  }
  const auto& students = root["students"];
  if (!students.is_array()) fail("students", fmt::format("expected an array of students, got {}", describe(students)));
  std::set<std::string> ids;
  for (std::size_t i = 0; i < students.size(); ++i) m.students.push_back(read_student(students[i], fmt::format("students[{}]", i), ids));
  return m;
}

// ---- a student's submission ----

Answer whole(Tensor t) {
  Answer a{std::move(t), {}};
  a.given.assign(static_cast<std::size_t>(a.value.size()), true);
  return a;
}

void read_answers_json(const std::string& file, const std::vector<std::string>& ask, Submission& sub) {
  json root;
  try {
    root = parsed(file, true);
  } catch (const InputError& e) {
    sub.problems.push_back(e.what());
    return;
  }
  if (!root.is_object()) {
    sub.problems.push_back(fmt::format("answers.json: expected an object {{step id: nested list}}, got {}", describe(root)));
    return;
  }
  for (const auto& [id, value] : root.items()) {
    if (std::find(ask.begin(), ask.end(), id) == ask.end()) {
      sub.problems.push_back(fmt::format("answers.json: {}", not_asked(id, ask)));
      continue;
    }
    try {
      sub.answers.emplace(id, whole(read_values(value, id)));
    } catch (const InputError& e) {
      sub.problems.push_back(fmt::format("answers.json: {}", e.what()));
    }
  }
}

std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  for (const char c : line) {
    if (c == ',') out.emplace_back();
    else if (c != '\r' && c != '"' && c != ' ') out.back() += c;
  }
  return out;
}

double csv_number(const std::string& s) {
  if (const auto v = student_number(s)) return *v;
  throw std::invalid_argument(s);
}

// One row of answers.csv into its step's answer; a fault named by its line.
void csv_row(const std::vector<std::string>& f, int line, const std::vector<std::string>& ask, const std::map<std::string, Tensor>& key,
             Submission& sub) {
  const auto where = fmt::format("answers.csv line {}", line);
  if (f.size() != 3) return sub.problems.push_back(fmt::format("{}: expected step,index,value, got {} fields", where, f.size()));
  if (std::find(ask.begin(), ask.end(), f[0]) == ask.end()) return sub.problems.push_back(fmt::format("{}: {}", where, not_asked(f[0], ask)));
  const Tensor& k = key.at(f[0]);
  std::int64_t index = -1;
  double value = 0;
  try {
    std::size_t used = 0;
    index = std::stoll(f[1], &used);
    if (used != f[1].size()) index = -1;
    value = csv_number(f[2]);
  } catch (const std::exception&) {
    return sub.problems.push_back(fmt::format("{}: expected an index from 0 and a number, got \"{}\", \"{}\"", where, f[1], f[2]));
  }
  if (index < 0 || index >= k.size()) {
    return sub.problems.push_back(fmt::format("{}: {} index {} is outside 0 … {} (the flat row-major index into {})", where, f[0], f[1],
                                              k.size() - 1, shape_string(k.shape())));
  }
  auto [it, fresh] = sub.answers.try_emplace(f[0], Answer{Tensor(k.shape()), std::vector<bool>(static_cast<std::size_t>(k.size()), false)});
  auto& a = it->second;
  if (a.given[static_cast<std::size_t>(index)]) return sub.problems.push_back(fmt::format("{}: {} index {} is given twice; the first counts", where, f[0], index));
  a.given[static_cast<std::size_t>(index)] = true;
  a.value.mutable_data()[index] = static_cast<Scalar>(value);
}

void read_answers_csv(const std::string& file, const std::vector<std::string>& ask, const std::map<std::string, Tensor>& key, Submission& sub) {
  std::ifstream in(file);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    const auto f = csv_fields(line);
    if (f.size() == 1 && f[0].empty()) continue;
    if (n == 1 && f.size() == 3 && f[0] == "step" && f[1] == "index" && f[2] == "value") continue;
    if (n == 1) sub.problems.push_back("answers.csv line 1: expected the header step,index,value; read as a row");
    csv_row(f, n, ask, key, sub);
  }
  for (const auto& [id, a] : sub.answers) {
    const auto missing = std::count(a.given.begin(), a.given.end(), false);
    if (missing > 0) sub.problems.push_back(fmt::format("answers.csv: {} has no row for {} of its {} values", id, missing, a.given.size()));
  }
}

void read_npy_files(const std::vector<fs::path>& files, const std::vector<std::string>& ask, Submission& sub) {
  std::vector<std::string> other_steps;  // files of steps not asked (an attn run --dump holds them all): one line for them
  for (const auto& p : files) {
    const std::string id = p.stem().string(), name = p.filename().string();
    if (std::find(ask.begin(), ask.end(), id) == ask.end()) {
      if (step_from_id(id)) other_steps.push_back(name);
      else sub.problems.push_back(fmt::format("{}: {}", name, not_asked(id, ask)));
      continue;
    }
    try {
      sub.answers.emplace(id, whole(read_npy(p.string(), name, NonFinite::Allow)));
    } catch (const InputError& e) {
      sub.problems.push_back(e.what());
    }
  }
  if (!other_steps.empty()) {
    sub.problems.push_back(fmt::format("{}: {} not asked, left out; {}", fmt::join(other_steps, ", "),
                                       other_steps.size() == 1 ? "a step" : fmt::format("{} steps", other_steps.size()), asked_list(ask)));
  }
}

}  // namespace

ClassManifest read_class(const std::string& dir) {
  const std::string file = (fs::path(dir) / "class.json").string();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError(fmt::format("{}: no such directory (the class directory attn exercise writes)", dir));
  if (!fs::is_regular_file(file, ec)) throw InputError(fmt::format("{}: no such file (attn exercise writes it, with a folder per student)", file));
  try {
    return read_manifest(parsed(file, false), dir);
  } catch (const InputError& e) {
    if (std::string_view(e.what()).starts_with(file)) throw;
    refile(file, e);
  }
}

std::map<std::string, Tensor> read_key(const std::string& path, const std::vector<std::string>& ask, const Trace& reference) {
  try {
    const json root = parsed(path, false);
    if (!root.is_object()) fail("", fmt::format("expected an object {{step id: nested list}}, got {}", describe(root)));
    std::map<std::string, Tensor> key;
    for (const auto& id : ask) {
      if (!root.contains(id)) fail(id, "required: the key of this asked step");
      Tensor t = read_values(root[id], id);
      const Step* r = reference.find(id);
      if (r == nullptr) fail(id, "the problem's trace has no such step (class.json asks it)");
      if (t.shape() != r->value.shape()) {
        fail(id, fmt::format("shape {}, where the problem's {} is {}", shape_string(t.shape()), id, shape_string(r->value.shape())));
      }
      key.emplace(id, std::move(t));
    }
    return key;
  } catch (const InputError& e) {
    if (std::string_view(e.what()).starts_with(path)) throw;
    refile(path, e);
  }
}

Submission read_submission(const std::string& folder, const std::vector<std::string>& ask, const std::map<std::string, Tensor>& key) {
  Submission sub;
  const fs::path dir(folder);
  std::vector<fs::path> npy;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".npy") npy.push_back(e.path());
  std::sort(npy.begin(), npy.end());
  const bool has_json = fs::is_regular_file(dir / "answers.json", ec), has_csv = fs::is_regular_file(dir / "answers.csv", ec);
  std::vector<std::string> forms;
  if (has_json) forms.emplace_back("answers.json");
  if (has_csv) forms.emplace_back("answers.csv");
  if (!npy.empty()) forms.push_back(npy.size() == 1 ? "1 .npy file" : fmt::format("{} .npy files", npy.size()));
  if (forms.empty()) {
    sub.problems.push_back(fmt::format("{}: no answers.json, answers.csv or <step id>.npy file; nothing to grade", folder));
    return sub;
  }
  sub.source = forms.front();
  if (forms.size() > 1) sub.problems.push_back(fmt::format("found {}: graded {} only", fmt::join(forms, " and "), forms.front()));
  if (has_json) read_answers_json((dir / "answers.json").string(), ask, sub);
  else if (has_csv) read_answers_csv((dir / "answers.csv").string(), ask, key, sub);
  else read_npy_files(npy, ask, sub);
  return sub;
}

}  // namespace attn
