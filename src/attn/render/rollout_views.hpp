// The renderers of attn heads --rollout (rollout_text.cpp, rollout_svg.cpp) and --ablate / --evidence
// (ablation_text.cpp), and the JSON of both (rollout_json.cpp). They draw what model/tools/rollout.cpp
// and ablation.cpp computed; nothing is computed here.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "attn/model/tools/ablation.hpp"
#include "attn/model/tools/rollout.hpp"

namespace attn::model {

// How many input tokens the views list for the chosen query.
inline constexpr std::int64_t kRolloutTop = 5;

// Terminal: the rolled-out map after each layer side by side (queries down, input tokens across, shades
// on each row's own 0 .. largest scale), fitted to `width`; then the chosen query's input tokens after
// each layer; then `explanation` (--explain's lines, wrapped), if any. labels: the tokens as the tokens line names them.
void render_rollout_text(const Rollout& r, const std::vector<std::string>& labels, std::ostream& out, int width,
                         const std::vector<std::string>& explanation);
// SVG: one heatmap per layer in viridis (each row on its own 0 .. largest scale), token labels on the axes,
// the chosen query's row outlined, a <title> on each cell with its share.
void render_rollout_svg(const Rollout& r, const std::vector<std::string>& labels, std::ostream& out);
// HTML: the SVG, the chosen query's input tokens per layer as a table, the explanation.
void render_rollout_html(const Rollout& r, const std::vector<std::string>& labels, std::ostream& out, const std::vector<std::string>& explanation);
// The members attn heads' JSON adds, each line starting with two spaces: "rollout": [L][T][T],
// "rollout_heads", "rollout_query", "rollout_top": [L] of [{"position", "token", "share"}].
std::string rollout_json_members(const Rollout& r, const std::vector<std::string>& labels);

// Terminal: the ablation's run(s) beside the clean one: the loss of each, then per run every later
// head whose label or score changed (clean → ablated), largest change first; --evidence: one block per
// labelled head, its few largest changes.
void render_ablation_text(const AblationReport& a, std::ostream& out, int width);
// {"format": "attn-heads-ablation", "model", "mode", "evidence", "loss" (the clean run's mean next-token
// loss in nats; null without an LM head), "clean": the clean run's attn heads JSON, "runs": [{"ablated":
// ["L0H0", ...], "loss", "changes": [{"layer", "head", "clean_pattern", "clean_share", "ablated_pattern",
// "ablated_share", "clean_score", "ablated_score" (null: no one measure)}], "heads": the run's attn heads JSON}]}
void render_ablation_json(const AblationReport& a, std::ostream& out);

}  // namespace attn::model
