// attn decode's text: the prefill's and each decoded token's steps, then every row against the full
// causal trace; with --explain, the cache's explanations (tools/explain_decode.hpp) between them.
// Reads what run_decode (pipeline/decode.hpp) kept; computes nothing but the cache's bytes per token.
#include <fmt/format.h>

#include <algorithm>

#include "attn/pipeline/decode.hpp"
#include "attn/core/text.hpp"
#include "attn/render/render.hpp"
#include "attn/tools/explain_decode.hpp"

namespace attn {
namespace {

// An explanation as the steps' are shown: each paragraph wrapped under "▸", a blank line before it.
void write_explanation(const std::string& text, std::ostream& out, const TextOptions& o) {
  const auto width = static_cast<std::size_t>(o.width);
  std::size_t at = 0;
  for (bool first = true; at < text.size(); first = false) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    out << "\n" << wrap(text.substr(at, end - at), width, first ? "    ▸ " : "      ", "      ");
    at = end + 1;
  }
}

}  // namespace

void render_decode_text(const Decode& d, std::ostream& out, const TextOptions& o, const std::vector<std::string>& step_ids) {
  check_text_options(o);
  const auto& c = d.prefill_trace.config;
  const std::int64_t T = d.prefill + static_cast<std::int64_t>(d.tokens.size());
  const auto hv = c.hv > 0 ? c.hv : c.hs;
  out << fmt::format("Attention Tracer · decode · {}\n", c.title);
  out << fmt::format("generation with a KV cache: {} in one causal pass (the prefill), then {}\n",
                     d.prefill == 1 ? std::string("token 0") : fmt::format("tokens 0 .. {}", d.prefill - 1),
                     d.prefill == T - 1 ? fmt::format("token {} against the cache", T - 1) : fmt::format("tokens {} .. {} one at a time", d.prefill, T - 1));
  out << fmt::format("the cache keeps every token's {}keys and values: Hkv · (hs + hv) × 4 bytes = {} · ({} + {}) × 4 = {} bytes per "
                     "token{}\n",
                     d.prefill_trace.find("k.rope") != nullptr ? "rotated " : "", c.Hkv, c.hs, hv, c.Hkv * (c.hs + hv) * 4, c.batched ? " per batch row" : "");
  if (o.explain) write_explanation(explain_decode_cache(d), out, o);
  const auto show = [&](const Trace& t) {
    TextOptions to = o;
    to.steps.clear();
    for (std::size_t i = 0; i < t.steps.size(); ++i)
      if (step_ids.empty() || std::find(step_ids.begin(), step_ids.end(), t.steps[i].id) != step_ids.end()) render_text_step(t, i, out, to);
  };
  out << fmt::format("\n══ prefill: {}, causal, T = S = {} ══\n", d.prefill == 1 ? std::string("token 0") : fmt::format("tokens 0 .. {}", d.prefill - 1), d.prefill);
  render_text_header(d.prefill_trace, out, o);
  show(d.prefill_trace);
  for (std::size_t k = 0; k < d.tokens.size(); ++k) {
    const auto t = d.prefill + static_cast<std::int64_t>(k);
    out << fmt::format("\n══ token {} \"{}\" (position {}): one query against the {} cached keys, its own appended ══\n", t,
                       d.rows[static_cast<std::size_t>(t)].token, t, t + 1);
    if (o.explain) write_explanation(explain_decode_token(d, k), out, o);
    show(d.tokens[k]);
  }
  out << fmt::format("\n══ every row against the full causal trace (all T = {} tokens at once) ══\n", T);
  out << fmt::format("{:>8}  {:<12}  {:>10}  {:>10}  {:>10}\n", "position", "token", "weights", "context", d.last_id);
  for (const auto& r : d.rows) {
    out << fmt::format("{:>8}  {:<12}  {:>10.3g}  {:>10.3g}  {:>10.3g}{}\n", r.position, r.token, r.weights, r.context, r.last,
                       r.position == d.prefill ? "  ← first decoded" : "");
  }
  out << fmt::format("largest |decoded − full| = {:.3g} over the decoded rows ({:.3g} over the prefill's); tolerance {:g}: {}\n", d.decoded_max, d.prefill_max,
                     Decode::kTolerance,
                     d.agrees() ? "the cache gives the attention of the full pass, without recomputing a key or value"
                                : "DIFFERS: decoding does not reproduce the full pass");
  if (o.explain) write_explanation(explain_decode_rows(d), out, o);
}

}  // namespace attn
