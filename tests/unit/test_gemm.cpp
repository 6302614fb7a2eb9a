// The CPU backend's matrix product gives the same bits on every x86-64 machine: each element is the
// fma chain over k in order, whatever kernel (AVX-512, AVX2, portable), blocking or edge handling.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>

#include "attn/numerics/cpu/exp.hpp"
#include "attn/numerics/cpu/gemm.hpp"

#include <limits>

namespace {

std::vector<float> random_matrix(std::int64_t rows, std::int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(rows * cols));
  for (auto& x : v) x = d(rng);
  return v;
}

// The definition: c[i][j] = fma(a[i][k-1], b[k-1][j], ... fma(a[i][0], b[0][j], 0)).
std::vector<float> chain(const std::vector<float>& a, const std::vector<float>& b, bool transposed, std::int64_t m, std::int64_t k,
                         std::int64_t n) {
  std::vector<float> c(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (std::int64_t kk = 0; kk < k; ++kk) acc = std::fma(a[i * k + kk], transposed ? b[j * k + kk] : b[kk * n + j], acc);
      c[i * n + j] = acc;
    }
  return c;
}

}  // namespace

TEST_CASE("every gemm kernel gives the fma chain's bits", "[gemm]") {
  const auto before = std::string(attn::gemm::kernel_name());
  std::mt19937 rng(7);
  struct Size {
    std::int64_t m, k, n;
  };
  // edges of every tile and block: 1, odd, just past a k-block (256) and a row block (96)
  for (const Size s : {Size{1, 1, 1}, Size{7, 5, 3}, Size{15, 40, 37}, Size{33, 300, 17}, Size{97, 257, 70}, Size{8, 513, 33}, Size{5, 0, 4}}) {
    const auto a = random_matrix(s.m, s.k, rng);
    for (const bool transposed : {false, true}) {
      const auto b = transposed ? random_matrix(s.n, s.k, rng) : random_matrix(s.k, s.n, rng);
      const auto want = chain(a, b, transposed, s.m, s.k, s.n);
      const auto kernels = attn::gemm::available_kernels();
      CHECK(kernels.front() == "portable");
      for (const auto& name : kernels) {
        INFO("kernel " << name << ", m " << s.m << ", k " << s.k << ", n " << s.n << (transposed ? ", B transposed" : ""));
        attn::gemm::use_kernel(name);
        REQUIRE(std::string(attn::gemm::kernel_name()) == name);
        const auto packed = attn::gemm::pack_b(b.data(), transposed ? s.k : s.n, transposed, s.k, s.n);
        std::vector<float> c(static_cast<std::size_t>(s.m * s.n), -1.0f);
        attn::gemm::multiply(a.data(), s.k, s.m, packed, c.data(), s.n);
        CHECK(std::memcmp(c.data(), want.data(), c.size() * sizeof(float)) == 0);
        // A's whole row tiles read in place (the rest packed): the same chains
        std::vector<float> in_place(static_cast<std::size_t>(s.m * s.n), -1.0f);
        attn::gemm::multiply(a.data(), s.k, s.m, packed, in_place.data(), s.n, -1, 0, -1, true);
        CHECK(std::memcmp(in_place.data(), want.data(), in_place.size() * sizeof(float)) == 0);
        if (transposed) continue;
        // the unpacked product for a few rows: the same chains (groups of 8, 4, 2 and 1 rows)
        std::vector<float> u(static_cast<std::size_t>(s.m * s.n), -1.0f);
        attn::gemm::multiply_unpacked(a.data(), s.k, s.m, b.data(), s.n, s.k, s.n, u.data(), s.n);
        CHECK(std::memcmp(u.data(), want.data(), u.size() * sizeof(float)) == 0);
        // B in blocks of rows (a generated weight read in order): each chain continued block by
        // block, and B packed block by block of rows, give the same bits
        std::vector<float> blocks(static_cast<std::size_t>(s.m * s.n), -1.0f);
        auto by_rows = attn::gemm::unpacked_b(s.k, s.n);
        for (std::int64_t kk = 0; kk < s.k; kk += 16) {
          const std::int64_t count = std::min<std::int64_t>(16, s.k - kk);
          attn::gemm::multiply_unpacked(a.data() + kk, s.k, s.m, b.data() + kk * s.n, s.n, count, s.n, blocks.data(), s.n, kk > 0);
          attn::gemm::pack_b_rows(b.data() + kk * s.n, s.n, by_rows, kk, count);
        }
        if (s.k > 0) CHECK(std::memcmp(blocks.data(), want.data(), blocks.size() * sizeof(float)) == 0);
        if (s.k > 0) CHECK(std::memcmp(by_rows.data.get(), packed.data.get(), sizeof(float) * static_cast<std::size_t>(packed.panels() * s.k * packed.nr)) == 0);
      }
    }
  }
  attn::gemm::use_kernel(before);
}

TEST_CASE("gemm windows: a column range and a prefix of k give the same chains' bits", "[gemm]") {
  std::mt19937 rng(11);
  const std::int64_t m = 37, k = 300, n = 90;
  const auto a = random_matrix(m, k, rng), b = random_matrix(k, n, rng);
  const auto packed = attn::gemm::pack_b(b.data(), n, false, k, n);
  for (const std::int64_t k_used : {std::int64_t{0}, std::int64_t{1}, std::int64_t{257}, k})
    for (const auto [col0, col1] : {std::pair<std::int64_t, std::int64_t>{0, n}, {40, 77}, {0, 1}, {89, 90}}) {
      INFO("k_used " << k_used << ", columns " << col0 << " .. " << col1);
      for (const bool in_place : {false, true}) {
      std::vector<float> c(static_cast<std::size_t>(m * n), -1.0f);
      attn::gemm::multiply(a.data(), k, m, packed, c.data(), n, k_used, col0, col1, in_place);
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = col0; j < col1; ++j) {
          float want = 0.0f;
          for (std::int64_t kk = 0; kk < k_used; ++kk) want = std::fma(a[i * k + kk], b[kk * n + j], want);
          if (std::memcmp(&c[i * n + j], &want, sizeof want) != 0) FAIL("entry " << i << ", " << j << (in_place ? ", A in place" : ""));
        }
      }
    }
}

TEST_CASE("the softmax's exp: every kernel gives the portable bits, within 2 ulp of exp", "[gemm][exp]") {
  const auto before = std::string(attn::gemm::kernel_name());
  std::vector<float> xs = {0.0f, -0.0f, -1e-30f, -1e-7f, -0.5f, -1.0f, -10.0f, -86.9f, -87.0f, -87.5f, -100.0f, -103.9f, -104.0f,
                           -104.5f, -1000.0f, -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                           1.0f, 20.0f, 88.0f, 88.5f, 89.0f};
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-110.0f, 2.0f);
  for (int i = 0; i < 20000; ++i) xs.push_back(d(rng));
  std::vector<float> want(xs.size());
  for (std::size_t i = 0; i < xs.size(); ++i) want[i] = attn::cpu::exp_deterministic(xs[i]);
  double worst_ulp = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (!std::isfinite(xs[i]) || want[i] == 0 || !std::isfinite(want[i])) continue;
    const double exact = std::exp(static_cast<double>(xs[i]));
    if (exact < std::numeric_limits<float>::min()) continue;  // subnormal results: absolute error instead
    const double ulp = std::nextafter(static_cast<float>(exact), std::numeric_limits<float>::infinity()) - static_cast<float>(exact);
    worst_ulp = std::max(worst_ulp, std::fabs(want[i] - exact) / ulp);
  }
  CHECK(worst_ulp <= 2.0);
  CHECK(attn::cpu::exp_deterministic(-std::numeric_limits<float>::infinity()) == 0.0f);
  CHECK(std::isnan(attn::cpu::exp_deterministic(std::numeric_limits<float>::quiet_NaN())));
  CHECK(attn::cpu::exp_deterministic(0.0f) == 1.0f);
  for (const auto& name : attn::gemm::available_kernels()) {
    INFO("kernel " << name);
    attn::gemm::use_kernel(name);
    for (const std::size_t n : {xs.size(), std::size_t{7}, std::size_t{17}}) {
      std::vector<float> y(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(n));
      attn::cpu::exp_shifted(y.data(), static_cast<std::int64_t>(n), 0.0f);
      for (std::size_t i = 0; i < n; ++i)
        if (std::memcmp(&y[i], &want[i], sizeof(float)) != 0) FAIL("x = " << xs[i] << ": " << y[i] << " against " << want[i]);
    }
  }
  attn::gemm::use_kernel(before);
}

#include "attn/numerics/cpu/deferred.hpp"

using attn::cpu::Operand;

TEST_CASE("a deferred product skips the finiteness pass only when its inputs bound every entry", "[gemm][deferred]") {
  using attn::Tensor;
  const std::int64_t m = 40, k = 64, n = 48;
  auto product = [&](float a_value, float b_value) {
    Tensor a({1, m, k}), b({1, k, n});
    for (std::int64_t i = 0; i < a.size(); ++i) a.mutable_data()[i] = (i % 3 == 0 ? -a_value : a_value);
    for (std::int64_t i = 0; i < b.size(); ++i) b.mutable_data()[i] = b_value;
    return attn::cpu::Product(Operand::contiguous(a, 1, m, k), Operand::contiguous(b, 1, k, n), 1, m, k, n);
  };
  // 64 · 1e18 · 1e18 = 6.4e37 · 1.01 < 1e38: no entry can overflow, none is computed to say so
  CHECK(product(1e18f, 1e18f).cannot_overflow());
  CHECK(product(1e18f, 1e18f).first_nonfinite() == -1);
  // 64 · 1e19 · 1e19 = 6.4e39: entries (of 2/3 positive, 1/3 negative terms) reach ~2e39 and overflow;
  // the bound cannot rule it out, so every entry is computed and the first inf found
  CHECK_FALSE(product(1e19f, 1e19f).cannot_overflow());
  CHECK(product(1e19f, 1e19f).first_nonfinite() == 0);
  // a NaN or an inf input: no bound
  Tensor a({1, m, k}), b({1, k, n});
  a.mutable_data()[5] = std::numeric_limits<float>::quiet_NaN();
  CHECK_FALSE(attn::cpu::Product(Operand::contiguous(a, 1, m, k), Operand::contiguous(b, 1, k, n), 1, m, k, n).cannot_overflow());
  a.mutable_data()[5] = -std::numeric_limits<float>::infinity();
  CHECK_FALSE(attn::cpu::Product(Operand::contiguous(a, 1, m, k), Operand::contiguous(b, 1, k, n), 1, m, k, n).cannot_overflow());
}

TEST_CASE("a deferred product reads B or Bᵀ to the same bits", "[gemm][deferred]") {
  using attn::Tensor;
  std::mt19937 rng(11);
  const std::int64_t batches = 3, m = 37, k = 20, n = 45;
  Tensor a({batches, m, k}), b({batches, k, n}), bt({batches, n, k});
  for (std::int64_t i = 0; i < a.size(); ++i) a.mutable_data()[i] = std::normal_distribution<float>()(rng);
  for (std::int64_t i = 0; i < b.size(); ++i) b.mutable_data()[i] = std::normal_distribution<float>()(rng);
  for (std::int64_t h = 0; h < batches; ++h)
    for (std::int64_t r = 0; r < k; ++r)
      for (std::int64_t c = 0; c < n; ++c) bt.mutable_data()[(h * n + c) * k + r] = b.data()[(h * k + r) * n + c];
  const attn::cpu::Product plain(Operand::contiguous(a, batches, m, k), Operand::contiguous(b, batches, k, n), batches, m, k, n),
      transposed(Operand::contiguous(a, batches, m, k), Operand::contiguous(bt, batches, n, k), batches, m, k, n, true);
  const auto count = batches * m * n;
  std::vector<float> want(static_cast<std::size_t>(count)), got(static_cast<std::size_t>(count));
  plain.values(0, count, want.data());
  transposed.values(0, count, got.data());  // whole rows: the packed kernels
  CHECK(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0);
  for (std::int64_t i = 0; i < count; i += 7) {  // one entry at a time: the plain chain
    float one;
    transposed.values(i, 1, &one);
    if (one != want[static_cast<std::size_t>(i)]) FAIL("entry " << i);
  }
  // and the definition
  float c = 0;
  for (std::int64_t r = 0; r < k; ++r) c = std::fma(a.data()[(1 * m + 5) * k + r], b.data()[(1 * k + r) * n + 9], c);
  CHECK(want[static_cast<std::size_t>((1 * m + 5) * n + 9)] == c);
}

TEST_CASE("a deferred product reads its operands in place, as heads inside a wider tensor, to the same bits", "[gemm][deferred]") {
  using attn::Tensor;
  std::mt19937 rng(5);
  // qk (B·T, 2·H·hs): q's heads in the first H·hs columns, k's in the next, as in a fused qkv
  const std::int64_t B = 2, T = 19, H = 3, hs = 7, width = 2 * H * hs;
  Tensor qk({B * T, width});
  for (std::int64_t i = 0; i < qk.size(); ++i) qk.mutable_data()[i] = std::normal_distribution<float>()(rng);
  Tensor q({B * H, T, hs}), k({B * H, T, hs});  // heads first, copied out
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t d = 0; d < hs; ++d) {
          q.mutable_data()[((b * H + h) * T + t) * hs + d] = qk.data()[(b * T + t) * width + h * hs + d];
          k.mutable_data()[((b * H + h) * T + t) * hs + d] = qk.data()[(b * T + t) * width + H * hs + h * hs + d];
        }
  const Operand q_in{qk, B * H, T, hs, 0, H, T * width, hs, width}, k_in{qk, B * H, T, hs, H * hs, H, T * width, hs, width};
  CHECK(q_in.at(4, 3, 2) == q.data()[(4 * T + 3) * hs + 2]);
  const attn::cpu::Product copied(Operand::contiguous(q, B * H, T, hs), Operand::contiguous(k, B * H, T, hs), B * H, T, hs, T, true),
      in_place(q_in, k_in, B * H, T, hs, T, true);
  const auto count = B * H * T * T;
  std::vector<float> want(static_cast<std::size_t>(count)), got(static_cast<std::size_t>(count));
  copied.values(0, count, want.data());
  in_place.values(0, count, got.data());
  CHECK(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0);
  for (std::int64_t i = 0; i < count; i += 5) {
    float one;
    in_place.values(i, 1, &one);
    if (one != want[static_cast<std::size_t>(i)]) FAIL("entry " << i);
  }
}
