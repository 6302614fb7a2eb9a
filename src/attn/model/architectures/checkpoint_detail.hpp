// What checkpoint.cpp and checkpoint_encoders.cpp share: the checks of the values and shapes they read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attn/model/formats/safetensors.hpp"

namespace attn::model {

// A weight holding NaN or ±inf would surface steps later as a value out of range in some step;
// named here (InputError), with the file, the tensor and the first such element.
void require_finite(const StoredTensor& t, const float* values, std::int64_t n);
// "[2, 3]"
std::string shape_text(const std::vector<std::int64_t>& shape);

}  // namespace attn::model
