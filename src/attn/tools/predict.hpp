// --predict: the questions asked about a step before it is shown, and each answer checked, saying
// how far off it is. Words and numbers only: the pager and the page ask, show and count them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/door.hpp"
#include "attn/core/trace.hpp"

namespace attn {

// One question on one step.
//   Shape: the step's sizes in numbers ("[3, 4]").
//   Top:   the key one query attends to most, as a token (a step whose last two axes are queries
//          and keys: scores, scaled, masked, weights).
//   Value: one entry, to two decimals (right within half a unit of the second: 0.005).
struct Prediction {
  enum class Kind { Shape, Top, Value } kind = Kind::Shape;
  std::string step;      // the step's id
  std::string question;  // "What is the shape of weights, in numbers (like [2, 3])?"
  std::string truth;     // what is revealed: "weights is [3, 4]: T = 3 queries, S = 4 keys"
  // Shape: the sizes, and each axis as "S, the keys" (the words a wrong size is named with)
  std::vector<std::int64_t> shape;
  std::vector<std::string> axes;
  // Top: the keys' labels as the tables show them, the query's, the key attended to most and
  // each key's value in the query's row; Value: the entry
  std::vector<std::string> keys;
  std::vector<double> row;
  std::string query;
  std::int64_t key = -1;
  double value = 0;
  std::string where;     // Value: "weights[2, 1] (query \"sat\", key \"cat\")"
};

// The tolerance of a value: half a unit of the second decimal (check's rule for a printed value).
inline constexpr double kPredictTolerance = 0.005;

// The questions on `step`: its shape; for a queries-by-keys step the key one query attends to most
// and the query's entry for another key (its first; the page shows every question at once, so the
// key named there must not be the answer), else one entry. The query is the last one (in a causal run it sees every key)
// whose largest entry leads the next by 0.01 or more (no tie to guess between); a mask or an index
// step is asked its shape alone. Batch row 0 and head 0.
std::vector<Prediction> predict_questions(const Trace& trace, const Step& step);

struct PredictReply {
  bool understood = true;  // false: the answer could not be read; say why and ask again (not counted)
  bool right = false;
  std::string text;        // "Not quite: you said [3, 3]; weights is [3, 4]: … (S, the keys, is 4, not 3)."
};

// The learner's answer to `p`, checked. An empty answer is no prediction: the step is revealed and
// it counts as not right.
PredictReply check_prediction(const Prediction& p, std::string_view answer);

// The steps to ask about, as indices into trace.steps among `shown` (every step when empty), in
// trace order: `ids` (exercise.predict; "weights" when empty). An id this trace lacks is refused
// naming exercise.predict; none of them shown is refused naming --predict (predict=True from Python).
std::vector<std::size_t> predicted_steps(const Trace& trace, const std::vector<std::string>& ids, const std::vector<std::size_t>& shown,
                                         Door door = Door::Cli);

// "2 of 3 predictions right"
std::string prediction_tally(std::size_t right, std::size_t asked);

}  // namespace attn
