// The pipeline's steps, shapes and numbers: document walkthroughs and properties that must hold
// for every input (rows sum to 1, causal zeros, equivalences between ways of saying the same thing).
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "attn/core/steps.hpp"
#include "helpers.hpp"

using namespace attn;
using namespace attn::test;

namespace {

const std::string kIdentity = R"("weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"})";

// A tensor's values as JSON text that reads back to the same float32 values.
std::string json_array(const Tensor& t, std::size_t axis = 0, std::int64_t offset = 0) {
  const auto& s = t.shape();
  std::int64_t stride = 1;
  for (std::size_t a = axis + 1; a < s.size(); ++a) stride *= s[a];
  std::string out = "[";
  for (std::int64_t i = 0; i < s[axis]; ++i) {
    if (i) out += ", ";
    out += axis + 1 == s.size() ? fmt::format("{:.9g}", t.data()[offset + i]) : json_array(t, axis + 1, offset + i * stride);
  }
  return out + "]";
}

// Columns [c0, c0 + w) of a (..., n) tensor.
Tensor cols(const Tensor& t, std::int64_t c0, std::int64_t w) {
  const auto n = t.shape().back(), rows = t.size() / n;
  Shape shape = t.shape();
  shape.back() = w;
  std::vector<Scalar> v;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < w; ++c) v.push_back(t.data()[r * n + c0 + c]);
  return Tensor(shape, v);
}

void check_rows_sum_to_one(const Step& weights) {
  const auto n = weights.value.shape().back();
  const auto rows = weights.value.size() / n;
  REQUIRE(weights.row_sums);
  for (std::int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      const Scalar w = weights.value.data()[r * n + j];
      CHECK(w >= 0.0f);
      CHECK(w <= 1.0f);
      s += w;
    }
    CHECK(s == Approx(1.0).margin(1e-5));
    CHECK(weights.row_sums->data()[r] == Approx(1.0).margin(1e-5));
  }
}

std::string random_spec(const std::string& mode, int heads, int seed, const std::string& extra = "") {
  return fmt::format(R"({{"mode": "{}", "heads": {}, "random": {{"seed": {}, "B": 2, "T": 5, "S": 3, "C": 8, "output_projection": true}}{}}})",
                     mode, heads, seed, extra.empty() ? "" : ", " + extra);
}

}  // namespace

TEST_CASE("cat sat (003 Example 1): the true weights and outputs", "[pipeline][walkthrough]") {
  const Trace t = trace_of(R"({"tokens": ["cat", "sat"], "embeddings": [[1, 0, 1], [0, 1, 1]], )" + kIdentity + "}");
  CHECK(ids(t) == std::vector<std::string>{"x", "q", "k", "v", "k.T", "scores", "scaled", "weights", "context"});
  const auto& w = step(t, "weights").value;
  CHECK(w.shape() == Shape{2, 2});
  // softmax([2, 1] / √3): 1 / (1 + exp(-1/√3)) = 0.640457...
  const double p = 1.0 / (1.0 + std::exp(-1.0 / std::sqrt(3.0)));
  CHECK(w.data()[0] == Approx(p).epsilon(1e-6));
  CHECK(w.data()[1] == Approx(1 - p).epsilon(1e-6));
  const auto& ctx = step(t, "context").value;
  CHECK(ctx.data()[0] == Approx(p).epsilon(1e-6));
  CHECK(ctx.data()[1] == Approx(1 - p).epsilon(1e-6));
  CHECK(ctx.data()[2] == Approx(1.0).epsilon(1e-6));
  CHECK(step(t, "scores").value.data()[0] == 2.0f);
  CHECK(letters(step(t, "k.T").dims) == std::vector<std::string>{"C", "T"});
}

TEST_CASE("the masked 4×4 (000): the true rows, not the printed ones", "[pipeline][walkthrough]") {
  const Trace t = trace_of(R"({"mode": "causal", "scores": [[0.2, 0.3, 0.1, 0.4], [0.5, 0.2, 0.1, 0.2], [0.3, 0.4, 0.2, 0.1], [0.1, 0.3, 0.4, 0.2]]})");
  CHECK(ids(t) == std::vector<std::string>{"scores", "mask", "masked", "weights"});
  const auto& w = step(t, "weights").value;
  const std::vector<double> want = {1, 0, 0, 0, 0.5744, 0.4256, 0, 0, 0.3322, 0.3672, 0.3006, 0, 0.2138, 0.2612, 0.2887, 0.2363};
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(w.data()[i] == Approx(want[i]).margin(5e-5));
  CHECK(step(t, "mask").kind == ValueKind::Mask);
  CHECK(std::isinf(step(t, "masked").value.data()[1]));
}

TEST_CASE("The cat sat (003 Example 2): the document's numbers need scale none", "[pipeline][walkthrough]") {
  const std::string spec = R"({"sentence": "The cat sat", "embeddings": [[1,0,0,0],[0,1,0,0],[0,0,1,0]],
    "weights": {"W_q": [[1,0,0,1],[0,1,0,1],[0,0,1,1],[1,1,1,0]], "W_k": [[0,1,1,0],[1,0,1,0],[1,1,0,0],[0,0,0,1]],
                "W_v": [[1,1,0,0],[0,1,1,0],[0,0,1,1],[1,0,0,1]]})";
  const Trace unscaled = trace_of(spec + R"(, "scale": "none"})");
  CHECK(unscaled.find("scaled") == nullptr);
  const auto& w = step(unscaled, "weights").value;
  CHECK(w.data()[0] == Approx(1 / (1 + 2 * std::exp(1.0))).epsilon(1e-6));  // 0.155
  CHECK(w.data()[1] == Approx(std::exp(1.0) / (1 + 2 * std::exp(1.0))).epsilon(1e-6));  // 0.422
  const Trace scaled = trace_of(spec + "}");
  CHECK(step(scaled, "weights").value.data()[0] == Approx(1 / (1 + 2 * std::exp(0.5))).epsilon(1e-6));  // 0.2327
}

TEST_CASE("step ids and shapes for multi-head, fused, with output projection", "[pipeline]") {
  const Trace t = trace_of(R"({"mode": "multi-head", "heads": 8, "random": {"seed": 0, "B": 2, "T": 4, "C": 512, "fused": true, "output_projection": true}})");
  CHECK(ids(t) == std::vector<std::string>{"x", "qkv", "q", "k", "v", "q.view", "q.heads", "k.view", "k.heads", "v.view",
                                           "v.heads", "k.T", "scores", "scaled", "weights", "context", "merged", "output"});
  CHECK(step(t, "qkv").value.shape() == Shape{2, 4, 1536});
  CHECK(step(t, "q.view").value.shape() == Shape{2, 4, 8, 64});
  CHECK(letters(step(t, "q.view").dims) == std::vector<std::string>{"B", "T", "H", "hs"});
  CHECK(step(t, "q.heads").value.shape() == Shape{2, 8, 4, 64});
  CHECK(step(t, "k.T").value.shape() == Shape{2, 8, 64, 4});
  CHECK(step(t, "scores").value.shape() == Shape{2, 8, 4, 4});
  CHECK(step(t, "context").value.shape() == Shape{2, 8, 4, 64});
  CHECK(step(t, "merged").value.shape() == Shape{2, 4, 512});
  CHECK(step(t, "output").value.shape() == Shape{2, 4, 512});
  CHECK(t.config.scale == "1/√64 = 0.125");
  CHECK(t.config.scale_factor == 0.125f);
}

TEST_CASE("q.heads is q with head h's columns moved to their own matrix", "[pipeline]") {
  const Trace t = trace_of(random_spec("multi-head", 2, 3));
  const auto& q = step(t, "q").value;        // (B, T, C) = (2, 5, 8)
  const auto& qh = step(t, "q.heads").value;  // (B, H, T, hs) = (2, 2, 5, 4)
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t h = 0; h < 2; ++h)
      for (std::int64_t i = 0; i < 5; ++i)
        for (std::int64_t d = 0; d < 4; ++d)
          CHECK(qh.data()[((b * 2 + h) * 5 + i) * 4 + d] == q.data()[(b * 5 + i) * 8 + h * 4 + d]);
  // merged undoes the split exactly
  const auto& ctx = step(t, "context").value;
  const auto& merged = step(t, "merged").value;
  CHECK(merged.data()[(1 * 5 + 2) * 8 + 1 * 4 + 3] == ctx.data()[((1 * 2 + 1) * 5 + 2) * 4 + 3]);
}

TEST_CASE("softmax rows sum to 1 in every mode", "[pipeline][property]") {
  for (int seed = 0; seed < 4; ++seed) {
    check_rows_sum_to_one(step(trace_of(random_spec("self", 1, seed)), "weights"));
    check_rows_sum_to_one(step(trace_of(random_spec("causal", 2, seed)), "weights"));
    check_rows_sum_to_one(step(trace_of(random_spec("cross", 4, seed)), "weights"));
    check_rows_sum_to_one(step(trace_of(random_spec("multi-head", 2, seed, R"("padding": {"lengths": [3, 1]})")), "weights"));
  }
}

TEST_CASE("causal weights above the diagonal are exactly 0", "[pipeline][property]") {
  const Trace t = trace_of(random_spec("causal", 2, 11));
  const auto& w = step(t, "weights").value;  // (B, H, T, T)
  const auto& m = step(t, "masked").value;
  for (std::int64_t bh = 0; bh < 4; ++bh)
    for (std::int64_t i = 0; i < 5; ++i)
      for (std::int64_t j = 0; j < 5; ++j) {
        const auto at = (bh * 5 + i) * 5 + j;
        if (j > i) {
          CHECK(w.data()[at] == 0.0f);
          CHECK(m.data()[at] == -std::numeric_limits<Scalar>::infinity());
        } else {
          CHECK(w.data()[at] > 0.0f);
        }
      }
  CHECK(step(t, "mask").value.shape() == Shape{5, 5});
}

TEST_CASE("padding gives padded keys exactly 0 weight and combines with causal", "[pipeline][property]") {
  const Trace t = trace_of(random_spec("causal", 1, 5, R"("padding": {"lengths": [5, 2]})"));
  const auto& w = step(t, "weights").value;  // (B, T, T) = (2, 5, 5)
  CHECK(step(t, "mask").value.shape() == Shape{2, 5, 5});
  for (std::int64_t i = 0; i < 5; ++i)
    for (std::int64_t j = 0; j < 5; ++j) {
      const bool keep = j <= i && j < 2;
      CHECK((w.data()[(5 + i) * 5 + j] > 0.0f) == keep);
    }
}

TEST_CASE("each head equals single-head attention on that head's columns", "[pipeline][property]") {
  const Trace t = trace_of(random_spec("causal", 2, 21));
  const auto& q = step(t, "q").value;
  const auto& k = step(t, "k").value;
  const auto& v = step(t, "v").value;
  const auto& w = step(t, "weights").value;  // (2, 2, 5, 5)
  const auto& ctx = step(t, "context").value;  // (2, 2, 5, 4)
  for (std::int64_t h = 0; h < 2; ++h) {
    const Trace one = trace_of(fmt::format(R"({{"mode": "causal", "q": {}, "k": {}, "v": {}}})", json_array(cols(q, h * 4, 4)),
                                           json_array(cols(k, h * 4, 4)), json_array(cols(v, h * 4, 4))));
    const auto& w1 = step(one, "weights").value;  // (2, 5, 5)
    const auto& c1 = step(one, "context").value;  // (2, 5, 4)
    for (std::int64_t b = 0; b < 2; ++b) {
      for (std::int64_t r = 0; r < 25; ++r) CHECK(w1.data()[b * 25 + r] == Approx(w.data()[(b * 2 + h) * 25 + r]).margin(1e-6));
      for (std::int64_t r = 0; r < 20; ++r) CHECK(c1.data()[b * 20 + r] == Approx(ctx.data()[(b * 2 + h) * 20 + r]).margin(1e-6));
    }
  }
}

TEST_CASE("heads = 1 is single-head attention: same steps and numbers as leaving heads out", "[pipeline][property]") {
  const std::string body = R"("random": {"seed": 9, "T": 3, "C": 4})";
  const Trace a = trace_of("{" + body + "}");
  const Trace b = trace_of(R"({"heads": 1, )" + body + "}");
  REQUIRE(ids(a) == ids(b));
  for (const auto& s : a.steps) CHECK(max_abs_diff(s.value, step(b, s.id).value) == 0.0);
}

TEST_CASE("cross-attention with source = x equals self-attention", "[pipeline][property]") {
  const std::string x = "[[0.5, -1, 2, 0.25], [1, 0, -0.5, 1], [0.1, 0.2, 0.3, 0.4]]";
  const std::string w = R"("weights": {"W_q": [[1,2,0,0],[0,1,0,1],[1,0,1,0],[0,0,2,1]], "W_k": [[0,1,1,0],[1,0,1,0],[1,1,0,0],[0,0,0,1]], "W_v": "identity"})";
  const Trace self = trace_of(R"({"heads": 2, "embeddings": )" + x + ", " + w + "}");
  const Trace cross = trace_of(R"({"mode": "cross", "heads": 2, "embeddings": )" + x + R"(, "source": {"embeddings": )" + x + "}, " + w + "}");
  for (const char* id : {"q", "k", "v", "scores", "weights", "context", "merged"}) {
    INFO(id);
    CHECK(max_abs_diff(step(self, id).value, step(cross, id).value) == 0.0);
  }
}

TEST_CASE("a fused W_qkv equals the three separate weights", "[pipeline][property]") {
  const std::string x = R"("embeddings": [[[1, 2], [3, -1], [0, 1]], [[2, 2], [-1, 0], [1, 1]]])";
  const Trace separate = trace_of("{" + x + R"(, "mode": "causal", "weights": {"W_q": [[1, 2], [3, 4]], "W_k": [[0, 1], [1, 0]], "W_v": [[2, 0], [0, 2]],
                                                 "b_q": [0.5, -0.5], "b_k": [0, 1], "b_v": [1, 1]}})");
  const Trace fused = trace_of("{" + x + R"(, "mode": "causal", "weights": {"W_qkv": [[1, 2, 0, 1, 2, 0], [3, 4, 1, 0, 0, 2]],
                                              "b_qkv": [0.5, -0.5, 0, 1, 1, 1]}})");
  CHECK(fused.find("qkv") != nullptr);
  CHECK(step(fused, "qkv").value.shape() == Shape{2, 3, 6});
  for (const char* id : {"q", "k", "v", "scores", "weights", "context"}) {
    INFO(id);
    CHECK(max_abs_diff(step(separate, id).value, step(fused, id).value) == 0.0);
  }
}

TEST_CASE("torch layout with Wᵀ equals x@W", "[pipeline][property]") {
  const std::string x = R"("embeddings": [[1, 2, 0], [0, 1, -1]], "heads": 1)";
  const Trace xw = trace_of("{" + x + R"(, "weights": {"W_q": [[1, 2, 3], [0, 1, 0], [2, 0, 1]], "W_k": "identity", "W_v": [[0, 1, 0], [1, 0, 0], [0, 0, 1]],
                                       "W_o": [[1, 0, 1], [0, 1, 0], [1, 1, 0]], "b_o": [1, 2, 3]}})");
  const Trace torch = trace_of("{" + x + R"(, "layout": "torch", "weights": {"W_q": [[1, 0, 2], [2, 1, 0], [3, 0, 1]], "W_k": "identity",
                                       "W_v": [[0, 1, 0], [1, 0, 0], [0, 0, 1]], "W_o": [[1, 0, 1], [0, 1, 1], [1, 0, 0]], "b_o": [1, 2, 3]}})");
  CHECK(step(torch, "q").formula == "q = x · W_qᵀ");
  for (const auto& s : xw.steps) {
    INFO(s.id);
    CHECK(max_abs_diff(s.value, step(torch, s.id).value) == 0.0);
  }
}

TEST_CASE("per-head weights [H, C, hs] equal the stacked [C, C] matrix", "[pipeline][property]") {
  const std::string x = R"("embeddings": [[1, 2, 0, 1], [0, 1, -1, 2]])";
  const Trace stacked = trace_of("{" + x + R"(, "heads": 2, "weights": {"W_q": [[1, 0, 2, 0], [0, 1, 0, 2], [1, 1, 0, 0], [0, 0, 1, 1]], "W_k": "identity", "W_v": "identity"}})");
  const Trace per_head = trace_of("{" + x + R"(, "weights": {"W_q": [[[1, 0], [0, 1], [1, 1], [0, 0]], [[2, 0], [0, 2], [0, 0], [1, 1]]], "W_k": "identity", "W_v": "identity"}})");
  CHECK(per_head.config.H == 2);
  CHECK(max_abs_diff(step(stacked, "q").value, step(per_head, "q").value) == 0.0);
  CHECK(max_abs_diff(step(stacked, "weights").value, step(per_head, "weights").value) == 0.0);
}

TEST_CASE("an input without a batch dimension gives the same numbers as B = 1, in 2-D shapes", "[pipeline][property]") {
  const std::string w = R"(, "weights": {"W_q": [[1, 2], [0, 1]], "W_k": [[1, 0], [1, 1]], "W_v": "identity"}, "mode": "causal"})";
  const Trace flat = trace_of(R"({"embeddings": [[1, 2], [3, 4], [5, 6]])" + w);
  const Trace batched = trace_of(R"({"embeddings": [[[1, 2], [3, 4], [5, 6]]])" + w);
  CHECK(letters(step(flat, "weights").dims) == std::vector<std::string>{"T", "T"});
  CHECK(letters(step(batched, "weights").dims) == std::vector<std::string>{"B", "T", "T"});
  for (const auto& s : flat.steps) {
    INFO(s.id);
    const auto& other = step(batched, s.id).value;
    CHECK(max_abs_diff(s.value, other.reshaped(s.value.shape())) == 0.0);
  }
}

TEST_CASE("cross-attention shapes use S for the source length", "[pipeline]") {
  const Trace t = trace_of(random_spec("cross", 2, 1));
  CHECK(ids(t) == std::vector<std::string>{"x", "source", "q", "k", "v", "q.view", "q.heads", "k.view", "k.heads", "v.view",
                                           "v.heads", "k.T", "scores", "scaled", "weights", "context", "merged", "output"});
  CHECK(letters(step(t, "scores").dims) == std::vector<std::string>{"B", "H", "T", "S"});
  CHECK(step(t, "scores").value.shape() == Shape{2, 2, 5, 3});
  CHECK(step(t, "k").formula == "k = source · W_k");
}

TEST_CASE("given scores with a numeric scale and values", "[pipeline]") {
  const Trace t = trace_of(R"({"scores": [[32, 48], [16, 40]], "scale": 0.125, "v": [[1, 0], [0, 1]]})");
  CHECK(ids(t) == std::vector<std::string>{"scores", "v", "scaled", "weights", "context"});
  CHECK(step(t, "scaled").value.data()[0] == 4.0f);
  CHECK(step(t, "context").value.data()[0] == Approx(1 / (1 + std::exp(2.0))).epsilon(1e-6));
}

TEST_CASE("every trace follows the step registry's order (given scores aside)", "[pipeline][registry]") {
  for (const auto& input : {std::string(R"({"mode": "causal", "heads": 2, "random": {"seed": 2, "B": 2, "T": 3, "C": 4, "fused": true,
                                            "output_projection": true}, "padding": {"lengths": [3, 2]}})"),
                            std::string(R"({"mode": "cross", "heads": 3, "random": {"seed": 2, "T": 2, "S": 4, "C": 6}})")}) {
    const Trace t = trace_of(input);
    for (std::size_t i = 1; i < t.steps.size(); ++i) {
      INFO(t.steps[i - 1].id << " before " << t.steps[i].id);
      CHECK(step_order(t.steps[i - 1].id) < step_order(t.steps[i].id));
    }
    for (const auto& s : t.steps) CHECK(step_order(s.id) < all_steps().size());
  }
  CHECK(step_from_id("k.T") == StepId::KT);
  CHECK(!step_from_id("kT"));
}

TEST_CASE("mistakes are found by name, and an unknown name lists them", "[pipeline][mistakes]") {
  CHECK(mistake_from_name("qk-swapped") == Mistake::QKSwapped);
  CHECK_THROWS_WITH(mistake_from_name("qk-swaped"), Catch::StartsWith("--mistake qk-swaped: no such mistake (did you mean \"qk-swapped\"?)"));
  for (const auto& m : all_mistakes()) CHECK(mistake_from_name(m.name) == m.mistake);
}

// ---- general widths: dk ≠ C, dv ≠ dk, Co ≠ dv, Cs ≠ C ------------------------------------------

TEST_CASE("d_in 3 → d_out 2: the numbers by hand", "[pipeline][general]") {
  const Trace t = trace_of(R"({"tokens": ["I", "like", "tea"], "embeddings": [[1, 0, 0], [0, 1, 1], [1, 1, 0]],
    "weights": {"W_q": [[1, 0], [0, 1], [1, 1]], "W_k": [[0, 1], [1, 0], [1, 0]], "W_v": [[1, 0], [0, 2], [0, 1]]}})");
  CHECK(t.config.general);
  CHECK(t.config.dk == 2);
  CHECK(t.config.dv == 2);
  CHECK(t.config.hs == 2);
  CHECK(letters(step(t, "q").dims) == std::vector<std::string>{"T", "dk"});
  CHECK(letters(step(t, "k.T").dims) == std::vector<std::string>{"dk", "T"});
  CHECK(letters(step(t, "context").dims) == std::vector<std::string>{"T", "dv"});
  CHECK(values(step(t, "q")) == std::vector<Scalar>{1, 0, 1, 2, 1, 1});
  CHECK(values(step(t, "k")) == std::vector<Scalar>{0, 1, 2, 0, 1, 1});
  // row "like": q = [1, 2] against keys [0, 1], [2, 0], [1, 1]
  CHECK(values(step(t, "scores")) == std::vector<Scalar>{0, 2, 1, 2, 2, 3, 1, 2, 2});
  CHECK(t.config.scale_factor == Approx(1 / std::sqrt(2.0)));
  const double e1 = std::exp(2 / std::sqrt(2.0)), e3 = std::exp(3 / std::sqrt(2.0));
  CHECK(step(t, "weights").value.data()[5] == Approx(e3 / (2 * e1 + e3)).epsilon(1e-6));
}

TEST_CASE("dv ≠ dk: values wider than keys give a context as wide as the values", "[pipeline][general]") {
  const Trace t = trace_of(R"({"embeddings": [[1, 0], [0, 1]], "heads": 1,
    "weights": {"W_q": "identity", "W_k": "identity", "W_v": [[1, 0, 2], [0, 1, 1]], "b_v": [0, 0, 1], "W_o": [[1, 0], [0, 1], [1, 1]]}})");
  CHECK(step(t, "v").value.shape() == Shape{2, 3});
  CHECK(step(t, "weights").value.shape() == Shape{2, 2});
  CHECK(step(t, "context").value.shape() == Shape{2, 3});
  CHECK(step(t, "output").value.shape() == Shape{2, 2});
  CHECK(letters(step(t, "output").dims) == std::vector<std::string>{"T", "Co"});
  const auto w = step(t, "weights").value.data();  // weights[0] = [a, 1 − a]
  const auto c = step(t, "context").value.data();
  CHECK(c[0] == Approx(w[0]));
  CHECK(c[2] == Approx(3 * w[0] + 2 * w[1]));  // v[:, 2] = [2 + 1, 1 + 1]
  CHECK(step(t, "output").value.data()[0] == Approx(c[0] + c[2]));
}

TEST_CASE("H divides dk and dv, not necessarily C", "[pipeline][general]") {
  const Trace t = trace_of(R"({"embeddings": [[1, 0, 1], [0, 1, 1]], "heads": 2,
    "weights": {"W_q": [[1, 0], [0, 1], [1, 1]], "W_k": [[1, 0], [0, 1], [1, 1]], "W_v": [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 1, 1]],
                "W_o": [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]], "b_o": [0, 0, 1]}})");
  CHECK(t.config.hs == 1);
  CHECK(t.config.hv == 2);
  CHECK(letters(step(t, "v.view").dims) == std::vector<std::string>{"T", "H", "hv"});
  CHECK(step(t, "v.heads").value.shape() == Shape{2, 2, 2});
  CHECK(step(t, "merged").value.shape() == Shape{2, 4});
  CHECK(step(t, "merged").formula == "merged = context.transpose(0, 1).reshape(T, dv)");  // dv, not C; no batch axis: the input has none
  CHECK(step(t, "output").value.shape() == Shape{2, 3});
  // each head on its own columns: head 1 uses q, k column 1 and v columns 2..3
  const Trace h1 = trace_of(R"({"embeddings": [[1, 0, 1], [0, 1, 1]],
    "weights": {"W_q": [[0], [1], [1]], "W_k": [[0], [1], [1]], "W_v": [[0, 1], [1, 0], [1, 1]]}})");
  CHECK(max_abs_diff(cols(step(t, "merged").value, 2, 2), step(h1, "context").value) < 1e-6);
}

TEST_CASE("general widths: fused, per-head and torch layouts equal the separate x@W weights", "[pipeline][general][property]") {
  const std::string x = R"("embeddings": [[1, 2, 0], [0, 1, -1], [2, 0, 1]], "heads": 2)";
  // W_q [3, 2], W_k [3, 2], W_v [3, 4], W_o [4, 3]
  const Trace separate = trace_of("{" + x + R"(, "weights": {"W_q": [[1, 0], [0, 1], [1, 1]], "W_k": [[0, 1], [1, 1], [1, 0]],
      "W_v": [[1, 0, 2, 0], [0, 1, 0, 1], [1, 1, 0, 0]], "W_o": [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]], "b_v": [1, 0, 0, 1]}})");
  const Trace fused = trace_of("{" + x + R"(, "weights": {"W_qkv": [[1, 0, 0, 1, 1, 0, 2, 0], [0, 1, 1, 1, 0, 1, 0, 1], [1, 1, 1, 0, 1, 1, 0, 0]],
      "b_qkv": [0, 0, 0, 0, 1, 0, 0, 1], "W_o": [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]]}})");
  const Trace per_head = trace_of("{" + x + R"(, "weights": {"W_q": [[[1], [0], [1]], [[0], [1], [1]]], "W_k": [[[0], [1], [1]], [[1], [1], [0]]],
      "W_v": [[[1, 0], [0, 1], [1, 1]], [[2, 0], [0, 1], [0, 0]]], "W_o": [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]], "b_v": [1, 0, 0, 1]}})");
  const Trace torch = trace_of("{" + x + R"(, "layout": "torch", "weights": {"W_q": [[1, 0, 1], [0, 1, 1]], "W_k": [[0, 1, 1], [1, 1, 0]],
      "W_v": [[1, 0, 1], [0, 1, 1], [2, 0, 0], [0, 1, 0]], "W_o": [[1, 0, 0, 1], [0, 1, 0, 1], [0, 0, 1, 1]], "b_v": [1, 0, 0, 1]}})");
  for (const char* id : {"q", "k", "v", "scores", "weights", "context", "merged", "output"}) {
    INFO(id);
    CHECK(max_abs_diff(step(separate, id).value, step(fused, id).value) == 0.0);
    CHECK(max_abs_diff(step(separate, id).value, step(per_head, id).value) == 0.0);
    CHECK(max_abs_diff(step(separate, id).value, step(torch, id).value) == 0.0);
  }
  CHECK(step(fused, "qkv").value.shape() == Shape{3, 8});
  CHECK(letters(step(fused, "qkv").dims) == std::vector<std::string>{"T", "2dk+dv"});
  CHECK(step(fused, "v").formula == "v = qkv[..., 4:8]");
  CHECK(step(fused, "v").note == "qkv.split([dk, dk, dv], dim=-1), part 3 of 3");
}

TEST_CASE("cross-attention from a source of another width Cs", "[pipeline][general]") {
  const Trace t = trace_of(R"({"mode": "cross", "heads": 2, "embeddings": [[1, 0, 1, 0], [0, 1, 0, 1]],
    "source": {"embeddings": [[1, 0, 0], [0, 1, 0], [0, 0, 1]]},
    "weights": {"W_q": "identity", "W_k": [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0]], "W_v": [[1, 0], [0, 1], [1, 1]], "W_o": [[1, 0, 1, 0], [0, 1, 0, 1]]}})");
  CHECK(t.config.Cs == 3);
  CHECK(letters(step(t, "source").dims) == std::vector<std::string>{"S", "Cs"});
  CHECK(step(t, "k").value.shape() == Shape{3, 4});
  CHECK(step(t, "weights").value.shape() == Shape{2, 2, 3});
  CHECK(step(t, "context").value.shape() == Shape{2, 2, 1});
  CHECK(step(t, "output").value.shape() == Shape{2, 4});
  // random generation follows the widths too
  const Trace r = trace_of(R"({"mode": "cross", "heads": 2, "random": {"seed": 5, "T": 3, "S": 4, "C": 6, "Cs": 5, "dk": 4, "dv": 2, "Co": 7,
                               "output_projection": true}})");
  CHECK(step(r, "source").value.shape() == Shape{4, 5});
  CHECK(step(r, "q").value.shape() == Shape{3, 4});
  CHECK(step(r, "v").value.shape() == Shape{4, 2});
  CHECK(step(r, "output").value.shape() == Shape{3, 7});
}

TEST_CASE("given q, k, v with dv ≠ dk", "[pipeline][general]") {
  const Trace t = trace_of(R"({"mode": "cross", "q": [[1, 0]], "k": [[1, 1], [1, 1], [1, 1]], "v": [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]],
                              "padding": {"lengths": [2]}})");
  CHECK(step(t, "context").value.shape() == Shape{1, 4});
  CHECK(values(step(t, "context")) == std::vector<Scalar>{2, 3, 4, 5});  // equal keys: the mean of the first two value rows
}

TEST_CASE("mistakes on general widths reproduce the student's arithmetic", "[pipeline][general][mistakes]") {
  auto backend = make_cpu_backend();
  const Spec s = parse_spec(R"({"embeddings": [[1, 0, 1], [0, 1, 1]], "heads": 2, "mode": "causal",
    "weights": {"W_q": [[1, 0], [0, 1], [1, 1]], "W_k": [[1, 0], [0, 1], [1, 1]], "W_v": [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 1, 1]],
                "W_o": [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]]}})", "t.json");
  const Trace right = run_pipeline(s, *backend);
  for (const auto& m : all_mistakes()) {
    INFO(m.name);
    if (m.mistake == Mistake::WTransposed || m.mistake == Mistake::OutputTransposed) {
      // a [3, 2] weight read in the other layout is a shape error for the student, not a wrong answer
      CHECK_THROWS_WITH(run_pipeline(s, *backend, {m.mistake}),
                        Catch::StartsWith(fmt::format("mistake {}: needs square weights; a [", m.name)));
      continue;
    }
    if (is_backward(m.mistake)) {
      // the backward pass's mistakes belong to attn backward: run refuses them, backward shows them from their step on
      CHECK_THROWS_WITH(run_pipeline(s, *backend, {m.mistake}), Catch::StartsWith(fmt::format("--mistake {}: a mistake of the backward pass", m.name)));
      if (m.mistake == Mistake::BackwardScaleForgotten) {  // hs = 1 here: the scale is 1, and forgetting it changes nothing
        CHECK_THROWS_WITH(run_backward(s, *backend, {m.mistake}), Catch::StartsWith(fmt::format("mistake {}: needs a scale other than 1", m.name)));
        continue;
      }
      const Trace good = run_backward(s, *backend), bad = run_backward(s, *backend, {m.mistake});
      const char* first = m.mistake == Mistake::SoftmaxBackwardElementwise ? "grad.masked"
                          : m.mistake == Mistake::BackwardScaleForgotten   ? "grad.scores"
                          : m.mistake == Mistake::BackwardDkUntransposed   ? "grad.k.heads"
                                                                           : "grad.x";
      for (const auto& st : good.steps) {
        INFO(st.id);
        if (st.id == first) {
          CHECK(values(st) != values(step(bad, st.id)));
          break;
        }
        CHECK(values(st) == values(step(bad, st.id)));  // every step before it is the correct one
      }
      continue;
    }
    if (m.mistake == Mistake::ScaleDk) {  // hs = 1 here: 1/hs is 1/√hs, the mistake changes nothing
      CHECK_THROWS_WITH(run_pipeline(s, *backend, {m.mistake}), Catch::StartsWith("mistake scale-dk: needs a head size hs above 1"));
      continue;
    }
    if (m.mistake >= Mistake::RopeWrongStyle) {
      // the variants' mistakes need their variant (rope, kv_heads, window, alibi), which this input lacks
      CHECK_THROWS_WITH(run_pipeline(s, *backend, {m.mistake}), Catch::StartsWith(fmt::format("mistake {}: needs ", m.name)));
      continue;
    }
    Trace t;
    try {
      t = run_pipeline(s, *backend, {m.mistake});
    } catch (const InputError&) {
      FAIL("every other mistake applies here (T = S)");
    }
    if (m.mistake == Mistake::OutputMissing) CHECK(max_abs_diff(step(t, "output").value, step(t, "merged").value) == 0.0);
    else CHECK(t.steps.back().value.shape() == right.steps.back().value.shape());
  }
  const Trace merged = run_pipeline(s, *backend, {Mistake::MergeNoTranspose});
  CHECK(max_abs_diff(step(merged, "merged").value, step(right, "merged").value) > 0);
}

TEST_CASE("large scaled and masked steps are deferred, and give the eager values when shown", "[pipeline][deferred]") {
  // H·T·S = 4·128·128 = 65536 entries: at the CPU backend's deferral size
  const Trace t = trace_of(R"({"mode": "causal", "heads": 4, "random": {"seed": 3, "T": 128, "C": 16}})");
  const Step& scores = step(t, "scores");
  const Step& scaled = step(t, "scaled");
  const Step& masked = step(t, "masked");
  const Step& mask = step(t, "mask");
  CHECK(!scaled.value.held());
  CHECK(!masked.value.held());
  const Scalar c = t.config.scale_factor;
  const auto n = scores.value.size();
  for (std::int64_t i = 0; i < n; i += 97) {  // one entry at a time: still deferred
    CHECK(scaled.value.at(i) == scores.value.data()[i] * c);
  }
  CHECK(!scaled.value.held());
  const auto plane = 128 * 128;
  const Scalar* all = masked.value.data();  // now filled
  CHECK(masked.value.held());
  for (std::int64_t i = 0; i < n; ++i) {
    const bool keep = mask.value.data()[i % plane] != 0;
    const Scalar want = keep ? scores.value.data()[i] * c : -std::numeric_limits<Scalar>::infinity();
    if (all[i] != want) FAIL("masked differs at " << i);
  }
  check_rows_sum_to_one(step(t, "weights"));
  // the JSON trace writes deferred steps like any other
  CHECK(std::isinf(masked.value.at(1)));
}

TEST_CASE("q, k and v of a fused projection and their heads are deferred re-layouts of qkv, read in place", "[pipeline][deferred]") {
  // T · dk = 64 · 1024: at the CPU backend's deferral size
  const Trace t = trace_of(R"({"mode": "causal", "heads": 8, "random": {"seed": 5, "T": 64, "C": 1024, "fused": true}})");
  const Step& qkv = step(t, "qkv");
  const Step& k = step(t, "k");
  const Step& k_heads = step(t, "k.heads");
  REQUIRE(qkv.value.held());
  CHECK_FALSE(k.value.held());
  CHECK_FALSE(k_heads.value.held());  // the scores product reads k's heads inside qkv
  const std::int64_t T = 64, C = 1024, hs = 128;
  // k.heads[h, t, j] = k[t, h·hs + j] = qkv[t, C + h·hs + j], entry by entry while k stays deferred
  for (std::int64_t h = 0; h < 8; h += 3)
    for (std::int64_t i = 0; i < T; i += 7)
      for (std::int64_t j = 0; j < hs; j += 13) {
        const Scalar want = qkv.value.at(i * 3 * C + C + h * hs + j);
        if (k.value.at(i * C + h * hs + j) != want || k_heads.value.at((h * T + i) * hs + j) != want) FAIL("k differs at " << h << ", " << i << ", " << j);
      }
  CHECK_FALSE(k.value.held());
  CHECK_FALSE(k_heads.value.held());
  // asked for whole, each is the copy an eager step makes
  const Scalar* all = k.value.data();
  for (std::int64_t i = 0; i < T; ++i)
    if (!std::equal(all + i * C, all + (i + 1) * C, qkv.value.data() + i * 3 * C + C)) FAIL("row " << i);
  const Scalar* heads = k_heads.value.data();
  for (std::int64_t h = 0; h < 8; ++h)
    for (std::int64_t i = 0; i < T; ++i)
      if (!std::equal(heads + (h * T + i) * hs, heads + (h * T + i + 1) * hs, all + i * C + h * hs)) FAIL("head " << h << ", row " << i);
}

TEST_CASE("the context is written in the merged order: merging the heads copies nothing", "[pipeline][deferred]") {
  // B · T · C = 2 · 256 · 128 values per head split: at the CPU backend's deferral size
  const Trace t = trace_of(R"({"mode": "causal", "heads": 4, "random": {"seed": 8, "B": 2, "T": 256, "C": 128, "output_projection": true}})");
  const Step& context = step(t, "context");
  const Step& merged = step(t, "merged");
  CHECK_FALSE(context.value.held());
  REQUIRE(merged.value.held());
  const std::int64_t B = 2, H = 4, T = 256, hv = 32;
  // merged[b, t, h·hv + d] = context[b, h, t, d], entry by entry while the context stays deferred
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < T; i += 5)
        for (std::int64_t d = 0; d < hv; d += 3)
          if (context.value.at(((b * H + h) * T + i) * hv + d) != merged.value.data()[(b * T + i) * H * hv + h * hv + d]) FAIL("differs");
  CHECK_FALSE(context.value.held());
  const Scalar* all = context.value.data();  // whole: the layout an eager context has
  for (std::int64_t f = 0; f < B * H * T * hv; f += 11) {
    const std::int64_t b = f / (H * T * hv), h = f / (T * hv) % H, i = f / hv % T, d = f % hv;
    if (all[f] != merged.value.data()[(b * T + i) * H * hv + h * hv + d]) FAIL("entry " << f);
  }
}

TEST_CASE("kᵀ is a deferred transpose the scores product reads through k", "[pipeline][deferred]") {
  // H · T · hs = 8 · 1024 · 8 entries, scores 1024 ≥ 8 · hs wide: both deferred
  const Trace t = trace_of(R"({"mode": "causal", "heads": 8, "random": {"seed": 2, "T": 1024, "C": 64}})");
  const Step& q = step(t, "q.heads");
  const Step& k = step(t, "k.heads");
  const Step& kt = step(t, "k.T");
  const Step& scores = step(t, "scores");
  CHECK_FALSE(kt.value.held());
  CHECK_FALSE(scores.value.held());
  const std::int64_t T = 1024, hs = 8;
  for (std::int64_t h = 0; h < 8; h += 3)
    for (std::int64_t i = 0; i < T; i += 101)
      for (std::int64_t j = 0; j < T; j += 97) {
        float c = 0;  // the fma chain over hs, in order
        for (std::int64_t r = 0; r < hs; ++r) c = std::fma(q.value.at((h * T + i) * hs + r), k.value.at((h * T + j) * hs + r), c);
        if (scores.value.at((h * T + i) * T + j) != c) FAIL("scores differ at " << h << ", " << i << ", " << j);
        if (kt.value.at((h * hs + i % hs) * T + j) != k.value.at((h * T + j) * hs + i % hs)) FAIL("k.T differs");
      }
  CHECK_FALSE(kt.value.held());
  const Scalar* all = kt.value.data();  // whole: the transpose an eager step makes
  for (std::int64_t h = 0; h < 8; ++h)
    for (std::int64_t r = 0; r < hs; ++r)
      for (std::int64_t j = 0; j < T; ++j)
        if (all[(h * hs + r) * T + j] != k.value.at((h * T + j) * hs + r)) FAIL("k.T row " << r);
}

// ---- --fused: the context in one pass, the same bits as the materialised steps on the CPU ----------

namespace {

Trace fused_trace_of(const std::string& json_text) {
  auto backend = make_cpu_backend();
  PipelineOptions options;
  options.fused = true;
  return run_pipeline(parse_spec(json_text, "test.json"), *backend, options);
}

// Equal bits, NaN included.
bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return false;
  for (std::int64_t i = 0; i < a.size(); ++i) {
    const Scalar x = a.data()[i], y = b.data()[i];
    if (!(x == y || (std::isnan(x) && std::isnan(y)))) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("the fused pass (--fused) gives the materialised context's bits on the CPU, with no [T, S] step", "[pipeline][fused]") {
  const std::vector<std::string> specs = {
      R"({"mode": "causal", "heads": 4, "random": {"seed": 3, "B": 2, "T": 77, "C": 32, "output_projection": true}})",
      R"({"mode": "causal", "heads": 8, "kv_heads": 2, "window": 9, "rope": {}, "random": {"seed": 4, "B": 2, "T": 50, "C": 64}})",
      R"({"mode": "self", "heads": 2, "padding": {"lengths": [6, 3]}, "random": {"seed": 5, "B": 2, "T": 6, "C": 8}})",
      R"({"mode": "cross", "heads": 2, "random": {"seed": 9, "T": 5, "S": 3, "C": 8, "Cs": 3, "dk": 4, "dv": 2, "output_projection": true}})",
      R"({"mode": "causal", "scale": "none", "random": {"seed": 2, "T": 1, "C": 4}})",
      // a query with no key (bottom-right, T > S) under each policy that lets it through
      R"({"mode": "causal", "causal_align": "bottom-right", "masked_row": "zeros", "q": [[1, 0], [0, 1], [1, 1]], "k": [[1, 0], [0, 1]], "v": [[1, 2], [3, 4]]})",
      R"({"mode": "causal", "causal_align": "bottom-right", "masked_row": "uniform", "q": [[1, 0], [0, 1], [1, 1]], "k": [[1, 0], [0, 1]], "v": [[1, 2], [3, 4]]})",
      R"({"mode": "causal", "causal_align": "bottom-right", "masked_row": "nan", "q": [[1, 0], [0, 1], [1, 1]], "k": [[1, 0], [0, 1]], "v": [[1, 2], [3, 4]]})",
  };
  for (const auto& text : specs) {
    INFO(text);
    const Trace full = trace_of(text), fused = fused_trace_of(text);
    CHECK(same_bits(step(full, "context").value, step(fused, "context").value));
    if (full.find("output") != nullptr) CHECK(same_bits(step(full, "output").value, step(fused, "output").value));
    for (const char* id : {"k.T", "scores", "scaled", "mask", "masked", "weights", "k.repeat", "v.repeat"}) CHECK(fused.find(id) == nullptr);
    CHECK(step(fused, "context").title == "Context vectors (fused)");
  }
  // the empty row's policies, as numbers: zeros gives 0, uniform the mean of the value rows, nan NaN
  CHECK(values(step(fused_trace_of(specs[5]), "context"))[0] == 0.0f);
  CHECK(values(step(fused_trace_of(specs[6]), "context"))[0] == 2.0f);
  CHECK(std::isnan(values(step(fused_trace_of(specs[7]), "context"))[0]));
}

TEST_CASE("the fused pass (--fused) names what it cannot fuse", "[pipeline][fused]") {
  auto refusal = [](const std::string& text) {
    try {
      fused_trace_of(text);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(refusal(R"({"mode": "causal", "softcap": 30, "random": {"seed": 1, "T": 4, "C": 8}})") ==
        "--fused: soft-capping is a step of its own; run without --fused to see every step");
  CHECK(refusal(R"({"mode": "causal", "causal_align": "bottom-right", "tokens": ["a", "b", "c"], "q": [[1, 0], [0, 1], [1, 1]], "k": [[1, 0], [0, 1]], "v": [[1, 2], [3, 4]]})") ==
        "masked: query row 0 \"a\" (batch 0, head 0) has every key masked; its softmax is undefined");
  // the window leaves every row a key: accepted
  CHECK(refusal(R"({"mode": "causal", "window": 1, "random": {"seed": 1, "T": 4, "C": 8}})").empty());
}

TEST_CASE("step code: the shapes printed (no batch axis where the input has none), kv_heads as the trace's JSON names it", "[pipeline][code]") {
  // one sequence, grouped heads: the trace prints [H, T, hs]; so must the code
  const Trace one = trace_of(R"({"mode": "causal", "heads": 4, "kv_heads": 2, "random": {"seed": 3, "T": 5, "C": 8, "output_projection": true}})");
  CHECK(step(one, "q.view").code == "q_view = q.view(T, H, hs)");
  CHECK(step(one, "q.heads").code == "q_heads = q.view(T, H, hs).transpose(0, 1)");
  CHECK(step(one, "q.heads").formula == "q.view(T, H, hs).transpose(0, 1)");
  CHECK(step(one, "k.heads").code == "k_heads = k.view(S, kv_heads, hs).transpose(0, 1)");
  CHECK(step(one, "k.repeat").code == "k_repeat = k_heads.repeat_interleave(H // kv_heads, dim=0)");
  CHECK(step(one, "merged").code == "merged = context.transpose(0, 1).reshape(T, C)");
  for (const auto& s : one.steps) CHECK(s.code.find("Hkv") == std::string::npos);
  // a batch of two: B first, the head axis at 1
  const Trace two = trace_of(R"({"mode": "causal", "heads": 4, "kv_heads": 2, "random": {"seed": 3, "B": 2, "T": 5, "C": 8}})");
  CHECK(step(two, "q.heads").code == "q_heads = q.view(B, T, H, hs).transpose(1, 2)");
  CHECK(step(two, "k.repeat").code == "k_repeat = k_heads.repeat_interleave(H // kv_heads, dim=1)");
  CHECK(step(two, "merged").code == "merged = context.transpose(1, 2).reshape(B, T, C)");
  // one sequence's padding is a [T, S] pattern
  const Trace padded = trace_of(R"({"mode": "causal", "heads": 2, "q": [[1, 2], [0, 1], [1, 0]], "k": [[1, 2], [0, 1], [1, 0]],
                                    "v": [[1, 2], [0, 1], [1, 0]], "padding": {"lengths": [2]}})");
  CHECK(step(padded, "mask").code == "mask = torch.ones(T, S).tril(0) * (torch.arange(S) < lengths)");
  CHECK(step(padded, "masked").code == "masked = scaled.masked_fill(mask == 0, float(\"-inf\"))");
}
