// The step order of scaled dot-product attention, from whichever entry point the spec gives
// (embeddings, q/k/v, or scores) to the output. Every tensor is computed by the backend; this file
// only decides the order, names the steps and checks what comes back.
#include "attn/pipeline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "attn/error.hpp"

namespace attn {
namespace {

using Dims = std::vector<std::string>;

// 0.125, 0.5774: at most four decimals, no trailing zeros.
std::string short_number(double v) {
  std::string s = fmt::format("{:.4f}", v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

// -1e9, 0.5, 1e-05 -> "-1e9", "0.5", "1e-5": how a person writes a fill value.
std::string compact_number(double v) {
  std::string s = fmt::format("{:g}", v);
  for (const auto& [from, to] : {std::pair{"e+0", "e"}, std::pair{"e+", "e"}, std::pair{"e-0", "e-"}}) {
    if (auto p = s.find(from); p != std::string::npos) s.replace(p, std::string_view(from).size(), to);
  }
  return s;
}

std::string bias_term(const std::optional<Tensor>& b, std::string_view name) {
  return b ? fmt::format(" + {}", name) : "";
}

class Run {
 public:
  Run(const Spec& spec, Backend& backend, Mistake mistake) : s_(spec), be_(backend), m_(mistake) {}

  Trace run() {
    configure();
    Heads q, k, v;
    bool have_v = false;
    BackendTensor scores;
    if (s_.entry == Entry::Scores) {
      scores = emit("scores", "Attention scores (given)", "scores (given)", {"B", "H", "T", "S"}, be_.upload(s_.scores),
                    "taken as given: no projections, no d_k");
      if (!s_.v.shape().empty()) {  // shapes, not values: a dry run has no values
        v.flat = emit("v", "Values (given)", "v (given)", {"B", "S", "C"}, be_.upload(s_.v));
        v = split_heads("v", "Values", v.flat, s_.S);
        have_v = true;
      }
    } else {
      BackendTensor qf, kf, vf;
      if (s_.entry == Entry::QKV) {
        qf = emit("q", "Queries (given)", "q (given)", {"B", "T", "C"}, be_.upload(s_.q));
        kf = emit("k", "Keys (given)", "k (given)", {"B", "S", "C"}, be_.upload(s_.k));
        if (!s_.v.shape().empty()) vf = emit("v", "Values (given)", "v (given)", {"B", "S", "C"}, be_.upload(s_.v));
      } else {
        project(qf, kf, vf);
      }
      q = split_heads("q", "Queries", qf, s_.T);
      k = split_heads("k", "Keys", kf, s_.S);
      have_v = s_.entry == Entry::Embeddings || !s_.v.shape().empty();
      if (have_v) v = split_heads("v", "Values", vf, s_.S);
      // kᵀ is materialised only so the student can see the transpose the formula talks about.
      const auto kt = be_.transpose_last2(k.heads.view({s_.B * s_.H, s_.S, hs()}));
      const auto kt_shown = emit("k.T", "Keys transposed", "kᵀ = k.transpose(-2, -1)", {"B", "H", "hs", "S"},
                                 kt.view({s_.B, s_.H, hs(), s_.S}),
                                 "each column is one key: q · kᵀ then takes every query against every key");
      BackendTensor raw;
      if (m_ == Mistake::QKSwapped) {
        if (s_.T != s_.S) throw InputError("mistake qk-swapped: needs T = S (k · qᵀ is [S, T])");
        const auto qt = be_.transpose_last2(q.heads.view({s_.B * s_.H, s_.T, hs()}));
        raw = be_.matmul(k.heads.view({s_.B * s_.H, s_.S, hs()}), qt);
      } else {
        raw = be_.matmul(q.heads.view({s_.B * s_.H, s_.T, hs()}), kt_shown.view({s_.B * s_.H, hs(), s_.S}));
      }
      scores = emit("scores", "Attention scores", "scores = q · kᵀ", {"B", "H", "T", "S"}, raw.view({s_.B, s_.H, s_.T, s_.S}),
                    "scores[i, j] = q_i · k_j: how well query i matches key j");
    }

    BackendTensor scaled = scores;
    if (s_.scale_kind != ScaleKind::None) {
      const auto formula = s_.scale_kind == ScaleKind::SqrtDk ? std::string("scaled = scores / √d_k")
                                                              : fmt::format("scaled = scores × {}", tr_.config.scale);
      const auto note = s_.scale_kind == ScaleKind::SqrtDk
                            ? fmt::format("d_k = {} = {}: factor {}", s_.H > 1 ? "hs" : "C", hs(), tr_.config.scale)
                            : fmt::format("factor {}", tr_.config.scale);
      Scalar factor = tr_.config.scale_factor;
      if (m_ == Mistake::ScaleMissing) factor = 1;
      if (m_ == Mistake::ScaleSqrtC) factor = static_cast<Scalar>(1.0 / std::sqrt(static_cast<double>(s_.C)));
      scaled = emit("scaled", "Scaled scores", formula, {"B", "H", "T", "S"}, be_.scale(scores, factor), note);
    }

    BackendTensor logits = scaled;
    const std::string scaled_name = s_.scale_kind != ScaleKind::None ? "scaled" : "scores";
    std::string softmax_input = scaled_name;
    const bool masking = s_.masking();
    const bool blocking = s_.causal || !s_.lengths.empty() || !s_.user_keep.shape().empty();  // not an additive mask alone
    BackendTensor keep;
    if (masking) {
      BackendTensor base = scaled;
      std::string base_name = scaled_name;
      if (blocking) keep = mask_steps();
      if (!s_.user_add.shape().empty()) {
        // the additive mask, as given: one [T, S] for every batch row, or one per batch row
        const bool shared = s_.user_add.dim(0) == 1;
        const auto add = emit("mask.add", "Additive mask (given)", "attn_mask.add (given)", shared ? Dims{"T", "S"} : Dims{"B", "T", "S"},
                              be_.upload(shared ? s_.user_add.reshaped({s_.T, s_.S}) : s_.user_add),
                              "added to the scores before softmax: 0 keeps a score, −inf blocks it, other values bias it");
        base = be_.add_mask(scaled, add.view({shared ? 1 : s_.B, s_.T, s_.S}));
        base_name = scaled_name + " + mask.add";
      }
      if (m_ != Mistake::MaskAfterSoftmax) {
        softmax_input = "masked";
        Scalar fill = s_.mask_fill ? *s_.mask_fill : -std::numeric_limits<Scalar>::infinity();
        if (m_ == Mistake::Fill1e9) fill = -1e9f;
        std::string note = "−inf, not a large negative number: exp(−inf) = 0 exactly, so blocked keys get exactly 0 weight";
        if (s_.mask_fill) {
          note = fmt::format("blocked scores are {} (mask_fill), not −inf: exp({} − row max) underflows to 0 wherever the row keeps a "
                             "key, the same weights; a row with every key blocked gets uniform weights instead of none",
                             compact_number(*s_.mask_fill), compact_number(*s_.mask_fill));
        }
        const auto filled = blocking ? be_.masked_fill(base, keep, fill) : base;
        logits = emit("masked", "Masked scores",
                      blocking ? fmt::format("masked = {} where mask = 1, {} where mask = 0", base_name, s_.mask_fill ? compact_number(fill) : "−inf")
                               : fmt::format("masked = {}", base_name),
                      {"B", "H", "T", "S"}, filled, blocking ? note : "");
        const auto empty = empty_rows();
        empty_rows_ = static_cast<std::int64_t>(empty.size());
        if (m_ == Mistake::None && s_.masked_row == MaskedRow::Error && !empty.empty()) refuse_empty_row(empty.front());
      }
    }

    BackendTensor weights;
    if (m_ == Mistake::SoftmaxWrongAxis) {
      // softmax over the queries: transpose, softmax each row, transpose back
      const auto t = be_.transpose_last2(logits.view({s_.B * s_.H, s_.T, s_.S}));
      const auto sm = be_.softmax_rows(t.view({s_.B * s_.H * s_.S, s_.T})).view({s_.B * s_.H, s_.S, s_.T});
      weights = be_.transpose_last2(sm).view({s_.B, s_.H, s_.T, s_.S});
    } else {
      const auto empty = s_.masked_row == MaskedRow::Zeros     ? Backend::EmptyRow::Zeros
                         : s_.masked_row == MaskedRow::Uniform ? Backend::EmptyRow::Uniform
                                                               : Backend::EmptyRow::Nan;
      weights = be_.softmax_rows(logits.view({s_.B * s_.H * s_.T, s_.S}), empty).view({s_.B, s_.H, s_.T, s_.S});
    }
    // NaN weights are the stated policy from here on, not an overflow.
    if (empty_rows_ > 0 && s_.masked_row == MaskedRow::Nan) allow_nan_ = true;
    if (masking && m_ == Mistake::MaskAfterSoftmax) weights = be_.masked_fill(weights, keep, 0);
    const auto sums = be_.row_sums(weights.view({s_.B * s_.H * s_.T, s_.S})).view({s_.B, s_.H, s_.T});
    std::string weights_note = "row i: how query i spreads its attention over the keys; each row sums to 1 (row max subtracted before exp)";
    if (empty_rows_ > 0) {
      static constexpr const char* kPolicy[] = {"", "0 (masked_row \"zeros\", as PyTorch's scaled_dot_product_attention)",
                                                "NaN (masked_row \"nan\", as nn.MultiheadAttention with need_weights)",
                                                "uniform, 1/S (masked_row \"uniform\", what a −1e9 fill gives)"};
      weights_note += fmt::format("; {} row{} with every key masked: weights {}", empty_rows_, empty_rows_ == 1 ? "" : "s",
                                  kPolicy[static_cast<int>(s_.masked_row)]);
    }
    emit("weights", "Attention weights", fmt::format("weights = softmax({}, dim=-1)", softmax_input), {"B", "H", "T", "S"}, weights,
         weights_note);
    tr_.steps.back().row_sums = be_.download(sums).reshaped(display_shape({"B", "H", "T"}, sums.shape));

    if (!have_v) return std::move(tr_);
    const auto context =
        be_.matmul(weights.view({s_.B * s_.H, s_.T, s_.S}), v.heads.view({s_.B * s_.H, s_.S, hs()})).view({s_.B, s_.H, s_.T, hs()});
    emit("context", "Context vectors", "context = weights · v", {"B", "H", "T", "hs"}, context,
         "row i: the average of the value rows, weighted by row i of the weights");

    BackendTensor merged = context.view({s_.B, s_.T, s_.C});  // H = 1: context already is [B, T, C]
    std::string merged_name = "context";
    if (s_.H > 1) {
      BackendTensor m;
      if (m_ == Mistake::MergeNoTranspose) m = context.view({s_.B, s_.T, s_.C});
      else if (m_ == Mistake::HeadsInterleaved) m = interleave_back(be_.swap_axes_1_2(context));
      else m = be_.swap_axes_1_2(context).view({s_.B, s_.T, s_.C});
      merged = emit("merged", "Heads merged", "merged = context.transpose(1, 2).reshape(B, T, C)", {"B", "T", "C"}, m,
                    fmt::format("head h fills columns h·hs .. (h+1)·hs − 1 (hs = {})", hs()));
      merged_name = "merged";
    }
    if (s_.w.W_o) {
      BackendTensor out;
      if (m_ == Mistake::OutputMissing) out = merged;
      else if (m_ == Mistake::OutputTransposed) out = linear(merged, *s_.w.W_o, s_.w.b_o, /*transpose=*/true);
      else out = linear(merged, *s_.w.W_o, s_.w.b_o);
      emit("output", "Output projection",
           fmt::format("output = {} · {}{}", merged_name, weight_symbol("W_o"), bias_term(s_.w.b_o, "b_o")), {"B", "T", "C"}, out, "");
    }
    return std::move(tr_);
  }

 private:
  struct Heads {
    BackendTensor flat;   // (B, L, C)
    BackendTensor heads;  // (B, H, L, hs)
  };

  std::int64_t hs() const { return s_.C / s_.H; }

  void configure() {
    auto& c = tr_.config;
    c.title = s_.title;
    c.mode = std::string(mode_name(s_.mode));
    c.batched = s_.batched;
    c.B = s_.B, c.T = s_.T, c.S = s_.S, c.C = s_.C, c.H = s_.H, c.hs = s_.hs();
    c.layout = s_.layout == Layout::XW ? "x@W" : "torch";
    c.entry = s_.entry == Entry::Embeddings ? "embeddings" : s_.entry == Entry::QKV ? "q, k, v" : "scores";
    c.causal = s_.causal;
    c.lengths = s_.lengths;
    c.tokens = s_.tokens;
    c.source_tokens = s_.source_tokens;
    c.notes = s_.notes;
    switch (s_.scale_kind) {
      case ScaleKind::SqrtDk:
        c.scale_factor = static_cast<Scalar>(1.0 / std::sqrt(static_cast<double>(hs())));
        c.scale = fmt::format("1/√{} = {}", hs(), short_number(c.scale_factor));
        break;
      case ScaleKind::None:
        c.scale_factor = 1;
        c.scale = s_.entry == Entry::Scores && !s_.scale_given ? "none (given scores are taken as already scaled)" : "none";
        break;
      case ScaleKind::Number:
        c.scale_factor = s_.scale_number;
        c.scale = fmt::format("{} (given)", s_.scale_number);
        break;
    }
  }

  // The shown dims: no B without a batch dimension in the input, no H with one head,
  // S written T when keys are the queries' own tokens, hs written C with one head.
  Dims display_dims(const Dims& full) const {
    Dims out;
    for (const auto& d : full) {
      if (d == "B" && !s_.batched) continue;
      if (d == "H" && s_.H == 1) continue;
      if (d == "S" && s_.keys_are_queries()) out.push_back("T");
      else if (d == "hs" && s_.H == 1) out.push_back("C");
      else out.push_back(d);
    }
    return out;
  }

  Shape display_shape(const Dims& full, const Shape& shape) const {
    Shape out;
    for (std::size_t i = 0; i < full.size(); ++i) {
      if (full[i] == "B" && !s_.batched) continue;
      if (full[i] == "H" && s_.H == 1) continue;
      out.push_back(shape[i]);
    }
    return out;
  }

  BackendTensor emit(const std::string& id, std::string title, std::string formula, const Dims& full, BackendTensor t,
                     std::string note = "", ValueKind kind = ValueKind::Real) {
    if (full.size() != t.shape.size()) {
      throw InternalError(fmt::format("step {}: dims {} for shape {}", id, full.size(), shape_string(t.shape)));
    }
    // The step's time: from the previous step's end until the backend has finished this one.
    be_.synchronize();
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - clock_).count();
    Step step;
    step.id = id;
    step.seconds = seconds;
    step.title = std::move(title);
    step.formula = std::move(formula);
    step.dims = display_dims(full);
    step.value = be_.download(t).reshaped(display_shape(full, t.shape));
    step.kind = kind;
    step.note = std::move(note);
    step.flops = be_.take_flops();
    if (m_ == Mistake::None && !allow_nan_) require_finite(step);
    tr_.steps.push_back(std::move(step));
    clock_ = std::chrono::steady_clock::now();  // the checks and the copy to the host are not the step's
    return t;
  }

  // A number that left float32's range is reported, never printed as if it were an answer.
  void require_finite(const Step& step) const {
    const bool minus_inf_allowed = step.id == "masked" || step.id == "mask.add";  // blocked positions
    const auto values = step.value.values();
    for (std::size_t i = 0; i < values.size(); ++i) {
      const Scalar v = values[i];
      if (std::isfinite(v) || (minus_inf_allowed && v == -std::numeric_limits<Scalar>::infinity())) continue;
      throw InputError(fmt::format("{}: the values leave float32's range ({} at flat index {}); scale the inputs down",
                                   step.id, std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"), i));
    }
  }

  std::string weight_symbol(std::string_view name) const {
    return s_.layout == Layout::Torch ? fmt::format("{}ᵀ", name) : std::string(name);
  }

  // x (B, L, C) · W (C, n) + b (n) -> (B, L, n); Wᵀ when asked, or under the w-transposed mistake
  // (square weights only: a student with the wrong layout of a [C, 3C] weight gets a shape error).
  BackendTensor linear(const BackendTensor& x, const Tensor& w, const std::optional<Tensor>& b, bool transpose = false) {
    auto wt = be_.upload(w);
    if ((transpose || m_ == Mistake::WTransposed) && w.dim(0) == w.dim(1)) {
      wt = be_.transpose_last2(wt.view({1, w.dim(0), w.dim(1)})).view({w.dim(1), w.dim(0)});
    }
    auto y = be_.matmul(x, wt);
    if (b) y = be_.add_bias(y, be_.upload(*b));
    return y;
  }

  void project(BackendTensor& qf, BackendTensor& kf, BackendTensor& vf) {
    const auto x = emit("x", "Input embeddings", "x", {"B", "T", "C"}, be_.upload(s_.x));
    const auto kv_in = s_.cross() ? emit("source", "Source embeddings", "source", {"B", "S", "C"}, be_.upload(s_.source)) : x;
    const std::string kv_name = s_.cross() ? "source" : "x";
    const auto& w = s_.w;
    if (w.W_qkv) {
      const auto qkv = emit("qkv", "Fused projection", fmt::format("qkv = x · {}{}", weight_symbol("W_qkv"), bias_term(w.b_qkv, "b_qkv")),
                            {"B", "T", "3C"}, linear(x, *w.W_qkv, w.b_qkv), "one matmul makes q, k and v side by side");
      const auto rows = qkv.view({s_.B * s_.T, 3 * s_.C});
      auto part = [&](std::int64_t i, const char* id, const char* title) {
        return emit(id, title, fmt::format("{} = qkv[..., {}:{}]", id, i * s_.C, (i + 1) * s_.C), {"B", "T", "C"},
                    be_.slice_columns(rows, i * s_.C, s_.C).view({s_.B, s_.T, s_.C}),
                    fmt::format("qkv.split(C, dim=-1), part {} of 3", i + 1));
      };
      qf = part(0, "q", "Queries");
      kf = part(1, "k", "Keys");
      vf = part(2, "v", "Values");
      return;
    }
    qf = emit("q", "Queries", fmt::format("q = x · {}{}", weight_symbol("W_q"), bias_term(w.b_q, "b_q")), {"B", "T", "C"},
              linear(x, *w.W_q, w.b_q), "");
    kf = emit("k", "Keys", fmt::format("k = {} · {}{}", kv_name, weight_symbol("W_k"), bias_term(w.b_k, "b_k")), {"B", "S", "C"},
              linear(kv_in, *w.W_k, w.b_k), "");
    vf = emit("v", "Values", fmt::format("v = {} · {}{}", kv_name, weight_symbol("W_v"), bias_term(w.b_v, "b_v")), {"B", "S", "C"},
              linear(kv_in, *w.W_v, w.b_v), "");
  }

  // (B, L, C) -> (B, H, L, hs), shown as the view and the transpose when H > 1.
  Heads split_heads(const std::string& id, const std::string& what, const BackendTensor& flat, std::int64_t len) {
    Heads h{flat, flat.view({s_.B, 1, len, s_.C})};
    if (s_.H == 1) return h;
    const std::string L = id == "q" ? "T" : "S";
    BackendTensor split = flat.view({s_.B, len, s_.H, hs()});
    if (m_ == Mistake::HeadsInterleaved) {
      // view(B, L, hs, H): feature d of head h is column d·H + h; bring it to [B, L, H, hs]
      split = be_.transpose_last2(flat.view({s_.B * len, hs(), s_.H})).view({s_.B, len, s_.H, hs()});
    }
    const auto view = emit(id + ".view", what + " split into heads", fmt::format("{}.view(B, {}, H, hs)", id, L),
                           {"B", L, "H", "hs"}, split,
                           fmt::format("a view, no copy: the C = {} features read as H = {} heads of hs = {}", s_.C, s_.H, hs()));
    tr_.steps.back().view = m_ != Mistake::HeadsInterleaved;  // the interleaved split is a real copy
    h.heads = emit(id + ".heads", what + ", heads first", fmt::format("{}.view(B, {}, H, hs).transpose(1, 2)", id, L),
                   {"B", "H", L, "hs"}, be_.swap_axes_1_2(view), "each head now holds its own [" + L + ", hs] matrix");
    return h;
  }

  // [B, T, H, hs] -> [B, T, C] with head h's features at columns h, h+H, ... (heads-interleaved)
  BackendTensor interleave_back(const BackendTensor& bthd) {
    return be_.transpose_last2(bthd.view({s_.B * s_.T, s_.H, hs()})).view({s_.B, s_.T, s_.C});
  }

  // The mask pattern (shown) and the keep tensor (B, T, S) the backend applies.
  BackendTensor mask_steps() {
    const bool flipped = m_ == Mistake::MaskFlipped;
    std::vector<std::string> rules;
    if (s_.causal) {
      const auto off = s_.causal_offset();
      rules.push_back(off == 0 ? "j ≤ i" : fmt::format("j ≤ i + {} (bottom-right: S − T = {})", off, off));
    }
    if (!s_.lengths.empty()) rules.push_back("j < length[b]");
    if (s_.user_mask_kind == "block") rules.push_back("attn_mask.block[i, j] is false");
    if (s_.user_mask_kind == "keep") rules.push_back("attn_mask.keep[i, j] is true");
    const bool per_batch = !s_.lengths.empty() || (!s_.user_keep.shape().empty() && s_.user_keep.dim(0) > 1);
    std::string formula = fmt::format("mask[{}] = 1 if {}, else 0", per_batch ? "b, i, j" : "i, j", fmt::join(rules, " and "));
    if (s_.causal && rules.size() == 1 && s_.causal_offset() == 0) formula += " (tril)";
    std::string note;
    if (s_.causal && rules.size() == 1) note = "a query sees itself and earlier positions, never later ones";
    if (!s_.lengths.empty()) {
      note = fmt::format("lengths = [{}]: keys at or past a row's length are padding", fmt::join(s_.lengths, ", "));
    }
    auto k = be_.mask_keep(s_.B, s_.T, s_.S, s_.causal, s_.causal_offset(), s_.lengths, flipped);
    BackendTensor user;
    if (!s_.user_keep.shape().empty()) {
      user = be_.upload(s_.user_keep);
      k = be_.keep_and(k, user);
    }
    if (!per_batch) {
      // One [T, S] pattern serves every batch row and head, so that is what is shown.
      auto pattern = be_.mask_keep(1, s_.T, s_.S, s_.causal, s_.causal_offset(), {}, flipped);
      if (user.shape.size() == 3) pattern = be_.keep_and(pattern, user);
      emit("mask", "Mask", formula, {"T", "S"}, pattern.view({s_.T, s_.S}), note, ValueKind::Mask);
    } else {
      emit("mask", "Mask", formula, {"B", "T", "S"}, k, note, ValueKind::Mask);
    }
    return k;
  }

  // Flat indices of the masked step's query rows with every key at -inf (none in a dry run).
  std::vector<std::int64_t> empty_rows() const {
    const auto values = tr_.steps.back().value.values();
    std::vector<std::int64_t> empty;
    const auto rows = static_cast<std::int64_t>(values.size()) / s_.S;
    for (std::int64_t r = 0; r < rows; ++r) {
      const auto* row = values.data() + r * s_.S;
      if (std::all_of(row, row + s_.S, [](Scalar v) { return v == -std::numeric_limits<Scalar>::infinity(); })) empty.push_back(r);
    }
    return empty;
  }

  // A query row with every key blocked has no softmax; name it rather than print NaN.
  [[noreturn]] void refuse_empty_row(std::int64_t r) const {
    const auto i = r % s_.T, h = (r / s_.T) % s_.H, b = r / (s_.T * s_.H);
    const auto& labels = s_.tokens[s_.tokens.size() == 1 ? 0 : static_cast<std::size_t>(b)];
    throw InputError(fmt::format("masked: query row {} \"{}\" (batch {}, head {}) has every key masked; its softmax is undefined", i,
                                 labels[static_cast<std::size_t>(i)], b, h));
  }

  const Spec& s_;
  Backend& be_;
  Mistake m_;
  Trace tr_;
  std::int64_t empty_rows_ = 0;
  bool allow_nan_ = false;
  std::chrono::steady_clock::time_point clock_ = std::chrono::steady_clock::now();
};

}  // namespace

const std::vector<MistakeInfo>& all_mistakes() {
  static const std::vector<MistakeInfo> kAll = {
      {Mistake::WTransposed, "w-transposed", "the projections used Wᵀ: the weights were read in the other layout (x@W vs nn.Linear's [out, in])"},
      {Mistake::ScaleMissing, "scale-missing", "the scores were not multiplied by 1/√d_k"},
      {Mistake::ScaleSqrtC, "scale-sqrt-c", "the scores were scaled by 1/√C, the model width, instead of 1/√hs, the head size"},
      {Mistake::SoftmaxWrongAxis, "softmax-wrong-axis", "softmax was taken over the queries (dim=-2) instead of the keys (dim=-1)"},
      {Mistake::MaskFlipped, "mask-flipped", "the mask's polarity is flipped: the blocked positions were kept and the allowed ones blocked"},
      {Mistake::MaskAfterSoftmax, "mask-after-softmax", "the mask was applied after softmax (blocked weights zeroed), so rows no longer sum to 1"},
      {Mistake::Fill1e9, "fill-1e9", "blocked scores were filled with -1e9 instead of -inf"},
      {Mistake::QKSwapped, "qk-swapped", "queries and keys were swapped: scores = k · qᵀ"},
      {Mistake::HeadsInterleaved, "heads-interleaved", "the heads were split as view(B, T, hs, H) (interleaved) instead of view(B, T, H, hs)"},
      {Mistake::MergeNoTranspose, "merge-no-transpose", "the heads were merged with reshape(B, T, C) without transposing [B, H, T, hs] back first"},
      {Mistake::OutputMissing, "output-missing", "the output projection W_o was not applied"},
      {Mistake::OutputTransposed, "output-transposed", "the output projection used W_oᵀ"},
  };
  return kAll;
}

Trace run_pipeline(const Spec& spec, Backend& backend, const PipelineOptions& options) {
  Trace t = Run(spec, backend, options.mistake).run();
  if (options.mistake != Mistake::None) {
    for (const auto& m : all_mistakes())
      if (m.mistake == options.mistake) t.config.notes.push_back(fmt::format("simulated mistake {}: {}", m.name, m.description));
  }
  return t;
}

}  // namespace attn
