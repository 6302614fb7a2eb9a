// attn grade: a class's submissions graded against each student's own key, value by value within
// the class's tolerance; a wrong step named by the mistake of diagnose's catalogue that reproduces it
// on the student's variant, or credited when it follows from the student's own earlier answer.
// Reads the class directory attn exercise writes (class.json, <id>/problem.json, <id>/key.json); its
// reports are render/grade.hpp's. Input specs come through a loader (spec/ is a layer above this one).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "attn/core/spec.hpp"
#include "attn/core/tensor.hpp"
#include "attn/core/trace.hpp"

namespace attn {

// DIR/class.json, as attn exercise writes it (the contract in docs/classroom.md).
struct ClassStudent {
  std::string id, name, variant;
};
struct ClassManifest {
  std::string dir;                // the class directory as given
  std::string template_file;
  std::int64_t seed = 0;
  std::vector<std::string> ask;   // the asked step ids, in the order the handouts ask them
  int decimals = 2;
  double tolerance = 0.005;       // |answer − key| ≤ tolerance (+ 1e-9) is right
  std::vector<ClassStudent> students;
};
// InputError naming class.json and the JSON path of the first fault.
ClassManifest read_class(const std::string& dir);

// One student's answers, as read from SUBMISSIONS/<id>/: answers.json, answers.csv or <step>.npy files.
struct Answer {
  Tensor value;                 // the shape as submitted (answers.csv: the key's)
  std::vector<bool> given;      // per value: false where answers.csv has no row for it
};
struct Submission {
  std::string source;                    // "answers.json", "answers.csv", "4 .npy files", "" when none
  std::map<std::string, Answer> answers;  // by step id, asked steps only
  std::vector<std::string> problems;      // everything that could not be read, in the student's words
};
// `key` gives each asked step's shape (answers.csv's flat indices are row-major in it).
Submission read_submission(const std::string& folder, const std::vector<std::string>& ask, const std::map<std::string, Tensor>& key);

// A step of one student's report.
struct StepGrade {
  std::string step;
  double score = 0;                    // the share of right values (1 when it follows from an earlier answer)
  std::int64_t right = 0, total = 0;   // values within the tolerance of the key
  bool answered = false;
  std::string follows_from;            // the student's earlier wrong step this one is right from
  std::vector<std::string> mistakes;   // catalogue names reproducing the step: one, or a tie; none when unknown
  std::string message;                 // the sentence the student reads ("" when right)
};
struct StudentGrade {
  std::string id, name;
  bool submitted = false;              // SUBMISSIONS/<id>/ exists
  std::string source;
  double score = 0, max_score = 0;
  std::vector<StepGrade> steps;        // in the class's ask order
  std::vector<std::string> problems;
};

// The class summary: what a lecturer reads first.
struct MistakeCount {
  std::string mistake;                 // a catalogue name, or "a or b" for a tie
  std::string description;             // the catalogue's words (each's, for a tie)
  std::vector<std::string> students;   // ids, in roster order
  std::vector<std::string> steps;      // the steps it was named on
};
struct StepRate {
  std::string step;
  double success = 0;                  // the mean of the students' step scores
  int all_right = 0;                   // students with every value right (or following)
};
struct HistogramBin {
  double from = 0, to = 0;             // score range [from, to), the last bin closed
  int count = 0;
};
struct ClassSummary {
  int students = 0, submitted = 0;
  double mean = 0, median = 0, max_score = 0;
  std::vector<HistogramBin> histogram;
  std::vector<StepRate> steps;
  std::vector<MistakeCount> mistakes;      // most frequent first
  std::vector<std::string> missing;        // roster ids with no folder
  std::vector<std::string> not_in_roster;  // folders of SUBMISSIONS that no roster id names
};

struct ClassGrade {
  ClassManifest manifest;
  std::string submissions;
  std::vector<StudentGrade> students;  // in roster order
  ClassSummary summary;
};

using SpecLoader = std::function<Spec(const std::string& path)>;
// Grades every roster student (in parallel, the result in roster order whatever the thread count).
// InputError for the instructor's inputs only (class.json, a student's problem.json or key.json);
// everything about a submission is that student's problem.
ClassGrade grade_class(const std::string& dir, const std::string& submissions, const SpecLoader& load);

// One student: their variant, its reference trace, their key and submission (grade_class's step).
StudentGrade grade_student(const ClassManifest& m, const ClassStudent& s, const Spec& spec, const Trace& reference,
                           const std::map<std::string, Tensor>& key, const Submission& sub);
// DIR/<id>/key.json read; InputError naming the file and JSON path when it lacks an asked step or
// differs in shape from the variant's trace.
std::map<std::string, Tensor> read_key(const std::string& path, const std::vector<std::string>& ask, const Trace& reference);

// The step `target` recomputed from the student's own answer to an earlier step `from`, every other
// input the variant's (grade_follow.cpp); none when attn cannot recompute that pair.
std::optional<Tensor> recompute_from(const Spec& spec, const Trace& reference, const std::string& from, const Tensor& answer,
                                     const std::string& target);

}  // namespace attn
