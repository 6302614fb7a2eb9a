// libFuzzer target over .npy reading: any bytes either parse into a tensor or end in an InputError.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string_view>

#include "attn/core/error.hpp"
#include "attn/io/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const attn::Tensor t = attn::parse_npy(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.npy", "fuzz",
                                           attn::NonFinite::Allow);
    if (t.size() != attn::element_count(t.shape())) std::abort();
  } catch (const attn::InputError&) {
  } catch (const std::exception& e) {
    std::cerr << "fuzz_npy: not an InputError: " << e.what() << "\n";
    std::abort();
  }
  return 0;
}
