// The mistakes' table and their hooks: the correct operations, and what each mistake puts in place
// of one of them. Nothing else in the pipeline knows about mistakes.
#include "attn/pipeline/mistakes.hpp"

#include <fmt/format.h>

#include <cmath>

#include "attn/error.hpp"
#include "attn/suggest.hpp"

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
  h.scale = [](const Spec&, Scalar correct) { return correct; };
  h.fill = [](Scalar correct) { return correct; };
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
  return h;
}

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

const MistakeInfo& mistake_info(Mistake m) {
  for (const auto& info : all_mistakes())
    if (info.mistake == m) return info;
  throw InternalError("mistake_info: no entry for this mistake");
}

Mistake mistake_from_name(std::string_view name, std::string_view option) {
  std::vector<std::string_view> names;
  for (const auto& m : all_mistakes()) {
    if (name == m.name) return m.mistake;
    names.push_back(m.name);
  }
  throw InputError(fmt::format("{} {}: no such mistake{}; the mistakes: {}", option, name, did_you_mean(name, names), fmt::join(names, ", ")));
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
    case Mistake::ScaleMissing: h.scale = [](const Spec&, Scalar) { return Scalar{1}; }; break;
    case Mistake::ScaleSqrtC:
      h.scale = [](const Spec& s, Scalar) { return static_cast<Scalar>(1.0 / std::sqrt(static_cast<double>(s.C))); };
      break;
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
    case Mistake::Fill1e9: h.fill = [](Scalar) { return -1e9f; }; break;
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
  }
  return h;
}

}  // namespace attn
