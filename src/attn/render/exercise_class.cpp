// attn exercise's answer files: a student's key.json, and the class's key.csv, Moodle XML, GIFT,
// class.html and class.json, gathered a student at a time and written in roster order.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "attn/core/error.hpp"
#include "attn/core/text.hpp"
#include "attn/io/json_text.hpp"
#include "attn/render/exercise.hpp"
#include "attn/render/exercise_blocks.hpp"

namespace attn {

namespace {

bool finite_text(const std::string& v) { return v != "nan" && v != "inf" && v != "-inf"; }
std::string json_value(const std::string& v) { return finite_text(v) ? v : json_quote(v); }

// A key step's values as nested lists in its shape, the innermost rows each on one line.
void nested(std::ostream& out, const KeyStep& k, std::size_t axis, std::size_t& at, int indent) {
  const auto& shape = k.step->value.shape();
  if (shape.empty()) {
    out << json_value(k.values[at++]);
    return;
  }
  const auto n = static_cast<std::size_t>(shape[axis]);
  if (axis + 1 == shape.size()) {
    out << '[';
    for (std::size_t i = 0; i < n; ++i) out << (i ? ", " : "") << json_value(k.values[at++]);
    out << ']';
    return;
  }
  const std::string pad(static_cast<std::size_t>(indent + 2), ' ');
  out << "[\n";
  for (std::size_t i = 0; i < n; ++i) {
    out << pad;
    nested(out, k, axis + 1, at, indent + 2);
    out << (i + 1 < n ? ",\n" : "\n");
  }
  out << std::string(static_cast<std::size_t>(indent), ' ') << ']';
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string gift_escape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (std::string_view("~=#{}:\\").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

// One asked value: its name ("s01 weights[0, 1]") and the question a student reads.
struct Asked {
  std::string name, text, value;
};

template <typename Each>
void each_asked(const ExercisePaper& p, Each&& each) {
  const std::string who = p.student.name.empty() ? p.student.id : fmt::format("{} ({})", p.student.name, p.student.id);
  for (const auto& k : p.key) {
    for (std::size_t i = 0; i < k.values.size(); ++i) {
      const std::string at = position_label(p.trace->config, k.step->dims, k.step->value.shape(), static_cast<std::int64_t>(i));
      const auto bracket = at.substr(0, at.find(']') + 1);  // "[0, 1]" of "[0, 1] (query ...)"
      each(i, k, Asked{fmt::format("{} {}{}", p.student.id, k.step->id, bracket),
                       fmt::format("{}, variant {}: {}{} ({}), to {} decimals", who, p.code, k.step->id, at, k.step->title, p.settings->decimals),
                       k.values[i]});
    }
  }
}

std::string moodle_question(const Asked& a, const std::string& tolerance) {
  const bool numerical = finite_text(a.value);
  std::string q = fmt::format("  <question type=\"{}\">\n    <name><text>{}</text></name>\n", numerical ? "numerical" : "shortanswer", markup_escape(a.name));
  q += fmt::format("    <questiontext format=\"html\"><text>{}</text></questiontext>\n", markup_escape("<p>" + markup_escape(a.text) + "</p>"));
  q += "    <defaultgrade>1</defaultgrade>\n    <penalty>0</penalty>\n";
  q += fmt::format("    <answer fraction=\"100\"><text>{}</text>{}</answer>\n", a.value, numerical ? fmt::format("<tolerance>{}</tolerance>", tolerance) : "");
  return q + "  </question>\n";
}

}  // namespace

void render_key_json(const ExercisePaper& p, std::ostream& out) {
  out << "{\n";
  for (std::size_t s = 0; s < p.key.size(); ++s) {
    std::size_t at = 0;
    out << "  " << json_quote(p.key[s].step->id) << ": ";
    nested(out, p.key[s], 0, at, 2);
    out << (s + 1 < p.key.size() ? ",\n" : "\n");
  }
  out << "}\n";
}

ExerciseClass::ExerciseClass(std::string template_name, std::uint64_t seed, const ExerciseSettings& settings)
    : template_name_(std::move(template_name)), seed_(seed), settings_(settings) {}

void ExerciseClass::add(const ExercisePaper& p) {
  std::ostringstream section;
  write_blocks_html(handout_blocks(p), section);
  sections_.push_back(section.str());
  const std::string tolerance = fmt::format("{}", settings_.tolerance());
  // a category per student, so that each student's questions make their own quiz
  const std::string category = fmt::format("attn exercise {}/{}", std::filesystem::path(template_name_).stem().string(), p.student.id);
  std::string csv, moodle = fmt::format("  <question type=\"category\">\n    <category><text>$course$/{}</text></category>\n  </question>\n",
                                        markup_escape(category));
  std::string gift = fmt::format("$CATEGORY: $course$/{}\n\n", category);
  each_asked(p, [&](std::size_t i, const KeyStep& k, const Asked& a) {
    csv += fmt::format("{},{},{},{}\n", csv_field(p.student.id), k.step->id, i, a.value);
    moodle += moodle_question(a, tolerance);
    const std::string answer = finite_text(a.value) ? fmt::format("#{}:{}", a.value, tolerance) : "=" + gift_escape(a.value);
    gift += fmt::format("::{}::{} {{{}}}\n\n", gift_escape(a.name), gift_escape(a.text), answer);
  });
  csv_.push_back(std::move(csv));
  moodle_.push_back(std::move(moodle));
  gift_.push_back(std::move(gift));
  students_.push_back(fmt::format("{{\"id\": {}, \"name\": {}, \"variant\": {}}}", json_quote(p.student.id), json_quote(p.student.name), json_quote(p.code)));
}

void ExerciseClass::write_class_html(std::ostream& out) const {
  out << handout_page_start(fmt::format("{}: every student's handout", template_name_));
  for (const auto& s : sections_) out << s;
  out << handout_page_end();
}

void ExerciseClass::write_key_csv(std::ostream& out) const {
  out << "id,step,index,value\n";
  for (const auto& s : csv_) out << s;
}

void ExerciseClass::write_moodle_xml(std::ostream& out) const {
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<quiz>\n";
  std::string name = markup_escape(template_name_);  // "--" may not stand in an XML comment
  for (auto at = name.find("--"); at != std::string::npos; at = name.find("--", at)) name.replace(at, 2, "-&#45;");
  out << fmt::format("<!-- attn exercise {} (seed {}): a numerical question per asked value, each student's own -->\n", name, seed_);
  for (const auto& m : moodle_) out << m;
  out << "</quiz>\n";
}

void ExerciseClass::write_gift(std::ostream& out) const {
  out << fmt::format("// attn exercise {} (seed {}): a numerical question per asked value, each student's own\n\n", template_name_, seed_);
  for (const auto& g : gift_) out << g;
}

void ExerciseClass::write_class_json(std::ostream& out) const {
  std::vector<std::string> ask;
  for (const auto& a : settings_.ask) ask.push_back(json_quote(a));
  out << fmt::format("{{\n  \"attn_exercise\": 1,\n  \"template\": {},\n  \"seed\": {},\n  \"ask\": [{}],\n  \"decimals\": {},\n  \"tolerance\": {},\n",
                     json_quote(template_name_), seed_, fmt::join(ask, ", "), settings_.decimals, settings_.tolerance());
  out << "  \"students\": [\n";
  for (std::size_t i = 0; i < students_.size(); ++i) out << "    " << students_[i] << (i + 1 < students_.size() ? ",\n" : "\n");
  out << "  ]\n}\n";
}

namespace {

template <typename Render>
std::string text_of(Render&& render) {
  std::ostringstream out;
  render(out);
  return out.str();
}

}  // namespace

void exercise_files(const ExerciseTemplate& t, const std::vector<Student>& students, std::uint64_t seed,
                    const std::vector<Variant>& variants, const FileSink& sink) {
  ExerciseClass all(t.origin, seed, t.settings);
  for (std::size_t i = 0; i < students.size(); ++i) {
    const Variant& v = variants[i];
    const ExercisePaper p{students[i], variant_code(v.draw), &t.settings, &v.trace, v.inputs, exercise_key(v.trace, t.settings)};
    const std::string dir = students[i].id + "/";
    sink(dir + "problem.json", v.text);
    sink(dir + "handout.md", text_of([&p](std::ostream& o) { render_handout_markdown(p, o); }));
    sink(dir + "handout.html", text_of([&p](std::ostream& o) { render_handout_html(p, o); }));
    sink(dir + "key.json", text_of([&p](std::ostream& o) { render_key_json(p, o); }));
    sink(dir + "solution.md", text_of([&p](std::ostream& o) { render_solution_markdown(p, o); }));
    all.add(p);
  }
  sink("class.html", text_of([&all](std::ostream& o) { all.write_class_html(o); }));
  sink("key.csv", text_of([&all](std::ostream& o) { all.write_key_csv(o); }));
  sink("moodle.xml", text_of([&all](std::ostream& o) { all.write_moodle_xml(o); }));
  sink("class.gift", text_of([&all](std::ostream& o) { all.write_gift(o); }));
  sink("class.json", text_of([&all](std::ostream& o) { all.write_class_json(o); }));
}

FileSink exercise_dir(const std::string& dir, bool force) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) throw InputError(fmt::format("--out {}: exists and is not a folder", dir));
  if (fs::is_directory(dir, ec) && !fs::is_empty(dir, ec) && !force) {
    throw InputError(fmt::format("--out {}: the folder exists and is not empty; name a new folder, or add --force to write into it "
                                 "(files of the same names are replaced, others left as they are)", dir));
  }
  return [dir](const std::string& name, const std::string& content) {
    const fs::path path = fs::path(dir) / name;
    std::error_code made;
    fs::create_directories(path.parent_path(), made);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << content;
    out.close();
    if (!out) throw InputError(fmt::format("--out {}: cannot write {}", dir, path.string()));
  };
}

}  // namespace attn
