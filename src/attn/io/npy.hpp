// NumPy .npy files (format versions 1.0 to 3.0): float32 / float64, C order, little-endian in;
// float32 out (int64 for integer lists). Anything else is refused with a message that names the file
// and what it holds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"

namespace attn {

// `what` names the tensor in messages ("embeddings", "student weights.npy"). Input tensors refuse
// non-finite values; a trace's steps may hold them (-inf in masked, a student's NaN).
enum class NonFinite { Refuse, Allow };
Tensor read_npy(const std::string& path, const std::string& what, NonFinite non_finite = NonFinite::Refuse);
// The same from the file's bytes (path only names it in messages); the fuzzer's entry point.
Tensor parse_npy(std::string_view bytes, const std::string& path, const std::string& what, NonFinite non_finite = NonFinite::Refuse);
void write_npy(const std::string& path, const Tensor& t);
// One axis of int64 ('<i8'): padding lengths.
void write_npy(const std::string& path, const std::vector<std::int64_t>& values);

}  // namespace attn
