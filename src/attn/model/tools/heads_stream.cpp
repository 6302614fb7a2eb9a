// attn heads, streamed (heads_stream.hpp): each layer's projections are the pipeline on its Spec
// (project_only: q, k and v, normalised and rotated), and its attention is the pipeline again a block
// of query rows at a time, on the layer's own rotated queries, keys and values: the rows [i0, i1)
// against the keys [0, S′) as a Spec of their own (S′ = i1 for a causal layer, its diagonal
// bottom-right, so the mask is the layer's), its weights, context and output. The products are fma
// chains in order whatever the rows (numerics/cpu/gemm.hpp; a masked key's zero weight adds nothing),
// so a block's weights and output rows are the whole layer's, bit for bit (tests/unit/test_heads_stream.cpp).
// It does not draw or label anything: heads.cpp summarises, render/ draws.
#include "attn/model/tools/heads_stream.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <limits>

#include "attn/core/error.hpp"
#include "attn/model/tools/residual.hpp"
#include "attn/pipeline/pipeline.hpp"

namespace attn::model {

namespace {

// The queries (or keys) as the scores read them: the last of q, q.norm, q.heads, q.rope the layer's
// trace emitted (each step is the one before it, normalised, split or rotated), laid out flat as
// (T, G · hd) for G heads, as Entry::QKV takes them.
Tensor final_flat(const Trace& trace, const std::string& name, std::int64_t G, std::int64_t rows) {
  const Step* last = nullptr;
  bool heads_first = false;
  for (const auto& st : trace.steps) {
    if (st.id == name || st.id == name + ".norm" || st.id == name + ".heads" || st.id == name + ".rope") {
      last = &st;
      // (G, T, hd) once split; OLMo 2's whole-width norm comes before the split, flat
      heads_first = st.id == name + ".heads" || st.id == name + ".rope" || (st.id == name + ".norm" && heads_first);
    }
  }
  if (last == nullptr) throw InternalError(fmt::format("attn heads: the layer's trace has no {}", name));
  const Tensor& t = last->value;
  const std::int64_t width = t.size() / rows, hd = width / G;
  if (!heads_first || G == 1) return t.reshaped({1, rows, width});
  Tensor flat = Tensor::uninitialized({1, rows, width});
  const Scalar* src = t.data();
  Scalar* dst = flat.mutable_data();
  for (std::int64_t g = 0; g < G; ++g)
    for (std::int64_t i = 0; i < rows; ++i) std::copy_n(src + (g * rows + i) * hd, hd, dst + i * width + g * hd);
  return flat;
}

// The Spec of query rows [i0, i1) against keys [0, S′) of layer spec s, from its rotated q and k and
// its v, with its output projection: the rows' weights, context and output.
Spec block_spec(const Spec& s, const Tensor& q, const Tensor& k, const Tensor& v, std::int64_t i0, std::int64_t i1) {
  Spec b;
  b.mode = s.mode;
  b.causal = s.causal;
  b.causal_align = CausalAlign::BottomRight;  // query i0 + r sees keys ≤ i0 + r
  b.entry = Entry::QKV;
  b.B = 1;
  b.T = i1 - i0;
  b.S = s.causal ? i1 : s.S;
  b.C = b.Cs = s.C;
  b.H = s.H, b.Hkv = s.Hkv, b.dk = s.dk, b.dv = s.dv, b.Co = s.Co;
  b.window = s.window;
  b.scale_kind = s.scale_kind, b.scale_number = s.scale_number, b.scale_source = s.scale_source;
  b.softcap = s.softcap;
  b.q = rows_of(q, i0, i1);
  b.k = rows_of(k, 0, b.S);
  b.v = rows_of(v, 0, b.S);
  b.w.W_o = s.w.W_o, b.w.b_o = s.w.b_o;  // the rows' output: the layer's rows, each row's products its own
  if (s.relative_bias) {
    // T5: the rows' buckets and biases, (T′, S) and (H, T′, S)
    Spec::RelativeBias r = *s.relative_bias;
    r.buckets = rows_of(s.relative_bias->buckets.reshaped({1, s.T, s.S}), i0, i1).reshaped({b.T, b.S});
    Tensor bias = Tensor::uninitialized({s.H, b.T, b.S});
    for (std::int64_t h = 0; h < s.H; ++h)
      std::copy_n(s.relative_bias->bias.data() + (h * s.T + i0) * s.S, b.T * b.S, bias.mutable_data() + h * b.T * b.S);
    r.bias = std::move(bias);
    b.relative_bias = std::move(r);
  }
  const auto& labels = s.tokens.front();
  b.tokens = {std::vector<std::string>(labels.begin() + i0, labels.begin() + i1)};
  b.source_tokens = {std::vector<std::string>(labels.begin(), labels.begin() + b.S)};
  return b;
}

// Layer `layer`'s attention (its Spec s: its projections by the pipeline, then) in blocks of `rows` query
// rows: each block's weights handed to `each` (and hooks.rows) as (H, rows, S), a causal block's keys
// past S′ zero; returns the attention block's output (1, T, C), its rows the blocks', edited by
// hooks.output with the blocks' context vectors gathered (1, H, T, hv).
Tensor attend_in_blocks(const Spec& s, Backend& be, std::int64_t layer, std::int64_t rows, const WeightRowsHook& each, const LayerHooks& hooks) {
  Tensor q, k, v;
  {
    PipelineOptions projections;
    projections.project_only = true;  // q, k and v; the attention itself is made in blocks
    projections.shown = {"q", "k", "v"};
    const Trace trace = run_pipeline(s, be, projections);  // (dropped before the blocks: its steps are [T, C] each)
    q = final_flat(trace, "q", s.H, s.T), k = final_flat(trace, "k", s.Hkv, s.S), v = final_flat(trace, "v", s.Hkv, s.S);
  }
  PipelineOptions shown;
  shown.shown = {"weights", "output"};
  const std::int64_t hv = s.dv / s.H;
  Tensor context;
  if (hooks.output) {
    shown.shown.push_back("context");
    context = Tensor::uninitialized({1, s.H, s.T, hv});
  }
  Tensor output = Tensor::uninitialized({1, s.T, s.C});
  for (std::int64_t i0 = 0; i0 < s.T; i0 += rows) {
    const std::int64_t i1 = std::min(s.T, i0 + rows);
    const Spec b = block_spec(s, q, k, v, i0, i1);
    const Trace t = run_pipeline(b, be, shown);
    const Step* out = t.find("output");
    if (!out) throw InternalError("attn heads: a block's trace has no output step");
    std::copy_n(out->value.data(), (i1 - i0) * s.C, output.mutable_data() + i0 * s.C);
    if (hooks.output) {
      const Step* c = t.find("context");  // (1, H, i1 − i0, hv)
      if (!c) throw InternalError("attn heads: a block's trace has no context step");
      for (std::int64_t h = 0; h < s.H; ++h)
        std::copy_n(c->value.data() + h * (i1 - i0) * hv, (i1 - i0) * hv, context.mutable_data() + (h * s.T + i0) * hv);
    }
    const WeightRows made{layer, i0, i1, s.H, s.S, b.S, t.find("weights")->value.data()};  // (H, i1 − i0, S′)
    each(made);
    if (hooks.rows) hooks.rows(made);
  }
  if (hooks.output) hooks.output(layer, s, context, output);  // [#43 ablation]
  return output;
}

}  // namespace

void stream_layer_weights(const Checkpoint& ckpt, const std::vector<std::int64_t>& ids, const std::vector<std::int64_t>& types,
                          const std::vector<std::string>& tokens, const WeightRowsHook& each, std::int64_t block_rows, const LayerHooks& hooks) {
  const auto& a = ckpt.arch();
  auto be = make_backend("cpu");
  const auto T = static_cast<std::int64_t>(ids.size());
  const std::int64_t rows = block_rows > 0 ? block_rows
                                           : std::max<std::int64_t>(1, static_cast<std::int64_t>(kBlockBytes / (4.0 * static_cast<double>(a.H * std::max<std::int64_t>(T, 1)))));
  Tensor h = ckpt.embed(ids, types);
  for (std::int64_t l = 0; l < a.layers; ++l) {
    run_layer_with(ckpt, l, *be, h, {tokens}, [&](const Spec& s) { return attend_in_blocks(s, *be, l, rows, each, hooks); },
                   l + 1 < a.layers || hooks.stream);  // [#43] the last MLP too when the stream is asked for
  }
  if (hooks.stream) hooks.stream(ckpt, ids, h);
}

namespace {

// The summaries of one layer's heads, a block of rows at a time: a decoder's or an encoder's.
struct LayerSummaries {
  std::vector<CausalSummariser> causal;
  std::vector<EncoderSummariser> encoder;
  void add(const WeightRows& b) {
    // each head's summariser its own: the heads in parallel, the same numbers for any thread count
#pragma omp parallel for schedule(static)
    for (std::int64_t h = 0; h < b.H; ++h)
      for (std::int64_t i = b.i0; i < b.i1; ++i) {
        if (encoder.empty()) causal[static_cast<std::size_t>(h)].add_row(i, b.row(h, i));
        else encoder[static_cast<std::size_t>(h)].add_row(i, b.row(h, i));
      }
  }
  void finish(std::vector<HeadSummary>& out) const {
    for (const auto& c : causal) out.push_back(c.finish());
    for (const auto& e : encoder) out.push_back(e.finish());
  }
};

// Rows of a block into the view: every weight kept, or each head's pooled grid (the largest weight of
// each pool × pool block of visible positions).
void keep_rows(HeadsView& v, const WeightRows& b) {
  const std::int64_t S = v.keys();
#pragma omp parallel for schedule(static)  // each head's cells its own
  for (std::int64_t h = 0; h < b.H; ++h)
    for (std::int64_t i = b.i0; i < b.i1; ++i) {
      const float* row = b.row(h, i);
      if (v.kept()) {  // (the keys past cols stay zero)
        std::copy_n(row, b.cols, v.weights.data() + ((b.layer * v.heads + h) * v.T + i) * S);
        continue;
      }
      float* cells = v.grid.data() + ((b.layer * v.heads + h) * v.grid_rows() + i / v.pool) * v.grid_cols();
      for (std::int64_t j = 0; j < b.cols; ++j) {
        if (!v.visible(b.layer, i, j)) continue;
        float& c = cells[j / v.pool];
        if (std::isnan(c) || row[j] > c) c = row[j];
      }
    }
}

}  // namespace

HeadsView checkpoint_heads(const Checkpoint& ckpt, const std::vector<std::int64_t>& ids, const std::vector<std::int64_t>& types,
                           const std::vector<std::string>& tokens, const HeadsKeep& keep, const LayerHooks& hooks) {
  const auto& a = ckpt.arch();
  HeadsView v;
  v.model = ckpt.describe();
  v.tokens = tokens;
  v.layers = a.layers, v.heads = a.H, v.T = static_cast<std::int64_t>(ids.size());
  v.bidirectional = a.encoder();
  for (std::int64_t l = 0; l < a.layers; ++l) v.windows.push_back(a.window_of(l) > 0 && a.window_of(l) < v.T ? a.window_of(l) : 0);  // as attention_spec applies them
  const std::size_t heads = static_cast<std::size_t>(v.layers * v.heads);
  if (keep.weights || v.T <= keep.keep_up_to) {
    v.weights.assign(heads * static_cast<std::size_t>(v.T * v.T), 0.0f);
  } else {
    v.pool = (v.T + keep.grid_side - 1) / keep.grid_side;
    v.grid.assign(heads * static_cast<std::size_t>(v.grid_rows() * v.grid_cols()), std::numeric_limits<float>::quiet_NaN());
    v.weights_note = fmt::format("the weights are written up to T = {} or with --weights; T = {}: each head's map pooled to {} × {} cells ({} × {} tokens each)",
                                 keep.keep_up_to, v.T, v.grid_rows(), v.grid_cols(), v.pool, v.pool);
  }
  if (keep.head_layer >= 0) v.head_weights.assign(static_cast<std::size_t>(v.T * v.T), 0.0f);
  const EncoderSpecials sp = specials_of(ckpt, ids);  // the encoder's special tokens where they stand: [CLS] … [SEP] (<s> … </s>)
  LayerSummaries layer;
  stream_layer_weights(ckpt, ids, types, tokens, [&](const WeightRows& b) {
    if (b.i0 == 0) {  // a layer's first block: its heads' summaries start
      layer = LayerSummaries{};
      for (std::int64_t h = 0; h < v.heads; ++h) {
        if (a.encoder()) layer.encoder.emplace_back(v.T, sp);
        else layer.causal.emplace_back(v.T, v.window(b.layer), &ids);
      }
    }
    layer.add(b);
    keep_rows(v, b);
    if (b.layer == keep.head_layer)  // --head: that head's rows, whole
      for (std::int64_t i = b.i0; i < b.i1; ++i) std::copy_n(b.row(keep.head, i), b.cols, v.head_weights.data() + i * v.T);
    if (b.i1 == v.T) layer.finish(v.summaries);
  }, keep.block_rows, hooks);
  return v;
}

std::pair<std::int64_t, std::int64_t> parse_head_name(const std::string& text, std::int64_t layers, std::int64_t heads) {
  std::int64_t l = -1, h = -1;
  char L = 0, H = 0, rest = 0;
  const bool read = std::sscanf(text.c_str(), "%c%ld%c%ld%c", &L, &l, &H, &h, &rest) == 4 && (L == 'L' || L == 'l') && (H == 'H' || H == 'h');
  if (!read || l < 0 || l >= layers || h < 0 || h >= heads) {
    throw InputError(fmt::format("--head {}: expected a layer and a head as L0H0 … L{}H{} (this model has {} layers × {} heads)", text,
                                 layers - 1, heads - 1, layers, heads));
  }
  return {l, h};
}

HeadsView one_head_view(const HeadsView& all, const HeadsKeep& keep) {
  HeadsView v;
  v.model = all.model;
  v.tokens = all.tokens, v.pieces = all.pieces, v.bidirectional = all.bidirectional;
  v.layers = 1, v.heads = 1, v.T = all.T;
  v.first_layer = keep.head_layer, v.first_head = keep.head;
  v.windows = {all.window(keep.head_layer)};
  v.weights = all.head_weights;
  v.summaries = {all.summary(keep.head_layer, keep.head)};
  v.notes = all.notes;
  v.notes.push_back(fmt::format("--head L{}H{}: layer {}'s head {} alone, every weight of its {} × {} map", keep.head_layer, keep.head, keep.head_layer,
                                keep.head, v.T, v.T));
  return v;
}

}  // namespace attn::model
