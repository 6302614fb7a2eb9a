// attn exercise's files, written to streams: a student's handout (markdown and a self-contained web
// page), key.json and solution.md; the class's class.html (a handout a printed page), key.csv, Moodle
// XML and GIFT numerical questions, and class.json (the manifest attn grade reads). Nothing computed.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "attn/core/trace.hpp"
#include "attn/spec/exercise.hpp"
#include "attn/tools/exercise.hpp"

namespace attn {

// One student's variant: everything their files show.
struct ExercisePaper {
  Student student;
  std::string code;                   // the variant code
  const ExerciseSettings* settings;   // the template's block
  const Trace* trace;                 // the variant's trace
  std::vector<ExerciseInput> inputs;  // the variant's drawn (or named) tensors
  std::vector<KeyStep> key;           // the asked steps' answers
};

void render_handout_markdown(const ExercisePaper& p, std::ostream& out);
void render_handout_html(const ExercisePaper& p, std::ostream& out);  // a whole page, no network
// The asked steps as `attn run --format markdown --explain` shows them, at the answers' decimals.
void render_solution_markdown(const ExercisePaper& p, std::ostream& out);
// {step id: nested list}: the answers in the shape `attn run --format json` gives the step.
void render_key_json(const ExercisePaper& p, std::ostream& out);

// The class's files, a student at a time.
class ExerciseClass {
 public:
  ExerciseClass(std::string template_name, std::uint64_t seed, const ExerciseSettings& settings);
  void add(const ExercisePaper& p);
  void write_class_html(std::ostream& out) const;  // every handout, one per printed page
  void write_key_csv(std::ostream& out) const;     // id,step,index,value (the flat row-major index)
  void write_moodle_xml(std::ostream& out) const;  // a numerical question per asked value, with the tolerance
  void write_gift(std::ostream& out) const;        // the same questions in GIFT: {#value:tolerance}
  void write_class_json(std::ostream& out) const;  // the manifest attn grade reads

 private:
  std::string template_name_;
  std::uint64_t seed_;
  ExerciseSettings settings_;
  std::vector<std::string> sections_, csv_, moodle_, gift_, students_;
};

// Every file of a class, relative to its folder, handed to `sink` as it is made (class.json last):
// <id>/problem.json, handout.md, handout.html, key.json, solution.md; class.html, key.csv,
// moodle.xml, class.gift, class.json.
using FileSink = std::function<void(const std::string& name, const std::string& content)>;
void exercise_files(const ExerciseTemplate& t, const std::vector<Student>& students, std::uint64_t seed,
                    const std::vector<Variant>& variants, const FileSink& sink);
// A sink that writes under dir (made if missing). A folder that exists and is not empty is refused
// here, naming --out, unless force: then same-named files are replaced and nothing else is touched.
FileSink exercise_dir(const std::string& dir, bool force);

}  // namespace attn
