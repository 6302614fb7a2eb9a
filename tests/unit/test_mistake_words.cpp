// The words of a simulated mistake's trace: the step a mistake changes shows the formula and factor
// the student computed, checked against the step's own numbers; every other step keeps its words.
// One test per family of mistakes (scale, projections, mask, softmax and scores, heads, RoPE, kv and ALiBi, backward).
#include <fmt/format.h>

#include <cmath>

#include "attn/pipeline/mistakes.hpp"
#include "helpers.hpp"

using namespace attn;
using namespace attn::test;

namespace {

Trace mistaken(const std::string& json_text, Mistake m) {
  auto backend = make_cpu_backend();
  return run_pipeline(parse_spec(json_text, "test.json"), *backend, {m});
}

Trace mistaken_backward(const std::string& json_text, Mistake m) {
  auto backend = make_cpu_backend();
  return run_backward(parse_spec(json_text, "test.json"), *backend, {m});
}

// The first step whose formula carries the mistake's mark; FAIL if none does.
const Step& marked(const Trace& t, Mistake m) {
  const std::string mark = fmt::format("(the mistake {}:", mistake_info(m).name);
  const Step* found = nullptr;
  for (const auto& s : t.steps) {
    if (s.formula.find(mark) == std::string::npos) continue;
    found = &s;
    break;
  }
  if (found == nullptr) FAIL("no step carries " << mark);
  return *found;
}

// b = a · factor, entry by entry
void check_scaled(const Step& a, const Step& b, double factor) {
  REQUIRE(a.value.size() == b.value.size());
  for (std::int64_t i = 0; i < a.value.size(); ++i) CHECK(b.value.data()[i] == Approx(a.value.data()[i] * factor).epsilon(1e-6));
}

// H = 2, C = 6: hs = d_k = 3, as a lecturer's example; causal, square weights and W_o
const std::string kBase = R"({"mode": "causal", "heads": 2, "random": {"seed": 7, "T": 3, "C": 6, "output_projection": true}})";

}  // namespace

TEST_CASE("scale mistakes: the scaled step shows the factor it applied", "[mistakes][words]") {
  const Trace dk = mistaken(kBase, Mistake::ScaleDk);
  CHECK(marked(dk, Mistake::ScaleDk).id == "scaled");
  CHECK(step(dk, "scaled").formula == "scaled = scores / d_k   (the mistake scale-dk: d_k, not √d_k)");
  CHECK(step(dk, "scaled").note == "d_k = hs = 3: factor 1/3 = 0.3333");
  check_scaled(step(dk, "scores"), step(dk, "scaled"), 1.0 / 3);

  const Trace c = mistaken(kBase, Mistake::ScaleSqrtC);
  CHECK(step(c, "scaled").formula == "scaled = scores / √C   (the mistake scale-sqrt-c: √C, the model width, not √d_k)");
  CHECK(step(c, "scaled").note == "C = 6: factor 1/√6 = 0.4082");
  check_scaled(step(c, "scores"), step(c, "scaled"), 1 / std::sqrt(6.0));

  const Trace none = mistaken(kBase, Mistake::ScaleMissing);
  CHECK(step(none, "scaled").formula == "scaled = scores   (the mistake scale-missing: no 1/√d_k)");
  CHECK(step(none, "scaled").note == "factor 1: the scores pass unscaled");
  check_scaled(step(none, "scores"), step(none, "scaled"), 1.0);

  // without a mistake the words are the correct ones
  const Trace right = trace_of(kBase);
  CHECK(step(right, "scaled").formula == "scaled = scores / √d_k");
  CHECK(step(right, "scaled").note == "d_k = hs = 3: factor 1/√3 = 0.5774");
  check_scaled(step(right, "scores"), step(right, "scaled"), 1 / std::sqrt(3.0));
}

TEST_CASE("projection mistakes: the projection shows the weight it used, or none", "[mistakes][words]") {
  const Trace w = mistaken(kBase, Mistake::WTransposed);
  CHECK(step(w, "q").formula == "q = x · W_qᵀ   (the mistake w-transposed: Wᵀ, the weights read in the other layout)");
  CHECK(step(w, "v").formula.rfind("v = x · W_vᵀ", 0) == 0);
  CHECK(step(w, "output").formula.rfind("output = merged · W_oᵀ", 0) == 0);

  const Trace o = mistaken(kBase, Mistake::OutputTransposed);
  CHECK(marked(o, Mistake::OutputTransposed).id == "output");
  CHECK(step(o, "output").formula == "output = merged · W_oᵀ   (the mistake output-transposed: W_oᵀ, read in the other layout)");
  CHECK(step(o, "q").formula == "q = x · W_q");

  const Trace missing = mistaken(kBase, Mistake::OutputMissing);
  CHECK(step(missing, "output").formula == "output = merged   (the mistake output-missing: no W_o)");
  CHECK(max_abs_diff(step(missing, "output").value, step(missing, "merged").value) == 0.0);
}

TEST_CASE("mask mistakes: the mask, masked or weights step shows the rule it applied", "[mistakes][words]") {
  const Trace flipped = mistaken(kBase, Mistake::MaskFlipped);
  CHECK(marked(flipped, Mistake::MaskFlipped).id == "mask");
  CHECK(step(flipped, "mask").formula == "mask[i, j] = 1 if not (j ≤ i), else 0   (the mistake mask-flipped: the polarity flipped)");
  CHECK(values(step(flipped, "mask")) == std::vector<Scalar>{0, 1, 1, 0, 0, 1, 0, 0, 0});

  const std::string window = R"({"mode": "causal", "window": 2, "random": {"seed": 3, "T": 4, "C": 4}})";
  const Trace wide = mistaken(window, Mistake::WindowOffByOne);
  CHECK(step(wide, "mask").formula == "mask[i, j] = 1 if i − 2 ≤ j ≤ i, else 0   (the mistake window-off-by-one: ≤, not <)");
  CHECK(step(wide, "mask").note == "the window keeps W + 1 = 3 keys, the query's own included, one more than W = 2");
  CHECK(values(step(wide, "mask")) == std::vector<Scalar>{1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1});
  CHECK(step(trace_of(window), "mask").formula == "mask[i, j] = 1 if i − 2 < j ≤ i, else 0");

  const Trace fill = mistaken(kBase, Mistake::Fill1e9);
  CHECK(step(fill, "masked").formula == "masked = scaled where mask = 1, −1e9 where mask = 0   (the mistake fill-1e9: −1e9, not −inf)");
  CHECK(step(fill, "masked").value.data()[1] == Approx(-1e9));

  const Trace after = mistaken(kBase, Mistake::MaskAfterSoftmax);
  CHECK(marked(after, Mistake::MaskAfterSoftmax).id == "weights");
  CHECK(step(after, "weights").formula ==
        "weights = softmax(scaled, dim=-1) where mask = 1, 0 where mask = 0   (the mistake mask-after-softmax: masked after softmax)");
  const auto w = values(step(after, "weights"));  // head 0, row 0 keeps one key of three: its weight is under 1
  CHECK(w[1] == 0);
  CHECK(w[0] < 1);
}

TEST_CASE("softmax and scores mistakes: the axis and the product as computed", "[mistakes][words]") {
  const Trace axis = mistaken(kBase, Mistake::SoftmaxWrongAxis);
  CHECK(step(axis, "weights").formula == "weights = softmax(masked, dim=-2)   (the mistake softmax-wrong-axis: over the queries, not the keys)");
  const auto w = values(step(axis, "weights"));  // head 0, column 0 sums to 1
  CHECK(w[0] + w[3] + w[6] == Approx(1));

  const Trace swapped = mistaken(kBase, Mistake::QKSwapped);
  CHECK(step(swapped, "scores").formula == "scores = k · qᵀ   (the mistake qk-swapped: k · qᵀ, not q · kᵀ)");
  const Trace right = trace_of(kBase);
  CHECK(step(swapped, "scores").value.data()[1] == Approx(step(right, "scores").value.data()[3]));  // the transpose
}

TEST_CASE("head mistakes: the split and the merge as computed", "[mistakes][words]") {
  const Trace inter = mistaken(kBase, Mistake::HeadsInterleaved);
  CHECK(step(inter, "q.view").formula ==
        "q.view(T, hs, H).transpose(-2, -1)   (the mistake heads-interleaved: view(…, hs, H), not view(…, H, hs))");
  CHECK(step(inter, "k.heads").formula.rfind("k.view(T, hs, H).transpose(-2, -1).transpose(0, 1)", 0) == 0);
  CHECK(step(inter, "merged").formula ==
        "merged = context.transpose(0, 1).transpose(-2, -1).reshape(T, C)   (the mistake heads-interleaved: the heads put back interleaved)");
  // head 1's first feature is q's column 1
  CHECK(step(inter, "q.heads").value.data()[9] == step(inter, "q").value.data()[1]);

  const Trace flat = mistaken(kBase, Mistake::MergeNoTranspose);
  CHECK(marked(flat, Mistake::MergeNoTranspose).id == "merged");
  CHECK(step(flat, "merged").formula ==
        "merged = context.reshape(T, C)   (the mistake merge-no-transpose: no transpose back to [T, H, hs] first)");
  CHECK(values(step(flat, "merged")) == values(step(flat, "context")));  // the context's own order
}

TEST_CASE("RoPE mistakes: the rotation as computed", "[mistakes][words]") {
  const std::string rope = R"({"mode": "causal", "heads": 2, "rope": {}, "random": {"seed": 5, "T": 3, "C": 8}})";
  const Trace style = mistaken(rope, Mistake::RopeWrongStyle);
  CHECK(step(style, "q.rope").formula ==
        "q.rope = q.heads · cos + rotate_every_two(q.heads) · sin   (the mistake rope-wrong-style: rotate_every_two, the other style)");
  CHECK(step(style, "q.rope").note.rfind("the pairs (2i, 2i + 1) (\"interleaved\" style: neighbours)", 0) == 0);
  CHECK(step(trace_of(rope), "q.rope").formula == "q.rope = q.heads · cos + rotate_half(q.heads) · sin");

  const Trace before = mistaken(rope, Mistake::RopeBeforeSplit);
  CHECK(step(before, "k.rope").formula ==
        "k.rope = rope(k.view(T, H·hs), R = H·4 = 8).view(T, H, hs).transpose(0, 1)   (the mistake rope-before-split: RoPE before the head split)");
  CHECK(step(before, "q.rope").note.find("one head of 8 rotated features") != std::string::npos);

  const Trace v = mistaken(rope, Mistake::RopeOnV);
  CHECK(marked(v, Mistake::RopeOnV).id == "context");
  CHECK(step(v, "context").formula == "context = weights · rope(v)   (the mistake rope-on-v: v rotated too)");
}

TEST_CASE("kv and ALiBi mistakes: the repeat and the bias as computed", "[mistakes][words]") {
  const Trace tiled = mistaken(R"({"mode": "causal", "heads": 4, "kv_heads": 2, "random": {"seed": 3, "T": 3, "C": 8}})", Mistake::KvTiled);
  CHECK(step(tiled, "k.repeat").formula == "k.repeat = k.heads.repeat(H / Hkv = 2, 1, 1)   (the mistake kv-tiled: tiled, not repeat_kv's interleave)");
  CHECK(step(tiled, "k.repeat").note.rfind("query head h reads kv head h mod 2: h0 ← kv0; h1 ← kv1; h2 ← kv0; h3 ← kv1", 0) == 0);
  // head 1 of the repeat is kv head 1
  const auto per_head = step(tiled, "k.heads").value.size() / 2;
  CHECK(step(tiled, "k.repeat").value.data()[per_head] == step(tiled, "k.heads").value.data()[per_head]);

  const Trace alibi = mistaken(R"({"mode": "causal", "heads": 2, "alibi": true, "random": {"seed": 3, "T": 3, "C": 4}})", Mistake::AlibiSignFlipped);
  CHECK(step(alibi, "alibi").formula == "alibi[h, i, j] = +m_h · (i − j)   (the mistake alibi-sign-flipped: +m, not −m)");
  CHECK(step(alibi, "alibi").value.data()[3] == Approx(0.0625));  // head 0 (m = 1/16), query 1 against key 0: +m·1, not −m·1
}

TEST_CASE("backward mistakes: the gradient step they change shows what was computed", "[mistakes][words]") {
  const std::string spec = R"({"mode": "causal", "heads": 2, "random": {"seed": 7, "T": 3, "C": 6}})";
  const Trace sm = mistaken_backward(spec, Mistake::SoftmaxBackwardElementwise);
  CHECK(marked(sm, Mistake::SoftmaxBackwardElementwise).id == "grad.masked");
  CHECK(step(sm, "grad.masked").formula == "grad.masked = weights ⊙ grad.weights   (the mistake softmax-backward-elementwise: elementwise, no rowsum term)");

  const Trace scale = mistaken_backward(spec, Mistake::BackwardScaleForgotten);
  CHECK(step(scale, "grad.scores").formula == "grad.scores = grad.scaled   (the mistake backward-scale-forgotten: the scale left out)");
  CHECK(values(step(scale, "grad.scores")) == values(step(scale, "grad.scaled")));

  const Trace dk = mistaken_backward(spec, Mistake::BackwardDkUntransposed);
  CHECK(step(dk, "grad.k.heads").formula ==
        "grad.k.heads = grad.scores · q.heads   (the mistake backward-dk-untransposed: grad.scores, not grad.scoresᵀ)");

  const Trace dx = mistaken_backward(spec, Mistake::BackwardDxOnePath);
  CHECK(step(dx, "grad.x").formula == "grad.x = grad.q · W_qᵀ   (the mistake backward-dx-one-path: the keys' and values' paths left out)");
}

TEST_CASE("backward mistakes on one head: the changed step keeps its shape's dims (no head axis)", "[mistakes][words]") {
  // one head, no batch: grad.k is [S, dk]; the mistaken words once carried [B, H, S, hs] (an internal error)
  const std::string spec = R"({"mode": "self", "random": {"seed": 3, "T": 3, "C": 4}})";
  for (const auto m : {Mistake::SoftmaxBackwardElementwise, Mistake::BackwardScaleForgotten, Mistake::BackwardDkUntransposed, Mistake::BackwardDxOnePath}) {
    INFO(mistake_info(m).name);
    const Trace t = mistaken_backward(spec, m);
    const Step& changed = marked(t, m);
    CHECK(changed.dims.size() == changed.value.shape().size());
  }
  const Trace dk = mistaken_backward(spec, Mistake::BackwardDkUntransposed);
  CHECK(step(dk, "grad.k").formula == "grad.k = grad.scores · q   (the mistake backward-dk-untransposed: grad.scores, not grad.scoresᵀ)");
  CHECK(step(dk, "grad.k").value.shape() == Shape{3, 4});
}

TEST_CASE("every mistake of the catalogue marks the step it changes", "[mistakes][words]") {
  // the variants' mistakes need their variant: a Llama-like layer has RoPE, kv heads and a window
  const std::string llama = R"({"mode": "causal", "heads": 4, "kv_heads": 2, "window": 2, "rope": {},
                                "random": {"seed": 2, "T": 4, "C": 16, "output_projection": true}})";
  const std::string alibi = R"({"mode": "causal", "heads": 2, "alibi": true, "random": {"seed": 2, "T": 3, "C": 4}})";
  for (const auto& m : all_mistakes()) {
    INFO(m.name);
    if (is_backward(m.mistake)) {
      marked(mistaken_backward(kBase, m.mistake), m.mistake);
      continue;
    }
    marked(mistaken(m.mistake == Mistake::AlibiSignFlipped ? alibi : m.mistake >= Mistake::RopeWrongStyle ? llama : kBase, m.mistake), m.mistake);
  }
}
