// attn decode --tokens N: the whole model, a token at a time against every layer's KV cache
// (run_prefill, then run_decode_step per layer and token), the final norm and the LM head; then one
// full causal pass over the same tokens, every step compared.
#include "attn/model/tools/generate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "attn/pipeline/decode.hpp"
#include "attn/core/error.hpp"
#include "attn/numerics/fixed_math.hpp"
#include "attn/io/json_text.hpp"
#include "attn/model/tools/residual.hpp"
#include "attn/pipeline/pipeline.hpp"

namespace attn::model {

Tensor logits_of(const Checkpoint& ckpt, Backend& be, const Tensor& h, const Tensor& head) {
  const auto& a = ckpt.arch();
  const auto [w, b] = ckpt.final_norm();
  const Tensor normed = layer_norm_rows(h, w, b, a.eps);
  Tensor l = be.download(be.matmul(be.upload(normed), be.upload(head)));
  l = l.reshaped({h.dim(1), head.dim(1)});
  if (a.final_softcap) {
    const double c = *a.final_softcap;
    for (std::int64_t i = 0; i < l.size(); ++i) l.mutable_data()[i] = static_cast<Scalar>(c * fixed::tanh(static_cast<double>(l.data()[i]) / c));
  }
  return l;
}

namespace {

// The k most probable of one row of logits: softmax in double, most probable first, ties to the lower id.
std::vector<Candidate> top_of(const Scalar* logits, std::int64_t V, std::int64_t k, const Checkpoint& ckpt) {
  double m = -INFINITY;
  for (std::int64_t v = 0; v < V; ++v) m = std::max(m, static_cast<double>(logits[v]));
  double sum = 0;
  for (std::int64_t v = 0; v < V; ++v) sum += fixed::exp(static_cast<double>(logits[v]) - m);
  std::vector<std::int64_t> order(static_cast<std::size_t>(V));
  std::iota(order.begin(), order.end(), 0);
  k = std::min(k, V);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](std::int64_t x, std::int64_t y) {
    return logits[x] != logits[y] ? logits[x] > logits[y] : x < y;
  });
  std::vector<Candidate> out;
  const Tokenizer* tok = ckpt.tokenizer();
  for (std::int64_t i = 0; i < k; ++i) {
    const auto id = order[static_cast<std::size_t>(i)];
    out.push_back({id, tok && id < tok->vocab_size() ? tok->label(id) : fmt::format("#{}", id), fixed::exp(static_cast<double>(logits[id]) - m) / sum});
  }
  return out;
}

// The attention block's output (1, T, C) from a trace, and its weights (H, T, S) kept when asked for.
Tensor output_of(const Trace& t, std::int64_t T, std::int64_t C, Tensor* weights) {
  const Step* out = t.find("output");
  if (!out) throw InternalError("generation: the layer's trace has no output step");
  if (weights) *weights = t.find("weights")->value;
  return out->value.reshaped({1, T, C});
}

std::string label_of(const Checkpoint& ckpt, std::int64_t id) {
  const Tokenizer* tok = ckpt.tokenizer();
  return tok && id < tok->vocab_size() ? tok->label(id) : fmt::format("#{}", id);
}

// What decode --tokens refuses: the encoder-decoders and the encoders (no next token), and GPT-2
// past its learned positions (P prompt tokens and tokens − 1 fed back).
void refuse_generation(const Architecture& a, std::int64_t P, std::int64_t tokens, Door door) {
  const auto flag = option_name(door, "tokens");
  if (a.encoder_decoder) {
    throw InputError(fmt::format("{}: attn traces {}'s encoder and decoder layers, but does not generate with an encoder-decoder yet "
                                 "(its LM head and final_logits_bias are not read)", flag, a.name()));
  }
  if (a.encoder()) {
    throw InputError(fmt::format("{}: {} is an encoder (every token sees every other): it has no next token to predict; decode with {} "
                                 "needs a causal model (GPT-2, the Llama family)", flag, a.name(), flag));
  }
  if (a.family == Family::Gpt2 && P + tokens - 1 > a.positions) {
    throw InputError(fmt::format("{}: the prompt's {} tokens and {} more fed back take {} positions, but GPT-2 has learned "
                                 "positions for n_positions = {}; at most {} new tokens", option_with(door, "tokens", tokens), P, tokens - 1,
                                 P + tokens - 1, a.positions, a.positions - P + 1));
  }
}

// The generation's header: the model, the LM head, the notes (the first saying only what was read), the
// traced layer and the prompt; a note where RoPE runs past max_position_embeddings.
Generation generation_header(const CheckpointInput& in, std::int64_t tokens) {
  const Checkpoint& ckpt = in.ckpt;
  const auto& a = ckpt.arch();
  const auto P = static_cast<std::int64_t>(in.ids.size());
  Generation g;
  g.model = ckpt.describe();
  g.head_name = ckpt.lm_head_name();
  g.notes = in.notes;
  // the header names the model already: the first note says only what was read
  if (!g.notes.empty()) g.notes.front() = fmt::format("weights {}, converted to float32 and computed in float32", ckpt.weights_description());
  g.layer = in.layer, g.heads = a.H;
  g.prompt_ids = in.ids;
  g.prompt = in.pieces;
  g.prompt_pieces = in.raw;
  g.window = a.window_of(in.layer);
  g.final_softcap = a.final_softcap;
  if (const std::string note = a.beyond_positions_note(P + tokens - 1, "tokens in all"); !note.empty()) g.notes.push_back(note);
  return g;
}

// The check: one full causal pass over every token fed in (ids, labelled), no cache; each step's
// logits (logit_rows) and the traced layer's weights compared with it, and its top token.
void compare_with_full_pass(const Checkpoint& ckpt, Backend& be, const std::vector<std::int64_t>& ids, const Labels& labels, const Tensor& head,
                            std::int64_t layer, const std::vector<Tensor>& logit_rows, Generation& g) {
  const auto& a = ckpt.arch();
  const std::int64_t V = head.dim(1), C = a.C;
  Tensor full = ckpt.embed(ids);
  const auto T = static_cast<std::int64_t>(ids.size());
  Tensor full_weights;
  for (std::int64_t i = 0; i < a.layers; ++i) {
    run_layer_with(ckpt, i, be, full, labels, [&](const Spec& s) { return output_of(run_pipeline(s, be), T, C, i == layer ? &full_weights : nullptr); }, true);
  }
  const Tensor full_logits = logits_of(ckpt, be, full, head);
  for (std::size_t k = 0; k < g.steps.size(); ++k) {
    auto& st = g.steps[k];
    const Scalar* want = full_logits.data() + st.position * V;
    for (std::int64_t v = 0; v < V; ++v) {
      const double d = std::fabs(static_cast<double>(logit_rows[k].at(v)) - want[v]);
      st.logits_difference = std::max(st.logits_difference, std::isnan(d) ? INFINITY : d);
      if (!(d <= Generation::kLogitTolerance * std::max(1.0, std::fabs(static_cast<double>(want[v]))))) g.agrees = false;
    }
    const std::int64_t S = st.position + 1;
    for (std::int64_t hd = 0; hd < a.H; ++hd)
      for (std::int64_t j = 0; j < S; ++j) {
        const double d = std::fabs(static_cast<double>(st.attention[static_cast<std::size_t>(hd * S + j)]) - full_weights.at((hd * T + st.position) * T + j));
        st.weights_difference = std::max(st.weights_difference, std::isnan(d) ? INFINITY : d);
      }
    if (!(st.weights_difference <= Generation::kWeightTolerance)) g.agrees = false;
    if (top_of(want, V, 1, ckpt)[0].id != st.top[0].id) g.agrees = false;
    g.logits_max = std::max(g.logits_max, st.logits_difference);
    g.weights_max = std::max(g.weights_max, st.weights_difference);
  }
}

}  // namespace

Generation generate(const CheckpointInput& in, Backend& be, std::int64_t tokens, std::int64_t top, Door door) {
  check_decode_options(door, tokens, top, std::nullopt);
  const Checkpoint& ckpt = in.ckpt;
  const auto& a = ckpt.arch();
  const auto P = static_cast<std::int64_t>(in.ids.size());
  refuse_generation(a, P, tokens, door);
  const Tensor head = ckpt.lm_head();
  const std::int64_t V = head.dim(1), C = a.C;
  Generation g = generation_header(in, tokens);
  std::vector<std::int64_t> ids = in.ids;
  Labels labels{in.pieces};
  std::vector<KvCache> caches(static_cast<std::size_t>(a.layers));
  std::vector<Tensor> logit_rows;  // the cached pass's logits, one row per step

  // the prompt in one causal pass per layer (the prefill), each layer's keys and values cached
  Tensor h = ckpt.embed(ids);
  Tensor weights;
  for (std::int64_t i = 0; i < a.layers; ++i) {
    run_layer_with(ckpt, i, be, h, labels, [&](const Spec& s) {
      const Trace t = run_prefill(s, be, caches[static_cast<std::size_t>(i)]);
      return output_of(t, P, C, i == in.layer ? &weights : nullptr);
    }, true);
  }
  const auto keep_step = [&](const Tensor& logits, std::int64_t position, const Tensor& w, std::int64_t row, std::int64_t rows) {
    GenerationStep st;
    st.position = position;
    st.query_id = ids[static_cast<std::size_t>(position)];
    st.query = labels[0][static_cast<std::size_t>(position)];
    const std::int64_t S = position + 1;
    for (std::int64_t hd = 0; hd < a.H; ++hd)
      for (std::int64_t j = 0; j < S; ++j) st.attention.push_back(w.at((hd * rows + row) * w.dim(-1) + j));
    st.top = top_of(logits.data(), V, std::max<std::int64_t>(top, 1), ckpt);
    logit_rows.push_back(logits);
    g.steps.push_back(std::move(st));
  };
  {
    Tensor last = Tensor::uninitialized({1, 1, C});
    std::copy(h.data() + (P - 1) * C, h.data() + P * C, last.mutable_data());
    keep_step(logits_of(ckpt, be, last, head), P - 1, weights, P - 1, P);
  }
  // each new token against the caches: its embedding at its position, then every layer
  for (std::int64_t n = 0; n < tokens; ++n) {
    const std::int64_t next = g.steps.back().top[0].id;
    g.generated.push_back(next);
    g.generated_labels.push_back(label_of(ckpt, next));
    g.generated_pieces.push_back(ckpt.tokenizer() && next < ckpt.tokenizer()->vocab_size() ? ckpt.tokenizer()->piece(next) : fmt::format("#{}", next));
    if (n + 1 == tokens) break;  // the last token written is not fed back
    ids.push_back(next);
    labels[0].push_back(g.generated_labels.back());
    const std::int64_t t = static_cast<std::int64_t>(ids.size()) - 1;
    const Tensor all = ckpt.embed(ids);  // (GPT-2's learned position is added to the new row)
    Tensor row = Tensor::uninitialized({1, 1, C});
    std::copy(all.data() + t * C, all.data() + (t + 1) * C, row.mutable_data());
    const Labels one{{labels[0].back()}};
    const Labels keys{labels[0]};
    for (std::int64_t i = 0; i < a.layers; ++i) {
      run_layer_with(ckpt, i, be, row, one, [&](const Spec& s) {
        Spec single = s;
        if (a.window_of(i) > 0 && a.window_of(i) < t + 1) single.window = a.window_of(i);
        const auto [token, step] = decode_specs_at(single, t, keys);
        const Trace tr = run_decode_step(token, step, be, caches[static_cast<std::size_t>(i)]);
        return output_of(tr, 1, C, i == in.layer ? &weights : nullptr);
      }, true);
    }
    keep_step(logits_of(ckpt, be, row, head), t, weights, 0, 1);
  }

  compare_with_full_pass(ckpt, be, ids, labels, head, in.layer, logit_rows, g);
  return g;
}

}  // namespace attn::model
