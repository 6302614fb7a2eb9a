// attn exercise: a template's variant for every student of a class (handouts, keys, quiz files), or
// one variant's problem again from its code.
#include "cli.hpp"

#include "attn/render/exercise.hpp"
#include "attn/spec/exercise.hpp"

namespace attn_cli {
namespace {

constexpr std::int64_t kMaxStudents = 100000;
constexpr std::uint64_t kMaxSeed = (std::uint64_t{1} << 53) - 1;  // exact in every JSON reader

struct ExerciseOptions {
  std::string file, students, out, variant;
  std::uint64_t seed = 0;
  bool force = false;
};

void setup_exercise(CLI::App& app, ExerciseOptions& o) {
  auto* e = app.add_subcommand("exercise", "Make a variant of an exercise for every student: handouts, keys, Moodle and GIFT quizzes");
  e->footer(R"(Example: 30 students, a variant each, from a template with an "exercise" block
  $ attn exercise examples/exercise_weights.json --students 30 --out class/ --seed 2026
    30 students' variants written to class/ (...)
  $ attn exercise examples/exercise_weights.json --variant 7KQ2-MX4N > problem.json

A roster instead of a number: --students roster.csv (a header with an id column; name optional).
The template: docs/classroom.md "Setting an exercise". Exit codes: 0 written, 2 bad input.)");
  e->add_option("template", o.file, "the template: an attn input with an \"exercise\" block (- reads standard input)")->required();
  e->add_option("--students", o.students, "a roster CSV (columns id and, optionally, name), or N for ids 1 … N written to N's width (01 … 30 for 30)");
  e->add_option("--out", o.out, "the folder to write: a folder per student and the class's files");
  e->add_option("--seed", o.seed, "the class's seed (default 0): the same template, students and seed give the same files")
      ->check(CLI::Range(std::uint64_t{0}, kMaxSeed));
  e->add_flag("--force", o.force, "write into a folder that is not empty (same-named files are replaced)");
  e->add_option("--variant", o.variant, "print the problem.json of the variant a handout's code names (to standard output)");
}

std::vector<attn::Student> class_of(const std::string& students) {
  if (!students.empty() && students.find_first_not_of("0123456789") == std::string::npos) {
    const auto n = students.size() > 6 ? kMaxStudents + 1 : std::stoll(students);
    if (n < 1 || n > kMaxStudents)
      throw attn::InputError(fmt::format("--students: expected a roster CSV or a number of students from 1 to {}, got {}", kMaxStudents, students));
    return attn::numbered_students(n);
  }
  return attn::read_roster(students);
}

int run_exercise(const ExerciseOptions& o) {
  const attn::ExerciseTemplate t = attn::load_exercise_template(o.file);
  if (!o.variant.empty() && (!o.students.empty() || !o.out.empty())) {
    throw attn::InputError("--variant prints one student's problem.json to standard output; leave out --students and --out "
                           "(the whole class's files come from --students and --out alone)");
  }
  if (!o.variant.empty()) {
    const auto draw = attn::parse_variant_code(o.variant);
    if (!draw && attn::variant_code_letters(o.variant)) {
      throw attn::InputError(fmt::format("--variant: \"{}\" does not check: a letter is mistyped or two are swapped (the last letter checks the "
                                         "other seven); copy it again from the handout",
                                         o.variant));
    }
    if (!draw) throw attn::InputError(fmt::format("--variant: \"{}\" is not a variant code (8 letters and digits, such as 7KQ2-MX4N)", o.variant));
    std::cout << attn::variant_text(t, *draw) << std::flush;
    return kExitOk;
  }
  if (o.students.empty() || o.out.empty()) throw attn::InputError("--students and --out are needed to make a class's variants (or --variant CODE for one)");
  const auto students = class_of(o.students);
  const auto sink = attn::exercise_dir(o.out, o.force);  // (refuses a folder that is not empty before any drawing)
  int redraws = 0;
  const auto variants = attn::draw_exercise_class(t, students, o.seed, redraws);
  attn::exercise_files(t, students, o.seed, variants, sink);
  std::cout << fmt::format("{} students' variants written to {} ({} candidates redrawn for a repeat or a tie): a folder per student "
                           "(problem.json, handout.md, handout.html, key.json, solution.md), class.html, key.csv, moodle.xml, class.gift, class.json\n",
                           students.size(), o.out, redraws);
  return kExitOk;
}

}  // namespace

Runner add_exercise(CLI::App& app) { return command(app, setup_exercise, run_exercise); }

}  // namespace attn_cli
