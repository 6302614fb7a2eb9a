// attn heads' options of issue #43 items 3 and 4: --rollout (the input tokens each position draws on
// through the layers) and --ablate / --evidence (the model run without some heads, beside the clean
// run). heads.cpp hands over when any of them is given.
#pragma once

#include <string>

#include "attn/model/tools/heads_stream.hpp"
#include "cli.hpp"

namespace attn_cli {

struct HeadsEvidence {
  bool rollout = false;
  std::string rollout_heads = "mean";
  std::string rollout_query;  // "" = the last token
  bool explain = false;
  std::string ablate;         // "L0H0,L0H2"
  std::string ablation = "zero";
  bool evidence = false;
  bool any() const { return rollout || explain || !ablate.empty() || evidence || rollout_heads != "mean" || !rollout_query.empty() || ablation != "zero"; }
};

void setup_heads_evidence(CLI::App* heads, HeadsEvidence& o);
// keep: --weights (every weight kept and written at any T).
int run_heads_evidence(const HeadsEvidence& o, const std::string& file, const std::string& format, attn::ColorMode color, int width,
                       const Resources& resources, const attn::model::HeadsKeep& keep);

}  // namespace attn_cli
