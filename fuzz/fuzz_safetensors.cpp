// libFuzzer target over safetensors reading: any bytes either parse into tensors that lie inside the
// buffer and convert, or end in an InputError. Anything else aborts.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <vector>

#include "attn/core/error.hpp"
#include "attn/model/formats/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto tensors = attn::model::parse_safetensors(data, size, "fuzz.safetensors");
    for (const auto& t : tensors) {
      if (t.data < data || t.bytes > size || t.data + t.bytes > data + size) std::abort();
      if (t.dtype != "F32" && t.dtype != "F16" && t.dtype != "BF16") continue;
      if (t.elements() > (1 << 20)) continue;  // a few MB at most
      if (t.bytes != static_cast<std::uint64_t>(t.elements()) * (t.dtype == "F32" ? 4 : 2)) std::abort();
      std::vector<float> out(static_cast<std::size_t>(t.elements()));
      attn::model::convert_to_f32(t, out.data());
      if (!t.shape.empty() && t.shape[0] > 0) {
        const std::int64_t rows[2] = {t.shape[0] - 1, 0};
        std::vector<float> two(static_cast<std::size_t>(2 * (t.elements() / t.shape[0])));
        attn::model::convert_rows_to_f32(t, rows, two.data());
        const std::int64_t past[1] = {t.shape[0]};
        try {
          attn::model::convert_rows_to_f32(t, past, two.data());
          std::abort();  // a row past dim 0 must be refused
        } catch (const attn::InputError&) {
        }
      }
    }
  } catch (const attn::InputError&) {
  } catch (const std::exception& e) {
    std::cerr << "fuzz_safetensors: not an InputError: " << e.what() << "\n";
    std::abort();
  }
  return 0;
}
