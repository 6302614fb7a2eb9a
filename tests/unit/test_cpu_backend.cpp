// Each numeric primitive of the CPU backend against hand-computed values.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

#include "attn/numerics/random.hpp"
#include "helpers.hpp"

using namespace attn;

namespace {

std::vector<Scalar> run(Backend& be, const BackendTensor& t) {
  const auto v = be.download(t).values();
  return {v.begin(), v.end()};
}

}  // namespace

TEST_CASE("matmul with a shared right-hand matrix", "[cpu]") {
  auto be = make_cpu_backend();
  // a (2, 1, 2) · b (2, 3)
  auto a = be->upload(Tensor({2, 1, 2}, {1, 2, 3, 4}));
  auto b = be->upload(Tensor({2, 3}, {1, 0, 2, 0, 1, -1}));
  auto c = be->matmul(a, b);
  CHECK(c.shape == Shape{2, 1, 3});
  CHECK(run(*be, c) == std::vector<Scalar>{1, 2, 0, 3, 4, 2});
}

TEST_CASE("a shared weight, held or generated, gives each element's fma chain over k, a block of rows at a time", "[cpu]") {
  // N·m = 2 · 45 rows (packed, in parallel), k = 600 (three blocks of B's rows, the last shorter),
  // and 3 · 11 rows (a few: B streamed unpacked)
  auto be = make_cpu_backend();
  for (const auto& [batches, m] : {std::pair<std::int64_t, std::int64_t>{2, 45}, {3, 11}}) {
    const std::int64_t k = 600, n = 70;
    const Tensor a = random_normal(1, "a", {batches, m, k});
    const Tensor held = random_uniform(2, "W", {k, n}, 0.1), generated = generated_uniform(2, "W", {k, n}, 0.1);
    const auto from_held = run(*be, be->matmul(be->upload(a), be->upload(held)));
    const auto from_generated = run(*be, be->matmul(be->upload(a), be->upload(generated)));
    CHECK_FALSE(generated.held());  // streamed, not filled
    int differ = 0;
    for (std::int64_t r = 0; r < batches * m; ++r)
      for (std::int64_t j = 0; j < n; ++j) {
        float want = 0.0f;
        for (std::int64_t kk = 0; kk < k; ++kk) want = std::fma(a.data()[r * k + kk], held.data()[kk * n + j], want);
        const auto i = static_cast<std::size_t>(r * n + j);
        differ += std::memcmp(&from_held[i], &want, sizeof want) != 0 || std::memcmp(&from_generated[i], &want, sizeof want) != 0;
      }
    CHECK(differ == 0);
  }
}

TEST_CASE("a generated weight read by columns (stored as its transpose) gives the same fma chains", "[cpu]") {
  // B (k, n) given also by columns: n = 150 is two full chunks of 64 columns and a short one; 2 · 45
  // rows take the column path, 3 · 11 rows (a few) the row reader's
  auto be = make_cpu_backend();
  const std::int64_t k = 600, n = 150;
  const Tensor held = random_uniform(2, "W", {k, n}, 0.1);
  const Scalar* h = held.data();
  auto columns_read = std::make_shared<std::atomic<std::int64_t>>(0);
  const Tensor by_columns = Tensor::generated(
      {k, n},
      [h](std::int64_t first) {
        return [h, pos = first](Scalar* out, std::int64_t count) mutable {
          if (out != nullptr) std::copy_n(h + pos, count, out);
          pos += count;
        };
      },
      [h, k, n, columns_read](std::int64_t j0, std::int64_t j1, Scalar* out) {
        for (std::int64_t j = j0; j < j1; ++j)
          for (std::int64_t kk = 0; kk < k; ++kk) out[(j - j0) * k + kk] = h[kk * n + j];
        *columns_read += j1 - j0;  // chunks run on any thread, in any order
      });
  for (const auto& [batches, m] : {std::pair<std::int64_t, std::int64_t>{2, 45}, {3, 11}}) {
    const Tensor a = random_normal(1, "a", {batches, m, k});
    const auto from_held = run(*be, be->matmul(be->upload(a), be->upload(held)));
    const auto from_columns = run(*be, be->matmul(be->upload(a), be->upload(by_columns)));
    CHECK_FALSE(by_columns.held());
    CHECK(std::memcmp(from_held.data(), from_columns.data(), from_held.size() * sizeof(Scalar)) == 0);
  }
  CHECK(*columns_read >= n);  // the 90-row product read B by its columns
}

TEST_CASE("batched matmul multiplies each batch with its own matrix", "[cpu]") {
  auto be = make_cpu_backend();
  auto a = be->upload(Tensor({2, 2, 2}, {1, 0, 0, 1, 2, 0, 0, 2}));
  auto b = be->upload(Tensor({2, 2, 1}, {3, 4, 5, 6}));
  auto c = be->matmul(a, b);
  CHECK(c.shape == Shape{2, 2, 1});
  CHECK(run(*be, c) == std::vector<Scalar>{3, 4, 10, 12});
}

TEST_CASE("add_bias adds the vector to every row", "[cpu]") {
  auto be = make_cpu_backend();
  auto c = be->add_bias(be->upload(Tensor({2, 2}, {1, 2, 3, 4})), be->upload(Tensor({2}, {10, 20})));
  CHECK(run(*be, c) == std::vector<Scalar>{11, 22, 13, 24});
}

TEST_CASE("transpose_last2 and swap_axes_1_2 move entries where they belong", "[cpu]") {
  auto be = make_cpu_backend();
  auto t = be->transpose_last2(be->upload(Tensor({1, 2, 3}, {1, 2, 3, 4, 5, 6})));
  CHECK(t.shape == Shape{1, 3, 2});
  CHECK(run(*be, t) == std::vector<Scalar>{1, 4, 2, 5, 3, 6});
  // (1, 2, 3, 2) -> (1, 3, 2, 2): element [0, i, j, d] moves to [0, j, i, d]
  std::vector<Scalar> v(12);
  for (int i = 0; i < 12; ++i) v[static_cast<std::size_t>(i)] = static_cast<Scalar>(i);
  auto s = be->swap_axes_1_2(be->upload(Tensor({1, 2, 3, 2}, v)));
  CHECK(s.shape == Shape{1, 3, 2, 2});
  CHECK(run(*be, s) == std::vector<Scalar>{0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11});
}

TEST_CASE("slice_columns takes a block of columns", "[cpu]") {
  auto be = make_cpu_backend();
  auto c = be->slice_columns(be->upload(Tensor({2, 3}, {1, 2, 3, 4, 5, 6})), 1, 2);
  CHECK(c.shape == Shape{2, 2});
  CHECK(run(*be, c) == std::vector<Scalar>{2, 3, 5, 6});
}

TEST_CASE("scale multiplies every entry", "[cpu]") {
  auto be = make_cpu_backend();
  CHECK(run(*be, be->scale(be->upload(Tensor({3}, {2, -4, 8})), 0.5f)) == std::vector<Scalar>{1, -2, 4});
}

TEST_CASE("masked_fill blocks the same positions in every head", "[cpu]") {
  auto be = make_cpu_backend();
  const Scalar ninf = -std::numeric_limits<Scalar>::infinity();
  auto scores = be->upload(Tensor({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}));
  auto keep = be->upload(Tensor({1, 2, 2}, {1, 0, 1, 1}));
  CHECK(run(*be, be->masked_fill(scores, keep, ninf)) == std::vector<Scalar>{1, ninf, 3, 4, 5, ninf, 7, 8});
}

TEST_CASE("softmax matches the document's [2, 4, 1, 3] example to its true values", "[cpu]") {
  auto be = make_cpu_backend();
  auto w = run(*be, be->softmax_rows(be->upload(Tensor({1, 4}, {2, 4, 1, 3}))));
  // exp(x - 4) / sum: computed independently in double.
  const double e[4] = {std::exp(-2.0), 1.0, std::exp(-3.0), std::exp(-1.0)};
  const double sum = e[0] + e[1] + e[2] + e[3];
  for (int i = 0; i < 4; ++i) CHECK(w[static_cast<std::size_t>(i)] == Approx(e[i] / sum).epsilon(1e-6));
  CHECK(w[1] == Approx(0.6439).margin(5e-5));
}

TEST_CASE("softmax stays finite at logits of ±1e4 and for a single key", "[cpu]") {
  auto be = make_cpu_backend();
  auto w = run(*be, be->softmax_rows(be->upload(Tensor({2, 2}, {1e4f, -1e4f, 1e4f, 1e4f}))));
  CHECK(w == std::vector<Scalar>{1, 0, 0.5f, 0.5f});
  CHECK(run(*be, be->softmax_rows(be->upload(Tensor({3, 1}, {-1e4f, 0, 7})))) == std::vector<Scalar>{1, 1, 1});
}

TEST_CASE("softmax gives exactly zero weight to -inf and row_sums sums rows", "[cpu]") {
  auto be = make_cpu_backend();
  const Scalar ninf = -std::numeric_limits<Scalar>::infinity();
  auto w = be->softmax_rows(be->upload(Tensor({2, 3}, {0.5f, 0.2f, ninf, 1, 1, 1})));
  auto v = run(*be, w);
  CHECK(v[2] == 0.0f);
  CHECK(v[0] == Approx(0.5744425).epsilon(1e-6));
  auto sums = run(*be, be->row_sums(w));
  CHECK(sums[0] == Approx(1.0).epsilon(1e-6));
  CHECK(sums[1] == Approx(1.0).epsilon(1e-6));
}

TEST_CASE("download of a CPU tensor is a view, not a copy", "[cpu]") {
  auto be = make_cpu_backend();
  Tensor t({2, 2}, {1, 2, 3, 4});
  auto d = be->upload(t);
  CHECK(be->download(d.view({4})).data() == t.data());
}

TEST_CASE("a large tensor's storage is reused after another's is freed: the closest kept mapping, trimmed or grown, zeroed when asked", "[tensor]") {
  const Shape big{10, std::int64_t{1} << 20};  // 40 MB: a mapping of its own
  const float* first = nullptr;
  {
    Tensor dirty = Tensor::uninitialized(big);
    std::fill(dirty.mutable_data(), dirty.mutable_data() + dirty.size(), 7.0f);
    first = dirty.data();
  }
  Tensor zeroed(big);  // the freed mapping, kept populated, taken again
  CHECK(zeroed.data() == first);
  CHECK(std::all_of(zeroed.data(), zeroed.data() + zeroed.size(), [](float x) { return x == 0.0f; }));
  // a smaller one takes the kept mapping, its tail unmapped
  std::fill(zeroed.mutable_data(), zeroed.mutable_data() + zeroed.size(), 5.0f);
  const float* second = zeroed.data();
  zeroed = Tensor();
  Tensor smaller = Tensor::uninitialized({9, std::int64_t{1} << 20});  // 36 MB
  CHECK(smaller.data() == second);
  // a larger one grows a kept mapping (its new pages populated), zeroed when asked, written to its end
  smaller = Tensor();
  Tensor larger({12, std::int64_t{1} << 20});  // 48 MB
  CHECK(std::all_of(larger.data(), larger.data() + larger.size(), [](float x) { return x == 0.0f; }));
  larger.mutable_data()[larger.size() - 1] = 3.0f;
  CHECK(larger.data()[larger.size() - 1] == 3.0f);
}
