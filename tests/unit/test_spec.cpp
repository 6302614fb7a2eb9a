// Input format v1: what is accepted and how, and every refusal's exact message (JSON path + expectation).
#include "attn/core/suggest.hpp"
#include "helpers.hpp"

using namespace attn;
using attn::test::error_of;

namespace {

// A valid 2-token, C = 3 spec with `extra` spliced in at the top level.
std::string base(const std::string& extra = "", const std::string& weights = R"("W_q": "identity", "W_k": "identity", "W_v": "identity")") {
  return R"({"tokens": ["cat", "sat"], "embeddings": [[1, 0, 1], [0, 1, 1]], "weights": {)" + weights + "}" +
         (extra.empty() ? "" : ", " + extra) + "}";
}

}  // namespace

TEST_CASE("a minimal spec is read with its defaults", "[spec]") {
  Spec s = parse_spec(base(), "t.json");
  CHECK(s.mode == Mode::Self);
  CHECK(s.H == 1);
  CHECK(s.B == 1);
  CHECK(s.T == 2);
  CHECK(s.S == 2);
  CHECK(s.C == 3);
  CHECK_FALSE(s.batched);
  CHECK(s.scale_kind == ScaleKind::SqrtDk);
  CHECK(s.x.shape() == Shape{1, 2, 3});
  CHECK(s.tokens == Labels{{"cat", "sat"}});
  CHECK(s.source_tokens == s.tokens);
  REQUIRE(s.w.W_q);
  CHECK(s.w.W_q->values()[0] == 1);
  CHECK(s.w.W_q->values()[1] == 0);
}

TEST_CASE("sentence is split on whitespace; tokens default to t0..", "[spec]") {
  Spec s = parse_spec(R"({"sentence": "  The   cat\tsat ", "embeddings": [[1],[2],[3]], "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}})", "t");
  CHECK(s.tokens == Labels{{"The", "cat", "sat"}});
  Spec d = parse_spec(R"({"embeddings": [[1],[2]], "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}})", "t");
  CHECK(d.tokens == Labels{{"t0", "t1"}});
}

TEST_CASE("multi-head defaults to 2 heads; per-head weights set H and are stacked", "[spec]") {
  const auto mh = R"({"mode": "multi-head", "embeddings": [[1, 0, 1, 0]], "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}})";
  CHECK(parse_spec(mh, "t").H == 2);
  // Two heads of hs = 1 on C = 2: head 0's column is [1, 2], head 1's is [3, 4].
  Spec s = parse_spec(R"({"embeddings": [[1, 1]], "weights": {"W_q": [[[1], [2]], [[3], [4]]], "W_k": "identity", "W_v": "identity"}})", "t");
  CHECK(s.H == 2);
  REQUIRE(s.w.W_q);
  CHECK(s.w.W_q->shape() == Shape{2, 2});
  CHECK(std::vector<Scalar>(s.w.W_q->values().begin(), s.w.W_q->values().end()) == std::vector<Scalar>{1, 3, 2, 4});
}

TEST_CASE("torch layout weights are stored transposed (x@W form)", "[spec]") {
  Spec s = parse_spec(base(R"("layout": "torch")", R"("W_q": [[1, 2, 3], [4, 5, 6], [7, 8, 9]], "W_k": "identity", "W_v": "identity")"), "t");
  REQUIRE(s.w.W_q);
  const auto v = s.w.W_q->values();
  CHECK(v[1] == 4);  // [0][1] of x@W = [1][0] of torch
  CHECK(v[3] == 2);
}

TEST_CASE("cross with fused weights splits W_qkv into three projections", "[spec]") {
  Spec s = parse_spec(R"({"mode": "cross", "embeddings": [[1, 0]], "source": {"embeddings": [[0, 1], [1, 1], [2, 2]]},
    "weights": {"W_qkv": [[1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12]]}})", "t");
  CHECK(s.S == 3);
  CHECK(s.source_tokens == Labels{{"s0", "s1", "s2"}});
  REQUIRE(s.w.W_k);
  CHECK(std::vector<Scalar>(s.w.W_k->values().begin(), s.w.W_k->values().end()) == std::vector<Scalar>{3, 4, 9, 10});
  CHECK_FALSE(s.w.W_qkv);
}

TEST_CASE("random fills what the input does not give, the same way every time", "[spec]") {
  const std::string text = R"({"mode": "multi-head", "heads": 2, "random": {"seed": 7, "B": 2, "T": 3, "C": 4, "fused": true, "output_projection": true}})";
  Spec a = parse_spec(text, "t"), b = parse_spec(text, "t");
  CHECK(a.batched);
  CHECK(a.x.shape() == Shape{2, 3, 4});
  REQUIRE(a.w.W_qkv);
  CHECK(a.w.W_qkv->shape() == Shape{4, 12});
  REQUIRE(a.w.W_o);
  CHECK(std::vector<Scalar>(a.x.values().begin(), a.x.values().end()) == std::vector<Scalar>(b.x.values().begin(), b.x.values().end()));
  // nn.Linear's range: |w| <= 1/sqrt(C) = 0.5
  for (Scalar v : a.w.W_qkv->values()) CHECK(std::fabs(v) <= 0.5f);
  CHECK(a.tokens == Labels{{"t0", "t1", "t2"}});
  CHECK(a.notes.size() == 3);
}

TEST_CASE("any non-negative 64-bit seed is accepted", "[spec]") {
  CHECK(parse_spec(R"({"random": {"seed": 18446744073709551615, "T": 2, "C": 2}})", "t").x.shape() == Shape{1, 2, 2});
}

TEST_CASE("scores as an entry point default to no scaling", "[spec]") {
  Spec s = parse_spec(R"({"mode": "causal", "scores": [[1, 2], [3, 4]]})", "t");
  CHECK(s.entry == Entry::Scores);
  CHECK(s.scale_kind == ScaleKind::None);
  CHECK(s.scores.shape() == Shape{1, 1, 2, 2});
  CHECK(s.C == 0);
}

// ---- bad input: every refusal names the JSON path and what was expected --------------------

TEST_CASE("bad input is refused with the JSON path and the expectation", "[spec][bad]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {base("", R"("W_q": [[1, 0], [0, 1], [1, 1]], "W_k": "identity", "W_v": "identity")"),
       "weights.W_k: \"identity\" is [3, 3], but dk = 2 (from weights.W_q): give a [C, dk] = [3, 2] matrix"},
      {base(R"("heads": 2)", R"("W_q": [[1, 0, 0, 0, 0], [0, 1, 0, 0, 0], [0, 0, 1, 0, 0]], "W_k": "identity", "W_v": "identity")"),
       "weights.W_q: expected [3, dk] with dk divisible by H = 2, got [3, 5]"},
      {base(R"("layout": "torch")", R"("W_q": [[1, 0, 1], [0, 1, 1]], "W_k": [[1, 0], [0, 1], [1, 1]], "W_v": "identity")"),
       "weights.W_k: expected [dk, C] = [dk, 3] (C = 3, the embeddings' width), got [3, 2]; that is the x@W layout's [C, dk]: set \"layout\": \"x@W\", or transpose it"},
      {base("", R"("W_q": [[1, 0], [0, 1], [1, 1]], "W_k": [[1, 0, 0], [0, 1, 0], [0, 0, 1]], "W_v": "identity")"),
       "weights.W_k: expected [C, dk] = [3, 2] (dk = 2, from weights.W_q), got [3, 3]"},
      {base("", R"("W_q": "identity", "W_k": "identity", "W_v": [[1, 0], [0, 1], [1, 1]], "W_o": [[1, 0, 0], [0, 1, 0], [0, 0, 1]])"),
       "weights.W_o: expected [dv, Co] = [2, Co], got [3, 3]"},
      {base("", R"("W_q": "identity", "W_k": "identity", "W_v": [[1, 0], [0, 1], [1, 1]], "W_o": "identity", "b_o": [1, 2, 3])"),
       "weights.b_o: expected [Co] = [2], got [3]"},
      {"{\"mode\": \"self\",\n  \"tokens\": [\"a\",]\n}", "test.json:2:17: invalid JSON: a comma before ']' with nothing after it (JSON allows no trailing comma)"},
      {"[1, 2]", "(root): expected a JSON object (see docs/input-format.md), got an array of 2"},
      {base(R"("mode": "selff")"), "mode: expected one of \"self\", \"causal\", \"cross\", \"multi-head\", got \"selff\" (did you mean \"self\"?)"},
      {base(R"("mode": 3)"), "mode: expected one of \"self\", \"causal\", \"cross\", \"multi-head\", got the number 3"},
      {base(R"("heads": 2)"), "heads: H = 2 does not divide C = 3 (each head gets hs = C / H features)"},
      {base(R"("heads": 0)"), "heads: expected a positive integer, got the number 0"},
      {base(R"("heads": 1.5)"), "heads: expected a positive integer, got the number 1.5"},
      {base(R"("tokenz": ["a"])"), "tokenz: unknown key (did you mean \"tokens\"?); allowed here: title, comment, mode, heads, tokens, sentence, embeddings, source, weights, layout, scale, padding, q, k, v, scores, random, expect, attn_mask, causal_align, masked_row, mask_fill, dv, positions, rope, window, alibi, softcap, kv_heads, checkpoint, token_ids, sentence_b, token_type_ids, backward, exercise"},
      {base("", R"("W_q": "identity", "W_k": "identity", "Wv": "identity")"), "weights.Wv: unknown key (did you mean \"W_v\"?); allowed here: W_q, W_k, W_v, W_qkv, W_o, b_q, b_k, b_v, b_qkv, b_o"},
      {base("", R"("W_q": "identity", "W_k": "identity")"), "weights.W_v: required: a [C, dv] = [3, dv] matrix, per-head [H, C, h], or \"identity\" (or give W_qkv)"},
      {base("", R"("W_q": "ident", "W_k": "identity", "W_v": "identity")"), "weights.W_q: expected a [C, dk] = [3, dk] matrix, per-head [H, C, h], or \"identity\", got the string \"ident\""},
      {R"({"tokens": ["cat"], "embeddings": [[1, 0, 1], [0, 1, 1]], "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}})",
       "tokens: expected 2 labels (one per position, T = 2), got 1"},
      {R"({"embeddings": [[1, 0, 1], [0, 1]], "weights": {}})", "embeddings[1]: expected 3 entries like the first row at this depth, got 2 (ragged array)"},
      {R"({"embeddings": [[1, 0, 1], [0, "1", 1]], "weights": {}})", "embeddings[1][1]: expected a number, got the string \"1\""},
      {R"({"embeddings": [[1, 0, 1e39]], "weights": {}})", "embeddings[0][2]: 1e+39 does not fit in float32 (largest finite is about 3.4028e+38)"},
      {R"({"embeddings": [[1e400]], "weights": {}})", "test.json:1:18: invalid JSON: number 1e400 is out of range"},
      {R"({"embeddings": [[NaN]], "weights": {}})", "test.json:1:18: embeddings[0][0]: NaN is not a JSON number (JSON has no NaN or Infinity); write a finite number"},
      {R"({"embeddings": [[1, "inf"]], "weights": {}})", "embeddings[0][1]: infinity is not allowed here (expected a finite number)"},
      {R"({"mode": "self", "embeddings": [[1]], "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}, "mask_fill": "nan"})", "mask_fill: expected \"-inf\" or a finite number such as -1e9, got NaN"},
      {R"({"embeddings": [], "weights": {}})", "embeddings: expected a [T, C] or [B, T, C] array of numbers, got an empty array"},
      {R"({"embeddings": [[]], "weights": {}})", "embeddings[0]: expected a [T, C] or [B, T, C] array of numbers, got an empty array"},
      {R"({"embeddings": [1, 2], "weights": {}})", "embeddings: expected a [T, C] or [B, T, C] array of numbers, got shape [2]"},
      {R"({"embeddings": "cat sat", "weights": {}})", "embeddings: expected a [T, C] or [B, T, C] array of numbers (or {\"npy\": \"file.npy\"}), got the string \"cat sat\""},
      {R"({"weights": {}})", "embeddings: required: a [T, C] or [B, T, C] array of numbers (or a \"random\" block with T and C to generate it)"},
      {R"({"embeddings": [[1]]})", "weights: required: an object with W_q, W_k, W_v (or W_qkv), or a \"random\" block to generate them"},
      {base(R"("mode": "cross")"), "source: required for mode \"cross\": {\"tokens\": [...], \"embeddings\": [S, Cs] or [B, S, Cs]}"},
      {base(R"("source": {"embeddings": [[1, 1, 1]]})"), "source: only mode \"cross\" reads a source sequence (mode is \"self\")"},
      {base(R"("mode": "cross", "source": {"embeddings": [[1, 1]]})"), "weights.W_k: \"identity\" is [2, 2], but dk = 3 (from weights.W_q): give a [Cs, dk] = [2, 3] matrix"},
      {base(R"("mode": "cross", "source": {"embeddings": [[[1, 1]]]})"), "source.embeddings: expected [1, 2], got [1, 1, 2] (source is [S, Cs]: the batch of embeddings)"},
      {base(R"("mode": "cross", "source": {"embedding": [[1, 1, 1]]})"), "source.embedding: unknown key (did you mean \"embeddings\"?); allowed here: tokens, sentence, embeddings"},
      {base(R"("sentence": "")"), "sentence: give tokens or sentence, not both"},
      {R"({"sentence": "a b c", "embeddings": [[1], [2]], "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}})", "sentence: expected 2 labels (one per position, T = 2), got 3"},
      {base(R"("scale": "sqrt")"), "scale: expected \"sqrt_dk\", \"none\" or a non-zero number such as 0.125, got \"sqrt\" (did you mean \"sqrt_dk\"?)"},
      {base(R"("scale": 0)"), "scale: expected a finite, non-zero number, got 0"},
      {base(R"("layout": "pytorch")"), "layout: expected one of \"x@W\", \"torch\", got \"pytorch\" (did you mean \"torch\"?)"},
      {base(R"("padding": {"lengths": [3]})"), "padding.lengths[0]: expected an integer in 1..2 (the key length T = 2), got the number 3"},
      {base(R"("padding": {"lengths": [1, 1]})"), "padding.lengths: expected an array of 1 lengths (one per batch row, B = 1), got an array of 2"},
      {base(R"("padding": {"length": [1]})"), "padding.length: unknown key (did you mean \"lengths\"?); allowed here: lengths"},
      {base("", R"("W_qkv": [[1]], "W_q": "identity")"), "weights.W_qkv: give either W_qkv (fused) or W_q, W_k, W_v (separate), not both"},
      {base("", R"("W_qkv": [[1, 2, 3, 4], [4, 5, 6, 7], [7, 8, 9, 10]])"),
       "weights.W_qkv: expected [C, 2·dk + dv] = [3, 3·dk] with dk = dv (q | k | v; give W_o or \"dv\" for another value width), got [3, 4]"},
      {base("", R"("W_q": "identity", "W_k": "identity", "W_v": "identity", "b_q": [1, 2])"), "weights.b_q: expected [dk] = [3], got [2]"},
      {base("", R"("W_q": "identity", "W_k": "identity", "W_v": "identity", "b_o": [1, 2, 3])"), "weights.b_o: needs weights.W_o (b_o is the output projection's bias)"},
      {base(R"("mode": "multi-head", "heads": 1)"), "heads: mode \"multi-head\" needs H > 1, got 1"},
      {base(R"("q": [[1]])"), "embeddings: cannot be combined with q, k, v (projections are skipped when q, k, v are given)"},
      {R"({"q": [[1, 2]], "v": [[1, 2]]})", "k: required: q and k are given together (v is optional)"},
      {R"({"q": [[1, 2]], "k": [[1, 2], [3, 4]], "v": [[1, 2], [3, 4]], "alibi": true})",
       "alibi: self-attention with S = 2 keys for T = 1 queries: where the queries stand among the keys is not given; use mode \"causal\" with "
       "\"causal_align\": \"bottom_right\" (the queries are the last T of the S tokens) or mode \"cross\" (another sequence)"},
      {R"({"q": [[1, 0], [0, 1]], "k": [[1, 0, 0], [0, 1, 0]]})", "k: expected [2, 2], got [2, 3] (keys are as wide as the queries: dk = 2, the width of q)"},
      {R"({"q": [[1, 0, 1], [0, 1, 1]], "k": [[1, 0, 0], [0, 1, 0]], "heads": 2})", "heads: H = 2 does not divide dk = 3 (the width of q and k; each head gets hs = dk / H features)"},
      {R"({"mode": "cross", "heads": 2, "random": {"seed": 1, "T": 2, "C": 4, "dk": 2}, "weights": {"W_q": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]}})",
       "random.dk: 2 disagrees with weights.W_q (dk = 4)"},
      {R"({"random": {"seed": 1, "T": 2, "C": 4, "Cs": 3}})", "random.Cs: is the width of a cross-attention source (mode is \"self\")"},
      {R"({"random": {"seed": 1, "T": 2, "C": 4, "Co": 3}})", "random.Co: is W_o's output width: it needs \"output_projection\": true"},
      {R"({"scores": [[[[[1]]]]]})", "scores: expected a [T, S], [B, T, S] or [B, H, T, S] array, got shape [1, 1, 1, 1, 1]"},
      {R"({"scores": [[1, 2], [3, 4]], "scale": "sqrt_dk"})", "scale: \"sqrt_dk\" needs d_k, which given scores do not carry: give a number, or \"none\" (the default: scores taken as already scaled)"},
      {R"({"scores": [[1, 2], [3, 4]], "embeddings": [[1]]})", "embeddings: cannot be combined with scores (scores are the starting point)"},
      {R"({"random": {"seed": -1, "T": 2, "C": 2}})", "random.seed: expected a non-negative integer, got the number -1"},
      {R"({"random": {"seed": 1, "T": 2, "C": 2, "fused": "yes"}})", "random.fused: expected true or false, got the string \"yes\""},
      {R"({"random": {"seed": 1, "T": 0, "C": 2}})", "random.T: expected a positive integer, got the number 0"},
      {R"({"scores": [[[[1]]], [[[2], [3]]]]})", "scores[1][0]: expected 1 entry like the first row at this depth, got 2 (ragged array)"},
      {R"({"embeddings": [[1, 2]], "random": {"seed": 1, "C": 3}})", "random.C: 3 disagrees with embeddings (C = 2)"},
      {R"({"title": "a", "title": "b"})", "title: duplicate key \"title\" in test.json"},
      {R"({"weights": {"W_q": 1, "W_q": 2}})", "weights.W_q: duplicate key \"W_q\" in test.json"},
      {R"({"embeddings": [[1e30, 1e30]], "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}})",
       "scores: the values leave float32's range (inf at flat index 0); scale the inputs down"},
  };
  for (const auto& [text, message] : cases) {
    INFO(text);
    CHECK(error_of(text) == message);
  }
}

TEST_CASE("a random block takes T (and S) from the labels when it does not say them", "[spec][random]") {
  const Spec s = parse_spec(R"({"sentence": "the cat sat", "random": {"seed": 1, "C": 4}})", "t.json");
  CHECK(s.T == 3);
  const Spec c = parse_spec(R"({"mode": "cross", "tokens": ["a", "b"], "source": {"sentence": "x y z w"}, "random": {"seed": 1, "C": 4}})", "t.json");
  CHECK(c.T == 2);
  CHECK(c.S == 4);
  CHECK(error_of(R"({"sentence": "the cat sat", "random": {"seed": 1, "T": 4, "C": 4}})") ==
        "sentence: expected 4 labels (one per position, T = 4), got 3");
}

TEST_CASE("counts say step or steps", "[spec]") {
  CHECK(count_of(1, "step") == "1 step");
  CHECK(count_of(0, "step") == "0 steps");
  CHECK(count_of(3, "step") == "3 steps");
}

TEST_CASE("a seeded fused W_qkv split for cross attention gets its values first", "[spec][random]") {
  // the split must copy the drawn values: the same as the self-mode draw of the same stream, every time
  const auto cross = parse_spec(R"({"mode": "cross", "heads": 2, "random": {"seed": 0, "T": 2, "S": 3, "C": 4, "fused": true}})", "t");
  const auto self = parse_spec(R"({"mode": "self", "heads": 2, "random": {"seed": 0, "T": 2, "C": 4, "fused": true}})", "t");
  REQUIRE(cross.w.W_q);
  REQUIRE(self.w.W_qkv);
  for (std::int64_t i = 0; i < 4; ++i)
    for (std::int64_t j = 0; j < 4; ++j) {
      CHECK(cross.w.W_q->data()[i * 4 + j] == self.w.W_qkv->data()[i * 12 + j]);
      CHECK(cross.w.W_v->data()[i * 4 + j] == self.w.W_qkv->data()[i * 12 + 8 + j]);
    }
}

TEST_CASE("self-attention over given keys of their own count: every query sees every key, and a note says so", "[spec]") {
  const attn::Spec s = attn::parse_spec(R"({"mode": "self", "q": [[1, 0], [0, 1]], "k": [[1, 0], [0, 1], [1, 1]], "v": [[1, 0], [0, 1], [1, 1]]})",
                                        "t.json");
  CHECK(s.T == 2);
  CHECK(s.S == 3);
  CHECK_FALSE(s.masking());
  CHECK(std::find_if(s.notes.begin(), s.notes.end(), [](const std::string& n) { return n.starts_with("self: S = 3 keys for T = 2 queries"); }) !=
        s.notes.end());
  auto be = attn::make_cpu_backend();
  const attn::Trace t = attn::run_pipeline(s, *be);
  const auto& w = t.find("weights")->value;
  // row 0: softmax([1, 0, 1] / √2)
  const double e = std::exp(-1 / std::sqrt(2.0));
  CHECK(w.data()[0] == Approx(1 / (2 + e)));
  CHECK(w.data()[1] == Approx(e / (2 + e)));
  CHECK(t.config.source_tokens[0].size() == 3);
}

TEST_CASE("did you mean: a swap of neighbours is one edit, and equally close names are all named", "[spec]") {
  using V = std::vector<std::string_view>;
  const V options{"steps", "step", "from", "to"};
  CHECK(attn::closest_all("stesp", options) == V{"steps", "step"});  // one swap from steps, one deletion from step
  CHECK(attn::did_you_mean("stesp", options) == " (did you mean \"steps\" or \"step\"?)");
  CHECK(attn::closest_all("setps", options) == V{"steps"});  // a swap alone: one edit, not two
  CHECK(attn::closest("wieghts", V{"weights", "scores"}) == "weights");
  CHECK(attn::either(V{"a", "b", "c"}, "--", "") == "--a, --b or --c");
  CHECK(attn::closest_all("zzzzzz", options).empty());
}
