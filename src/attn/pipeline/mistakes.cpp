// The mistakes' table and their hooks: the correct operations, and what each mistake puts in place
// of one of them. Nothing else in the pipeline knows about mistakes.
#include "attn/pipeline/mistakes.hpp"

#include <fmt/format.h>

#include <cmath>

#include "attn/core/error.hpp"
#include "attn/numerics/position_tables.hpp"
#include "attn/core/suggest.hpp"

namespace attn {
namespace {

// w (r, c) -> wᵀ (c, r). Only a square weight can be read in the wrong layout unnoticed: a student
// doing so with a [C, dk] weight gets a shape error, not a wrong answer, so the mistake cannot happen.
BackendTensor transposed_square(Backend& be, const BackendTensor& w, const char* mistake) {
  const auto r = w.shape[0], c = w.shape[1];
  if (r != c) {
    throw InputError(fmt::format("mistake {}: needs square weights; a [{}, {}] weight read in the other layout does not fit", mistake, r, c));
  }
  return be.transpose_last2(w.view({1, r, c})).view({c, r});
}

Hooks correct() {
  Hooks h;
  h.weight = [](Backend&, const BackendTensor& w, Projection) { return w; };
  h.scores = [](Backend& be, const BackendTensor& q, const BackendTensor&, const BackendTensor& kt) { return be.matmul(q, kt); };
  h.scale = [](const Spec&, double correct) { return correct; };
  h.fill = [](double correct) { return correct; };
  h.softmax = [](Backend& be, const BackendTensor& logits, Backend::EmptyRow empty) {
    const auto& s = logits.shape;  // (B, H, T, S)
    return be.softmax_rows(logits.view({s[0] * s[1] * s[2], s[3]}), empty).view(s);
  };
  h.split = [](Backend&, const BackendTensor& flat, std::int64_t H) {
    const auto& s = flat.shape;  // (B, L, H·h): a view, (B, L, H, h)
    return Hooks::Split{flat.view({s[0], s[1], H, s[2] / H}), true};
  };
  h.merge = [](Backend& be, const BackendTensor& context) {
    const auto& s = context.shape;  // (B, H, T, hv) -> (B, T, H, hv) -> (B, T, dv)
    return be.swap_axes_1_2(context).view({s[0], s[2], s[1] * s[3]});
  };
  h.repeat = [](Backend& be, const BackendTensor& kv, std::int64_t n) { return be.repeat_heads(kv, n, false); };
  h.rotate = [](Backend& be, const Spec& spec, const BackendTensor& heads, const BackendTensor& cos, const BackendTensor& sin, std::int64_t first) {
    const auto& s = heads.shape;  // (B, G, L, h)
    return be.rotate_pairs(heads.view({s[0] * s[1], s[2], s[3]}), cos, sin, first, spec.rope->style == RopeStyle::Interleaved).view(s);
  };
  h.slopes = [](Backend&, const BackendTensor& slopes) { return slopes; };
  return h;
}

}  // namespace

const std::vector<MistakeInfo>& all_mistakes() {
  static const std::vector<MistakeInfo> kAll = {
      {Mistake::WTransposed, "w-transposed", "the projections used Wᵀ: the weights were read in the other layout (x@W vs nn.Linear's [out, in])",
       "every projection reads its weight transposed (Wᵀ, the other layout)"},
      {Mistake::ScaleMissing, "scale-missing", "the scores were not multiplied by 1/√d_k",
       "1/√d_k is left out"},
      {Mistake::ScaleSqrtC, "scale-sqrt-c", "the scores were scaled by 1/√C, the model width, instead of 1/√hs, the head size",
       "the scores are scaled by 1/√C, the model width, instead of 1/√d_k"},
      {Mistake::ScaleDk, "scale-dk", "the scores were divided by d_k, the head size hs, instead of by its square root √d_k",
       "the scores are divided by d_k instead of √d_k"},
      {Mistake::SoftmaxWrongAxis, "softmax-wrong-axis", "softmax was taken over the queries (dim=-2) instead of the keys (dim=-1)",
       "the softmax runs over the queries (each column, dim=-2) instead of the keys"},
      {Mistake::MaskFlipped, "mask-flipped", "the mask's polarity is flipped: the blocked positions were kept and the allowed ones blocked",
       "the mask's polarity is flipped (the blocked keys kept, the allowed ones blocked)"},
      {Mistake::MaskAfterSoftmax, "mask-after-softmax", "the mask was applied after softmax (blocked weights zeroed), so rows no longer sum to 1",
       "the mask is applied after the softmax (blocked weights zeroed, the rows not renormalised)"},
      {Mistake::MaskMissing, "mask-missing", "the mask was left out: every key was attended, the blocked ones too",
       "the mask is left out (every key attended)"},
      {Mistake::Fill1e9, "fill-1e9", "blocked scores were filled with -1e9 instead of -inf",
       "blocked scores are −1e9 instead of −inf"},
      {Mistake::QKSwapped, "qk-swapped", "queries and keys were swapped: scores = k · qᵀ",
       "the scores are k · qᵀ instead of q · kᵀ"},
      {Mistake::HeadsInterleaved, "heads-interleaved", "the heads were split as view(B, T, hs, H) (interleaved) instead of view(B, T, H, hs)",
       "the heads are split as view(B, T, hs, H), interleaved"},
      {Mistake::MergeNoTranspose, "merge-no-transpose", "the heads were merged with reshape(B, T, C) without transposing [B, H, T, hs] back first",
       "the heads are merged by reshape(B, T, C) without the transpose back"},
      {Mistake::OutputMissing, "output-missing", "the output projection W_o was not applied",
       "the output projection W_o is left out"},
      {Mistake::OutputTransposed, "output-transposed", "the output projection used W_oᵀ",
       "the output projection reads W_oᵀ"},
      {Mistake::RopeWrongStyle, "rope-wrong-style",
       "RoPE rotated the pairs of the other style: (2i, 2i+1) (GPT-J's rotate_every_two) for (i, i+R/2) (Llama's rotate_half), or the reverse",
       "RoPE turns the pairs of the other style ((2i, 2i+1) for (i, i+R/2), or the reverse)"},
      {Mistake::RopeOnV, "rope-on-v", "RoPE was applied to v as well; it turns only q and k",
       "RoPE turns v as well as q and k"},
      {Mistake::RopeBeforeSplit, "rope-before-split",
       "RoPE was applied to the [T, H·hs] rows before the head split: its pairs and angles ran across the heads instead of within each",
       "RoPE is applied before the head split (its pairs and angles across the heads)"},
      {Mistake::KvTiled, "kv-tiled",
       "the kv heads were repeated by tiling (query head h read kv head h mod Hkv, as torch.tile) instead of repeat_kv's interleave (h / (H/Hkv))",
       "the kv heads are repeated by tiling (query head h reads kv head h mod Hkv)"},
      {Mistake::WindowOffByOne, "window-off-by-one", "the sliding window kept W + 1 keys (j ≥ i − W) instead of W (j > i − W)",
       "the sliding window keeps W + 1 keys"},
      {Mistake::AlibiSignFlipped, "alibi-sign-flipped", "ALiBi's bias was added with the wrong sign: +m·(i − j), favouring distant keys",
       "ALiBi's bias is added with the wrong sign, +m·(i − j)"},
      {Mistake::SoftmaxBackwardElementwise, "softmax-backward-elementwise",
       "the softmax's backward was taken elementwise, weights ⊙ grad.weights, without the rowsum term (a row's weights sum to 1, so "
       "each weight depends on every score of its row)",
       "the softmax's backward is taken elementwise, without the rowsum term"},
      {Mistake::BackwardScaleForgotten, "backward-scale-forgotten", "the scale was left out of the chain rule: grad.scores = grad.scaled, not × 1/√d_k",
       "the scale is left out of the chain rule (grad.scores = grad.scaled)"},
      {Mistake::BackwardDkUntransposed, "backward-dk-untransposed",
       "grad.k was computed as grad.scores · q, without the transpose: the keys are the columns of the scores, so it is grad.scoresᵀ · q",
       "grad.k is grad.scores · q, without the transpose"},
      {Mistake::BackwardDxOnePath, "backward-dx-one-path",
       "grad.x was taken from the queries' path only (grad.q · W_qᵀ): x made the keys and the values too, and their paths add",
       "grad.x takes the queries' path only"},
  };
  return kAll;
}

const MistakeInfo& mistake_info(Mistake m) {
  for (const auto& info : all_mistakes())
    if (info.mistake == m) return info;
  throw InternalError("mistake_info: no entry for this mistake");
}

namespace {

// The mistake of this name; InputError "...: no such mistake (did you mean ...); <which>: <names>"
// otherwise, where names are those the caller takes (all, or one pass's).
Mistake named_mistake(std::string_view name, Door door, const std::function<bool(Mistake)>& taken, std::string_view which) {
  std::vector<std::string_view> names;
  for (const auto& m : all_mistakes()) {
    if (name == m.name) return m.mistake;
    if (taken(m.mistake)) names.push_back(m.name);
  }
  throw InputError(fmt::format("{}: no such mistake{}; {}: {}", option_with(door, "mistake", name), did_you_mean(name, names), which,
                               fmt::join(names, ", ")));
}

}  // namespace

Mistake mistake_from_name(std::string_view name, Door door) {
  return named_mistake(name, door, [](Mistake) { return true; }, "the mistakes");
}

std::string mistake_names(bool backward_pass) {
  std::string names;
  for (const auto& m : all_mistakes())
    if (is_backward(m.mistake) == backward_pass) names += (names.empty() ? "" : ", ") + std::string(m.name);
  return names;
}

std::string mistake_mark(Mistake m, std::string_view what) { return fmt::format("   (the mistake {}: {})", mistake_info(m).name, what); }

void require_pass(Mistake m, bool backward_pass, Door door) {
  if (m == Mistake::None || is_backward(m) == backward_pass) return;
  const char* this_pass = backward_pass ? "backward" : "forward";
  const char* other_pass = backward_pass ? "forward" : "backward";
  throw InputError(fmt::format("{}: a mistake of the {} pass, which {} simulates; {} simulates the {} pass's ({})",
                               option_with(door, "mistake", mistake_info(m).name), other_pass, command_name(door, backward_pass ? "run" : "backward"),
                               command_name(door, backward_pass ? "backward" : "run"), this_pass, mistake_names(backward_pass)));
}

Mistake mistake_for_pass(std::string_view name, bool backward_pass, Door door) {
  const Mistake m = named_mistake(name, door, [backward_pass](Mistake k) { return is_backward(k) == backward_pass; },
                                  fmt::format("{}'s mistakes", command_name(door, backward_pass ? "backward" : "run")));
  require_pass(m, backward_pass, door);
  return m;
}

bool is_backward(Mistake m) {
  return m == Mistake::SoftmaxBackwardElementwise || m == Mistake::BackwardScaleForgotten || m == Mistake::BackwardDkUntransposed ||
         m == Mistake::BackwardDxOnePath;
}

Hooks hooks_for(Mistake m) {
  Hooks h = correct();
  switch (m) {
    case Mistake::None: break;
    case Mistake::WTransposed:
      h.weight = [](Backend& be, const BackendTensor& w, Projection) { return transposed_square(be, w, "w-transposed"); };
      break;
    case Mistake::OutputTransposed:
      h.weight = [](Backend& be, const BackendTensor& w, Projection p) {
        return p == Projection::Output ? transposed_square(be, w, "output-transposed") : w;
      };
      break;
    case Mistake::ScaleMissing: h.scale = [](const Spec&, double) { return 1.0; }; break;
    case Mistake::ScaleSqrtC:
      h.scale = [](const Spec& s, double) { return 1.0 / std::sqrt(static_cast<double>(s.C)); };
      break;
    case Mistake::ScaleDk: h.scale = [](const Spec& s, double) { return 1.0 / static_cast<double>(s.hs()); }; break;
    case Mistake::SoftmaxWrongAxis:
      // softmax over the queries: transpose, softmax each row, transpose back
      h.softmax = [](Backend& be, const BackendTensor& logits, Backend::EmptyRow) {
        const auto& s = logits.shape;  // (B, H, T, S)
        const auto t = be.transpose_last2(logits.view({s[0] * s[1], s[2], s[3]}));
        const auto sm = be.softmax_rows(t.view({s[0] * s[1] * s[3], s[2]})).view({s[0] * s[1], s[3], s[2]});
        return be.transpose_last2(sm).view(s);
      };
      break;
    case Mistake::MaskFlipped: h.flip_mask = true; break;
    case Mistake::MaskAfterSoftmax: h.mask_after_softmax = true; break;
    case Mistake::MaskMissing: h.mask_missing = true; break;
    case Mistake::Fill1e9: h.fill = [](double) { return -1e9; }; break;
    case Mistake::QKSwapped:
      h.scores = [](Backend& be, const BackendTensor& q, const BackendTensor& k, const BackendTensor&) {
        if (q.shape[1] != k.shape[1]) throw InputError("mistake qk-swapped: needs T = S (k · qᵀ is [S, T])");
        return be.matmul(k, be.transpose_last2(q));
      };
      break;
    case Mistake::HeadsInterleaved:
      // view(B, L, hs, H): feature d of head h is column d·H + h; brought to [B, L, H, hs] (a copy)
      h.split = [](Backend& be, const BackendTensor& flat, std::int64_t H) {
        const auto& s = flat.shape;
        return Hooks::Split{be.transpose_last2(flat.view({s[0] * s[1], s[2] / H, H})).view({s[0], s[1], H, s[2] / H}), false};
      };
      h.merge = [](Backend& be, const BackendTensor& context) {
        const auto& s = context.shape;  // (B, H, T, hv) -> (B, T, H, hv) -> head h at columns h, h+H, ...
        return be.transpose_last2(be.swap_axes_1_2(context).view({s[0] * s[2], s[1], s[3]})).view({s[0], s[2], s[1] * s[3]});
      };
      break;
    case Mistake::MergeNoTranspose:
      h.merge = [](Backend&, const BackendTensor& context) {
        const auto& s = context.shape;
        return context.view({s[0], s[2], s[1] * s[3]});
      };
      break;
    case Mistake::OutputMissing: h.output_missing = true; break;
    case Mistake::RopeWrongStyle:
      h.rotate = [](Backend& be, const Spec& spec, const BackendTensor& heads, const BackendTensor& cos, const BackendTensor& sin, std::int64_t first) {
        const auto& s = heads.shape;
        return be.rotate_pairs(heads.view({s[0] * s[1], s[2], s[3]}), cos, sin, first, spec.rope->style != RopeStyle::Interleaved).view(s);
      };
      break;
    case Mistake::RopeOnV: h.rope_on_v = true; break;
    case Mistake::RopeBeforeSplit:
      // the heads put back side by side, (B, L, G·h), turned as one head of G·R rotated features, split again
      h.rotate = [](Backend& be, const Spec& spec, const BackendTensor& heads, const BackendTensor&, const BackendTensor&, std::int64_t first) {
        const auto& s = heads.shape;  // (B, G, L, h)
        const auto& rope = *spec.rope;
        const auto width = s[1] * s[3], rotated = s[1] * rope.dims;
        const RopeTables t = rope_tables(rope.table_first, rope.cos.dim(0), rotated, rope.theta, rope.scaling);
        const BackendTensor flat = be.swap_axes_1_2(heads).view({s[0], s[2], width});
        const BackendTensor turned = be.rotate_pairs(flat, be.upload(t.cos), be.upload(t.sin), first, rope.style == RopeStyle::Interleaved);
        return be.swap_axes_1_2(turned.view({s[0], s[2], s[1], s[3]}));
      };
      break;
    case Mistake::KvTiled: h.repeat = [](Backend& be, const BackendTensor& kv, std::int64_t n) { return be.repeat_heads(kv, n, true); }; break;
    case Mistake::WindowOffByOne: h.window_extra = 1; break;
    case Mistake::AlibiSignFlipped: h.slopes = [](Backend& be, const BackendTensor& slopes) { return be.scale(slopes, -1); }; break;
    // the backward's mistakes change the backward pass (backward.cpp), not the forward's hooks
    case Mistake::SoftmaxBackwardElementwise:
    case Mistake::BackwardScaleForgotten:
    case Mistake::BackwardDkUntransposed:
    case Mistake::BackwardDxOnePath: break;
  }
  return h;
}

void require_applicable(Mistake m, const Spec& s) {
  const auto need = [&](bool ok, std::string_view what) {
    if (!ok) throw InputError(fmt::format("mistake {}: needs {}", mistake_info(m).name, what));
  };
  switch (m) {
    case Mistake::RopeWrongStyle: need(s.rope && s.rope->dims >= 4, "\"rope\" with at least two pairs (dims ≥ 4): with one pair both styles agree"); break;
    case Mistake::RopeOnV:
      need(s.rope.has_value() && (s.entry == Entry::Embeddings || !s.v.shape().empty()), "\"rope\" and values");
      need(s.rope->dims <= s.hv(), fmt::format("values at least as wide as the rotated features (hv = {} < R = {})", s.hv(), s.rope->dims));
      break;
    case Mistake::RopeBeforeSplit: need(s.rope && s.H > 1, "\"rope\" and more than one head: with one head the split changes nothing"); break;
    case Mistake::KvTiled: need(s.Hkv > 1 && s.grouped(), "\"kv_heads\" of at least 2 and fewer than H: with one kv head, or H of them, tiling and interleaving agree"); break;
    case Mistake::WindowOffByOne: need(s.window > 0, "a sliding \"window\""); break;
    case Mistake::ScaleDk: need(s.hs() > 1, "a head size hs above 1 (with hs = 1, 1/hs is 1/√hs), known from q and k or the embeddings"); break;
    case Mistake::MaskAfterSoftmax:
      // without a mask the mistake changes nothing; with an additive mask alone there is no blocked weight to zero
      need(!s.masking() || s.blocking(),
           "a mask that blocks keys (causal, padding, or attn_mask \"block\" / \"keep\"): an additive attn_mask alone blocks none, "
           "so no weight is zeroed after softmax");
      break;
    case Mistake::AlibiSignFlipped: need(!s.alibi_slopes.shape().empty(), "\"alibi\""); break;
    case Mistake::MaskMissing: need(s.masking(), "a mask (causal, padding, a window or attn_mask): without one there is none to leave out"); break;
    case Mistake::BackwardScaleForgotten: {
      const double factor = s.scale_kind == ScaleKind::SqrtDk ? 1 / std::sqrt(static_cast<double>(s.hs())) : s.scale_kind == ScaleKind::Number ? s.scale_number : 1.0;
      need(factor != 1.0, "a scale other than 1 (with hs = 1, or none, forgetting it changes nothing)");
      break;
    }
    case Mistake::BackwardDkUntransposed:
      need(s.entry != Entry::Scores && s.S == s.T && !s.grouped(), "q and k with as many keys as queries (S = T) and no kv_heads: otherwise grad.scores · q has no meaning");
      break;
    case Mistake::BackwardDxOnePath:
      need(s.entry == Entry::Embeddings && !s.cross() && !s.w.W_qkv, "embeddings with W_q, W_k and W_v in self-attention (x feeding q, k and v)");
      break;
    default: break;
  }
}

}  // namespace attn
