// --explain's claims checked against the run they explain (issue 41): each sentence that states a
// general fact appears only where this run meets its premises, and names tokens as the tables do.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>

#include "attn/spec/parse.hpp"
#include "attn/tools/explain.hpp"
#include "helpers.hpp"

using namespace attn;
using namespace attn::test;

namespace {

Trace example(const std::string& name) {
  auto backend = make_cpu_backend();
  return run_pipeline(load_spec(std::string(ATTN_SOURCE_DIR) + "/examples/" + name + ".json"), *backend);
}

std::string words(const Trace& t, std::string_view id) { return explain_step(t, step(t, id)); }

}  // namespace

TEST_CASE("explain: T5's biased step names T5's learned bias, unscaled scores and no mask", "[explain][claims]") {
  const Trace t = example("t5_encoder");
  const auto w = words(t, "biased");
  CHECK_THAT(w, !Catch::Contains("ALiBi"));
  CHECK_THAT(w, Catch::Contains("The scores, not scaled (scale none), plus T5's relative position bias"));
  CHECK_THAT(w, Catch::Contains("This is what the softmax reads."));
  CHECK_THAT(w, !Catch::Contains("mask"));
  // the buckets as the published bucket code computes them: 0 is the query itself, 16 never occurs
  CHECK_THAT(step(t, "rel.bucket").note, Catch::Contains("the query's own key is bucket 0, keys before it use buckets 1–15, keys after it 17–31 (bucket 16 never occurs"));
}

TEST_CASE("explain: a finite mask_fill is said as such, and a fully blocked row as what each fill makes of it", "[explain][claims]") {
  const Trace d = example("d2l_scoring_dk2_dv4");
  const auto m = words(d, "masked");
  CHECK_THAT(m, !Catch::Contains("become −inf"));
  CHECK_THAT(m, Catch::Contains("Blocked scores become −1e6 here (the input's mask_fill), not −inf."));
  CHECK_THAT(m, Catch::Contains("underflows to exactly 0 in float32 in every row that keeps a key"));
  CHECK_THAT(m, Catch::Contains("holds −1e6 everywhere, so its weights come out uniform, 1/S each, where −inf would give 0/0, NaN"));
  // the keys past a row's length are blocked with −1e6 as surely as with −inf: not "every key it may see"
  CHECK_THAT(words(d, "scores"), Catch::Contains("among the keys it may see"));
  const Trace c = example("positions_sinusoidal");
  const auto inf = words(c, "masked");
  CHECK_THAT(inf, Catch::Contains("exp(−inf) is exactly 0"));
  CHECK_THAT(inf, !Catch::Contains("uniform one instead of an error"));
  CHECK_THAT(inf, Catch::Contains("with −inf its softmax is 0/0, NaN"));
  CHECK_THAT(inf, Catch::Contains("its own \"masked_row\" option"));
  // a run whose policy filled a fully blocked row: what it became, read from the weights
  const Trace z = trace_of(R"({"masked_row": "zeros", "attn_mask": {"block": [[true, true], [false, true]]}, "scores": [[0.1, 0.2], [0.3, 0.4]]})");
  CHECK_THAT(words(z, "masked"), Catch::Contains("Here query \"t0\" has every key blocked, and its weights are all 0 (masked_row: zeros)."));
  // the row of zeros is no example of spreading attention (it crashed the sentence before): row "t1" is
  CHECK_THAT(words(z, "weights"), Catch::Contains("Row \"t1\" puts 1.00 of its attention on \"t0\"."));
}

TEST_CASE("explain: repeated tokens carry the tables' subscripts", "[explain][claims]") {
  const Trace b = example("bert_pair");
  CHECK_THAT(words(b, "scores"), Catch::Contains("row \"the₂\" scores highest against \"on\" (-1.45)"));
  CHECK_THAT(words(b, "weights"), Catch::Contains("0.04 on \"[SEP]₂\""));
  const Trace r = example("rope_hs2");
  CHECK_THAT(words(r, "mask"), Catch::Contains("Row \"cat₁\" may look at \"the₁\" and itself but not at \"the₂\"."));
}

TEST_CASE("explain: order and permutation as this run's mask has them", "[explain][claims]") {
  const auto causal = words(example("positions_sinusoidal"), "positions");
  CHECK_THAT(causal, !Catch::Contains("shuffle the tokens and each one gets the same mixture"));
  CHECK_THAT(causal, Catch::Contains("This run's causal mask does depend on order (query i sees keys 0 .. i only)"));
  const Trace free = trace_of(R"({"tokens": ["a", "b"], "positions": "sinusoidal", "embeddings": [[1, 0], [0, 1]],
    "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}})");
  CHECK_THAT(words(free, "positions"), Catch::Contains("shuffling the tokens shuffles the output rows the same way"));
}

TEST_CASE("explain: the variance argument with its premises and this run's scaled scores", "[explain][claims]") {
  const auto w = words(example("raschka_blog_dk24_dv28"), "scaled");
  CHECK_THAT(w, Catch::Contains("independent, with mean 0 and variance 1"));
  // NumPy from the input file: scaled scores −28.92 .. 29.69; rows 2 .. 5 put ≥ 0.995 on one key (0.99999949, 0.99954, 0.99512, 0.99999713)
  CHECK_THAT(w, Catch::Contains("here the scaled scores run from −28.92 to 29.69, and 4 of the 6 query rows that see more than one key still put 0.995 or more"));
  const Trace g = example("gqa_4_heads_2_kv");  // hs = 1: the factor is 1
  CHECK_THAT(words(g, "scaled"), Catch::Contains("Here hs = 1: the factor is 1/√1 = 1, so the scaling changes nothing"));
  CHECK_THAT(words(g, "scaled"), !Catch::Contains("brings the variance back"));
  // d_k is one head's width: hs, which the header's dk (every head's) is not when H > 1
  CHECK_THAT(words(example("cross_narrow_source"), "scaled"), Catch::Contains("a sum of d_k = hs = 2 products"));
}

TEST_CASE("explain: the stumbles of issue 41's review, each said as this run has it", "[explain][claims]") {
  const Trace cat = example("cat_sat");
  CHECK_THAT(words(cat, "scores"), Catch::Contains("|q_i| |k_j| cos θ: large when the two vectors point the same way and are long"));
  // every score 0: a tie, not "highest"
  CHECK_THAT(words(example("gqa_4_heads_2_kv"), "scores"), Catch::Contains("scores every key alike, 0.00 each (a tie: no key is preferred)"));
  // 0.99966 of the attention is not "1.00"
  CHECK_THAT(words(example("scaling_unscaled"), "weights"), Catch::Contains("Row \"t0\" puts 0.9997 of its attention on \"s1\"."));
  const Trace alibi = example("alibi_softcap");
  const auto a = words(alibi, "alibi");
  CHECK_THAT(a, Catch::Contains("its own key's bias is 0.0000, the key 1 behind gets −0.0625 and the key 2 behind −0.1250"));
  CHECK_THAT(a, !Catch::Contains("costs"));
  CHECK_THAT(a, Catch::Contains("keys after the query are positive (a bonus), but the causal mask blocks those keys"));
  CHECK_THAT(a, Catch::Contains("an empirical finding, not a consequence of the formula"));
  const Trace cross = example("cross_translation");
  CHECK_THAT(words(cross, "x"), Catch::Contains("a mixture of the source's value rows"));
  CHECK_THAT(words(cross, "output"), Catch::Contains("Here W_o is the identity: the output is the merged rows unchanged."));
  CHECK_THAT(words(cross, "output"), !Catch::Contains("W_o mixes"));
  CHECK_THAT(words(cross, "weights"), Catch::Contains("0.25 each on \"chat\" and \"mange\""));  // an exact tie, said as one
}

TEST_CASE("step notes: RoPE's half-style pairs, and what the keys are when no k is given", "[explain][claims]") {
  // R = 2: the half style's one pair is (0, 1), which alone would read as the interleaved neighbours
  CHECK_THAT(step(example("rope_hs2"), "q.rope").note, Catch::Contains("the pairs (i, i + R/2) = (i, i + 1), i < 1 (\"half\" style: each feature of the first half with its partner in the second)"));
  const auto notes = [](const Trace& t) { return fmt::format("{}", fmt::join(t.config.notes, "\n")); };
  CHECK_THAT(notes(example("softmax_2413")), Catch::Contains("S = 4 keys for T = 1 queries (the given scores' columns; no k or v is given)"));
  CHECK_THAT(notes(example("weighted_sum_of_values")), Catch::Contains("(the given scores' columns and v's rows)"));
  CHECK_THAT(notes(example("softmax_2413")), !Catch::Contains("k and v given"));
}

TEST_CASE("explain: a given mask, a finite fill that leaks, and a row spread thin are said as what they are", "[explain][claims]") {
  // a given attn_mask (not causal, no padding) depends on where the tokens stand: no claim that shuffling only shuffles the rows
  const Trace g = trace_of(R"({"positions": "sinusoidal", "attn_mask": {"block": [[false, true], [false, false]]},
                               "embeddings": [[1, 0], [0, 1]], "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}})");
  const auto order = words(g, "positions");
  CHECK_THAT(order, !Catch::Contains("shuffles the output rows the same way"));
  CHECK_THAT(order, Catch::Contains("This run's given mask does depend on where they stand"));
  // mask_fill −1 leaves blocked keys some weight: said, and the context's masked keys are not "exactly 0"
  const Trace f = trace_of(R"({"mask_fill": -1, "attn_mask": {"block": [[false, true], [false, false]]}, "scores": [[0.1, 0.2], [0.3, 0.4]],
                               "v": [[1, 0], [0, 1]]})");
  const auto leak = words(f, "masked");
  CHECK_THAT(leak, !Catch::Contains("the same weights −inf gives"));
  CHECK_THAT(leak, Catch::Contains("a blocked key keeps up to 0.25 of its row's weight"));
  CHECK_THAT(words(f, "context"), !Catch::Contains("their weight is exactly 0"));
  CHECK_THAT(words(f, "context"), Catch::Contains("Masked keys still add a little here: the finite mask_fill leaves them up to 0.25 of the weight."));
  CHECK_THAT(step(f, "masked").note, !Catch::Contains("underflows to 0 wherever"));
  // 210 keys of equal score: 1/210 each, below the 0.005 the sentences name; nothing is blocked
  std::string scores = "[";
  for (int j = 0; j < 210; ++j) scores += j ? ", 0" : "0";
  const Trace u = trace_of(R"({"scores": [)" + scores + "]]}");
  const auto thin = words(u, "weights");
  CHECK_THAT(thin, !Catch::Contains("blocked"));
  CHECK_THAT(thin, Catch::Contains("Row \"t0\" puts its attention thinly over 210 keys, none getting 0.005 or more (the most, 0.0048, on \"s0\")"));
}

TEST_CASE("explain: an independent reader's findings, each said as this run has it", "[explain][claims]") {
  // W_q the identity: q = x, no "learned projection"
  const auto q = words(example("cat_sat"), "q");
  CHECK_THAT(q, !Catch::Contains("a learned projection"));
  CHECK_THAT(q, Catch::Contains("Here W_q is the identity, so q = x: each token looks for exactly what it is"));
  // grouped-query heads share keys and values: not "its own slice of q, k and v"
  const auto heads = words(example("gqa_4_heads_2_kv"), "q.heads");
  CHECK_THAT(heads, !Catch::Contains("its own slice of q, k and v"));
  CHECK_THAT(heads, Catch::Contains("each shared by a group of 2 query heads, so the heads of a group read the same keys and values"));
  // a padding row does not see itself
  const auto x = words(example("padding_batch2"), "x");
  CHECK_THAT(x, !Catch::Contains("(itself included)"));
  CHECK_THAT(x, Catch::Contains("a real token's row sees itself, a padding row only the real tokens"));
  // one pair: no early and late pairs
  const Trace rope = example("rope_hs2");
  CHECK_THAT(words(rope, "rope.cos"), !Catch::Contains("Early pairs spin fast"));
  CHECK_THAT(words(rope, "rope.cos"), Catch::Contains("turns the head's one pair of features (R = 2) by p · θ⁰ = p radians"));
  // the scaling, not the mask, comes next after the scores
  CHECK_THAT(words(rope, "scores"), !Catch::Contains("the mask blocks the others next"));
  CHECK_THAT(words(rope, "scores"), Catch::Contains("(a later step, the mask, blocks the others)"));
  // with two or more pairs the angle between the whole vectors does not turn by m − n: each pair's does, by (m − n) · θ_i
  const auto keys = words(example("llama_like"), "k.rope");
  CHECK_THAT(keys, !Catch::Contains("only the angle between a query and a key changes"));
  CHECK_THAT(keys, Catch::Contains("turns by (m − n) · θ_i"));
  // the projection as its formula writes it: the bias said where there is one, the torch layout's transpose
  CHECK_THAT(words(example("bert_pair"), "q"), Catch::Contains("It is x · W_q + b_q, a learned projection plus a learned bias"));
  CHECK_THAT(words(example("raschka_blog_dk24_dv28"), "q"), Catch::Contains("It is x · W_qᵀ, a learned projection"));
  // the context's four largest weights, so bert_pair's 0.69 on "on" is not hidden in "…"; a head of one feature lands in one column
  CHECK_THAT(words(example("bert_pair"), "context"), Catch::Contains("+ 0.69 · v[\"on\"]"));
  CHECK_THAT(words(example("gqa_4_heads_2_kv"), "merged"), Catch::Contains("head h's one feature (hs = 1) lands in column h"));
  // a context sum that leaves out keys of some weight (below 0.005) says so with "+ …"
  CHECK_THAT(words(example("raschka_blog_dk24_dv28"), "context"), Catch::Contains("0.60 · v[\"first\"] + …."));
}
