// Byte sizes: formatting, parsing --max-memory, and the physical memory the default limit halves.
// No estimates here: what a trace costs is cost.cpp's business.
#include "attn/core/bytes.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <exception>

#include "attn/core/error.hpp"
#include "attn/core/options.hpp"

namespace attn {

std::int64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && size > 0 ? static_cast<std::int64_t>(pages) * size : std::int64_t{8} << 30;
}

std::int64_t default_max_memory() { return physical_memory_bytes() / 2; }

std::string human_bytes(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  int u = 0;
  while (b >= 1000 && u < 5) b /= 1000, ++u;
  return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.1f} {}", b, units[u]);
}

namespace {

// shown: the option and its value as the user wrote them ("--max-memory 8X").
std::int64_t parse_bytes_shown(const std::string& text, const std::string& shown) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = text.substr(used);
  double mult = 0;
  if (unit.empty() || unit == "B") mult = 1;
  else if (unit == "K" || unit == "KB") mult = 1e3;
  else if (unit == "M" || unit == "MB") mult = 1e6;
  else if (unit == "G" || unit == "GB") mult = 1e9;
  else if (unit == "T" || unit == "TB") mult = 1e12;
  // (below one byte would read as 0, which is no limit)
  if (used == 0 || mult == 0 || !(v * mult >= 1) || v * mult > 9e18) {
    throw InputError(fmt::format("{}: expected a size such as 512M, 8G or 1000000 (bytes)", shown));
  }
  return static_cast<std::int64_t>(v * mult);
}

}  // namespace

std::int64_t parse_bytes(const std::string& text, const std::string& option) { return parse_bytes_shown(text, option + " " + text); }

std::int64_t parse_bytes(const std::string& text, Door door, std::string_view key) {
  return parse_bytes_shown(text, option_with(door, key, text));
}

}  // namespace attn
