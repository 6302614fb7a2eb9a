// Seeded values: the generator is the standard's mt19937_64 and the same seed gives the same numbers.
#include <cmath>
#include <cstring>
#include <limits>
#include <algorithm>
#include <numbers>
#include <random>

#include "attn/numerics/fixed_math.hpp"
#include "attn/numerics/position_tables.hpp"
#include "attn/numerics/random.hpp"
#include "helpers.hpp"

using namespace attn;

TEST_CASE("std::mt19937_64 is the generator the standard specifies", "[random]") {
  // C++ [rand.predef]: the 10000th invocation of a default-constructed mt19937_64 yields 9981545732273789042.
  std::mt19937_64 g;
  g.discard(9999);
  CHECK(g() == 9981545732273789042ULL);
}

TEST_CASE("random tensors repeat for a seed and differ between names and seeds", "[random]") {
  const auto a = random_normal(42, "embeddings", {64});
  const auto b = random_normal(42, "embeddings", {64});
  const auto c = random_normal(42, "source.embeddings", {64});
  const auto d = random_normal(43, "embeddings", {64});
  CHECK(std::equal(a.values().begin(), a.values().end(), b.values().begin()));
  CHECK_FALSE(std::equal(a.values().begin(), a.values().end(), c.values().begin()));
  CHECK_FALSE(std::equal(a.values().begin(), a.values().end(), d.values().begin()));
}

TEST_CASE("normal draws have mean 0 and variance 1; uniform draws stay in range", "[random]") {
  const auto n = random_normal(1, "x", {200000});
  double sum = 0, sq = 0;
  for (Scalar v : n.values()) sum += v, sq += static_cast<double>(v) * v;
  const double mean = sum / 200000, var = sq / 200000 - mean * mean;
  CHECK(std::fabs(mean) < 0.01);
  CHECK(var == Approx(1.0).margin(0.01));
  const auto u = random_uniform(1, "w", {100000}, 0.25);
  double lo = 1, hi = -1;
  for (Scalar v : u.values()) lo = std::min(lo, double(v)), hi = std::max(hi, double(v));
  CHECK(lo >= -0.25);
  CHECK(hi < 0.25);
  CHECK(lo < -0.249);
  CHECK(hi > 0.249);
}

TEST_CASE("Mt64 gives std::mt19937_64's words, in any block sizes", "[random]") {
  for (const std::uint64_t seed : {std::uint64_t{0}, std::uint64_t{5489}, std::uint64_t{0xDEADBEEFCAFEF00D}}) {
    std::mt19937_64 ref(seed);
    Mt64 g(seed);
    std::vector<std::uint64_t> got(2000);
    std::int64_t at = 0;
    for (const std::int64_t block : {1, 311, 312, 313, 700, 363}) {
      g.fill(got.data() + at, block);
      at += block;
    }
    for (std::int64_t i = 0; i < at; ++i) {
      const auto want = ref();
      if (got[static_cast<std::size_t>(i)] != want) FAIL("seed " << seed << ", word " << i);
    }
    CHECK(at == 2000);
  }
}

TEST_CASE("seeded values are Box-Muller and nn.Linear's uniform, to the float32 bit, from the stream's words", "[random]") {
  // The definitions, through the C library's log, sin and cos (which attn does not call: it does the
  // same operations itself, so every machine gets the same bits). An odd count: the last pair's cosine.
  const std::int64_t n = 300001;
  const auto normal = random_normal(7, "x", {n});
  Mt64 g(stream_seed(7, "x"));
  std::vector<std::uint64_t> w(static_cast<std::size_t>(n + 1));
  g.fill(w.data(), n + 1);
  auto unit = [](std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; };
  std::int64_t differ = 0;
  for (std::int64_t i = 0; i < n; i += 2) {
    const double r = std::sqrt(-2.0 * std::log(1.0 - unit(w[static_cast<std::size_t>(i)])));
    const double theta = 2.0 * std::numbers::pi * unit(w[static_cast<std::size_t>(i + 1)]);
    differ += static_cast<Scalar>(r * std::cos(theta)) != normal.data()[i];
    if (i + 1 < n) differ += static_cast<Scalar>(r * std::sin(theta)) != normal.data()[i + 1];
  }
  CHECK(differ == 0);
  Mt64 h(stream_seed(7, "w"));
  h.fill(w.data(), n);
  const auto kernels = available_uniform_kernels();
  CHECK(kernels.front() == "portable");
  for (const std::string& kernel : kernels) {  // each way this CPU has, whole and in awkward parts
    use_uniform_kernel(kernel);
    const auto uniform = random_uniform(7, "w", {n}, 0.125);
    std::vector<Scalar> parts(static_cast<std::size_t>(n));
    UniformStream stream(7, "w", 0.125);
    std::int64_t at = 0;
    for (std::int64_t part = 1; at < n; part = part * 3 % 641 + 1) {
      const std::int64_t m = std::min(part, n - at);
      stream.read(parts.data() + at, m);
      at += m;
    }
    for (std::int64_t i = 0; i < n; ++i) {
      const Scalar want = static_cast<Scalar>((2.0 * unit(w[static_cast<std::size_t>(i)]) - 1.0) * 0.125);
      differ += (want != uniform.data()[i]) + (want != parts[static_cast<std::size_t>(i)]);
    }
    INFO("uniform kernel " << kernel);
    CHECK(differ == 0);
  }
  use_uniform_kernel(kernels.back());
  // and a value worked by hand stays put: the first of seed 0's "embeddings" (shape_flow's x[0, 0, 0])
  CHECK(random_normal(0, "embeddings", {2}).data()[0] == 0.144408643f);
}

TEST_CASE("Mt64::discard skips as std::mt19937_64's discard does", "[random]") {
  std::mt19937_64 ref(11);
  Mt64 g(11);
  std::uint64_t word = 0;
  for (const std::int64_t skip : {0, 1, 311, 312, 313, 5000, 2}) {
    ref.discard(static_cast<unsigned long long>(skip));
    g.discard(skip);
    g.fill(&word, 1);
    CHECK(word == ref());
  }
}

TEST_CASE("a part of a stream, drawn from its position, is the same part of the whole draw", "[random]") {
  // how large seeded tensors are drawn side by side: parts that skip ahead in the one stream
  const std::int64_t n = 10001;
  const auto normal = random_normal(3, "x", {n});
  const auto uniform = random_uniform(3, "W", {n}, 0.5);
  for (const std::int64_t first : {0, 2, 312, 4096, 9998, 10000}) {
    const std::int64_t count = std::min<std::int64_t>(n - first, 777);
    std::vector<Scalar> part(static_cast<std::size_t>(count));
    fill_normal(3, "x", part.data(), count, first);
    CHECK(std::memcmp(part.data(), normal.data() + first, sizeof(Scalar) * part.size()) == 0);
    fill_uniform(3, "W", part.data(), count, 0.5, first);
    CHECK(std::memcmp(part.data(), uniform.data() + first, sizeof(Scalar) * part.size()) == 0);
  }
  std::vector<Scalar> odd(1);
  CHECK_THROWS(fill_normal(3, "x", odd.data(), 1, 5));  // a part starts on a pair
}

TEST_CASE("a generated weight gives random_uniform's values, element by element, read in parts, or held", "[random]") {
  const Shape shape{37, 29};
  const auto want = random_uniform(9, "weights.W_q", shape, 0.2);
  const Tensor gen = generated_uniform(9, "weights.W_q", shape, 0.2);
  REQUIRE(gen.reader() != nullptr);
  CHECK_FALSE(gen.held());
  for (const std::int64_t i : {0, 1, 28, 29, 500, 37 * 29 - 1}) CHECK(gen.at(i) == want.at(i));
  // a reader opened anywhere continues in order across calls of any size
  const Tensor::Reader read = (*gen.reader())(100);
  std::vector<Scalar> got(static_cast<std::size_t>(want.size() - 100));
  std::int64_t at = 0;
  for (const std::int64_t block : {1, 300, 4096}) {
    const std::int64_t m = std::min<std::int64_t>(block, static_cast<std::int64_t>(got.size()) - at);
    read(got.data() + at, m);
    at += m;
  }
  read(got.data() + at, static_cast<std::int64_t>(got.size()) - at);
  CHECK(std::memcmp(got.data(), want.data() + 100, sizeof(Scalar) * got.size()) == 0);
  CHECK(std::memcmp(gen.data(), want.data(), sizeof(Scalar) * static_cast<std::size_t>(want.size())) == 0);
  CHECK(gen.held());
  CHECK(gen.reader() == nullptr);  // held now: readers take the values
  CHECK(gen.reshaped({29, 37}).at(77) == want.at(77));
}

TEST_CASE("attn's own exp, log, sin/cos and tanh stay within 2 ulp of the C library's (tanh within 2^10), and position tables follow", "[random]") {
  std::mt19937_64 g(3);
  auto ulps = [](double a, double b) { return std::fabs(a - b) / std::max(std::numeric_limits<double>::min(), std::fabs(b) * 0x1p-52); };
  double worst_exp = 0, worst_log = 0, worst_sin = 0, worst_tanh = 0;
  for (int i = 0; i < 200000; ++i) {
    const double x = std::uniform_real_distribution<double>(-700, 700)(g);
    worst_exp = std::max(worst_exp, ulps(fixed::exp(x), std::exp(x)));
    const double y = std::uniform_real_distribution<double>(1e-6, 1e6)(g);
    worst_log = std::max(worst_log, std::fabs(fixed::log(y) - std::log(y)) / (0x1p-52 * std::max(1.0, std::fabs(std::log(y)))));
    const double z = std::ldexp(std::uniform_real_distribution<double>(-1, 1)(g), static_cast<int>(i % 40) - 30);  // 2^-30 .. 2^9
    worst_tanh = std::max(worst_tanh, ulps(fixed::tanh(z), std::tanh(z)));
    const double t = std::uniform_real_distribution<double>(-8e5, 8e5)(g);
    const auto sc = fixed::sincos(t);
    worst_sin = std::max({worst_sin, std::fabs(sc.s - std::sin(t)) / 0x1p-52, std::fabs(sc.c - std::cos(t)) / 0x1p-52});
  }
  CHECK(worst_exp <= 2);
  CHECK(worst_log <= 2);
  CHECK(worst_sin <= 2);
  CHECK(worst_tanh <= 1024);  // 1 − 2/(e^2x + 1) cancels near 2^-10: still 2^-42 relative, far below float's 2^-24
  const Tensor pe = sinusoidal_positions(300, 10);
  std::int64_t differ = 0;
  for (std::int64_t p = 0; p < 300; ++p)
    for (std::int64_t c = 0; c < 10; ++c) {
      const double angle = static_cast<double>(p) / std::pow(10000.0, static_cast<double>(c - c % 2) / 10.0);
      const double want = c % 2 == 0 ? std::sin(angle) : std::cos(angle);
      differ += std::fabs(pe.data()[p * 10 + c] - want) > 1e-7;
    }
  CHECK(differ == 0);
  CHECK(pe.data()[1 * 10 + 0] == static_cast<Scalar>(std::sin(1.0)));
}
