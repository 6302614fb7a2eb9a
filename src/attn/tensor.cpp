// Tensor storage and shape helpers. No arithmetic on values lives here.
#include "attn/tensor.hpp"

#include <fmt/format.h>

#include "attn/error.hpp"

namespace attn {

std::int64_t element_count(const Shape& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::string shape_string(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

Tensor::Tensor(Shape shape)
    : shape_(std::move(shape)),
      storage_(std::make_shared<std::vector<Scalar>>(static_cast<std::size_t>(element_count(shape_)))) {}

Tensor::Tensor(Shape shape, std::vector<Scalar> values)
    : shape_(std::move(shape)), storage_(std::make_shared<std::vector<Scalar>>(std::move(values))) {
  if (static_cast<std::int64_t>(storage_->size()) != element_count(shape_)) {
    throw InternalError(fmt::format("tensor of shape {} given {} values", shape_string(shape_), storage_->size()));
  }
}

Tensor Tensor::shape_only(Shape shape) {
  Tensor t;
  t.shape_ = std::move(shape);
  return t;
}

std::int64_t Tensor::dim(int axis) const {
  int r = rank();
  int a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r) throw InternalError(fmt::format("axis {} out of range for shape {}", axis, shape_string(shape_)));
  return shape_[static_cast<std::size_t>(a)];
}

std::span<const Scalar> Tensor::values() const {
  if (!storage_) return {};
  return {storage_->data(), storage_->size()};
}

Tensor Tensor::reshaped(Shape shape) const {
  if (!storage_) return shape_only(std::move(shape));
  if (element_count(shape) != element_count(shape_)) {
    throw InternalError(fmt::format("cannot view {} as {}", shape_string(shape_), shape_string(shape)));
  }
  Tensor t;
  t.shape_ = std::move(shape);
  t.storage_ = storage_;
  return t;
}

}  // namespace attn
