// Safetensors reading (https://huggingface.co/docs/safetensors). A file is
//   [8 bytes: N, little-endian u64][N bytes: JSON header][data]
// where the header is {"<name>": {"dtype": "F32", "shape": [d0, ...], "data_offsets": [begin, end]},
// ..., "__metadata__": {"<key>": "<string>", ...}} and [begin, end) is relative to the data's first
// byte. An index (model.safetensors.index.json) is {"metadata": {...}, "weight_map": {"<name>":
// "<shard file beside the index>", ...}}. Files are mapped read-only; tensors point into the maps.
#include "attn/model/formats/safetensors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "attn/core/error.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attn::model {
namespace {

static_assert(std::endian::native == std::endian::little, "attn reads little-endian safetensors data");

using json = nlohmann::json;

constexpr std::uint64_t max_header_bytes = 100'000'000;

// Bytes per element of each dtype safetensors defines; 0 for anything else.
std::uint64_t dtype_size(const std::string& d) {
  static const std::map<std::string, std::uint64_t, std::less<>> sizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
      {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"F64", 8},     {"I64", 8}, {"U64", 8}};
  const auto it = sizes.find(d);
  return it == sizes.end() ? 0 : it->second;
}

// A JSON value in a message, cut short when long or deep (dump() would recurse without end).
void brief_into(const json& j, std::string& out, int depth) {
  if (!j.is_structured()) {
    out += j.dump();
    return;
  }
  const bool object = j.is_object();
  out += object ? '{' : '[';
  bool first = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!first) out += ',';
    first = false;
    if (depth >= 3 || out.size() > 60) {
      out += "...";
      break;
    }
    if (object) out += json(it.key()).dump() + ':';
    brief_into(*it, out, depth + 1);
  }
  out += object ? '}' : ']';
}

std::string brief(const json& j) {
  std::string s;
  brief_into(j, s, 0);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

std::string shape_text(const std::vector<std::int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

std::string human_bytes(double b) {  // as attn/core/bytes.cpp writes them: "548.1 MB"
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  int u = 0;
  while (b >= 1000 && u < 5) b /= 1000, ++u;
  return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.1f} {}", b, units[u]);
}

// A non-negative integer JSON value (not 4.0, not -1), or nullopt.
std::optional<std::uint64_t> natural(const json& j) {
  if (j.is_number_unsigned()) return j.get<std::uint64_t>();
  if (j.is_number_integer() && j.get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(j.get<std::int64_t>());
  return std::nullopt;
}

// Parses JSON text without exceptions; the first key an object repeats is reported in `dup`.
json parse_json(const char* first, const char* last, std::string& dup) {
  std::vector<std::set<std::string>> open;  // the keys of each object being parsed, innermost last
  const json::parser_callback_t cb = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) open.emplace_back();
    if (event == json::parse_event_t::object_end && !open.empty()) open.pop_back();
    if (event == json::parse_event_t::key && !open.empty() && dup.empty() && parsed.is_string() &&
        !open.back().insert(parsed.get<std::string>()).second)
      dup = parsed.get<std::string>();
    return true;
  };
  return json::parse(first, last, cb, /*allow_exceptions=*/false);
}

}  // namespace

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h >> 15) << 31;
  const std::uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0) {  // zero or subnormal: mant × 2^-24, exact in float32
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf, NaN (payload kept)
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

namespace {

void require_float_dtype(const StoredTensor& t) {
  if (t.dtype != "F32" && t.dtype != "F16" && t.dtype != "BF16")
    throw InputError(fmt::format("{}: tensor \"{}\" is {} {}, but attn reads F32, F16 and BF16", t.file, t.name, t.dtype,
                                 shape_text(t.shape)));
}

// n elements of t's dtype at src (unaligned) into out.
void convert(const StoredTensor& t, const unsigned char* src, std::size_t n, float* out) {
  if (n == 0) return;
  if (t.dtype == "F32") {
    std::memcpy(out, src, n * 4);
    return;
  }
  if (t.dtype == "F16") {
    for (std::size_t i = 0; i < n; ++i) out[i] = element_f32(src, FloatType::F16, static_cast<std::int64_t>(i));
  } else {  // BF16: the dtype is compared once, not per element
    for (std::size_t i = 0; i < n; ++i) out[i] = element_f32(src, FloatType::BF16, static_cast<std::int64_t>(i));
  }
}

// Whether any of elements [i0, i1) has its exponent's bits all set (inf or NaN): a loop without an
// early exit, so that it vectorises; the index is found afterwards, in the rare block that has one.
template <typename U>
bool any_exponent_full(const unsigned char* data, std::int64_t i0, std::int64_t i1, U mask) {
  U any = 0;
  for (std::int64_t i = i0; i < i1; ++i) {
    U v;
    std::memcpy(&v, data + sizeof(U) * i, sizeof(U));
    any |= static_cast<U>((v & mask) == mask);
  }
  return any != 0;
}

template <typename U>
std::int64_t first_exponent_full(const unsigned char* data, std::int64_t n, U mask) {
  constexpr std::int64_t kBlock = std::int64_t{1} << 16;
  const std::int64_t blocks = (n + kBlock - 1) / kBlock;
  std::int64_t first = n;
#pragma omp parallel for schedule(static) reduction(min : first) if (n >= 4 * kBlock)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t i0 = b * kBlock, i1 = std::min(n, i0 + kBlock);
    if (!any_exponent_full<U>(data, i0, i1, mask)) continue;
    for (std::int64_t i = i0; i < i1; ++i) {
      U v;
      std::memcpy(&v, data + sizeof(U) * i, sizeof(U));
      if ((v & mask) == mask) {
        first = std::min(first, i);
        break;
      }
    }
  }
  return first == n ? -1 : first;
}

}  // namespace

FloatType float_type(const StoredTensor& t) {
  require_float_dtype(t);
  return t.dtype == "F32" ? FloatType::F32 : t.dtype == "F16" ? FloatType::F16 : FloatType::BF16;
}

std::int64_t first_nonfinite(const StoredTensor& t) {
  switch (float_type(t)) {
    case FloatType::F32: return first_exponent_full<std::uint32_t>(t.data, t.elements(), 0x7f800000u);
    case FloatType::F16: return first_exponent_full<std::uint16_t>(t.data, t.elements(), 0x7c00u);
    case FloatType::BF16: return first_exponent_full<std::uint16_t>(t.data, t.elements(), 0x7f80u);
  }
  return -1;
}

std::int64_t StoredTensor::elements() const {
  std::int64_t n = 1;
  for (const auto d : shape) n *= d;
  return n;
}

namespace {

// One tensor's header entry {dtype, shape, data_offsets}, checked against the data section (data,
// data_size bytes after the header).
StoredTensor read_entry(const std::string& file, const std::string& name, const json& entry, const unsigned char* data, std::uint64_t data_size) {
  const std::string where = fmt::format("{}: tensor \"{}\"", file, name);
  if (!entry.is_object())
    throw InputError(fmt::format("{}: should be an object with dtype, shape and data_offsets, but it is {}", where, brief(entry)));
  for (const auto& [k, v] : entry.items())
    if (k != "dtype" && k != "shape" && k != "data_offsets")
      throw InputError(fmt::format("{}: unknown key \"{}\" (expected dtype, shape and data_offsets)", where, k));
  for (const char* k : {"dtype", "shape", "data_offsets"})
    if (!entry.contains(k)) throw InputError(fmt::format("{}: has no \"{}\"", where, k));

  StoredTensor t;
  t.name = name;
  t.file = file;
  const json& dtype = entry["dtype"];
  if (!dtype.is_string()) throw InputError(fmt::format("{}: dtype should be a string, but it is {}", where, brief(dtype)));
  t.dtype = dtype.get<std::string>();
  const std::uint64_t esize = dtype_size(t.dtype);
  if (esize == 0)
    throw InputError(fmt::format("{}: unknown dtype \"{}\" (safetensors defines BOOL, U8, I8, I16, U16, F16, BF16, I32, "
                                 "U32, F32, F64, I64, U64, F8_E4M3 and F8_E5M2)",
                                 where, t.dtype));

  const json& shape = entry["shape"];
  if (!shape.is_array()) throw InputError(fmt::format("{}: shape should be an array, but it is {}", where, brief(shape)));
  std::uint64_t elements = 1;
  for (const auto& d : shape) {
    const auto v = natural(d);
    if (!v) throw InputError(fmt::format("{}: shape {} has {}, not a non-negative integer", where, brief(shape), brief(d)));
    if (*v > static_cast<std::uint64_t>(INT64_MAX) || __builtin_mul_overflow(elements, *v, &elements) ||
        elements > static_cast<std::uint64_t>(INT64_MAX))
      throw InputError(fmt::format("{}: shape {} has more elements than fit in 64 bits", where, brief(shape)));
    t.shape.push_back(static_cast<std::int64_t>(*v));
  }
  std::uint64_t need = 0;
  if (__builtin_mul_overflow(elements, esize, &need))
    throw InputError(fmt::format("{}: {} {} needs more bytes than fit in 64 bits", where, t.dtype, shape_text(t.shape)));

  const json& offs = entry["data_offsets"];
  if (!offs.is_array() || offs.size() != 2 || !natural(offs[0]) || !natural(offs[1]))
    throw InputError(fmt::format("{}: data_offsets should be [begin, end], two non-negative integers, but it is {}", where,
                                 brief(offs)));
  const std::uint64_t begin = *natural(offs[0]), end = *natural(offs[1]);
  if (begin > end) throw InputError(fmt::format("{}: data_offsets [{}, {}] begin after they end", where, begin, end));
  if (end > data_size)
    throw InputError(fmt::format("{}: data_offsets [{}, {}] run past the {} bytes of data after the header (truncated?)",
                                 where, begin, end, data_size));
  if (end - begin != need)
    throw InputError(fmt::format("{}: data_offsets [{}, {}] hold {} bytes, but {} {} needs {}", where, begin, end,
                                 end - begin, t.dtype, shape_text(t.shape), need));
  t.data = data + begin;
  t.bytes = need;
  return t;
}

}  // namespace

std::vector<StoredTensor> parse_safetensors(const unsigned char* bytes, std::uint64_t size, const std::string& file) {
  if (size < 8)
    throw InputError(fmt::format("{}: the file is {} bytes, too short for the 8-byte header length (not a safetensors file?)",
                                 file, size));
  std::uint64_t n = 0;
  std::memcpy(&n, bytes, 8);
  if (n > max_header_bytes)
    throw InputError(fmt::format("{}: the header length says {} bytes, more than the {} attn accepts (not a safetensors file?)",
                                 file, n, max_header_bytes));
  if (8 + n > size)
    throw InputError(fmt::format("{}: the file is {} bytes, too short for the 8-byte header length and its {}-byte header "
                                 "(truncated?)",
                                 file, size, n));
  const char* text = reinterpret_cast<const char*>(bytes + 8);
  std::string dup;
  const json header = parse_json(text, text + n, dup);
  if (header.is_discarded()) throw InputError(fmt::format("{}: the {}-byte header is not valid JSON", file, n));
  if (!header.is_object())
    throw InputError(fmt::format("{}: the header should be a JSON object, but it is {}", file, brief(header)));
  if (!dup.empty()) throw InputError(fmt::format("{}: the header names \"{}\" twice", file, dup));

  const unsigned char* data = bytes + 8 + n;
  const std::uint64_t data_size = size - 8 - n;
  std::vector<StoredTensor> out;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object())
        throw InputError(fmt::format("{}: \"__metadata__\" should be an object of strings, but it is {}", file, brief(entry)));
      for (const auto& [k, v] : entry.items())
        if (!v.is_string())
          throw InputError(fmt::format("{}: \"__metadata__\" entry \"{}\" should be a string, but it is {}", file, k, brief(v)));
      continue;
    }
    out.push_back(read_entry(file, name, entry, data, data_size));
  }

  // No two non-empty ranges may share a byte.
  std::vector<const StoredTensor*> by_offset;
  for (const auto& t : out)
    if (t.bytes > 0) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](auto a, auto b) { return a->data < b->data; });
  for (std::size_t i = 1; i < by_offset.size(); ++i) {
    const StoredTensor &a = *by_offset[i - 1], &b = *by_offset[i];
    if (b.data < a.data + a.bytes)
      throw InputError(fmt::format("{}: tensors \"{}\" [{}, {}] and \"{}\" [{}, {}] overlap", file, a.name, a.data - data,
                                   a.data - data + a.bytes, b.name, b.data - data, b.data - data + b.bytes));
  }
  // As the safetensors library requires, the tensors fill the data section: bytes after the last one
  // are a file that was appended to or mis-written, not data to ignore.
  const std::uint64_t used = by_offset.empty() ? 0 : static_cast<std::uint64_t>(by_offset.back()->data - data) + by_offset.back()->bytes;
  if (used < data_size) {
    throw InputError(fmt::format("{}: {} bytes after the last tensor's data (the tensors end at byte {} of the {} after the header); a "
                                 "safetensors file ends with its last tensor",
                                 file, data_size - used, used, data_size));
  }
  return out;
}

void convert_to_f32(const StoredTensor& t, float* out) {
  require_float_dtype(t);
  convert(t, t.data, static_cast<std::size_t>(t.elements()), out);
}

void convert_rows_to_f32(const StoredTensor& t, std::span<const std::int64_t> rows, float* out) {
  require_float_dtype(t);
  if (t.shape.empty()) throw InputError(fmt::format("{}: tensor \"{}\" is a scalar, it has no rows", t.file, t.name));
  const std::int64_t n = t.shape[0];
  const std::size_t width = n == 0 ? 0 : static_cast<std::size_t>(t.elements() / n);
  const std::size_t esize = t.dtype == "F32" ? 4 : 2;
  for (const std::int64_t r : rows) {
    if (r < 0 || r >= n)
      throw InputError(fmt::format("{}: row {} is past the end of tensor \"{}\": it has {} rows (dim 0 of {} {})", t.file, r,
                                   t.name, n, t.dtype, shape_text(t.shape)));
    convert(t, t.data + static_cast<std::size_t>(r) * width * esize, width, out);
    out += width;
  }
}

// One mapped file, unmapped when the store goes.
struct TensorStore::Mapping {
  void* addr = nullptr;
  std::size_t size = 0;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (addr != nullptr) ::munmap(addr, size);
  }

  explicit Mapping(const std::string& path) {
    // O_NONBLOCK: a FIFO must not hang the open; it is refused below as not a regular file.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) throw InputError(fmt::format("{}: cannot open the safetensors file: {}", path, std::strerror(errno)));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      throw InputError(fmt::format("{}: cannot read the safetensors file: {}", path, std::strerror(err)));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      throw InputError(fmt::format("{}: cannot read the safetensors file: {}", path,
                                   S_ISDIR(st.st_mode) ? std::strerror(EISDIR) : "not a regular file"));
    }
    if (st.st_size == 0) {
      ::close(fd);
      throw InputError(fmt::format("{}: the file is empty (0 bytes), not a safetensors file", path));
    }
    size = static_cast<std::size_t>(st.st_size);
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    const int err = errno;
    ::close(fd);
    if (p == MAP_FAILED) throw InputError(fmt::format("{}: cannot map the safetensors file: {}", path, std::strerror(err)));
    addr = p;
  }
  const unsigned char* bytes() const { return static_cast<const unsigned char*>(addr); }
};

TensorStore::TensorStore() = default;
TensorStore::TensorStore(TensorStore&&) noexcept = default;
TensorStore& TensorStore::operator=(TensorStore&&) noexcept = default;
TensorStore::~TensorStore() = default;

namespace {

// "F32" or "BF16/F32", the tensors' count and total bytes.
std::string summary(const std::vector<StoredTensor>& tensors) {
  std::set<std::string> dtypes;
  std::uint64_t bytes = 0;
  for (const auto& t : tensors) dtypes.insert(t.dtype), bytes += t.bytes;
  if (tensors.empty()) return "no tensors";
  return fmt::format("{}, {} tensor{}, {}", fmt::join(dtypes, "/"), tensors.size(), tensors.size() == 1 ? "" : "s",
                     human_bytes(static_cast<double>(bytes)));
}

void sort_by_name(std::vector<StoredTensor>& tensors) {
  std::stable_sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
}

}  // namespace

TensorStore TensorStore::open_file(const std::string& path) {
  TensorStore s;
  s.maps_.push_back(std::make_unique<Mapping>(path));
  s.tensors_ = parse_safetensors(s.maps_.back()->bytes(), s.maps_.back()->size, path);
  sort_by_name(s.tensors_);
  s.description_ = fmt::format("{} ({})", std::filesystem::path(path).filename().string(), summary(s.tensors_));
  s.path_ = path;
  return s;
}

TensorStore TensorStore::open_index(const std::string& index_path) {
  std::error_code ec;
  if (std::filesystem::is_directory(index_path, ec))
    throw InputError(fmt::format("{}: cannot read the index: {}", index_path, std::strerror(EISDIR)));
  std::ifstream in(index_path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open the index: {}", index_path, std::strerror(errno)));
  std::ostringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  std::string dup;
  const json index = parse_json(text.data(), text.data() + text.size(), dup);
  if (index.is_discarded()) throw InputError(fmt::format("{}: the index is not valid JSON", index_path));
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    throw InputError(fmt::format("{}: the index should be an object with a \"weight_map\" object", index_path));
  if (!dup.empty()) throw InputError(fmt::format("{}: the index names \"{}\" twice", index_path, dup));
  const json& weight_map = index["weight_map"];
  if (weight_map.empty()) throw InputError(fmt::format("{}: \"weight_map\" is empty", index_path));

  // Each distinct shard, in order of name, with the tensors the map puts there.
  std::map<std::string, std::vector<std::string>> shards;
  for (const auto& [name, shard] : weight_map.items()) {
    if (!shard.is_string())
      throw InputError(fmt::format("{}: weight_map[\"{}\"] should be a shard's file name, but it is {}", index_path, name,
                                   brief(shard)));
    const std::string f = shard.get<std::string>();
    if (f.empty() || f.find('/') != std::string::npos || f.find("..") != std::string::npos)
      throw InputError(fmt::format("{}: weight_map[\"{}\"] names shard \"{}\", but shards must be plain file names beside "
                                   "the index (no \"/\" or \"..\")",
                                   index_path, name, f));
    shards[f].push_back(name);
  }

  TensorStore s;
  const std::filesystem::path dir = std::filesystem::path(index_path).parent_path();
  for (const auto& [shard, names] : shards) {
    const std::string path = (dir / shard).string();
    s.maps_.push_back(std::make_unique<Mapping>(path));
    std::vector<StoredTensor> got = parse_safetensors(s.maps_.back()->bytes(), s.maps_.back()->size, path);
    sort_by_name(got);
    for (const auto& name : names) {
      const auto it = std::lower_bound(got.begin(), got.end(), name, [](const auto& t, const auto& n) { return t.name < n; });
      if (it == got.end() || it->name != name)
        throw InputError(fmt::format("{}: weight_map puts tensor \"{}\" in {}, but {} has no such tensor", index_path, name,
                                     shard, path));
    }
    for (auto& t : got) s.tensors_.push_back(std::move(t));
  }
  sort_by_name(s.tensors_);
  for (std::size_t i = 1; i < s.tensors_.size(); ++i)
    if (s.tensors_[i].name == s.tensors_[i - 1].name)
      throw InputError(fmt::format("{}: tensor \"{}\" is stored twice, in {} and in {}", index_path, s.tensors_[i].name,
                                   s.tensors_[i - 1].file, s.tensors_[i].file));
  s.path_ = index_path;
  s.description_ = fmt::format("{}: {} shard{} ({})", std::filesystem::path(index_path).filename().string(), shards.size(),
                               shards.size() == 1 ? "" : "s", summary(s.tensors_));
  return s;
}

const StoredTensor* TensorStore::find(std::string_view name) const {
  const auto it =
      std::lower_bound(tensors_.begin(), tensors_.end(), name, [](const auto& t, std::string_view n) { return t.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

std::string TensorStore::describe() const { return description_; }

}  // namespace attn::model
