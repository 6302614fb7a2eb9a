// A later step recomputed from a student's own earlier answer, for attn grade's credit "follows from
// your scores": q, k or v enter the one pipeline as given q, k and v; scores and scaled enter it as
// given scores (the mask, biases and softmax then the variant's own); masked, weights, context and
// merged go on by the plain products below. Nothing here grades or words anything.
#include <fmt/format.h>

#include <algorithm>

#include "attn/core/error.hpp"
#include "attn/core/steps.hpp"
#include "attn/numerics/backend.hpp"
#include "attn/pipeline/pipeline.hpp"
#include "attn/tools/grade.hpp"

namespace attn {
namespace {

using BT = BackendTensor;

// A trace step's values in a full shape (the trace drops B and H where the input has none; the
// row-major order is the same).
Tensor full(const Tensor& t, Shape shape) {
  if (element_count(shape) != t.size()) throw InputError(fmt::format("expected {} values, got {}", element_count(shape), t.size()));
  return Tensor(std::move(shape), std::vector<Scalar>(t.values().begin(), t.values().end()));
}

// v as the context multiplies it, one per query head: (B, S, H·hv), from the reference trace.
std::optional<Tensor> values_per_head(const Spec& s, const Trace& ref) {
  const std::int64_t B = s.B, H = s.H, S = s.S, hv = s.hv();
  const Step* heads = ref.find("v.repeat");
  if (heads == nullptr) heads = ref.find("v.heads");
  if (heads == nullptr) {
    const Step* v = ref.find("v");
    if (v == nullptr || (H > 1 && s.Hkv != H)) return std::nullopt;
    return full(v->value, {B, S, H * hv});
  }
  // (B, H, S, hv) -> (B, S, H, hv)
  const Tensor h = full(heads->value, {B, H, S, hv});
  Tensor flat({B, S, H * hv});
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t g = 0; g < H; ++g)
      for (std::int64_t j = 0; j < S; ++j)
        std::copy_n(h.data() + ((b * H + g) * S + j) * hv, hv, flat.mutable_data() + ((b * S + j) * H + g) * hv);
  return flat;
}

// The pipeline from given q, k and v, the student's answer in place of `from`'s.
Trace from_qkv(const Spec& s, const Trace& ref, const std::string& from, const Tensor& answer) {
  Spec given = s;
  given.entry = Entry::QKV;
  const auto take = [&](const char* id, std::int64_t L, std::int64_t width) {
    const Step* r = ref.find(id);
    if (r == nullptr) throw InputError(fmt::format("the trace has no {}", id));
    return full(from == id ? answer : r->value, {s.B, L, width});
  };
  given.q = take("q", s.T, s.dk);
  given.k = take("k", s.S, s.dkv());
  given.v = take("v", s.S, s.dvkv());
  auto backend = make_cpu_backend();
  return run_pipeline(given, *backend);
}

// The pipeline from given scores: the student's scores, or their scaled scores with no scale after.
Trace from_scores(const Spec& s, const Trace& ref, const std::string& from, const Tensor& answer) {
  Spec given = s;
  given.entry = Entry::Scores;
  given.scores = full(answer, {s.B, s.H, s.T, s.S});
  if (from == "scaled") given.scale_kind = ScaleKind::None;
  const auto v = values_per_head(s, ref);
  given.v = v ? *v : Tensor();
  given.Hkv = s.H;
  given.rope.reset();
  given.qk_norm.reset();
  auto backend = make_cpu_backend();
  return run_pipeline(given, *backend);
}

// masked → weights → context → merged → output by the plain products, from the student's `from`
// (one of them); the step `target` when the chain reaches it.
std::optional<Tensor> from_products(const Spec& s, const Trace& ref, const std::string& from, const Tensor& answer, const std::string& target) {
  static const std::vector<std::string> chain = {"masked", "weights", "context", "merged", "output"};
  const auto at = std::find(chain.begin(), chain.end(), from);
  const auto to = std::find(chain.begin(), chain.end(), target);
  if (at == chain.end() || to == chain.end() || to <= at || ref.find(target) == nullptr) return std::nullopt;
  const std::int64_t B = s.B, H = s.H, T = s.T, S = s.S, hv = s.hv();
  auto be = make_cpu_backend();
  const Shape shapes[] = {{B * H * T, S}, {B * H * T, S}, {B, H, T, hv}, {B, T, s.dv}};
  BT x = be->upload(full(answer, shapes[at - chain.begin()]));
  for (auto step = at + 1; step <= to; ++step) {
    if (*step == "weights") x = be->softmax_rows(x);
    if (*step == "context") {
      const auto v = values_per_head(s, ref);
      if (!v) return std::nullopt;
      const BT vh = be->swap_axes_1_2(be->upload(*v).view({B, S, H, hv}));  // (B, H, S, hv)
      x = be->matmul(x.view({B * H, T, S}), vh.view({B * H, S, hv})).view({B, H, T, hv});
    }
    if (*step == "merged") x = be->swap_axes_1_2(x.view({B, H, T, hv})).view({B, T, s.dv});
    if (*step == "output") {
      if (!s.w.W_o) return std::nullopt;
      x = be->matmul(x.view({B, T, s.dv}), be->upload(*s.w.W_o));
      if (s.w.b_o) x = be->add_bias(x, be->upload(*s.w.b_o));
    }
  }
  const Tensor out = be->download(x);
  return full(out, ref.find(target)->value.shape());
}

}  // namespace

std::optional<Tensor> recompute_from(const Spec& spec, const Trace& reference, const std::string& from, const Tensor& answer,
                                     const std::string& target) {
  if (step_order(target) <= step_order(from) || reference.find(target) == nullptr) return std::nullopt;
  try {
    Trace t;
    if (from == "q" || from == "k" || from == "v") t = from_qkv(spec, reference, from, answer);
    else if (from == "scores" || from == "scaled") t = from_scores(spec, reference, from, answer);
    else return from_products(spec, reference, from, answer, target);
    const Step* got = t.find(target);
    if (got == nullptr) return std::nullopt;
    return Tensor(got->value.shape(), std::vector<Scalar>(got->value.values().begin(), got->value.values().end()));
  } catch (const InputError&) {
    return std::nullopt;  // the student's numbers cannot enter there (a NaN refused, a row with no key)
  }
}

}  // namespace attn
