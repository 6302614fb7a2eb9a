// Numerics at the edges and masks the way frameworks mean them (the PyTorch comparison is in
// tests/reference/torch_masks.py; these pin the behaviour without PyTorch).
#include <cmath>
#include <limits>

#include "helpers.hpp"

using namespace attn;
using namespace attn::test;

namespace {

const std::string kIdentity = R"("weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"})";
const Scalar kNegInf = -std::numeric_limits<Scalar>::infinity();


}  // namespace

TEST_CASE("softmax stays finite for logits of ±1e4 and for T = 1", "[edges]") {
  const Trace big = trace_of(R"({"scores": [[10000, -10000], [-10000, 10000]]})");
  CHECK(values(step(big, "weights")) == std::vector<Scalar>{1, 0, 0, 1});
  const Trace one = trace_of(R"({"embeddings": [[3, -4]], )" + kIdentity + "}");
  CHECK(values(step(one, "weights")) == std::vector<Scalar>{1});
  CHECK(values(step(one, "context")) == std::vector<Scalar>{3, -4});
}

TEST_CASE("attn_mask: block, keep and add mean what their names say", "[masks]") {
  const std::string x = R"({"embeddings": [[1, 0], [0, 1], [1, 1]], )" + kIdentity;
  const Trace block = trace_of(x + R"(, "attn_mask": {"block": [[false, true, false], [false, false, false], [true, true, false]]}})");
  const Trace keep = trace_of(x + R"(, "attn_mask": {"keep": [[true, false, true], [true, true, true], [false, false, true]]}})");
  CHECK(values(step(block, "mask")) == std::vector<Scalar>{1, 0, 1, 1, 1, 1, 0, 0, 1});
  CHECK(max_abs_diff(step(block, "weights").value, step(keep, "weights").value) == 0.0);
  CHECK(step(block, "weights").value.data()[1] == 0.0f);
  CHECK(step(block, "weights").value.data()[8] == 1.0f);
  CHECK(step(block, "mask").formula == "mask[i, j] = 1 if attn_mask.block[i, j] is false, else 0");
  const Trace add = trace_of(x + R"(, "attn_mask": {"add": [[0, "-inf", 0], [0, 0, 0], ["-inf", "-inf", 0]]}})");
  CHECK(add.find("mask") == nullptr);  // an additive mask alone blocks through -inf, no pattern
  CHECK(max_abs_diff(step(block, "weights").value, step(add, "weights").value) < 1e-7);
  CHECK(step(add, "masked").formula == "masked = scaled + mask.add");
}

TEST_CASE("causal alignment when T != S: top-left and bottom-right", "[masks]") {
  const std::string qkv = R"("q": [[1, 0], [0, 1]], "k": [[1, 0], [0, 1], [1, 1], [0, 0]], "v": [[1, 0], [0, 1], [1, 1], [0, 0]])";
  const Trace tl = trace_of(R"({"mode": "causal", )" + qkv + "}");
  const Trace br = trace_of(R"({"mode": "causal", "causal_align": "bottom-right", )" + qkv + "}");
  CHECK(values(step(tl, "mask")) == std::vector<Scalar>{1, 0, 0, 0, 1, 1, 0, 0});
  CHECK(values(step(br, "mask")) == std::vector<Scalar>{1, 1, 1, 0, 1, 1, 1, 1});
  CHECK(step(br, "mask").formula == "mask[i, j] = 1 if j ≤ i + 2 (bottom-right: S − T = 2), else 0");
  CHECK(letters(step(br, "mask").dims) == std::vector<std::string>{"T", "S"});
}

TEST_CASE("a fully masked row: error by default, or the stated policy", "[masks][edges]") {
  const std::string x = R"({"tokens": ["a", "b"], "embeddings": [[1, 0], [0, 1]], )" + kIdentity +
                        R"(, "attn_mask": {"block": [[false, false], [true, true]]})";
  CHECK(error_of(x + "}") == "masked: query row 1 \"b\" (batch 0, head 0) has every key masked; its softmax is undefined");
  const auto zeros = values(step(trace_of(x + R"(, "masked_row": "zeros"})"), "weights"));
  CHECK(zeros[2] == 0.0f);
  CHECK(zeros[3] == 0.0f);
  const Trace nan = trace_of(x + R"(, "masked_row": "nan"})");
  CHECK(std::isnan(step(nan, "weights").value.data()[2]));
  CHECK(std::isnan(step(nan, "context").value.data()[2]));
  CHECK_THAT(step(nan, "weights").note, Catch::Contains("1 row with every key masked: weights NaN (masked_row \"nan\", as nn.MultiheadAttention"));
  const auto uniform = values(step(trace_of(x + R"(, "masked_row": "uniform"})"), "weights"));
  CHECK(uniform[2] == 0.5f);
  CHECK(uniform[3] == 0.5f);
}

TEST_CASE("mask_fill -1e9: the same weights where a row keeps a key, the difference shown", "[masks]") {
  const std::string x = R"({"mode": "causal", "embeddings": [[1, 0], [0, 1], [1, 1]], )" + kIdentity;
  const Trace inf = trace_of(x + "}");
  const Trace e9 = trace_of(x + R"(, "mask_fill": -1e9})");
  CHECK(step(e9, "masked").value.data()[1] == -1e9f);
  CHECK(step(inf, "masked").value.data()[1] == kNegInf);
  CHECK(max_abs_diff(step(inf, "weights").value, step(e9, "weights").value) == 0.0);
  CHECK_THAT(step(e9, "masked").note, Catch::Contains("blocked scores are -1e9 (mask_fill), not −inf: a blocked key keeps exp(-1e9 − row max) / Σ of the weight, 0 only where that underflows"));
  CHECK(step(e9, "masked").formula == "masked = scaled where mask = 1, -1e9 where mask = 0");
}
