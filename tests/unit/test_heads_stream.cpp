// attn heads, streamed: the weights made a block of query rows at a time are the layer's own (the
// pipeline's [H, T, T] weights of each layer, run as attn run runs it), bit for bit, and the summaries
// and pooled grids made from the blocks equal those computed from the full weights.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "attn/model/tools/ablation.hpp"
#include "attn/model/tools/heads_stream.hpp"
#include "attn/model/tools/rollout.hpp"
#include "attn/model/tools/residual.hpp"
#include "attn/pipeline/pipeline.hpp"
#include "attn/spec/checkpoint_input.hpp"

using namespace attn;
using namespace attn::model;

namespace {

// A sentence long enough for several blocks, repeated for induction (tiny GPT-2 takes 32 tokens at most).
CheckpointInput input(const std::string& dir) {
  const std::string text = std::string(R"({"checkpoint": {"path": ")") + ATTN_SOURCE_DIR + "/examples/checkpoints/" + dir +
                           R"("}, "sentence": "The cat sat on the mat and looked at the dog. The cat sat on the mat and looked."})";
  return load_checkpoint_input_text(text, "<test>", "", "attn heads");
}

// Every layer's weights (H, T, T) as the pipeline makes them for the whole layer, one after another.
std::vector<float> full_weights(const CheckpointInput& in) {
  auto be = make_backend("cpu");
  std::vector<float> all;
  for (std::int64_t l = 0; l < in.ckpt.arch().layers; ++l) {
    const Trace t = run_pipeline(checkpoint_layer_spec(in.ckpt, in.ids, in.types, {in.pieces}, l), *be);
    const Tensor& w = t.find("weights")->value;
    all.insert(all.end(), w.data(), w.data() + w.size());
  }
  return all;
}

void same_summary(const HeadSummary& a, const HeadSummary& b) {
  CHECK(a.entropy == b.entropy);
  CHECK(a.max_entropy == b.max_entropy);
  CHECK(a.max_off_diagonal == b.max_off_diagonal);
  CHECK(a.max_query == b.max_query);
  CHECK(a.max_key == b.max_key);
  CHECK(a.pattern == b.pattern);
  CHECK(a.pattern_share == b.pattern_share);
  CHECK(a.first == b.first);
  CHECK(a.previous == b.previous);
  CHECK(a.same == b.same);
  CHECK(a.distance == b.distance);
  CHECK(a.local == b.local);
  CHECK(a.next == b.next);
  CHECK(a.induction == b.induction);
}

}  // namespace

TEST_CASE("attn heads streamed: blocks of rows give the layer's weights and summaries, bit for bit", "[heads][stream]") {
  for (const std::string dir : {"tiny-gpt2", "tiny-llama", "tiny-bert"}) {
    INFO(dir);
    const CheckpointInput in = input(dir);
    const auto T = static_cast<std::int64_t>(in.ids.size());
    REQUIRE(T >= 20);
    const std::vector<float> full = full_weights(in);
    HeadsKeep keep;
    keep.weights = true;
    keep.block_rows = 5;  // blocks that do not divide T
    const HeadsView v = checkpoint_heads(in.ckpt, in.ids, in.types, in.pieces, keep);
    REQUIRE(v.weights.size() == full.size());
    CHECK(std::equal(full.begin(), full.end(), v.weights.begin()));
    const EncoderSpecials sp = specials_of(in.ckpt, in.ids);
    for (std::int64_t l = 0; l < v.layers; ++l)
      for (std::int64_t h = 0; h < v.heads; ++h) {
        const float* w = full.data() + (l * v.heads + h) * T * T;
        same_summary(v.summary(l, h), v.bidirectional ? summarise_encoder_head(w, T, sp) : summarise_head(w, T, v.window(l), &in.ids));
      }
  }
}

TEST_CASE("attn heads streamed: rollout's and ablation's hooks give the same in blocks of rows as in one", "[heads][stream][rollout][ablation]") {
  for (const std::string dir : {"tiny-gpt2", "tiny-bert"}) {
    INFO(dir);
    const CheckpointInput in = input(dir);
    const auto T = static_cast<std::int64_t>(in.ids.size());
    struct Run {
      Rollout rollout;
      HeadsView view;
      std::optional<double> loss;
    };
    auto run = [&](std::int64_t rows, const std::vector<HeadRef>& ablate, AblationMode mode) {
      Run r;
      std::optional<RolloutAccumulator> acc;
      LayerHooks hooks = ablation_hooks(ablate, mode);
      std::vector<std::int64_t> ids;
      add_loss_hook(hooks, &r.loss, &ids);
      hooks.rows = [&](const WeightRows& b) {
        if (!acc) acc.emplace(RolloutHeads::Mean, b.S);
        acc->add_rows(b.w, b.H, b.i0, b.i1, b.cols);
      };
      HeadsKeep keep;
      keep.block_rows = rows;
      r.view = checkpoint_heads(in.ckpt, in.ids, in.types, in.pieces, keep, hooks);
      r.rollout = std::move(*acc).finish(T - 1);
      return r;
    };
    for (const auto mode : {AblationMode::Zero, AblationMode::Mean}) {
      const Run whole = run(T, {{0, 1}}, mode), blocks = run(5, {{0, 1}}, mode), clean = run(T, {}, mode);
      CHECK(whole.rollout.maps == blocks.rollout.maps);
      CHECK(whole.view.weights == blocks.view.weights);
      CHECK(whole.loss == blocks.loss);
      for (std::int64_t l = 0; l < whole.view.layers; ++l)
        for (std::int64_t h = 0; h < whole.view.heads; ++h) same_summary(whole.view.summary(l, h), blocks.view.summary(l, h));
      // the ablation changes layer 1 (and the loss, for a model with an LM head), not layer 0
      CHECK(whole.view.summary(0, 1).entropy == clean.view.summary(0, 1).entropy);
      CHECK(whole.view.summary(1, 0).entropy != clean.view.summary(1, 0).entropy);
      if (!in.ckpt.arch().encoder()) CHECK(*whole.loss != *clean.loss);
    }
  }
}

TEST_CASE("rollout: a layer added in blocks of rows is the layer added whole", "[rollout]") {
  const std::int64_t H = 2, T = 5;
  std::vector<float> w(static_cast<std::size_t>(H * T * T));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 7919) % 23) / 23.0f;
  RolloutAccumulator whole(RolloutHeads::Max, T), blocks(RolloutHeads::Max, T);
  for (int layer = 0; layer < 2; ++layer) {
    whole.add_layer(w.data(), H);
    for (std::int64_t i0 = 0; i0 < T; i0 += 2) {  // rows [i0, i1) of both heads, (H, i1 − i0, T)
      const std::int64_t i1 = std::min(T, i0 + 2);
      std::vector<float> part;
      for (std::int64_t h = 0; h < H; ++h) part.insert(part.end(), w.begin() + (h * T + i0) * T, w.begin() + (h * T + i1) * T);
      blocks.add_rows(part.data(), H, i0, i1);
    }
  }
  const Rollout a = std::move(whole).finish(4), b = std::move(blocks).finish(4);
  CHECK(a.layers == 2);
  CHECK(a.maps == b.maps);
  CHECK(a.kept == b.kept);
}

TEST_CASE("attn heads streamed: a long input's pooled grid is the largest visible weight of each block", "[heads][stream]") {
  const CheckpointInput in = input("tiny-llama");
  const auto T = static_cast<std::int64_t>(in.ids.size());
  const std::vector<float> full = full_weights(in);
  HeadsKeep keep;
  keep.keep_up_to = 8, keep.grid_side = 6, keep.block_rows = 7;  // pooled at this small T
  const HeadsView v = checkpoint_heads(in.ckpt, in.ids, in.types, in.pieces, keep);
  REQUIRE(v.weights.empty());
  REQUIRE(v.pool == (T + 5) / 6);
  CHECK(!v.weights_note.empty());
  const std::int64_t R = v.grid_rows(), C = v.grid_cols();
  for (std::int64_t l = 0; l < v.layers; ++l)
    for (std::int64_t h = 0; h < v.heads; ++h)
      for (std::int64_t r = 0; r < R; ++r)
        for (std::int64_t c = 0; c < C; ++c) {
          float want = std::nanf("");
          for (std::int64_t i = r * v.pool; i < std::min(T, (r + 1) * v.pool); ++i)
            for (std::int64_t j = c * v.pool; j < std::min(T, (c + 1) * v.pool); ++j)
              if (j <= i && (std::isnan(want) || full[static_cast<std::size_t>(((l * v.heads + h) * T + i) * T + j)] > want))
                want = full[static_cast<std::size_t>(((l * v.heads + h) * T + i) * T + j)];
          const float got = v.grid[static_cast<std::size_t>(((l * v.heads + h) * R + r) * C + c)];
          if (std::isnan(want)) CHECK(std::isnan(got));
          else CHECK(got == want);
        }
  // the summaries are the full weights' still
  for (std::int64_t h = 0; h < v.heads; ++h) CHECK(v.summary(1, h).entropy == summarise_head(full.data() + (v.heads + h) * T * T, T, 0, &in.ids).entropy);
}

TEST_CASE("summarise_head: the shares behind the label, and a local head at long T", "[heads][stream]") {
  const std::int64_t T = 40;
  // each query's weight spread evenly over itself and the 3 tokens before it
  std::vector<float> local(static_cast<std::size_t>(T * T), 0.0f), uniform(local.size(), 0.0f);
  for (std::int64_t i = 0; i < T; ++i) {
    const std::int64_t from = std::max<std::int64_t>(0, i - 3);
    for (std::int64_t j = from; j <= i; ++j) local[static_cast<std::size_t>(i * T + j)] = 1.0f / static_cast<float>(i - from + 1);
    for (std::int64_t j = 0; j <= i; ++j) uniform[static_cast<std::size_t>(i * T + j)] = 1.0f / static_cast<float>(i + 1);
  }
  const HeadSummary s = summarise_head(local.data(), T);
  CHECK(s.pattern == HeadPattern::Local);
  CHECK(s.local == Approx(1.0));
  CHECK(s.pattern_share == Approx(1.0));
  // queries 1, 2: 1/2 and 1/3 on the first token; 3 on: a quarter on each of 4 keys
  CHECK(s.previous == Approx((0.5 + 1.0 / 3 + 37 * 0.25) / 39));
  CHECK(s.first == Approx((0.5 + 1.0 / 3 + 0.25) / 39));
  CHECK(s.distance == Approx((0.5 + 1.0 + 37 * 1.5) / 40));
  // uniform: broad, its local share small (8 of i + 1 keys for the queries i ≥ 8)
  const HeadSummary u = summarise_head(uniform.data(), T);
  CHECK(u.pattern == HeadPattern::Broad);
  double want = 0;
  for (std::int64_t i = 8; i < T; ++i) want += 8.0 / static_cast<double>(i + 1);
  CHECK(u.local == Approx(want / 32));
  // below T = 32 the local share is not given (the window is most of what a query sees)
  CHECK(summarise_head(uniform.data(), 1).local == -1);
}

TEST_CASE("the MLP a block of rows at a time gives the whole tensor's bits", "[heads][stream][mlp]") {
  // BERT's post-norm and GELU; tiny Llama's gated SiLU, its all-zero MLP given weights of its own
  for (const std::string dir : {"tiny-bert", "tiny-llama"}) {
    INFO(dir);
    const CheckpointInput in = input(dir);
    auto be = make_backend("cpu");
    const Tensor h = in.ckpt.embed(in.ids, in.types);
    auto filled = [](const Tensor& like, std::uint32_t seed) {  // (a Tensor's copies share their storage: a new one)
      Tensor t = Tensor::uninitialized(like.shape());
      for (std::int64_t i = 0; i < t.size(); ++i) t.mutable_data()[i] = static_cast<float>((i * 2654435761u + seed) % 1000) / 1000.0f - 0.5f;
      return t;
    };
    LayerWeights w = in.ckpt.layer(0);
    if (w.W_gate) w.W_up = filled(w.W_up, 1), w.W_gate = filled(*w.W_gate, 2), w.W_down = filled(w.W_down, 3);
    auto copy = [&] {
      Tensor t = Tensor::uninitialized(h.shape());
      std::copy_n(h.data(), h.size(), t.mutable_data());
      return t;
    };
    Tensor whole = copy(), blocks = copy();
    add_mlp(in.ckpt.arch(), w, *be, whole);
    add_mlp(in.ckpt.arch(), w, *be, blocks, 7);  // blocks that do not divide T
    REQUIRE(whole.size() == h.size());
    CHECK(std::equal(whole.data(), whole.data() + whole.size(), blocks.data()));
    CHECK(!std::equal(whole.data(), whole.data() + whole.size(), h.data()));  // the MLP added something
  }
}
