// --format html --predict: the questions asked before a step in the page, its styles and its script.
// The questions and the true answers are tools/predict's; the script checks an answer as
// check_prediction does, and keeps the step's values hidden until every question is answered or the
// learner reveals them. Nothing is fetched: the page stays whole offline.
#pragma once

#include <cstddef>
#include <ostream>
#include <vector>

#include "attn/core/trace.hpp"

namespace attn {

// The styles and the script the questions need (empty strings without --predict).
extern const char* const kPredictStyle;
extern const char* const kPredictScript;

// A step's questions as a form: each question, a field for the answer and a line for the reply; a
// "check" button (Enter in a field) and a "reveal" one. The step's values follow in a part of the
// section that stays hidden until then (the caller opens it: <div class="revealed" hidden>).
void write_predict_form(std::ostream& out, const Trace& trace, const Step& step);

// The number of questions the page asks about `steps` (for the tally in the page's header).
std::size_t predict_question_count(const Trace& trace, const std::vector<std::size_t>& steps);

}  // namespace attn
