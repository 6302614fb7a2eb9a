// attn decode --tokens N: the generation's text and JSON (model/tools/generate.hpp). Reads what generate()
// computed; computes nothing but the order in which a head's weights are listed.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "attn/io/json_text.hpp"
#include "attn/model/tools/generate.hpp"
#include "attn/render/layout.hpp"
#include "attn/render/model_views.hpp"

namespace attn::model {
namespace {

std::string joined(const std::vector<std::string>& labels) {
  std::string out;
  for (const auto& l : labels) out += (out.empty() ? "" : " ") + l;
  return out;
}

// "␣cat 0.82 @2": a key's label, its weight and its position
std::string key_text(const Generation& g, std::int64_t j, double w, int precision) {
  const auto P = static_cast<std::int64_t>(g.prompt.size());
  const std::string& label = j < P ? g.prompt[static_cast<std::size_t>(j)] : g.generated_labels[static_cast<std::size_t>(j - P)];
  return fmt::format("{} {:.{}f} @{}", label, w, precision, j);
}

// shortest round-trip text (float32's for a weight); non-finite values as the strings "nan", "inf", "-inf"
std::string json_number(double v, bool single = false) {
  if (std::isnan(v)) return "\"nan\"";
  if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
  return single ? fmt::format("{}", static_cast<float>(v)) : fmt::format("{}", v);
}

}  // namespace

void render_generation_text(const Generation& g, std::ostream& out, const TextOptions& o, std::int64_t head) {
  check_text_options(o);
  const auto width = static_cast<std::size_t>(o.width);
  const int precision = std::min(o.precision, 6);
  out << wrap(fmt::format("Attention Tracer · decode --tokens {} · {}", g.generated.size(), g.model), width, "", "  ");
  for (const auto& n : g.notes) out << wrap(n, width, "  note: ", "        ");
  out << wrap(fmt::format("prompt ({} tokens): {}", g.prompt.size(), joined(g.prompt)), width, "", "  ");
  out << wrap(fmt::format("the model writes {} token{}, the most probable each time. Every layer keeps its keys and values (the KV cache), so "
                          "each new token is one query per layer against the cache. Next-token probabilities: softmax of the logits, the "
                          "final norm's output times {}{}. Shown: layer {}'s attention, {}{}.",
                          g.generated.size(), g.generated.size() == 1 ? "" : "s", g.head_name,
                          g.final_softcap ? fmt::format(", soft-capped as c · tanh(logits / c) with c = {} (final_logit_softcapping)", *g.final_softcap) : "",
                          g.layer, head < 0 ? "each head's three largest weights (key, weight, @position)" : fmt::format("head {}, every key", head),
                          g.window > 0 ? fmt::format("; the layer's sliding window of {} keys gives every earlier key weight 0", g.window) : ""),
                  width, "", "");
  for (std::size_t k = 0; k < g.steps.size(); ++k) {
    const auto& st = g.steps[k];
    const std::int64_t S = st.position + 1;
    const std::int64_t seen = g.window > 0 ? std::min(g.window, S) : S;
    out << "\n"
        << wrap(fmt::format("── {} \"{}\" (position {}): layer {}'s query against the {} cached keys{} ──", k == 0 ? "the prompt's last token" : "written",
                            st.query, st.position, g.layer, S, seen < S ? fmt::format(", the window's last {}", seen) : ""),
                width, "", "   ");
    for (std::int64_t h = 0; h < g.heads; ++h) {
      if (head >= 0 && h != head) continue;
      const float* w = st.attention.data() + h * S;
      std::vector<std::int64_t> keys(static_cast<std::size_t>(S));
      std::iota(keys.begin(), keys.end(), 0);
      if (head < 0) {
        const auto shown = std::min<std::int64_t>(3, S);
        std::partial_sort(keys.begin(), keys.begin() + shown, keys.end(), [&](std::int64_t a, std::int64_t b) { return w[a] != w[b] ? w[a] > w[b] : a < b; });
        keys.resize(static_cast<std::size_t>(shown));
      }
      std::vector<std::string> parts;
      for (auto j : keys) parts.push_back(key_text(g, j, w[j], precision));
      // each key whole on its line: the parts wrap between them, under the first
      parts.front() = fmt::format("head {:<2} {}", h, parts.front());
      out << join_fitting(parts, width, "  ");
    }
    out << fmt::format("  {:<16}  {:>{}}\n", "next token", "p", precision + 2);
    for (std::size_t c = 0; c < st.top.size(); ++c) {
      const auto& cand = st.top[c];
      const std::string written = width >= 52 ? fmt::format("  ← written (position {})", st.position + 1) : "  ← written";
      out << fmt::format("  {}  {:.{}f}{}\n", pad_right(clip(cand.token, 16), 16), cand.p, precision, c == 0 ? written : "");
    }
  }
  out << "\n"
      << wrap(fmt::format("── every step against one full causal pass over the {} tokens, no cache ──", g.prompt.size() + g.generated.size() - 1), width, "", "   ");
  if (width >= 64) {
    out << fmt::format("{:>8}  {:<12}  {:<12}  {:>12}  {:>12}\n", "position", "query", "next", "|Δ logits|", "|Δ weights|");
  } else {
    out << wrap("position query → next: |Δ logits|, |Δ weights|", width, "", "  ");
  }
  for (std::size_t k = 0; k < g.steps.size(); ++k) {
    const auto& st = g.steps[k];
    if (width >= 64) {
      out << fmt::format("{:>8}  {}  {}  {:>12.3g}  {:>12.3g}\n", st.position, pad_right(clip(st.query, 12), 12),
                         pad_right(clip(g.generated_labels[k], 12), 12), st.logits_difference, st.weights_difference);
    } else {
      out << wrap(fmt::format("{} {} → {}: {:.3g}, {:.3g}", st.position, st.query, g.generated_labels[k], st.logits_difference, st.weights_difference),
                  width, "", "  ");
    }
  }
  out << wrap(fmt::format("largest |cached − full|: logits {:.3g} (tolerance {:g} · max(1, |logit|)), layer {}'s weights {:.3g} (tolerance {:g}): {}",
                          g.logits_max, Generation::kLogitTolerance, g.layer, g.weights_max, Generation::kWeightTolerance,
                          !g.agrees                ? "DIFFERS: the cached pass does not reproduce the full one"
                          : g.generated.size() == 1 ? "one token written, from the prefill alone (none was fed back against the cache)"
                                                    : "the cache gives the full pass's predictions, without recomputing a key or value"),
              width, "", "  ");
  out << wrap(fmt::format("generated: {}", joined(g.generated_labels)), width, "", "  ");
}

void render_generation_json(const Generation& g, std::ostream& out) {
  const auto ids = [](const std::vector<std::int64_t>& v) {
    std::string s;
    for (auto x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
    return "[" + s + "]";
  };
  const auto strings = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + json_quote(x);
    return "[" + s + "]";
  };
  out << "{\n";
  out << fmt::format("  \"model\": {},\n  \"lm_head\": {},\n  \"layer\": {},\n", json_quote(g.model), json_quote(g.head_name), g.layer);
  out << fmt::format("  \"prompt_ids\": {},\n  \"prompt\": {},\n", ids(g.prompt_ids), strings(g.prompt));
  out << fmt::format("  \"prompt_pieces\": {},\n", strings(g.prompt_pieces));
  out << fmt::format("  \"generated\": {},\n  \"generated_tokens\": {},\n  \"generated_pieces\": {},\n", ids(g.generated), strings(g.generated_labels),
                     strings(g.generated_pieces));
  out << "  \"steps\": [";
  for (std::size_t k = 0; k < g.steps.size(); ++k) {
    const auto& st = g.steps[k];
    out << (k ? ",\n" : "\n") << fmt::format("    {{\"position\": {}, \"query_id\": {}, \"query\": {},\n", st.position, st.query_id, json_quote(st.query));
    out << "     \"top\": [";
    for (std::size_t c = 0; c < st.top.size(); ++c)
      out << (c ? ", " : "") << fmt::format("{{\"id\": {}, \"token\": {}, \"p\": {}}}", st.top[c].id, json_quote(st.top[c].token), json_number(st.top[c].p));
    out << "],\n     \"attention\": [";
    const std::int64_t S = st.position + 1;
    for (std::int64_t h = 0; h < g.heads; ++h) {
      out << (h ? ", [" : "[");
      for (std::int64_t j = 0; j < S; ++j) out << (j ? ", " : "") << json_number(st.attention[static_cast<std::size_t>(h * S + j)], true);
      out << "]";
    }
    out << fmt::format("],\n     \"logits_difference\": {}, \"weights_difference\": {}}}", json_number(st.logits_difference), json_number(st.weights_difference));
  }
  out << fmt::format("\n  ],\n  \"agrees\": {}\n}}\n", g.agrees ? "true" : "false");
}

}  // namespace attn::model
