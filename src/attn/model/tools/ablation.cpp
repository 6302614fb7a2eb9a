// attn heads --ablate's arithmetic (ablation.hpp). The ablation edits each layer's attention output
// after the pipeline ran it, in double: out_t −= Σ_d (ctx_h[t][d] − r_h[d]) · W_o[h·hv + d] for each
// ablated head h, r_h = 0 (zero) or the mean of ctx_h over the T positions (mean). The heads' weights
// of that layer are unchanged (they come before); every later layer sees the edited stream.
// Legend: T tokens, C model width, H heads, hv = dv/H, V vocabulary.
#include "attn/model/tools/ablation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "attn/core/error.hpp"
#include "attn/model/tools/generate.hpp"
#include "attn/numerics/fixed_math.hpp"

namespace attn::model {

const char* ablation_mode_name(AblationMode m) { return m == AblationMode::Mean ? "mean" : "zero"; }

std::string head_ref_name(HeadRef r) { return fmt::format("L{}H{}", r.layer, r.head); }

namespace {

// "L3H7" (either case) -> (3, 7); nullopt for anything else
std::optional<HeadRef> parse_head(const std::string& s) {
  std::size_t i = 0;
  auto number = [&](std::int64_t& out) {
    const std::size_t start = i;
    out = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && i - start < 9) out = out * 10 + (s[i++] - '0');
    return i > start;
  };
  HeadRef r;
  if (i >= s.size() || std::toupper(static_cast<unsigned char>(s[i++])) != 'L' || !number(r.layer)) return std::nullopt;
  if (i >= s.size() || std::toupper(static_cast<unsigned char>(s[i++])) != 'H' || !number(r.head) || i != s.size()) return std::nullopt;
  return r;
}

}  // namespace

std::vector<HeadRef> parse_head_list(const std::string& value, const std::string& option) {
  std::vector<HeadRef> out;
  std::size_t start = 0;
  while (start <= value.size()) {
    const std::size_t end = std::min(value.find(',', start), value.size());
    const std::string item = value.substr(start, end - start);
    const auto r = parse_head(item);
    if (!r) throw InputError(fmt::format("{} {}: expected heads as L<layer>H<head>, comma-separated (L0H0,L0H2); got \"{}\"", option, value, item));
    if (std::find(out.begin(), out.end(), *r) != out.end()) throw InputError(fmt::format("{} {}: {} is named twice", option, value, head_ref_name(*r)));
    out.push_back(*r);
    start = end + 1;
  }
  return out;
}

void check_head_list(const std::vector<HeadRef>& heads, std::int64_t layers, std::int64_t H, const std::string& option) {
  for (const auto& r : heads) {
    if (r.layer >= layers || r.head >= H) {
      throw InputError(fmt::format("{} {}: the model has {} layers × {} heads (L0H0 .. L{}H{})", option, head_ref_name(r), layers, H, layers - 1, H - 1));
    }
  }
}

namespace {

// One layer's edit: out (1, T, Co) loses each ablated head's (ctx_h − r_h) · W_o rows; without W_o
// the merged heads are the output, and head h's columns become r_h.
void ablate_output(const std::vector<std::int64_t>& heads, AblationMode mode, const Spec& s, const Tensor& context, Tensor& out) {
  const std::int64_t T = s.T, hv = s.dv / s.H, Co = out.dim(-1);
  const bool project = s.w.W_o.has_value();
  for (const auto h : heads) {
    const Scalar* c = context.data() + h * T * hv;  // (1, H, T, hv)
    std::vector<double> r(static_cast<std::size_t>(hv), 0.0);
    if (mode == AblationMode::Mean)
      for (std::int64_t i = 0; i < T; ++i)
        for (std::int64_t d = 0; d < hv; ++d) r[static_cast<std::size_t>(d)] += c[i * hv + d] / static_cast<double>(T);
    for (std::int64_t i = 0; i < T; ++i) {
      Scalar* o = out.mutable_data() + i * Co;
      if (!project) {
        for (std::int64_t d = 0; d < hv; ++d) o[h * hv + d] = static_cast<Scalar>(r[static_cast<std::size_t>(d)]);
        continue;
      }
      const Scalar* W = s.w.W_o->data() + h * hv * Co;  // W_o's rows of head h: [hv, Co]
      for (std::int64_t k = 0; k < Co; ++k) {
        double delta = 0;
        for (std::int64_t d = 0; d < hv; ++d) delta += (c[i * hv + d] - r[static_cast<std::size_t>(d)]) * static_cast<double>(W[d * Co + k]);
        o[k] = static_cast<Scalar>(static_cast<double>(o[k]) - delta);
      }
    }
  }
}

}  // namespace

LayerHooks ablation_hooks(const std::vector<HeadRef>& heads, AblationMode mode) {
  LayerHooks hooks;
  hooks.output = [heads, mode](std::int64_t layer, const Spec& s, const Tensor& context, Tensor& out) {
    std::vector<std::int64_t> here;
    for (const auto& r : heads)
      if (r.layer == layer) here.push_back(r.head);
    if (!here.empty()) ablate_output(here, mode, s, context, out);
  };
  return hooks;
}

void add_loss_hook(LayerHooks& hooks, std::optional<double>* loss, std::vector<std::int64_t>* ids) {
  hooks.stream = [loss, ids](const Checkpoint& ckpt, const std::vector<std::int64_t>& input, const Tensor& h) {
    *ids = input;
    const auto T = static_cast<std::int64_t>(input.size());
    if (ckpt.arch().encoder() || T < 2) return;
    auto be = make_backend("cpu");
    const Tensor logits = logits_of(ckpt, *be, h, ckpt.lm_head());  // (T, V)
    const std::int64_t V = logits.dim(-1);
    double sum = 0;
    for (std::int64_t i = 0; i + 1 < T; ++i) {
      const Scalar* row = logits.data() + i * V;
      const double m = *std::max_element(row, row + V);
      double z = 0;
      for (std::int64_t v = 0; v < V; ++v) z += fixed::exp(static_cast<double>(row[v]) - m);
      sum += m + fixed::log(z) - static_cast<double>(row[input[static_cast<std::size_t>(i + 1)]]);
    }
    *loss = sum / static_cast<double>(T - 1);
  };
}

double pattern_score(const HeadsView& v, std::int64_t l, std::int64_t h, HeadPattern p) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const HeadSummary& s = v.summary(l, h);
  if (v.cross) return p == HeadPattern::Broad ? s.entropy / s.max_entropy : nan;
  const bool positional = p == HeadPattern::PreviousToken || p == HeadPattern::SameToken || p == HeadPattern::NextToken || p == HeadPattern::FirstToken;
  if (positional && v.T < 2 && !(v.bidirectional && p == HeadPattern::SameToken)) return nan;  // no query has that key
  switch (p) {
    case HeadPattern::PreviousToken: return s.previous;
    case HeadPattern::SameToken: return s.same;
    case HeadPattern::NextToken: return s.next;
    case HeadPattern::FirstToken: return s.first;
    case HeadPattern::Induction: return s.induction < 0 ? nan : s.induction;
    case HeadPattern::Broad: return s.max_entropy > 0 ? s.entropy / s.max_entropy : nan;
    default: return nan;
  }
}

bool HeadChange::relabelled() const { return clean.pattern != ablated.pattern || clean.label != ablated.label; }

void compare_runs(const HeadsView& clean, AblationRun& run) {
  std::int64_t first = clean.layers;
  for (const auto& r : run.heads) first = std::min(first, r.layer);
  run.changes.clear();
  for (std::int64_t l = first + 1; l < clean.layers; ++l)
    for (std::int64_t h = 0; h < clean.heads; ++h) {
      HeadChange c{{l, h}, clean.summary(l, h), run.view.summary(l, h), 0, 0};
      c.clean_score = pattern_score(clean, l, h, c.clean.pattern);
      c.ablated_score = pattern_score(run.view, l, h, c.clean.pattern);
      run.changes.push_back(c);
    }
}

namespace {
// How much a change moved: |Δ| of the clean label's score; 0 without one (a mixed head: listed after the measured ones).
double moved(const HeadChange& c) {
  const double d = std::fabs(c.ablated_score - c.clean_score);
  return std::isnan(d) ? 0.0 : d;
}
}  // namespace

std::vector<HeadChange> largest_changes(const AblationRun& run, std::size_t k) {
  std::vector<HeadChange> out = run.changes;
  std::stable_sort(out.begin(), out.end(), [](const HeadChange& a, const HeadChange& b) { return moved(a) > moved(b); });
  out.resize(std::min(k, out.size()));
  return out;
}

std::vector<HeadRef> labelled_heads(const HeadsView& v) {
  std::vector<HeadRef> out;
  for (std::int64_t l = 0; l < v.layers; ++l)
    for (std::int64_t h = 0; h < v.heads; ++h)
      if (v.summary(l, h).pattern != HeadPattern::Mixed && v.summary(l, h).pattern != HeadPattern::Broad) out.push_back({l, h});
  return out;
}

}  // namespace attn::model
