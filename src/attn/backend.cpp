// Backend-independent helpers of the backend interface.
#include "attn/backend.hpp"

#include <string>

#include "attn/error.hpp"
#ifdef ATTN_HAVE_CUDA
#include "attn/cuda/cuda_backend.hpp"
#endif

namespace attn {

BackendTensor BackendTensor::view(Shape new_shape) const {
  if (element_count(new_shape) != element_count(shape)) {
    throw InternalError("backend view " + shape_string(shape) + " -> " + shape_string(new_shape) + " changes the size");
  }
  return BackendTensor{std::move(new_shape), buffer};
}

std::unique_ptr<Backend> make_backend(std::string_view name) {
  if (name == "cpu") return make_cpu_backend();
  if (name == "cuda") {
#ifdef ATTN_HAVE_CUDA
    return make_cuda_backend();
#else
    throw InputError("--backend cuda: this build of attn has no CUDA backend (configure with -DATTN_CUDA=ON where nvcc is installed)");
#endif
  }
  throw InputError("--backend " + std::string(name) + ": expected cpu or cuda");
}

}  // namespace attn
