// .npy reading and writing (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html).
#include "attn/io/npy.hpp"

#include <fmt/format.h>

#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>

#include "attn/core/error.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attn {
namespace {

static_assert(std::endian::native == std::endian::little, "attn reads and writes little-endian .npy data");

[[noreturn]] void refuse(const std::string& what, const std::string& path, const std::string& why) {
  throw InputError(fmt::format("{}: {} ({})", what, why, path));
}

}  // namespace

Tensor read_npy(const std::string& path, const std::string& what, NonFinite non_finite) {
  // Only regular files: a device or a FIFO could be read forever.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    if (!std::filesystem::exists(path, ec)) refuse(what, path, "cannot open the .npy file: No such file or directory");
    refuse(what, path, "not a regular file");
  }
  // Mapped, not read: the values are copied once, from the page cache into the tensor.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) refuse(what, path, fmt::format("cannot open the .npy file: {}", std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    refuse(what, path, fmt::format("cannot read the .npy file: {}", std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {  // what was opened, not only what the path named a moment before
    ::close(fd);
    refuse(what, path, "not a regular file");
  }
  if (st.st_size == 0) {
    ::close(fd);
    return parse_npy({}, path, what, non_finite);  // refused: no magic
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  const int map_err = errno;
  ::close(fd);
  if (map == MAP_FAILED) refuse(what, path, fmt::format("cannot read the .npy file: {}", std::strerror(map_err)));
  struct Unmap {
    void* p;
    std::size_t n;
    ~Unmap() { ::munmap(p, n); }
  } unmap{map, size};
  return parse_npy(std::string_view(static_cast<const char*>(map), size), path, what, non_finite);
}

Tensor parse_npy(std::string_view bytes, const std::string& path, const std::string& what, NonFinite non_finite) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != std::string_view("\x93NUMPY", 6)) {
    refuse(what, path, "not a .npy file (no \\x93NUMPY magic)");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  std::size_t pos = 8;
  std::uint32_t header_len = 0;
  auto byte = [&](std::size_t i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])); };
  if (major == 1) {
    header_len = byte(8) | (byte(9) << 8);
    pos = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) refuse(what, path, "truncated .npy header");
    header_len = byte(8) | (byte(9) << 8) | (byte(10) << 16) | (byte(11) << 24);
    pos = 12;
  } else {
    refuse(what, path, fmt::format("unsupported .npy format version {}", major));
  }
  if (header_len > (1U << 20) || pos + header_len > bytes.size()) refuse(what, path, "truncated or oversized .npy header");
  const std::string header(bytes.substr(pos, header_len));
  pos += header_len;

  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([^']*)')"))) refuse(what, path, "header has no 'descr'");
  const std::string descr = m[1];
  if (!std::regex_search(header, m, std::regex(R"('fortran_order'\s*:\s*(True|False))"))) refuse(what, path, "header has no 'fortran_order'");
  if (m[1] == "True") refuse(what, path, "Fortran-order arrays are not supported: save with np.ascontiguousarray(a)");
  if (!std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))"))) refuse(what, path, "header has no 'shape'");
  Shape shape;
  const std::string dims = m[1];
  const std::regex number(R"(\d+)");
  for (std::sregex_iterator it(dims.begin(), dims.end(), number), end; it != end; ++it) {
    if (it->str().size() > 15) refuse(what, path, fmt::format("dimension {} is too large", it->str()));
    shape.push_back(std::stoll(it->str()));
  }
  // Floats, and booleans and integers (a mask saved as np.tril(np.ones(..., bool))): every value must
  // be exactly a float32, as every integer up to 2^24 is.
  enum class Kind { Float, Signed, Unsigned, Bool };
  Kind kind = Kind::Float;
  std::size_t width = 0;
  if (descr == "<f4") width = 4;
  else if (descr == "<f8") width = 8;
  else if (descr == "|b1") kind = Kind::Bool, width = 1;
  else if (descr == "|i1" || descr == "<i2" || descr == "<i4" || descr == "<i8") kind = Kind::Signed, width = static_cast<std::size_t>(descr[2] - '0');
  else if (descr == "|u1" || descr == "<u2" || descr == "<u4" || descr == "<u8") kind = Kind::Unsigned, width = static_cast<std::size_t>(descr[2] - '0');
  else {
    refuse(what, path, fmt::format("dtype '{}' is not supported: attn reads float32 ('<f4'), float64 ('<f8'), bool and integers, "
                                   "little-endian", descr));
  }

  double elements = 1;
  for (auto d : shape) elements *= static_cast<double>(d);
  if (elements <= 0) refuse(what, path, fmt::format("empty array of shape {}", shape_string(shape)));
  // The file must hold what the header promises; checked before allocating anything that large.
  const double need = elements * static_cast<double>(width);
  if (need > static_cast<double>(bytes.size() - pos)) {
    refuse(what, path, fmt::format("truncated data: shape {} needs {} bytes", shape_string(shape), static_cast<std::uint64_t>(need)));
  }
  const auto n = static_cast<std::size_t>(element_count(shape));
  Tensor out = Tensor::uninitialized(shape);
  Scalar* values = out.mutable_data();
  if (kind == Kind::Float && width == 4) {
    // float32 as it is; a first pass only on the exponent bits (all ones: inf or NaN)
    std::memcpy(values, bytes.data() + pos, n * sizeof(Scalar));
    if (non_finite != NonFinite::Refuse || all_finite(values, static_cast<std::int64_t>(n))) return out;
  }
  Tensor::Wide wide;  // a float64 file's values as written, for attn check's float64 judge
  if (kind == Kind::Float && width == 8) wide.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    double v = 0;
    const char* at = bytes.data() + pos + i * width;
    if (kind == Kind::Float && width == 4) {
      float f;
      std::memcpy(&f, at, 4);
      v = f;
    } else if (kind == Kind::Float) {
      std::memcpy(&v, at, 8);
    } else if (kind == Kind::Bool) {
      v = *at != 0 ? 1 : 0;
    } else {
      std::uint64_t u = 0;
      std::memcpy(&u, at, width);  // little-endian: the low bytes
      if (kind == Kind::Signed && width < 8 && (u >> (8 * width - 1)) != 0) u |= ~std::uint64_t{0} << (8 * width);  // sign-extend
      const bool negative = kind == Kind::Signed && static_cast<std::int64_t>(u) < 0;
      const std::uint64_t magnitude = negative ? ~u + 1 : u;
      if (magnitude > (std::uint64_t{1} << 24)) {
        refuse(what, path, fmt::format("value {}{} at flat index {} is not exactly a float32 (integers up to 2^24 are)", negative ? "-" : "",
                                       magnitude, i));
      }
      v = negative ? -static_cast<double>(magnitude) : static_cast<double>(magnitude);
    }
    if (non_finite == NonFinite::Refuse && (!std::isfinite(v) || std::fabs(v) > std::numeric_limits<Scalar>::max())) {
      refuse(what, path, fmt::format("value {} at flat index {} is not a finite float32", v, i));
    }
    values[i] = static_cast<Scalar>(v);
    if (!wide.empty()) wide[i] = v;
  }
  return wide.empty() ? out : out.with_wide(std::move(wide));
}

namespace {

// The header as numpy writes it: "(3,)" for one axis, "(2, 3)" for more, padded with spaces so that
// magic + length + header + '\n' is a multiple of 64 bytes; then the data.
void write_npy_bytes(const std::string& path, const char* descr, const Shape& shape, const void* data, std::size_t bytes) {
  std::string dims = fmt::format("{}", fmt::join(shape, ", "));
  if (shape.size() == 1) dims += ",";
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, dims);
  const std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError(fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
  out.write("\x93NUMPY\x01\x00", 8);
  const auto len = static_cast<std::uint16_t>(header.size());
  const char len_bytes[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(len_bytes, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  if (!out) throw InputError(fmt::format("{}: write failed", path));
}

}  // namespace

void write_npy(const std::string& path, const Tensor& t) {
  write_npy_bytes(path, "<f4", t.shape(), t.data(), static_cast<std::size_t>(t.size()) * sizeof(Scalar));
}

void write_npy(const std::string& path, const std::vector<std::int64_t>& values) {
  write_npy_bytes(path, "<i8", Shape{static_cast<std::int64_t>(values.size())}, values.data(), values.size() * sizeof(std::int64_t));
}

}  // namespace attn
