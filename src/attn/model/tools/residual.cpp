// The residual stream of a checkpoint, layer by layer. Pre-norm, as GPT-2 and the Llama family:
//   h = embed(ids);  for each layer below the traced one:  h += attention(norm1(h));  h += mlp(norm2(h))
// Gemma's four norms:  h += post_attn(attention(norm1(h)));  h += post_ff(mlp(pre_ff(h)))
// OLMo 2's two:        h += post_attn(attention(h));         h += post_ff(mlp(h))
// BERT's post-LN:      h = LayerNorm(h + attention(h));      h = LayerNorm(h + mlp(h))  (erf GELU)
// Each layer's attention is the pipeline itself, run on a Spec like any other input; only the norms,
// the MLP's activation and the residual additions live here. Built with -ffp-contract=off and attn's
// own exp and tanh (fixed_math.hpp), so every machine gives the same bits.
// Legend: T tokens, C model width, H heads, Hkv key/value heads, hd head width, I MLP width.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "attn/core/error.hpp"
#include "attn/numerics/fixed_math.hpp"
#include "attn/model/architectures/checkpoint.hpp"
#include "attn/model/tools/residual.hpp"
#include "attn/pipeline/pipeline.hpp"
#include "attn/numerics/position_tables.hpp"

namespace attn::model {

namespace {

}  // namespace

Tensor layer_norm_rows(const Tensor& x, const Tensor& w, const Tensor& b, double eps) {
  const std::int64_t C = x.dim(-1), rows = x.size() / C;
  Tensor y = Tensor::uninitialized(x.shape());
  const bool layer_norm = !b.shape().empty();
  for (std::int64_t r = 0; r < rows; ++r) {
    const Scalar* in = x.data() + r * C;
    Scalar* out = y.mutable_data() + r * C;
    double mean = 0;
    if (layer_norm) {
      for (std::int64_t c = 0; c < C; ++c) mean += in[c];
      mean /= static_cast<double>(C);
    }
    double square = 0;
    for (std::int64_t c = 0; c < C; ++c) square += (in[c] - mean) * (in[c] - mean);
    const double inv = 1.0 / std::sqrt(square / static_cast<double>(C) + eps);
    for (std::int64_t c = 0; c < C; ++c) {
      const auto normed = static_cast<Scalar>((in[c] - mean) * inv);
      out[c] = layer_norm ? normed * w.data()[c] + b.data()[c] : w.data()[c] * normed;
    }
  }
  return y;
}

namespace {

Tensor normalise(const Tensor& x, const Tensor& w, const Tensor& b, double eps) { return layer_norm_rows(x, w, b, eps); }

// x (1, T, in) · W (in, out) + b (out) -> (1, T, out), by the backend's product
Tensor linear(Backend& be, const Tensor& x, const Tensor& W, const Tensor* b) {
  BackendTensor y = be.matmul(be.upload(x), be.upload(W));
  if (b && !b->shape().empty()) y = be.add_bias(y, be.upload(*b));
  return be.download(y);
}

// BERT's gelu: 0.5 x (1 + erf(x / √2)), in place
void gelu_erf(Tensor& a) {
  Scalar* p = a.mutable_data();
  for (std::int64_t i = 0; i < a.size(); ++i) {
    const double x = p[i];
    p[i] = static_cast<Scalar>(0.5 * x * (1.0 + fixed::erf(x / std::numbers::sqrt2)));
  }
}

// GPT-2's gelu_new: 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))), in place
void gelu_new(Tensor& a) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  Scalar* p = a.mutable_data();
  for (std::int64_t i = 0; i < a.size(); ++i) {
    const double x = p[i];
    p[i] = static_cast<Scalar>(0.5 * x * (1.0 + fixed::tanh(k * (x + 0.044715 * x * x * x))));
  }
}

// An encoder's activation, in place: erf GELU, gelu_new, relu or silu (x / (1 + e^−x))
void activate(Architecture::Act act, Tensor& a) {
  if (act == Architecture::Act::GeluErf) return gelu_erf(a);
  if (act == Architecture::Act::GeluTanh) return gelu_new(a);
  Scalar* p = a.mutable_data();
  for (std::int64_t i = 0; i < a.size(); ++i) {
    const double x = p[i];
    p[i] = act == Architecture::Act::Relu ? (p[i] > 0 ? p[i] : Scalar{0}) : static_cast<Scalar>(x / (1.0 + fixed::exp(-x)));
  }
}

// The Llama family's gated MLP input: silu(gate) · up = gate / (1 + e^−gate) · up, into gate;
// Gemma's: gelu(gate) · up with GPT-2's tanh form of gelu (gelu_pytorch_tanh)
void gate_times(Tensor& gate, const Tensor& up, bool gelu) {
  if (gelu) gelu_new(gate);
  Scalar* g = gate.mutable_data();
  for (std::int64_t i = 0; i < gate.size(); ++i) {
    const double x = g[i];
    g[i] = (gelu ? g[i] : static_cast<Scalar>(x / (1.0 + fixed::exp(-x)))) * up.data()[i];
  }
}

void add_into(Tensor& h, const Scalar* y) {
  Scalar* p = h.mutable_data();
  for (std::int64_t i = 0; i < h.size(); ++i) p[i] += y[i];
}

}  // namespace

Spec attention_spec(const Architecture& a, std::int64_t i, LayerWeights& w, Tensor x, const Labels& tokens) {
  Spec s;
  s.mode = a.encoder() ? Mode::Self : Mode::Causal;  // an encoder's every token sees every other
  s.causal = !a.encoder();
  s.entry = Entry::Embeddings;
  s.B = 1;
  s.T = s.S = x.dim(1);
  s.C = s.Cs = s.Co = a.C;
  s.H = a.H;
  s.Hkv = a.Hkv;
  s.dk = s.dv = a.H * a.hd;
  s.x = std::move(x);
  s.w.W_qkv = std::move(w.W_qkv), s.w.b_qkv = std::move(w.b_qkv);
  s.w.W_q = std::move(w.W_q), s.w.W_k = std::move(w.W_k), s.w.W_v = std::move(w.W_v);
  s.w.b_q = std::move(w.b_q), s.w.b_k = std::move(w.b_k), s.w.b_v = std::move(w.b_v);
  s.w.W_o = w.W_o, s.w.b_o = w.b_o;
  if (a.family == Family::Llama) {
    Spec::Rope r;
    r.theta = a.local_rope(i) ? a.local_rope_theta : a.rope_theta;  // Gemma 3's sliding layers have their own
    r.style = RopeStyle::Half;  // HF Llama's rotate_half: pairs (i, i + hd/2)
    r.dims = a.hd;
    const std::int64_t rows = r.place(s.T, s.S, false);
    if (r.table_first + rows > kMaxPosition) throw InputError(fmt::format("sentence: {} tokens; attn's RoPE tables go up to {}", s.T, kMaxPosition));
    if (!a.local_rope(i)) r.scaling = a.rope_scaling;
    RopeTables t = rope_tables(r.table_first, rows, r.dims, r.theta, r.scaling);
    r.cos = std::move(t.cos), r.sin = std::move(t.sin);
    s.rope = std::move(r);
    if (a.window_of(i) > 0 && a.window_of(i) < s.T) s.window = a.window_of(i);
    if (a.qk_norm != Architecture::QkNorm::None) {
      s.qk_norm = Spec::QkNorm{*w.q_norm, *w.k_norm, a.eps, a.qk_norm == Architecture::QkNorm::WholeWidth, a.norm_plus_one, a.name()};
    }
    if (a.query_scalar) {
      s.scale_kind = ScaleKind::Number;
      s.scale_number = 1.0 / std::sqrt(*a.query_scalar);
      s.scale_source = fmt::format("{}'s query_pre_attn_scalar = {}: 1/√{}", a.name(), *a.query_scalar, *a.query_scalar);
    }
    if (a.softcap) s.softcap = static_cast<double>(static_cast<Scalar>(*a.softcap));  // as the model computes it: a float32 cap
  }
  if (a.features->positions == family::Positions::RelativeBias) {
    s.scale_kind = ScaleKind::None;  // T5 adds no 1/√d: its initialisation of W_q absorbs it
    if (w.rel_table) {
      const RelativeBiasTables t = relative_bias_tables(*w.rel_table, s.T, s.S, 0, w.rel_bidirectional, a.rel_max_distance);
      s.relative_bias = Spec::RelativeBias{*w.rel_table, t.buckets, t.bias, a.rel_max_distance, w.rel_bidirectional, w.rel_source};
    }
  }
  s.tokens = tokens;
  s.source_tokens = tokens;
  return s;
}

namespace {

// The attention block's output (1, T, C) of one layer, and its weights (H, T, T) when asked for.
Tensor attend(const Spec& s, Backend& be, std::vector<float>* weights) {
  const Trace trace = run_pipeline(s, be);
  const Step* out = trace.find("output");
  if (!out) throw InternalError("checkpoint layer: the trace has no output step");
  if (weights) {
    const Step* w = trace.find("weights");
    weights->insert(weights->end(), w->value.data(), w->value.data() + w->value.size());
  }
  return out->value.reshaped({1, s.T, s.C});
}

// h += mlp(norm2(h)): GPT-2's c_fc, gelu_new, c_proj; the Llama family's down(silu(gate) · up);
// Gemma's and OLMo 2's MLP output normalised before the addition
// The MLP's rows a block: as many as keep a block's (R, I) activations near 64 MB, so a long input's
// are made a block at a time (each B packed once a block: 2,048 rows of Llama-3.2-1B's I = 8,192).
constexpr std::int64_t kMlpBlockFloats = std::int64_t{1} << 24;

// mlp(x) for rows x (1, R, C), the activation in place.
Tensor mlp_rows(const Architecture& a, const LayerWeights& w, Backend& be, const Tensor& n) {
  Tensor up = linear(be, n, w.W_up, &w.b_up);  // (1, R, I)
  if (a.encoder() && a.gated_mlp) {  // T5 v1.1: act(wi_0 x) · wi_1 x
    Tensor gate = linear(be, n, *w.W_gate, nullptr);
    activate(a.act, gate);
    for (std::int64_t i = 0; i < gate.size(); ++i) gate.mutable_data()[i] *= up.data()[i];
    up = std::move(gate);
  } else if (a.encoder()) {
    activate(a.act, up);
  } else if (a.family == Family::Gpt2) {
    gelu_new(up);
  } else {
    Tensor gate = linear(be, n, *w.W_gate, nullptr);
    gate_times(gate, up, a.gelu_mlp);
    up = std::move(gate);
  }
  return linear(be, up, w.W_down, &w.b_down);
}

}  // namespace

Tensor rows_of(const Tensor& t, std::int64_t r0, std::int64_t r1) {
  const std::int64_t C = t.dim(-1);
  Tensor out = Tensor::uninitialized({1, r1 - r0, C});
  std::copy_n(t.data() + r0 * C, (r1 - r0) * C, out.mutable_data());
  return out;
}

std::int64_t mlp_block_rows(std::int64_t I) { return std::max<std::int64_t>(1, kMlpBlockFloats / std::max<std::int64_t>(1, I)); }

void add_mlp(const Architecture& a, const LayerWeights& w, Backend& be, Tensor& h, std::int64_t block_rows) {
  const bool post = a.block == Architecture::Block::PostNorm || a.block == Architecture::Block::PostLayerNorm;
  const std::int64_t T = h.size() / h.dim(-1), C = h.dim(-1);
  const std::int64_t rows = block_rows > 0 ? block_rows : mlp_block_rows(w.W_up.dim(-1));
  for (std::int64_t r0 = 0; r0 < T; r0 += rows) {
    const std::int64_t r1 = std::min(T, r0 + rows);
    const Tensor x = T <= rows ? h : rows_of(h, r0, r1);
    const Tensor n = post ? x : normalise(x, w.norm2_w, w.norm2_b, a.eps);
    Tensor down = mlp_rows(a, w, be, n);
    if (w.mlp_out_norm) down = normalise(down, *w.mlp_out_norm, Tensor{}, a.eps);
    Scalar* out = h.mutable_data() + r0 * C;
    for (std::int64_t i = 0; i < (r1 - r0) * C; ++i) out[i] += down.data()[i];
  }
  if (a.block == Architecture::Block::PostLayerNorm) h = normalise(h, w.mlp_ln_w, w.mlp_ln_b, a.eps);  // BERT: LayerNorm(h + mlp(h))
}

namespace {

// The attention block's input: the first norm's output, or (OLMo 2) the stream itself
Tensor attention_input(const Architecture& a, const LayerWeights& w, const Tensor& h) {
  const bool post = a.block == Architecture::Block::PostNorm || a.block == Architecture::Block::PostLayerNorm;
  return post ? h : normalise(h, w.norm1_w, w.norm1_b, a.eps);
}

}  // namespace

void run_layer_with(const Checkpoint& ckpt, std::int64_t i, Backend& be, Tensor& h, const Labels& tokens, const Attention& attention, bool mlp) {
  const auto& a = ckpt.arch();
  LayerWeights w = ckpt.layer(i);
  Tensor attn_out = attention(attention_spec(a, i, w, attention_input(a, w, h), tokens));
  if (w.attn_out_norm) attn_out = normalise(attn_out, *w.attn_out_norm, Tensor{}, a.eps);
  add_into(h, attn_out.data());
  if (a.block == Architecture::Block::PostLayerNorm) h = normalise(h, w.attn_ln_w, w.attn_ln_b, a.eps);  // BERT: LayerNorm(h + attention(h))
  if (mlp) add_mlp(a, w, be, h);
}

namespace {

// One layer on the residual stream h (1, T, C), the whole sequence: attention, then the MLP (unless
// the stream ends here); weights (H, T, T) appended when asked for.
void run_layer(const Checkpoint& ckpt, std::int64_t i, Backend& be, Tensor& h, const Labels& tokens, std::vector<float>* weights) {
  run_layer_with(ckpt, i, be, h, tokens, [&](const Spec& s) { return attend(s, be, weights); }, i + 1 < ckpt.arch().layers);
}

void check_layer(const Architecture& a, std::int64_t layer) {
  if (layer < 0 || layer >= a.layers) {
    throw InputError(fmt::format("checkpoint.layer: expected 0 .. {} ({} has {} layers), got {}", a.layers - 1, a.name(), a.layers, layer));
  }
}

}  // namespace

Spec checkpoint_layer_spec(const Checkpoint& ckpt, const std::vector<std::int64_t>& ids, const std::vector<std::int64_t>& types, const Labels& tokens,
                           std::int64_t layer) {
  const auto& a = ckpt.arch();
  check_layer(a, layer);
  auto be = make_backend("cpu");
  Tensor h = ckpt.embed(ids, types);
  for (std::int64_t i = 0; i < layer; ++i) run_layer(ckpt, i, *be, h, tokens, nullptr);
  LayerWeights w = ckpt.layer(layer);
  return attention_spec(a, layer, w, attention_input(a, w, h), tokens);
}

namespace {

// Every layer's attention weights of an encoder-decoder, for attn heads: [L, H, S, S], [Ld, H, T, T], [Ld, H, T, S].
struct Seq2SeqWeights {
  std::vector<float> encoder, decoder, cross;
};

// The encoder over the source, then the decoder's layers: the Spec of decoder layer `layer`'s self- or
// cross-attention (layer ≥ 0), or (layer < 0, weights given) every layer run and its weights kept.
Spec decoder_pass(const Checkpoint& ckpt, const std::vector<std::int64_t>& source_ids, const Labels& source_tokens,
                  const std::vector<std::int64_t>& ids, const Labels& tokens, std::int64_t layer, bool cross, Seq2SeqWeights* weights) {
  const auto& a = ckpt.arch();
  auto be = make_backend("cpu");
  // the encoder's output over the source: every layer, attention and MLP; T5's final RMS norm after
  // them (BART's and Marian's encoders have none)
  Tensor enc = ckpt.embed(source_ids);
  for (std::int64_t i = 0; i < a.layers; ++i) {
    run_layer_with(ckpt, i, *be, enc, source_tokens, [&](const Spec& s) { return attend(s, *be, weights ? &weights->encoder : nullptr); }, true);
  }
  if (const Tensor f = ckpt.encoder_final_norm(); !f.shape().empty()) enc = normalise(enc, f, Tensor{}, a.eps);
  const auto S = enc.dim(1);
  // a decoder layer's two attentions as the pipeline's inputs: causal self-attention; cross-attention
  // from the decoder's stream to the encoder's output
  const auto self_spec = [&](LayerWeights& w, const Tensor& h) {
    Spec s = attention_spec(a, 0, w, h, tokens);
    s.mode = Mode::Causal;
    s.causal = true;
    return s;
  };
  const auto cross_spec = [&](LayerWeights& w, const Tensor& h) {
    Spec s = attention_spec(a, 0, w, h, tokens);
    s.mode = Mode::Cross;
    s.causal = false;
    s.S = S;
    s.Cs = a.C;
    s.source = enc;
    s.source_tokens = source_tokens;
    return s;
  };
  // post-LN (BART, Marian): h = LN(h + self(h)); h = LN(h + cross(h, enc)); h = LN(h + mlp(h))
  // pre-norm (T5):          h += self(norm(h));  h += cross(norm(h), enc);  h += mlp(norm(h))
  const bool pre = a.block == Architecture::Block::PreNorm;
  const auto block = [&](const LayerWeights& w, Tensor& h, const Tensor& o) {
    add_into(h, o.data());
    if (!pre) h = normalise(h, w.attn_ln_w, w.attn_ln_b, a.eps);
  };
  Tensor h = ckpt.embed_decoder(ids);
  for (std::int64_t i = 0; i < a.decoder_layers; ++i) {
    LayerWeights ws = ckpt.decoder_self(i);
    Tensor x = pre ? normalise(h, ws.norm1_w, ws.norm1_b, a.eps) : h;
    if (i == layer && !cross) return self_spec(ws, x);
    block(ws, h, attend(self_spec(ws, x), *be, weights ? &weights->decoder : nullptr));
    LayerWeights wc = ckpt.decoder_cross(i);
    x = pre ? normalise(h, wc.norm1_w, wc.norm1_b, a.eps) : h;
    if (i == layer) return cross_spec(wc, x);
    block(wc, h, attend(cross_spec(wc, x), *be, weights ? &weights->cross : nullptr));
    if (i + 1 < a.decoder_layers) add_mlp(a, wc, *be, h);
  }
  if (layer >= 0) throw InternalError("decoder_pass: layer past the decoder's last");
  return Spec{};
}

}  // namespace

Spec checkpoint_decoder_spec(const Checkpoint& ckpt, const std::vector<std::int64_t>& source_ids, const Labels& source_tokens,
                             const std::vector<std::int64_t>& ids, const Labels& tokens, std::int64_t layer, bool cross) {
  return decoder_pass(ckpt, source_ids, source_tokens, ids, tokens, layer, cross, nullptr);
}

// The source's special tokens where they stand: [CLS] … [SEP], <s> … </s>, T5's and Marian's … </s>.
EncoderSpecials specials_of(const Checkpoint& ckpt, const std::vector<std::int64_t>& ids) {
  EncoderSpecials sp;
  if (!ckpt.arch().encoder() || !ckpt.tokenizer()) return sp;
  const auto specials = ckpt.specials();
  if (specials.last.empty()) return sp;
  if (!specials.first.empty()) sp.start_name = ckpt.tokenizer()->piece(specials.first[0]);
  sp.end_name = ckpt.tokenizer()->piece(specials.last[0]);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i == 0 && !specials.first.empty() && ids[0] == specials.first[0]) sp.start = 0;
    if (ids[i] == specials.last[0]) sp.ends.push_back(static_cast<std::int64_t>(i));
  }
  return sp;
}

std::vector<HeadsView> checkpoint_seq2seq_heads(const Checkpoint& ckpt, const std::vector<std::int64_t>& source_ids,
                                                const std::vector<std::string>& source_tokens, const std::vector<std::int64_t>& ids,
                                                const std::vector<std::string>& tokens) {
  const auto& a = ckpt.arch();
  Seq2SeqWeights w;
  decoder_pass(ckpt, source_ids, {source_tokens}, ids, {tokens}, -1, false, &w);
  const auto S = static_cast<std::int64_t>(source_ids.size()), T = static_cast<std::int64_t>(ids.size());
  const EncoderSpecials sp = specials_of(ckpt, source_ids);
  std::vector<HeadsView> views(3);
  for (auto& v : views) v.model = ckpt.describe(), v.heads = a.H;
  HeadsView& enc = views[0];
  enc.part = "encoder", enc.tokens = source_tokens, enc.layers = a.layers, enc.T = S, enc.bidirectional = true, enc.weights = std::move(w.encoder);
  HeadsView& dec = views[1];
  dec.part = "decoder", dec.tokens = tokens, dec.layers = a.decoder_layers, dec.T = T, dec.weights = std::move(w.decoder);
  dec.windows.assign(static_cast<std::size_t>(a.decoder_layers), 0);
  HeadsView& x = views[2];
  x.part = "cross", x.tokens = tokens, x.key_tokens = source_tokens, x.cross = true, x.S = S, x.layers = a.decoder_layers, x.T = T;
  x.weights = std::move(w.cross);
  for (std::int64_t l = 0; l < a.layers; ++l)
    for (std::int64_t h = 0; h < a.H; ++h) enc.summaries.push_back(summarise_encoder_head(enc.weights.data() + (l * a.H + h) * S * S, S, sp));
  for (std::int64_t l = 0; l < a.decoder_layers; ++l)
    for (std::int64_t h = 0; h < a.H; ++h) {
      dec.summaries.push_back(summarise_head(dec.weights.data() + (l * a.H + h) * T * T, T, 0, &ids));
      x.summaries.push_back(summarise_cross_head(x.weights.data() + (l * a.H + h) * T * S, T, S, sp));
    }
  return views;
}

}  // namespace attn::model
