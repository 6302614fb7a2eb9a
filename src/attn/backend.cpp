// Backend-independent helpers of the backend interface.
#include "attn/backend.hpp"

#include "attn/error.hpp"

namespace attn {

BackendTensor BackendTensor::view(Shape new_shape) const {
  if (element_count(new_shape) != element_count(shape)) {
    throw InternalError("backend view " + shape_string(shape) + " -> " + shape_string(new_shape) + " changes the size");
  }
  return BackendTensor{std::move(new_shape), buffer};
}

}  // namespace attn
