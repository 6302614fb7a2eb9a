// attn heads --ablate and --evidence in the terminal: each ablation's loss beside the clean run's, and
// the later heads it changed, clean → ablated, largest change first (--ablate: every later head whose
// label or score moved; --evidence: the three largest per ablated head). The ablated run's whole grid
// is attn heads' own text, printed before this by the command. Draws; computes nothing.
#include <fmt/format.h>

#include <cmath>
#include <string>

#include "attn/core/text.hpp"
#include "attn/render/heads_layout.hpp"
#include "attn/render/rollout_views.hpp"

namespace attn::model {

std::string ablation_loss_text(const std::optional<double>& clean, const std::optional<double>& ablated) {
  if (!clean || !ablated) return "mean next-token loss: none (no LM head, or a single token)";
  return fmt::format("mean next-token loss on the input: clean {:.4f} nats, ablated {:.4f} ({:+.4f})", *clean, *ablated, *ablated - *clean);
}

namespace {

constexpr double kMoved = 0.005;  // a score that moves less than this (and keeps its label) is not listed by --ablate

std::string score_text(double v) { return std::isnan(v) ? std::string("—") : fmt::format("{:.2f}", v); }

// "L1 h0  induction 0.83 → 0.02   now first token 0.71"
std::string change_line(const HeadChange& c) {
  const std::string label = c.clean.label.empty() ? pattern_name(c.clean.pattern) : c.clean.label;
  std::string s = std::isnan(c.clean_score) && std::isnan(c.ablated_score)
                      ? fmt::format("{}  {} (no one score to compare)", heads_detail::head_name(c.head.layer, c.head.head), label)
                      : fmt::format("{}  {} {} → {}", heads_detail::head_name(c.head.layer, c.head.head), label, score_text(c.clean_score),
                                    score_text(c.ablated_score));
  if (c.relabelled()) s += "   now " + heads_detail::pattern_text(c.ablated);
  return s;
}

std::string heads_list(const std::vector<HeadRef>& heads) {
  std::string s;
  for (const auto& h : heads) s += (s.empty() ? "" : ", ") + head_ref_name(h);
  return s;
}

}  // namespace

void render_ablation_text(const AblationReport& a, std::ostream& out, int width) {
  const auto w = static_cast<std::size_t>(width);
  for (const auto& r : a.runs) {
    out << "\n"
        << wrap(fmt::format("ablated {} ({}: {} before the output projection)", heads_list(r.heads), ablation_mode_name(r.mode),
                            r.mode == AblationMode::Zero ? (r.heads.size() == 1 ? "the head's output zeroed" : "the heads' outputs zeroed")
                                                         : (r.heads.size() == 1 ? "the head's output replaced by its mean over the positions"
                                                                                : "each head's output replaced by its mean over the positions")),
                w, "", "  ")
        << wrap(ablation_loss_text(a.loss, r.loss), w, "", "  ");
    if (r.changes.empty()) {
      out << (r.heads.size() == 1 ? "  no later layer: nothing reads this head's output but the model's head\n"
                                  : "  no later layer: nothing reads these heads' outputs but the model's head\n");
      continue;
    }
    out << "  later heads, their clean label's score clean → ablated, largest change first:\n";
    std::size_t shown = 0;
    for (const auto& c : largest_changes(r, a.evidence ? 3 : r.changes.size())) {
      const double d = std::fabs(c.ablated_score - c.clean_score);
      if (!a.evidence && !c.relabelled() && !(d >= kMoved)) continue;
      out << wrap(change_line(c), w, "  ", "      ");
      ++shown;
    }
    if (shown == 0) out << fmt::format("  no later head's label or score moved by {} or more\n", kMoved);
  }
  if (a.evidence) {
    out << "\n"
        << wrap("each head was ablated alone: heads that do the same work back each other up and can show little alone; ablate such "
                "heads together, listed in one --ablate (docs/rollout.md)",
                w, "", "  ");
  }
}

}  // namespace attn::model
