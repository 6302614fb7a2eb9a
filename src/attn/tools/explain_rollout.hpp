// attn heads --rollout --explain: what attention rollout computed, with this run's numbers (the share
// each layer leaves in place, what the chosen query draws on after the first and the last layer, how
// far the maps spread), and what it does not show. Reads a Rollout; computes nothing.
#pragma once

#include <string>
#include <vector>

#include "attn/model/tools/rollout.hpp"

namespace attn {

// Paragraphs, one an entry. labels: the tokens as the tokens line names them.
std::vector<std::string> explain_rollout(const model::Rollout& r, const std::vector<std::string>& labels);

}  // namespace attn
