// Safetensors checkpoints, memory-mapped: an 8-byte little-endian header length N, N bytes of JSON
// header {"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}, then the
// raw little-endian data (offsets are relative to the byte after the header). One file, or a
// model.safetensors.index.json whose "weight_map" names each tensor's shard.
// Every refusal is an InputError naming the file (and the tensor, where there is one) and what was
// expected. Nothing here knows about models: names are looked up exactly as stored.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attn::model {

// One tensor's entry in a file's header, pointing into the mapped bytes.
struct StoredTensor {
  std::string name;
  std::string file;                  // the file it lives in, as it will be named in messages
  std::string dtype;                 // as stored: "F32", "F16", "BF16", "I64", ...
  std::vector<std::int64_t> shape;
  const unsigned char* data = nullptr;  // its bytes in the mapping (not aligned in general)
  std::uint64_t bytes = 0;
  std::int64_t elements() const;
};

// The parsed header of one file's bytes (mapped, or a fuzzer's buffer that outlives the result).
// Checks: the length prefix fits, the header is a JSON object of well-formed entries, every dtype is
// one safetensors defines, every [begin, end) lies inside the data, holds exactly
// elements × dtype size bytes, and no two entries overlap. `file` names the source in messages.
std::vector<StoredTensor> parse_safetensors(const unsigned char* bytes, std::uint64_t size, const std::string& file);

// The float32 value of each element of a "F32", "F16" or "BF16" tensor, in row-major order, written
// to out[0 .. elements()). Any other dtype is refused, naming the file, the tensor and the dtypes
// attn reads. F16 and BF16 convert exactly (every such value is a float32).
void convert_to_f32(const StoredTensor& t, float* out);
// Rows [row, row + 1) .. of a tensor read as [rows, elements/rows]: for embedding lookups, so only
// the pages of the rows asked for are touched. `rows` are checked against dim 0.
void convert_rows_to_f32(const StoredTensor& t, std::span<const std::int64_t> rows, float* out);

// A float tensor's element type, for readers that convert elements where they are (the products'
// weights, read from the mapping as they are needed). Any other dtype is refused as convert_to_f32 does.
enum class FloatType { F32, F16, BF16 };
FloatType float_type(const StoredTensor& t);
float half_to_float(std::uint16_t h);
// Element i (a flat index) of a tensor of type f whose bytes start at `data`, as float32 (exact).
inline float element_f32(const unsigned char* data, FloatType f, std::int64_t i) {
  if (f == FloatType::F32) {
    float v;
    std::memcpy(&v, data + 4 * i, 4);
    return v;
  }
  std::uint16_t v;
  std::memcpy(&v, data + 2 * i, 2);
  return f == FloatType::F16 ? half_to_float(v) : std::bit_cast<float>(static_cast<std::uint32_t>(v) << 16);
}
// The flat index of t's first element that is NaN or ±inf (-1: none), read from the stored bits in
// parallel blocks, so that a weight can be refused before a product reads it.
std::int64_t first_nonfinite(const StoredTensor& t);

// A checkpoint's tensors: one mapped .safetensors file, or every shard an index names. The maps stay
// open as long as the store lives; tensors are found by their exact stored name.
class TensorStore {
 public:
  // A single .safetensors file.
  static TensorStore open_file(const std::string& path);
  // A model.safetensors.index.json: {"weight_map": {"name": "shard file", ...}} with shards beside
  // it. Each shard is mapped once; a name the map gives whose shard lacks it is refused.
  static TensorStore open_index(const std::string& index_path);

  const StoredTensor* find(std::string_view name) const;  // nullptr when absent
  const std::vector<StoredTensor>& tensors() const { return tensors_; }
  std::string describe() const;
  const std::string& path() const { return path_; }  // the file, or the index, as opened  // "model.safetensors (F32, 1.2 MB)" / "3 shards of model.safetensors.index.json (BF16, ...)"

  TensorStore(TensorStore&&) noexcept;
  TensorStore& operator=(TensorStore&&) noexcept;
  ~TensorStore();

 private:
  TensorStore();
  struct Mapping;
  std::vector<std::unique_ptr<Mapping>> maps_;
  std::vector<StoredTensor> tensors_;
  std::string description_;
  std::string path_;
};

}  // namespace attn::model
