// attn heads --rollout --explain (explain_rollout.hpp). Every general claim is tagged and listed in
// docs/explanations.md; the numbers are the Rollout's.
#include "attn/tools/explain_rollout.hpp"

#include <fmt/format.h>

namespace attn {

namespace {

// "␣milk 0.41 @3" for the query's largest share after layer l
std::string top_share(const model::Rollout& r, const std::vector<std::string>& labels, std::int64_t l) {
  const auto top = model::rollout_top(r, l, r.query, 1);
  if (top.empty()) return "nothing";
  return fmt::format("{} ({:.2f}, position {})", labels[static_cast<std::size_t>(top[0].first)], top[0].second, top[0].first);
}

}  // namespace

std::vector<std::string> explain_rollout(const model::Rollout& r, const std::vector<std::string>& labels) {
  std::vector<std::string> out;
  if (r.layers == 0 || r.T == 0) return out;
  const std::int64_t last = r.layers - 1;
  out.push_back("why: a layer's output at a position is its input there plus what the attention brought in (the residual connection), so "
                "a layer's map adds the identity to the heads' weights; rollout then follows the tokens through the layers by multiplying "
                "the maps.");
  if (r.combine == model::RolloutHeads::Mean) {
    // claim: rollout-residual-half
    out.push_back(fmt::format("With the heads' mean A, each layer's map is 0.5·A + 0.5·I: half of every token's share is assumed to stay at its "
                              "own position, a convention, not a measurement. Here a token keeps {:.2f} of its own row in L0 on average "
                              "(0.5 and half its heads' weight on itself).", r.residual.front()));
  } else {
    // claim: rollout-residual-renormalised
    out.push_back(fmt::format("With the heads' {} at each cell the rows of A no longer sum to 1; adding the identity and renormalising each row "
                              "gives the residual a share that depends on the row. Here a token keeps {:.2f} of its own row in L0 on average.",
                              model::rollout_heads_name(r.combine), r.residual.front()));
  }
  // claim: rollout-rows-sum-to-one
  out.push_back(fmt::format("Each layer's rows sum to 1, so each row of their product does too: row i of the map after a layer is query i's "
                            "shares of the input tokens. Query {} {} draws most on {} after L0, and on {} after L{}.",
                            r.query, labels[static_cast<std::size_t>(r.query)], top_share(r, labels, 0), top_share(r, labels, last), last));
  if (const auto other = model::rollout_top(r, last, r.query, 2); other.size() == 2 && other[0].first == r.query) {
    // claim: rollout-strongest-other
    out.push_back(fmt::format("Besides itself, query {} draws most on {} ({:.2f}, position {}) after L{}.", r.query,
                              labels[static_cast<std::size_t>(other[1].first)], other[1].second, other[1].first, last));
  }
  out.push_back(fmt::format("A token's share of its own input token, on average: {:.2f} after L0, {:.2f} after L{}; each layer mixes the tokens further.",
                            r.kept.front(), r.kept.back(), last));
  // claim: rollout-not-use
  out.push_back("Rollout reads only the attention weights: it leaves out the values, the output projection and the MLPs, so it says which "
                "input tokens the weights could carry to a position, not which the model uses; --ablate removes heads and measures what changes.");
  return out;
}

}  // namespace attn
