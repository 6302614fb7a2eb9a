// A shape plus row-major float32 values, shared and immutable once built.
// Views (reshaped) share storage with the tensor they come from; nothing here computes attention.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <string>
#include <vector>

namespace attn {

using Scalar = float;  // the one number type of every trace, as in PyTorch's default dtype
using Shape = std::vector<std::int64_t>;

// Tensor storage: large buffers (2 MB and up) are mapped and populated by the kernel in one call,
// since first-touch page faults otherwise cost more than the arithmetic; elements are not
// value-initialised (Tensor(Shape) zeroes explicitly, Tensor::uninitialized does not).
template <typename T>
struct StorageAllocator {
  using value_type = T;
  StorageAllocator() = default;
  template <typename U>
  StorageAllocator(const StorageAllocator<U>&) noexcept {}
  T* allocate(std::size_t n);
  void deallocate(T* p, std::size_t n) noexcept;
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;  // default-initialise: no zeroing pass over gigabytes
  }
  template <typename U, typename... A>
  void construct(U* p, A&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(args)...);
  }
  bool operator==(const StorageAllocator&) const noexcept { return true; }
};
using Storage = std::vector<Scalar, StorageAllocator<Scalar>>;

std::int64_t element_count(const Shape& shape);
std::string shape_string(const Shape& shape);  // "[2, 4, 512]"

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Shape shape);                     // zero-filled
  Tensor(Shape shape, const std::vector<Scalar>& values);  // values.size() == element_count(shape)
  // Values left unset: for a producer that writes every element (the backends).
  static Tensor uninitialized(Shape shape);
  // A shape with no values: what a cost estimate (a dry run) works with.
  static Tensor shape_only(Shape shape);
  bool has_data() const { return storage_ != nullptr; }

  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  std::int64_t dim(int axis) const;  // axis < 0 counts from the end
  std::int64_t size() const { return storage_ ? static_cast<std::int64_t>(storage_->size()) : 0; }
  bool empty() const { return size() == 0; }

  std::span<const Scalar> values() const;
  const Scalar* data() const { return storage_ ? storage_->data() : nullptr; }
  // Writable access is for the producer that has just created the tensor, before it is shared.
  Scalar* mutable_data() { return storage_ ? storage_->data() : nullptr; }

  // The same values under another shape with the same element count: a view, no copy.
  Tensor reshaped(Shape shape) const;

 private:
  Shape shape_;
  std::shared_ptr<Storage> storage_;
};

}  // namespace attn
