// Safetensors files written byte by byte into a temporary directory, read back through the maps:
// values exactly (F32, F16 with subnormals/inf/NaN, BF16), rows, a two-shard index, and each refusal's
// message. Needs only attn/model/formats/safetensors.cpp.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <unistd.h>

#include "attn/core/error.hpp"
#include "attn/model/formats/safetensors.hpp"

using attn::model::StoredTensor;
using attn::model::TensorStore;
using Bytes = std::vector<unsigned char>;
namespace fs = std::filesystem;

namespace {

// A fresh directory, removed with its files at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    static int n = 0;
    path = fs::temp_directory_path() / ("attn-safetensors-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name, const Bytes& bytes) const {
    const fs::path p = path / name;
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return p.string();
  }
  std::string text(const std::string& name, const std::string& s) const { return file(name, Bytes(s.begin(), s.end())); }
};

// The 8-byte little-endian length (as given, or the header's own), the header text, then the data.
Bytes safetensors(const std::string& header, const Bytes& data, std::uint64_t length = UINT64_MAX) {
  if (length == UINT64_MAX) length = header.size();
  Bytes out(8);
  for (int i = 0; i < 8; ++i) out[i] = static_cast<unsigned char>(length >> (8 * i));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

template <typename T>
void put(Bytes& b, T v) {
  unsigned char raw[sizeof(T)];
  std::memcpy(raw, &v, sizeof(T));
  b.insert(b.end(), raw, raw + sizeof(T));
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const attn::InputError& e) {
    return e.what();
  }
  return "";
}

// The refusal of these bytes as "m.safetensors".
std::string refusal(const Bytes& b) {
  return message_of([&] { attn::model::parse_safetensors(b.data(), b.size(), "m.safetensors"); });
}

std::vector<float> f32(const StoredTensor& t) {
  std::vector<float> out(static_cast<std::size_t>(t.elements()));
  attn::model::convert_to_f32(t, out.data());
  return out;
}

std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }

}  // namespace

TEST_CASE("F32, F16 and BF16 read back exactly, from unaligned data", "[safetensors]") {
  // A 1-byte U8 tensor first, so every float tensor starts at an odd address.
  Bytes data{7};
  const float f32_values[4] = {1.5f, -2.25f, std::numeric_limits<float>::denorm_min() * 3, -std::numeric_limits<float>::infinity()};
  for (float v : f32_values) put(data, v);  // [1, 17)
  const std::uint16_t halves[10] = {0x3c00, 0xc000, 0x0001, 0x03ff, 0x0400, 0x8000, 0x7bff, 0x7c00, 0xfc00, 0x7e01};
  for (auto h : halves) put(data, h);  // [17, 37)
  const std::uint16_t bf16s[6] = {0x3f80, 0x3f81, 0x8000, 0x0001, 0x7f80, 0x7fc1};
  for (auto h : bf16s) put(data, h);  // [37, 49)
  const std::string header =
      R"({"__metadata__": {"format": "pt"}, "byte": {"dtype": "U8", "shape": [], "data_offsets": [0, 1]},)"
      R"( "w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [1, 17]},)"
      R"( "h": {"dtype": "F16", "shape": [10], "data_offsets": [17, 37]},)"
      R"( "b": {"dtype": "BF16", "shape": [3, 2], "data_offsets": [37, 49]},)"
      R"( "empty": {"dtype": "F32", "shape": [0, 5], "data_offsets": [49, 49]}})";
  TempDir dir;
  const std::string path = dir.file("model.safetensors", safetensors(header, data));
  const TensorStore store = TensorStore::open_file(path);
  CHECK(store.tensors().size() == 5);
  CHECK(store.describe() == "model.safetensors (BF16/F16/F32/U8, 5 tensors, 49 B)");
  CHECK(store.find("nope") == nullptr);
  CHECK(store.find("__metadata__") == nullptr);

  const StoredTensor* byte = store.find("byte");
  REQUIRE(byte != nullptr);
  CHECK(byte->elements() == 1);
  CHECK(byte->shape.empty());
  CHECK(byte->file == path);

  const StoredTensor* w = store.find("w");
  REQUIRE(w != nullptr);
  CHECK(w->dtype == "F32");
  CHECK(w->shape == std::vector<std::int64_t>{2, 2});
  CHECK(w->bytes == 16);
  CHECK(w->elements() == 4);
  const auto wv = f32(*w);
  for (int i = 0; i < 4; ++i) CHECK(bits(wv[i]) == bits(f32_values[i]));

  const auto hv = f32(*store.find("h"));
  CHECK(hv[0] == 1.0f);
  CHECK(hv[1] == -2.0f);
  CHECK(hv[2] == std::ldexp(1.0f, -24));             // smallest subnormal half
  CHECK(hv[3] == std::ldexp(1023.0f, -24));          // largest subnormal half
  CHECK(hv[4] == std::ldexp(1.0f, -14));             // smallest normal half
  CHECK(bits(hv[5]) == 0x80000000u);                 // -0, sign kept
  CHECK(hv[6] == 65504.0f);                          // largest half
  CHECK(hv[7] == std::numeric_limits<float>::infinity());
  CHECK(hv[8] == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(hv[9]));
  CHECK(bits(hv[9]) == (0x7fc00000u | (1u << 13)));  // payload kept

  const auto bv = f32(*store.find("b"));
  CHECK(bv[0] == 1.0f);
  CHECK(bv[1] == 1.0078125f);  // 1.01 stored as bf16 rounds to 1 + 2^-7, read back exactly that
  CHECK(bits(bv[2]) == 0x80000000u);
  CHECK(bv[3] == std::ldexp(1.0f, -133));  // a bf16 subnormal, a float32 subnormal
  CHECK(bv[4] == std::numeric_limits<float>::infinity());
  CHECK(bits(bv[5]) == 0x7fc10000u);

  const StoredTensor* empty = store.find("empty");
  REQUIRE(empty != nullptr);
  CHECK(empty->elements() == 0);
  CHECK(empty->bytes == 0);
  CHECK(f32(*empty).empty());

  SECTION("rows of an embedding, in the order asked") {
    const std::int64_t rows[3] = {2, 0, 2};
    float out[6];
    attn::model::convert_rows_to_f32(*store.find("b"), rows, out);
    CHECK(bits(out[0]) == 0x7f800000u);
    CHECK(bits(out[1]) == 0x7fc10000u);
    CHECK(out[2] == 1.0f);
    CHECK(out[3] == 1.0078125f);
    CHECK(bits(out[4]) == 0x7f800000u);
    const std::int64_t one[1] = {1};
    float w_row[2];
    attn::model::convert_rows_to_f32(*w, one, w_row);
    CHECK(w_row[0] == f32_values[2]);
    CHECK(w_row[1] == f32_values[3]);
  }
  SECTION("a row past dim 0, or negative, is refused naming the tensor, the row and the rows there are") {
    const std::int64_t past[2] = {0, 3};
    float out[4];
    CHECK(message_of([&] { attn::model::convert_rows_to_f32(*store.find("b"), past, out); }) ==
          path + ": row 3 is past the end of tensor \"b\": it has 3 rows (dim 0 of BF16 [3, 2])");
    const std::int64_t negative[1] = {-1};
    CHECK(message_of([&] { attn::model::convert_rows_to_f32(*store.find("b"), negative, out); }) ==
          path + ": row -1 is past the end of tensor \"b\": it has 3 rows (dim 0 of BF16 [3, 2])");
    CHECK(message_of([&] { attn::model::convert_rows_to_f32(*store.find("empty"), negative, out); }) ==
          path + ": row -1 is past the end of tensor \"empty\": it has 0 rows (dim 0 of F32 [0, 5])");
  }
  SECTION("a dtype attn does not read is refused on conversion") {
    float out[1];
    CHECK(message_of([&] { attn::model::convert_to_f32(*byte, out); }) ==
          path + ": tensor \"byte\" is U8 [], but attn reads F32, F16 and BF16");
    const std::int64_t zero[1] = {0};
    CHECK(message_of([&] { attn::model::convert_rows_to_f32(*byte, zero, out); }) ==
          path + ": tensor \"byte\" is U8 [], but attn reads F32, F16 and BF16");
  }
}

TEST_CASE("every dtype safetensors defines parses with its size", "[safetensors]") {
  const std::pair<const char*, int> dtypes[] = {{"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"I16", 2},     {"U16", 2},
                                                {"F16", 2},  {"BF16", 2}, {"I32", 4}, {"U32", 4},     {"F32", 4},
                                                {"F64", 8},  {"I64", 8},  {"U64", 8}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
  for (const auto& [dtype, size] : dtypes) {
    const std::string header = std::string(R"({"t": {"dtype": ")") + dtype + R"(", "shape": [3], "data_offsets": [0, )" +
                               std::to_string(3 * size) + "]}}";
    const Bytes b = safetensors(header, Bytes(static_cast<std::size_t>(3 * size)));
    const auto ts = attn::model::parse_safetensors(b.data(), b.size(), "m.safetensors");
    REQUIRE(ts.size() == 1);
    CHECK(ts[0].bytes == static_cast<std::uint64_t>(3 * size));
    CHECK(ts[0].data == b.data() + 8 + header.size());
  }
  // Gaps between tensors and spaces padding the header are allowed (bytes after the last tensor are not).
  const Bytes b = safetensors(R"({"a": {"dtype": "I64", "shape": [1], "data_offsets": [8, 16]}}    )", Bytes(16));
  CHECK(attn::model::parse_safetensors(b.data(), b.size(), "m.safetensors").size() == 1);
}

TEST_CASE("malformed safetensors bytes are refused, naming the file, the tensor and what was expected", "[safetensors]") {
  const auto one = [](const std::string& entry) { return R"({"t": )" + entry + "}"; };
  CHECK(refusal(Bytes{1, 2, 3}) ==
        "m.safetensors: the file is 3 bytes, too short for the 8-byte header length (not a safetensors file?)");
  CHECK(refusal(safetensors(std::string(30, ' '), {}, 512)) ==
        "m.safetensors: the file is 38 bytes, too short for the 8-byte header length and its 512-byte header (truncated?)");
  CHECK(refusal(safetensors("{}", {}, 1ull << 40)) ==
        "m.safetensors: the header length says 1099511627776 bytes, more than the 100000000 attn accepts (not a safetensors "
        "file?)");
  CHECK(refusal(safetensors("{\"t\": ", {})) == "m.safetensors: the 6-byte header is not valid JSON");
  CHECK(refusal(safetensors("[1, 2]", {})) == "m.safetensors: the header should be a JSON object, but it is [1,2]");
  CHECK(refusal(safetensors(std::string(100000, '[') + std::string(100000, ']'), {})) ==  // quoted without recursing deep
        "m.safetensors: the header should be a JSON object, but it is [[[[...]]]]");
  CHECK(refusal(safetensors(R"({"t": 1, "t": 2})", {})) == "m.safetensors: the header names \"t\" twice");
  CHECK(refusal(safetensors(R"({"t": {"dtype": "F32", "shape": [], "dtype": "F16", "data_offsets": [0, 2]}})", Bytes(2))) ==
        "m.safetensors: the header names \"dtype\" twice");
  CHECK(refusal(safetensors(R"({"a": {"k": 1}, "b": {"k": 2}})", {})) ==  // the same key in two objects is no repeat
        "m.safetensors: tensor \"a\": unknown key \"k\" (expected dtype, shape and data_offsets)");
  CHECK(refusal(safetensors(R"({"__metadata__": {"a": 1}})", {})) ==
        "m.safetensors: \"__metadata__\" entry \"a\" should be a string, but it is 1");
  CHECK(refusal(safetensors(one("[]"), {})) ==
        "m.safetensors: tensor \"t\": should be an object with dtype, shape and data_offsets, but it is []");
  CHECK(refusal(safetensors(one(R"({"dtype": "F32", "shape": []})"), {})) == "m.safetensors: tensor \"t\": has no \"data_offsets\"");
  CHECK(refusal(safetensors(one(R"({"dtype": "F32", "shape": [], "data_offsets": [0, 4], "x": 1})"), Bytes(4))) ==
        "m.safetensors: tensor \"t\": unknown key \"x\" (expected dtype, shape and data_offsets)");
  CHECK(refusal(safetensors(one(R"({"dtype": "F128", "shape": [1], "data_offsets": [0, 16]})"), Bytes(16))) ==
        "m.safetensors: tensor \"t\": unknown dtype \"F128\" (safetensors defines BOOL, U8, I8, I16, U16, F16, BF16, I32, "
        "U32, F32, F64, I64, U64, F8_E4M3 and F8_E5M2)");
  CHECK(refusal(safetensors(one(R"({"dtype": "F32", "shape": [2, -1], "data_offsets": [0, 0]})"), {})) ==
        "m.safetensors: tensor \"t\": shape [2,-1] has -1, not a non-negative integer");
  CHECK(refusal(safetensors(one(R"({"dtype": "F32", "shape": [2.0], "data_offsets": [0, 8]})"), Bytes(8))) ==
        "m.safetensors: tensor \"t\": shape [2.0] has 2.0, not a non-negative integer");
  CHECK(refusal(safetensors(one(R"({"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]})"), {})) ==
        "m.safetensors: tensor \"t\": shape [4294967296,4294967296] has more elements than fit in 64 bits");
  CHECK(refusal(safetensors(one(R"({"dtype": "F64", "shape": [4611686018427387904], "data_offsets": [0, 0]})"), {})) ==
        "m.safetensors: tensor \"t\": F64 [4611686018427387904] needs more bytes than fit in 64 bits");
  CHECK(refusal(safetensors(one(R"({"dtype": "F32", "shape": [1], "data_offsets": [4]})"), Bytes(4))) ==
        "m.safetensors: tensor \"t\": data_offsets should be [begin, end], two non-negative integers, but it is [4]");
  CHECK(refusal(safetensors(one(R"({"dtype": "F32", "shape": [0], "data_offsets": [4, 0]})"), Bytes(4))) ==
        "m.safetensors: tensor \"t\": data_offsets [4, 0] begin after they end");
  CHECK(refusal(safetensors(one(R"({"dtype": "F32", "shape": [4], "data_offsets": [0, 16]})"), Bytes(12))) ==
        "m.safetensors: tensor \"t\": data_offsets [0, 16] run past the 12 bytes of data after the header (truncated?)");
  CHECK(refusal(safetensors(one(R"({"dtype": "F32", "shape": [4, 12], "data_offsets": [0, 96]})"), Bytes(96))) ==
        "m.safetensors: tensor \"t\": data_offsets [0, 96] hold 96 bytes, but F32 [4, 12] needs 192");
  CHECK(refusal(safetensors(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                            R"( "b": {"dtype": "F16", "shape": [2], "data_offsets": [6, 10]}})",
                            Bytes(10))) == "m.safetensors: tensors \"a\" [0, 8] and \"b\" [6, 10] overlap");
  // bytes after the last tensor's data: a file appended to, refused as the safetensors library does
  CHECK(refusal(safetensors(one(R"({"dtype": "F32", "shape": [2], "data_offsets": [0, 8]})"), Bytes(12))) ==
        "m.safetensors: 4 bytes after the last tensor's data (the tensors end at byte 8 of the 12 after the header); a safetensors "
        "file ends with its last tensor");
  CHECK(refusal(safetensors("{}", Bytes(3))) ==
        "m.safetensors: 3 bytes after the last tensor's data (the tensors end at byte 0 of the 3 after the header); a safetensors "
        "file ends with its last tensor");
}

TEST_CASE("a model.safetensors.index.json maps each shard once and finds every tensor", "[safetensors]") {
  TempDir dir;
  Bytes a_data, b_data;
  put(a_data, 0.5f);
  put(a_data, -4.0f);
  put(b_data, std::uint16_t{0x3c00});
  put(b_data, 3.0f);
  dir.file("a.safetensors", safetensors(R"({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", a_data));
  dir.file("b.safetensors", safetensors(R"({"y": {"dtype": "F16", "shape": [1, 1], "data_offsets": [0, 2]},)"
                                        R"( "z": {"dtype": "F32", "shape": [], "data_offsets": [2, 6]}})",
                                        b_data));
  const std::string index = dir.text("model.safetensors.index.json", R"({"metadata": {"total_size": 12},)"
                                                                     R"( "weight_map": {"x": "a.safetensors", "y": "b.safetensors"}})");
  TensorStore store = TensorStore::open_index(index);
  CHECK(store.describe() == "model.safetensors.index.json: 2 shards (F16/F32, 3 tensors, 14 B)");
  REQUIRE(store.tensors().size() == 3);
  const StoredTensor* x = store.find("x");
  REQUIRE(x != nullptr);
  CHECK(x->file == (dir.path / "a.safetensors").string());
  CHECK(f32(*x) == std::vector<float>{0.5f, -4.0f});
  REQUIRE(store.find("y") != nullptr);
  CHECK(f32(*store.find("y")) == std::vector<float>{1.0f});
  REQUIRE(store.find("z") != nullptr);  // in a shard, not in the map: still found
  CHECK(store.find("z")->file == (dir.path / "b.safetensors").string());
  CHECK(f32(*store.find("z")) == std::vector<float>{3.0f});

  SECTION("the maps outlive a move of the store") {
    TensorStore moved = std::move(store);
    REQUIRE(moved.find("y") != nullptr);
    CHECK(f32(*moved.find("y")) == std::vector<float>{1.0f});
    CHECK(moved.describe() == "model.safetensors.index.json: 2 shards (F16/F32, 3 tensors, 14 B)");
  }
  SECTION("a shard the map names is missing") {
    const std::string bad = dir.text("missing.index.json", R"({"weight_map": {"x": "a.safetensors", "q": "gone.safetensors"}})");
    CHECK(message_of([&] { TensorStore::open_index(bad); }) ==
          (dir.path / "gone.safetensors").string() + ": cannot open the safetensors file: No such file or directory");
  }
  SECTION("a tensor the map puts in a shard is not there") {
    const std::string bad = dir.text("lying.index.json", R"({"weight_map": {"x": "a.safetensors", "y": "a.safetensors"}})");
    CHECK(message_of([&] { TensorStore::open_index(bad); }) == bad + ": weight_map puts tensor \"y\" in a.safetensors, but " +
                                                                   (dir.path / "a.safetensors").string() + " has no such tensor");
  }
  SECTION("shard names must stay beside the index") {
    const std::string up = dir.text("up.index.json", R"({"weight_map": {"x": "../a.safetensors"}})");
    CHECK(message_of([&] { TensorStore::open_index(up); }) ==
          up + ": weight_map[\"x\"] names shard \"../a.safetensors\", but shards must be plain file names beside the index "
               "(no \"/\" or \"..\")");
    const std::string abs = dir.text("abs.index.json", R"({"weight_map": {"x": "/etc/passwd"}})");
    CHECK(message_of([&] { TensorStore::open_index(abs); }).find("names shard \"/etc/passwd\"") != std::string::npos);
  }
  SECTION("a tensor stored in two shards is ambiguous") {
    dir.file("c.safetensors", safetensors(R"({"x": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]},)"
                                          R"( "w": {"dtype": "F32", "shape": [], "data_offsets": [4, 8]}})",
                                          Bytes(8)));
    const std::string bad = dir.text("twice.index.json", R"({"weight_map": {"x": "a.safetensors", "w": "c.safetensors"}})");
    const std::string m = message_of([&] { TensorStore::open_index(bad); });
    CHECK(m == bad + ": tensor \"x\" is stored twice, in " + (dir.path / "a.safetensors").string() + " and in " +
                   (dir.path / "c.safetensors").string());
  }
  SECTION("malformed indexes") {
    CHECK(message_of([&] { TensorStore::open_index(dir.text("a.json", "{")); }) ==
          (dir.path / "a.json").string() + ": the index is not valid JSON");
    CHECK(message_of([&] { TensorStore::open_index(dir.text("b.json", R"({"metadata": {}})")); }) ==
          (dir.path / "b.json").string() + ": the index should be an object with a \"weight_map\" object");
    CHECK(message_of([&] { TensorStore::open_index(dir.text("c.json", R"({"weight_map": {"x": 1}})")); }) ==
          (dir.path / "c.json").string() + ": weight_map[\"x\"] should be a shard's file name, but it is 1");
    CHECK(message_of([&] { TensorStore::open_index(dir.text("d.json", R"({"weight_map": {}})")); }) ==
          (dir.path / "d.json").string() + ": \"weight_map\" is empty");
    CHECK(message_of([&] { TensorStore::open_index((dir.path / "none.json").string()); }) ==
          (dir.path / "none.json").string() + ": cannot open the index: No such file or directory");
  }
}

TEST_CASE("files that cannot be mapped are refused with the reason", "[safetensors]") {
  TempDir dir;
  const std::string missing = (dir.path / "missing.safetensors").string();
  CHECK(message_of([&] { TensorStore::open_file(missing); }) ==
        missing + ": cannot open the safetensors file: No such file or directory");
  CHECK(message_of([&] { TensorStore::open_file(dir.path.string()); }) ==
        dir.path.string() + ": cannot read the safetensors file: Is a directory");
  const std::string empty = dir.file("empty.safetensors", {});
  CHECK(message_of([&] { TensorStore::open_file(empty); }) == empty + ": the file is empty (0 bytes), not a safetensors file");
  Bytes b = safetensors(R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", Bytes(8));
  b.resize(b.size() - 3);
  const std::string truncated = dir.file("truncated.safetensors", b);
  CHECK(message_of([&] { TensorStore::open_file(truncated); }) ==
        truncated + ": tensor \"t\": data_offsets [0, 8] run past the 5 bytes of data after the header (truncated?)");
}
