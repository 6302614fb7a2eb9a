// Byte sizes for people and for limits: "40.0 GB" out, "8G" in, and the machine's memory that
// --max-memory defaults from. Knows nothing of traces or specs, so both can use it.
#pragma once

#include <cstdint>
#include <string>

namespace attn {

std::int64_t physical_memory_bytes();
std::int64_t default_max_memory();  // half of physical memory
std::string human_bytes(double bytes);   // "40.0 GB"
// "8G", "512M", "1.5G", "1000000": bytes (InputError otherwise).
std::int64_t parse_bytes(const std::string& text, const std::string& option);

}  // namespace attn
