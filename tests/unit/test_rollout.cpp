// attn heads --rollout's and --ablate's arithmetic by hand: a two-token rollout worked on paper, the
// query and head-list readers and their refusals.
#include <catch2/catch.hpp>

#include "attn/core/error.hpp"
#include "attn/model/tools/ablation.hpp"
#include "attn/model/tools/rollout.hpp"

using namespace attn::model;
using Catch::WithinAbs;

namespace {
// Two heads over T = 2, causal: h0 rows [1, 0], [0.5, 0.5]; h1 rows [1, 0], [0.1, 0.9].
const float kLayer[8] = {1, 0, 0.5f, 0.5f, 1, 0, 0.1f, 0.9f};
}  // namespace

TEST_CASE("rollout: the heads' mean, the identity, renormalised, multiplied (worked by hand)", "[rollout]") {
  RolloutAccumulator acc(RolloutHeads::Mean, 2);
  acc.add_layer(kLayer, 2);
  acc.add_layer(kLayer, 2);
  const Rollout r = std::move(acc).finish(1);
  // mean row 1: [0.3, 0.7]; + I and / 2: Ã = [[1, 0], [0.15, 0.85]]; Ã·Ã row 1: [0.15 + 0.85·0.15, 0.85²]
  CHECK_THAT(r.at(0, 1, 0), WithinAbs(0.15, 1e-7));
  CHECK_THAT(r.at(0, 1, 1), WithinAbs(0.85, 1e-7));
  CHECK_THAT(r.at(1, 1, 0), WithinAbs(0.2775, 1e-7));
  CHECK_THAT(r.at(1, 1, 1), WithinAbs(0.7225, 1e-7));
  CHECK_THAT(r.at(1, 0, 0), WithinAbs(1.0, 1e-7));
  CHECK(rollout_top(r, 1, 1, 1).front().first == 1);
}

TEST_CASE("rollout: max combines each cell's largest weight, then the row is renormalised", "[rollout]") {
  RolloutAccumulator acc(RolloutHeads::Max, 2);
  acc.add_layer(kLayer, 2);
  const Rollout r = std::move(acc).finish(1);
  // max row 1: [0.5, 0.9]; + I: [0.5, 1.9]; / 2.4
  CHECK_THAT(r.at(0, 1, 0), WithinAbs(0.5 / 2.4, 1e-7));
  CHECK_THAT(r.at(0, 1, 1), WithinAbs(1.9 / 2.4, 1e-7));
}

TEST_CASE("rollout: --rollout-query reads a position or a token, refuses the rest", "[rollout]") {
  const std::vector<std::string> labels = {"␣the₁", "␣cat", "␣the₂"};
  CHECK(rollout_query("2", labels, "--rollout-query") == 2);
  CHECK(rollout_query("cat", labels, "--rollout-query") == 1);
  CHECK(rollout_query("the₂", labels, "--rollout-query") == 2);
  CHECK_THROWS_AS(rollout_query("the", labels, "--rollout-query"), attn::InputError);  // twice: which one?
  CHECK_THROWS_AS(rollout_query("3", labels, "--rollout-query"), attn::InputError);
  CHECK_THROWS_AS(rollout_query("dog", labels, "--rollout-query"), attn::InputError);
}

TEST_CASE("ablation: --ablate's head list", "[rollout]") {
  const auto heads = parse_head_list("L0H0,l1h3", "--ablate");
  REQUIRE(heads.size() == 2);
  CHECK(heads[1] == HeadRef{1, 3});
  CHECK_THROWS_AS(parse_head_list("L0H0,L0H0", "--ablate"), attn::InputError);
  CHECK_THROWS_AS(parse_head_list("L0", "--ablate"), attn::InputError);
  CHECK_THROWS_AS(parse_head_list("", "--ablate"), attn::InputError);
  CHECK_THROWS_AS(check_head_list(heads, 2, 3, "--ablate"), attn::InputError);  // H = 3: no head 3
  CHECK_NOTHROW(check_head_list(heads, 2, 4, "--ablate"));
}
