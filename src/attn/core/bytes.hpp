// Byte sizes for people and for limits: "40.0 GB" out, "8G" in, and the machine's memory that
// --max-memory defaults from. Knows nothing of traces or specs, so both can use it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "attn/core/door.hpp"

namespace attn {

std::int64_t physical_memory_bytes();
std::int64_t default_max_memory();  // half of physical memory
std::string human_bytes(double bytes);   // "40.0 GB"
// "8G", "512M", "1.5G", "1000000": bytes, at least 1 (InputError naming the option otherwise, as
// "--max-memory 8X" or, spelled as door does, "max_memory=\"8X\"").
std::int64_t parse_bytes(const std::string& text, const std::string& option);
std::int64_t parse_bytes(const std::string& text, Door door, std::string_view key);

}  // namespace attn
