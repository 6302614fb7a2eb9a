// attn heads --rollout, --ablate and --evidence (heads_evidence.hpp): the options checked together, the
// runs made through attn heads' own pass with its hooks (model/tools/rollout.hpp, ablation.hpp), the
// results written by render/rollout_*.cpp and ablation_text.cpp.
#include "heads_evidence.hpp"

#include <optional>

#include "attn/model/tools/ablation.hpp"
#include "attn/model/tools/rollout.hpp"
#include "attn/render/heads_layout.hpp"
#include "attn/render/rollout_views.hpp"
#include "attn/tools/explain_rollout.hpp"

namespace attn_cli {

using namespace attn::model;

void setup_heads_evidence(CLI::App* heads, HeadsEvidence& o) {
  heads->add_flag("--rollout", o.rollout, "attention rollout: each layer's heads combined, the identity added for the residual, multiplied from the first layer; which input tokens each position draws on");
  heads->add_option("--rollout-heads", o.rollout_heads, "how --rollout combines a layer's heads: mean (default), max or min")->check(member_of({"mean", "max", "min"}));
  heads->add_option("--rollout-query", o.rollout_query, "the query whose input tokens --rollout lists: a position or a token as the tokens line names it (default: the last)");
  heads->add_flag("--explain", o.explain, "with --rollout: explain it with this run's numbers");
  heads->add_option("--ablate", o.ablate, "run the model again with these heads' outputs removed (L0H0,L0H2) and report it beside the clean run")
      ->check(CLI::Validator([](std::string& v) { return v.empty() ? std::string("expected heads as L<layer>H<head>, comma-separated (L0H0,L0H2); got nothing") : std::string(); },
                             "HEADS"));
  heads->add_option("--ablation", o.ablation, "how --ablate and --evidence remove a head: zero (default) or mean (its output's mean over the positions)")->check(member_of({"zero", "mean"}));
  heads->add_flag("--evidence", o.evidence, "ablate each labelled head in turn and write what each ablation changes most");
}

namespace {

// The combinations refused before anything runs.
void check_options(const HeadsEvidence& o, const std::string& format) {
  auto refuse = [](const std::string& m) { throw attn::InputError(m); };
  if (!o.rollout && (o.explain || o.rollout_heads != "mean" || !o.rollout_query.empty())) {
    refuse(fmt::format("{}: belongs to --rollout (attn heads FILE --rollout {})", o.explain ? "--explain" : o.rollout_query.empty() ? "--rollout-heads" : "--rollout-query",
                       o.explain ? "--explain" : o.rollout_query.empty() ? "--rollout-heads max" : "--rollout-query 3"));
  }
  if (o.ablation != "zero" && o.ablate.empty() && !o.evidence) refuse("--ablation: says how --ablate or --evidence removes a head; give one of them");
  if (!o.ablate.empty() && o.evidence) refuse("--evidence: ablates each labelled head in turn; leave out --ablate (or --evidence to ablate the heads named)");
  if (o.rollout && (!o.ablate.empty() || o.evidence)) {
    refuse(fmt::format("--rollout and {0} run one at a time (rollout reads the clean model's weights); drop --rollout or {0}", o.evidence ? "--evidence" : "--ablate"));
  }
  if (o.evidence && (format == "svg" || format == "html")) refuse(fmt::format("--format {}: --evidence writes text or json", format));
}

int rollout(const HeadsEvidence& o, const std::string& file, const std::string& format, attn::ColorMode color, int width, const Resources& res,
            const HeadsKeep& keep) {
  const RolloutHeads combine = o.rollout_heads == "max" ? RolloutHeads::Max : o.rollout_heads == "min" ? RolloutHeads::Min : RolloutHeads::Mean;
  std::optional<RolloutAccumulator> acc;
  LayerHooks hooks;
  hooks.option = "--rollout";
  hooks.rows = [&](const WeightRows& b) {  // each block of a layer's rows as it is made
    if (!acc) acc.emplace(combine, b.S);
    acc->add_rows(b.w, b.H, b.i0, b.i1, b.cols);
  };
  const std::vector<HeadsView> views = load_heads(file, res.max_bytes(), res.why(), keep, hooks);
  const HeadsView& v = views.front();
  const std::vector<std::string> labels = heads_detail::token_labels(v);
  const std::int64_t query = o.rollout_query.empty() ? v.T - 1 : rollout_query(o.rollout_query, labels, "--rollout-query");
  Rollout r = acc ? std::move(*acc).finish(query) : Rollout{};
  r.causal = !v.bidirectional;
  r.model = v.model;
  const std::vector<std::string> words = o.explain ? attn::explain_rollout(r, labels) : std::vector<std::string>{};
  if (format == "json") render_heads_json(views, std::cout, rollout_json_members(r, labels));
  else if (format == "svg") render_rollout_svg(r, labels, std::cout);
  else if (format == "html") render_rollout_html(r, labels, std::cout, words);
  else {
    render_heads_text(views, std::cout, color, width);
    render_rollout_text(r, labels, std::cout, width, words);
  }
  std::cout.flush();
  return kExitOk;
}

// One run of the model with `heads` removed, compared with the clean one.
AblationRun ablated_run(const AblationReport& report, const std::vector<HeadRef>& heads, AblationMode mode, const std::string& file, const Resources& res,
                        const HeadsKeep& keep) {
  AblationRun run;
  run.heads = heads, run.mode = mode;
  LayerHooks hooks = ablation_hooks(heads, mode);
  std::vector<std::int64_t> ids;
  add_loss_hook(hooks, &run.loss, &ids);
  hooks.option = report.evidence ? "--evidence" : "--ablate";
  run.view = load_heads(file, res.max_bytes(), res.why(), keep, hooks).front();
  compare_runs(report.clean, run);
  std::string names;
  for (const auto& h : heads) names += (names.empty() ? "" : ", ") + head_ref_name(h);
  run.view.notes.push_back(fmt::format("ablated: {} ({}), before the output projection; every weight and label here is of that run", names, ablation_mode_name(mode)));
  for (const auto& h : heads) {  // their weights are unchanged (they come before the edit): marked, so as not to read as still at work
    HeadSummary& s = run.view.summaries[static_cast<std::size_t>(h.layer * run.view.heads + h.head)];
    s.label = "(ablated) " + (s.label.empty() ? std::string(pattern_name(s.pattern)) : s.label);
  }
  return run;
}

int ablation(const HeadsEvidence& o, const std::string& file, const std::string& format, attn::ColorMode color, int width, const Resources& res,
             const HeadsKeep& keep) {
  AblationReport report;
  report.evidence = o.evidence;
  const std::string option = o.evidence ? "--evidence" : "--ablate";
  const std::vector<HeadRef> named = o.evidence ? std::vector<HeadRef>{} : parse_head_list(o.ablate, "--ablate");
  LayerHooks clean;
  clean.option = option;
  add_loss_hook(clean, &report.loss, &report.ids);
  report.clean = load_heads(file, res.max_bytes(), res.why(), keep, clean).front();
  check_head_list(named, report.clean.layers, report.clean.heads, "--ablate");
  const AblationMode mode = o.ablation == "mean" ? AblationMode::Mean : AblationMode::Zero;
  if (o.evidence)
    for (const auto& h : labelled_heads(report.clean)) report.runs.push_back(ablated_run(report, {h}, mode, file, res, keep));
  else
    report.runs.push_back(ablated_run(report, named, mode, file, res, keep));
  if (format == "json") render_ablation_json(report, std::cout);
  else if (format == "svg" || format == "html") {  // the ablated run's heads, the loss among its notes
    HeadsView& v = report.runs.front().view;
    v.notes.push_back(ablation_loss_text(report.loss, report.runs.front().loss));
    if (format == "svg") render_heads_svg(v, std::cout);
    else render_heads_html(v, std::cout);
  }
  else {
    render_heads_text(report.clean, std::cout, color, width);
    if (!o.evidence) {
      std::cout << "\n" << attn::wrap(fmt::format("── the same input with {} ablated ──", o.ablate), static_cast<std::size_t>(width), "", "  ") << "\n\n";
      render_heads_text(report.runs.front().view, std::cout, color, width);
    } else if (report.runs.empty()) {
      std::cout << "\n--evidence: no head is labelled by a pattern (every head is mixed or broad): nothing to ablate\n";
    }
    render_ablation_text(report, std::cout, width);
  }
  std::cout.flush();
  return kExitOk;
}

}  // namespace

int run_heads_evidence(const HeadsEvidence& o, const std::string& file, const std::string& format, attn::ColorMode color, int width,
                       const Resources& resources, const HeadsKeep& keep) {
  check_options(o, format);
  if (o.rollout) return rollout(o, file, format, color, width, resources, keep);
  return ablation(o, file, format, color, width, resources, keep);
}

}  // namespace attn_cli
