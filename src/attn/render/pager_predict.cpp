// --step --predict: see pager_predict.hpp.
#include "attn/render/pager_predict.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ostream>
#include <sstream>

#include "attn/core/text.hpp"

namespace attn {

PredictSession::PredictSession(const Trace& trace, const TextOptions& options, const std::vector<std::size_t>& shown) : options_(options) {
  if (!options.predict) return;
  for (const auto i : predicted_steps(trace, options.predict_ids, shown)) steps_[i].questions = predict_questions(trace, trace.steps[i]);
}

bool PredictSession::pending(std::size_t index) const {
  const auto it = steps_.find(index);
  return it != steps_.end() && it->second.replies.size() < it->second.questions.size();
}

bool PredictSession::ask(std::size_t index, std::ostream& out, const std::function<std::optional<std::string>()>& read_answer) {
  auto& a = steps_.at(index);
  const auto width = static_cast<std::size_t>(std::max(options_.width, 20));
  out << wrap(fmt::format("Predict before you see it (Enter alone shows the answer). {} question{}:", a.questions.size(),
                          a.questions.size() == 1 ? "" : "s"),
              width, "    ", "    ");
  while (a.replies.size() < a.questions.size()) {
    const Prediction& q = a.questions[a.replies.size()];
    out << "\n" << wrap(fmt::format("{}. {}", a.replies.size() + 1, q.question), width, "    ", "       ") << "    > " << std::flush;
    const auto answer = read_answer();
    if (!answer) return false;
    const PredictReply r = check_prediction(q, *answer);
    out << wrap(r.text, width, "    ▸ ", "      ") << std::flush;
    if (r.understood) a.replies.push_back(r);
  }
  return true;
}

std::vector<std::string> PredictSession::reply_lines(std::size_t index) const {
  const auto it = steps_.find(index);
  if (it == steps_.end() || it->second.replies.empty()) return {};
  std::vector<std::string> lines;
  const auto width = static_cast<std::size_t>(std::max(options_.width, 20));
  for (const auto& r : it->second.replies) {
    std::istringstream in(wrap(r.text, width, "    ▸ ", "      "));
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  return lines;
}

std::string PredictSession::tally() const {
  if (!options_.predict) return "";
  std::size_t asked = 0, right = 0, left = 0;
  std::vector<std::string> unreached;
  for (const auto& [index, a] : steps_) {
    asked += a.replies.size();
    for (const auto& r : a.replies) right += r.right ? 1 : 0;
    if (a.replies.size() < a.questions.size()) {
      left += a.questions.size() - a.replies.size();
      unreached.push_back(a.questions[0].step);
    }
  }
  const std::string rest = unreached.empty() ? "" : fmt::format("; {} more on {} not reached", left, fmt::join(unreached, ", "));
  return fmt::format("── {}{} ──", prediction_tally(right, asked), rest);
}

}  // namespace attn
