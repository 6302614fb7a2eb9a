// The CUDA backend: the numeric primitives of backend.hpp on an NVIDIA GPU (cuBLAS for products,
// small kernels for the rest). This header is all its users see.
#pragma once

#include <memory>

#include "attn/numerics/backend.hpp"

namespace attn {

// Throws InputError naming the reason (no device, driver error) when no GPU can be used.
std::unique_ptr<Backend> make_cuda_backend();

}  // namespace attn

// The module's entry point, found by make_backend("cuda") with dlsym; owns nothing after returning.
extern "C" attn::Backend* attn_make_cuda_backend();
