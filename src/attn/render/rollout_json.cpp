// attn heads --rollout's and --ablate's JSON: the members the heads JSON gains for the rollout, and
// the ablation's own document (the clean and each ablated run as attn heads' JSON, with the losses and
// the changes). Writes what rollout.cpp and ablation.cpp computed; computes nothing.
#include <fmt/format.h>

#include <cmath>
#include <sstream>

#include "attn/io/json_text.hpp"
#include "attn/render/model_views.hpp"
#include "attn/render/rollout_views.hpp"

namespace attn::model {

std::string rollout_json_members(const Rollout& r, const std::vector<std::string>& labels) {
  std::string s = fmt::format("  \"rollout_heads\": \"{}\",\n  \"rollout_query\": {},\n  \"rollout\": [", rollout_heads_name(r.combine), r.query);
  for (std::int64_t l = 0; l < r.layers; ++l) {
    s += l ? ",\n    [" : "\n    [";
    for (std::int64_t i = 0; i < r.T; ++i) {
      s += i ? ",\n      [" : "\n      [";
      for (std::int64_t j = 0; j < r.T; ++j) s += fmt::format("{}{}", j ? ", " : "", r.at(l, i, j) == 0 ? 0.0f : r.at(l, i, j));
      s += "]";
    }
    s += "\n    ]";
  }
  s += r.layers ? "\n  ],\n  \"rollout_top\": [" : "],\n  \"rollout_top\": [";
  for (std::int64_t l = 0; l < r.layers; ++l) {
    s += l ? ",\n    [" : "\n    [";
    bool first = true;
    for (const auto& [j, share] : rollout_top(r, l, r.query, kRolloutTop)) {
      s += fmt::format("{}{{\"position\": {}, \"token\": {}, \"share\": {}}}", first ? "" : ", ", j, json_quote(labels[static_cast<std::size_t>(j)]), share);
      first = false;
    }
    s += "]";
  }
  return s + (r.layers ? "\n  ]" : "]");
}

namespace {

std::string number_or_null(double v) { return std::isfinite(v) ? fmt::format("{}", v) : std::string("null"); }
std::string loss_json(const std::optional<double>& loss) { return loss ? number_or_null(*loss) : std::string("null"); }

// A view's whole attn heads JSON, as one member's value.
std::string heads_object(const HeadsView& v) {
  std::ostringstream s;
  render_heads_json(v, s);
  std::string t = s.str();
  while (!t.empty() && t.back() == '\n') t.pop_back();
  return t;
}

std::string change_json(const HeadChange& c) {
  return fmt::format(R"({{"layer": {}, "head": {}, "clean_pattern": {}, "clean_share": {}, "ablated_pattern": {}, "ablated_share": {}, "clean_score": {}, "ablated_score": {}}})",
                     c.head.layer, c.head.head, json_quote(pattern_name(c.clean.pattern)), number_or_null(c.clean.pattern_share),
                     json_quote(pattern_name(c.ablated.pattern)), number_or_null(c.ablated.pattern_share), number_or_null(c.clean_score),
                     number_or_null(c.ablated_score));
}

}  // namespace

void render_ablation_json(const AblationReport& a, std::ostream& out) {
  out << "{\n  \"format\": \"attn-heads-ablation\",\n  \"model\": " << json_quote(a.clean.model) << ",\n  \"mode\": "
      << json_quote(a.runs.empty() ? "zero" : ablation_mode_name(a.runs.front().mode)) << ",\n  \"evidence\": " << (a.evidence ? "true" : "false")
      << ",\n  \"loss\": " << loss_json(a.loss) << ",\n  \"clean\": " << heads_object(a.clean) << ",\n  \"runs\": [";
  for (std::size_t k = 0; k < a.runs.size(); ++k) {
    const AblationRun& r = a.runs[k];
    std::string heads;
    for (const auto& h : r.heads) heads += (heads.empty() ? "" : ", ") + json_quote(head_ref_name(h));
    out << (k ? ",\n" : "\n") << "  {\"ablated\": [" << heads << "], \"loss\": " << loss_json(r.loss) << ",\n   \"changes\": [";
    for (std::size_t c = 0; c < r.changes.size(); ++c) out << (c ? ",\n     " : "\n     ") << change_json(r.changes[c]);
    out << (r.changes.empty() ? "]" : "\n   ]") << ",\n   \"heads\": " << heads_object(r.view) << "}";
  }
  out << (a.runs.empty() ? "]" : "\n  ]") << "\n}\n";
}

}  // namespace attn::model
