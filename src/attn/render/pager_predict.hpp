// --step --predict: the questions asked before a step in the pager, the replies, and the tally. The
// pager owns the terminal and reads each answer; this keeps the questions and the score. What a
// question is and how an answer is checked is tools/predict's.
#pragma once

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "attn/render/render.hpp"
#include "attn/tools/predict.hpp"

namespace attn {

class PredictSession {
 public:
  // Nothing is asked unless options.predict; then the steps of options.predict_ids among `shown`.
  PredictSession(const Trace& trace, const TextOptions& options, const std::vector<std::size_t>& shown);

  // Whether trace step `index` is still to be asked about.
  bool pending(std::size_t index) const;
  // Asks step `index`'s questions one by one: each question to `out`, the answer from `read_answer`
  // (none: the reader quit), the reply under it; an answer that cannot be read is said and asked
  // again. Returns false when the reader quit (the step stays unanswered).
  bool ask(std::size_t index, std::ostream& out, const std::function<std::optional<std::string>()>& read_answer);
  // The replies to step `index`'s answers, wrapped, shown at the top of the step once it is revealed
  // (none before).
  std::vector<std::string> reply_lines(std::size_t index) const;
  // "── 2 of 3 predictions right ──", with the steps not reached; "" without --predict.
  std::string tally() const;

 private:
  struct Asked {
    std::vector<Prediction> questions;
    std::vector<PredictReply> replies;  // one per question once answered
  };
  const TextOptions& options_;
  std::map<std::size_t, Asked> steps_;  // by trace step index
};

}  // namespace attn
