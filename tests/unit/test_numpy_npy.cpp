// NumPy's legacy RandomState reproduced bit for bit, and .npy files read and written.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "attn/io/npy.hpp"
#include "attn/io/trace_io.hpp"
#include "attn/numerics/numpy_random.hpp"
#include "helpers.hpp"

using namespace attn;
using namespace attn::test;

TEST_CASE("rand() matches np.random.RandomState(seed).rand", "[numpy]") {
  // np.random.RandomState(42).rand(3) and RandomState(4294967295).rand(2), printed by NumPy 1.24
  NumpyRandomState a(42);
  CHECK(a.rand() == Approx(0.3745401188473625).epsilon(1e-15));
  CHECK(a.rand() == Approx(0.9507143064099162).epsilon(1e-15));
  CHECK(a.rand() == Approx(0.7319939418114051).epsilon(1e-15));
  NumpyRandomState b(4294967295U);
  CHECK(b.rand() == Approx(0.09763203).margin(5e-9));
  CHECK(b.rand() == Approx(0.91238285).margin(5e-9));
}

TEST_CASE("randn() matches the legacy polar Gaussian, cached second value included", "[numpy]") {
  NumpyRandomState a(42);
  const double want[5] = {0.49671415, -0.1382643, 0.64768854, 1.52302986, -0.23415337};
  for (double w : want) CHECK(a.randn() == Approx(w).margin(5e-9));
  NumpyRandomState b(0);
  CHECK(b.randn() == Approx(1.76405235).margin(5e-9));
  CHECK(b.randn() == Approx(0.40015721).margin(5e-9));
  CHECK(b.randn() == Approx(0.97873798).margin(5e-9));
  CHECK(b.rand() == Approx(0.4236548).margin(5e-8));  // draws continue on the same stream
}

TEST_CASE("the numpy generator draws x, then W_q, W_k, W_v, in that order", "[numpy]") {
  const Spec s = parse_spec(R"({"random": {"generator": "numpy", "seed": 42, "B": 1, "T": 3, "C": 4}})", "t");
  CHECK(s.x.data()[0] == Approx(0.37454012).margin(5e-8));
  CHECK(s.x.data()[11] == Approx(0.96990985).margin(5e-8));
  NumpyRandomState rs(42);
  for (int i = 0; i < 12; ++i) rs.rand();
  REQUIRE(s.w.W_q);
  CHECK(s.w.W_q->data()[0] == static_cast<Scalar>(rs.rand()));
  CHECK(s.notes[0] == "embeddings: draw 1 of rs = np.random.RandomState(42): rs.rand(1, 3, 4)");
  CHECK(s.notes[1] == "weights.W_q: draw 2 of rs = np.random.RandomState(42): rs.rand(4, 4)");
  CHECK(error_of(R"({"random": {"generator": "numpy", "seed": 4294967296, "T": 1, "C": 1}})") ==
        "random.seed: NumPy's RandomState takes seeds 0 .. 2**32 - 1, got 4294967296");
  CHECK(error_of(R"({"random": {"seed": 1, "T": 1, "C": 1, "distribution": "randn"}})") ==
        "random.distribution: only the \"numpy\" generator takes a distribution (\"rand\" or \"randn\")");
}

TEST_CASE(".npy: what attn writes it reads back, as tensors in the input", "[npy]") {
  const auto dir = std::filesystem::temp_directory_path() / "attn_npy_test";
  std::filesystem::create_directories(dir);
  write_npy((dir / "x.npy").string(), Tensor({2, 3}, {1, 0, 1, 0, 1, 1}));
  write_npy((dir / "v.npy").string(), Tensor({3}, {1, 2, 3}));
  const Tensor back = read_npy((dir / "x.npy").string(), "x");
  CHECK(back.shape() == Shape{2, 3});
  CHECK(back.data()[2] == 1.0f);
  CHECK(read_npy((dir / "v.npy").string(), "v").shape() == Shape{3});
  const Spec s = parse_spec(R"({"embeddings": {"npy": "x.npy"}, "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}})", "t.json",
                            dir.string());
  CHECK(s.T == 2);
  CHECK(s.C == 3);
  std::filesystem::remove_all(dir);
}

TEST_CASE(".npy: Fortran order, other dtypes, big-endian and truncated files are refused", "[npy][bad]") {
  const auto dir = std::filesystem::temp_directory_path() / "attn_npy_bad";
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& header, std::size_t data_bytes) {
    std::string h = header;
    h.append((64 - (10 + h.size() + 1) % 64) % 64, ' ');
    h += '\n';
    std::ofstream out(dir / name, std::ios::binary);
    out.write("\x93NUMPY\x01\x00", 8);
    const char len[2] = {static_cast<char>(h.size() & 0xff), static_cast<char>(h.size() >> 8)};
    out.write(len, 2);
    out << h << std::string(data_bytes, '\0');
  };
  write("fortran.npy", "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16);
  write("int.npy", "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16);
  write("big.npy", "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8);
  write("short.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }", 8);
  auto err = [&](const std::string& name) {
    try {
      read_npy((dir / name).string(), "embeddings");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(err("fortran.npy"), Catch::StartsWith("embeddings: Fortran-order arrays are not supported"));
  CHECK_THAT(err("int.npy"), Catch::StartsWith("embeddings: dtype '<c8' is not supported: attn reads float32 ('<f4'), float64 ('<f8'), bool and integers"));
  CHECK_THAT(err("big.npy"), Catch::StartsWith("embeddings: dtype '>f4' is not supported"));
  CHECK_THAT(err("short.npy"), Catch::StartsWith("embeddings: truncated data: shape [4] needs 32 bytes"));
  CHECK_THAT(err("missing.npy"), Catch::StartsWith("embeddings: cannot open the .npy file: No such file or directory"));
  std::filesystem::remove_all(dir);
}

TEST_CASE(".npy: bool and integer arrays are read where every value is exactly a float32", "[npy]") {
  const auto dir = std::filesystem::temp_directory_path() / "attn_npy_ints";
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& descr, const std::string& shape, const std::string& data) {
    std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + shape + "), }";
    h.append((64 - (10 + h.size() + 1) % 64) % 64, ' ');
    h += '\n';
    std::ofstream out(dir / name, std::ios::binary);
    out.write("\x93NUMPY\x01\x00", 8);
    const char len[2] = {static_cast<char>(h.size() & 0xff), static_cast<char>(h.size() >> 8)};
    out.write(len, 2);
    out << h << data;
  };
  write("mask.npy", "|b1", "2, 2", std::string("\x01\x00\x01\x01", 4));  // np.tril(np.ones((2, 2), bool))
  write("i1.npy", "|i1", "3,", std::string("\xfd\x00\x64", 3));          // [-3, 0, 100]
  write("u2.npy", "<u2", "2,", std::string("\xff\xff\x07\x00", 4));      // [65535, 7]
  write("i4.npy", "<i4", "1,", std::string("\x01\x00\x00\x81", 4));      // -2130706431: past 2^24
  const auto values = [&](const std::string& name) {
    const Tensor t = read_npy((dir / name).string(), "mask");
    return std::vector<Scalar>(t.values().begin(), t.values().end());
  };
  CHECK(values("mask.npy") == std::vector<Scalar>{1, 0, 1, 1});
  CHECK(values("i1.npy") == std::vector<Scalar>{-3, 0, 100});
  CHECK(values("u2.npy") == std::vector<Scalar>{65535, 7});
  CHECK_THROWS_WITH(read_npy((dir / "i4.npy").string(), "mask"),
                    "mask: value -2130706431 at flat index 0 is not exactly a float32 (integers up to 2^24 are) (" + (dir / "i4.npy").string() + ")");
  // a student's directory: its messages name the step once, and a bool mask reads like any other
  CHECK_THROWS_WITH(load_trace(dir.string()),
                    "i4: value -2130706431 at flat index 0 is not exactly a float32 (integers up to 2^24 are) (" + (dir / "i4.npy").string() + ")");
  std::filesystem::remove(dir / "i4.npy");
  const LoadedTrace t = load_trace(dir.string());
  CHECK(t.find("mask") != nullptr);
  std::filesystem::remove_all(dir);
}
