// Tensor storage and shape helpers. No arithmetic on values lives here.
#include "attn/core/tensor.hpp"

#include <fmt/format.h>
#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "attn/core/error.hpp"

namespace attn {

namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;

constexpr int kPopulateWrite = 23;  // MADV_POPULATE_WRITE (Linux 5.14); older kernels refuse it harmlessly

std::size_t mapped_size(std::size_t bytes) { return (bytes + kHugePage - 1) / kHugePage * kHugePage; }
}  // namespace

// Large buffers: an anonymous mapping populated by the kernel in one call (measured on 3.4 GB: 0.75 s,
// against 6.1 s for malloc and first-touch faults). Not asked for huge pages: with the kernel's
// default THP defrag ("madvise"), MADV_HUGEPAGE makes the fault path compact memory synchronously,
// which cost up to 0.5 s per 200 MB on a busy 2-core VM.
template <typename T>
T* StorageAllocator<T>::allocate(std::size_t n) {
  const std::size_t bytes = n * sizeof(T);
  if (bytes < kHugePage) return std::allocator<T>().allocate(n);
  const std::size_t size = mapped_size(bytes);
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  if (!populate) return static_cast<T*>(p);
  // The kernel zeroes the pages one thread at a time per call: from 8 MB on (where a thread team
  // pays for itself), the threads each populate their own slices (2-core VM: 4.3 -> 8 GB/s).
  constexpr std::size_t kSlice = std::size_t{512} << 10;
  const auto slices = static_cast<std::int64_t>(size / kSlice);
#pragma omp parallel for schedule(dynamic, 1) if (size >= (std::size_t{8} << 20) && !omp_in_parallel())
  for (std::int64_t i = 0; i < slices; ++i) populate_pages(static_cast<char*>(p) + i * kSlice, kSlice);
  return static_cast<T*>(p);
}

template <typename T>
void StorageAllocator<T>::deallocate(T* p, std::size_t n) noexcept {
  if (n * sizeof(T) < kHugePage) std::allocator<T>().deallocate(p, n);
  else munmap(p, mapped_size(n * sizeof(T)));
}

template struct StorageAllocator<Scalar>;

void populate_pages(void* p, std::size_t bytes) {
  constexpr std::uintptr_t kPage = 4096;
  const auto from = reinterpret_cast<std::uintptr_t>(p) & ~(kPage - 1);
  const auto to = (reinterpret_cast<std::uintptr_t>(p) + bytes + kPage - 1) & ~(kPage - 1);
  if (bytes > 0) madvise(reinterpret_cast<void*>(from), to - from, kPopulateWrite);
}

std::int64_t element_count(const Shape& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

bool all_finite(const Scalar* p, std::int64_t n) {
  std::uint32_t any = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    std::uint32_t bits;
    std::memcpy(&bits, p + j, sizeof bits);
    any |= static_cast<std::uint32_t>((bits & 0x7f800000u) == 0x7f800000u);  // exponent all ones
  }
  return any == 0;
}

std::string shape_string(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

Tensor::Tensor(Shape shape) : Tensor(uninitialized(std::move(shape))) {
  std::fill(storage_->begin(), storage_->end(), Scalar{0});
}

Tensor Tensor::uninitialized(Shape shape) {
  Tensor t;
  t.storage_ = std::make_shared<Storage>(static_cast<std::size_t>(element_count(shape)));
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::unpopulated(Shape shape) {
  Tensor t;
  t.storage_ = std::make_shared<Storage>(static_cast<std::size_t>(element_count(shape)), StorageAllocator<Scalar>(false));
  t.shape_ = std::move(shape);
  return t;
}

Tensor::Tensor(Shape shape, const std::vector<Scalar>& values)
    : shape_(std::move(shape)), storage_(std::make_shared<Storage>(values.begin(), values.end())) {
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

Tensor Tensor::deferred(Shape shape, std::function<void(Scalar*)> fill, std::function<Scalar(std::int64_t)> element,
                        FindNonfinite nonfinite) {
  Tensor t;
  t.shape_ = std::move(shape);
  t.deferred_ = std::make_shared<Deferred>();
  t.deferred_->fill = std::move(fill);
  t.deferred_->element = std::move(element);
  t.deferred_->nonfinite = std::move(nonfinite);
  return t;
}

Tensor Tensor::generated(Shape shape, OpenAt open, Columns columns) {
  const std::int64_t n = element_count(shape);
  Tensor t = deferred(
      std::move(shape), [open, n](Scalar* out) { open(0)(out, n); },
      [open](std::int64_t i) {
        Scalar v;
        open(i)(&v, 1);
        return v;
      });
  t.deferred_->open = std::move(open);
  t.deferred_->columns = std::move(columns);
  return t;
}

const Storage* Tensor::storage() const {
  if (storage_) return storage_.get();
  if (!deferred_) return nullptr;
  Deferred& d = *deferred_;
  std::call_once(d.once, [&] {
    auto s = std::make_shared<Storage>(static_cast<std::size_t>(element_count(shape_)));
    d.fill(s->data());
    d.storage = std::move(s);
  });
  return d.storage.get();
}

const Scalar* Tensor::data() const {
  const Storage* s = storage();
  return s != nullptr ? s->data() : nullptr;
}

std::span<const Scalar> Tensor::values() const {
  const Storage* s = storage();
  if (s == nullptr) return {};
  return {s->data(), s->size()};
}

Scalar Tensor::at(std::int64_t flat) const {
  if (deferred_ && !deferred_->storage) return deferred_->element(flat);
  return data()[flat];
}

Tensor Tensor::reshaped(Shape shape) const {
  if (!has_data()) return shape_only(std::move(shape));
  if (element_count(shape) != element_count(shape_)) {
    throw InternalError(fmt::format("cannot view {} as {}", shape_string(shape_), shape_string(shape)));
  }
  Tensor t;
  t.shape_ = std::move(shape);
  t.storage_ = storage_;
  t.deferred_ = deferred_;
  t.wide_ = wide_;
  t.terms_ = terms_;
  return t;
}

Tensor Tensor::with_wide(Wide wide) const {
  if (static_cast<std::int64_t>(wide.size()) != size()) {
    throw InternalError(fmt::format("tensor of shape {} given {} float64 values", shape_string(shape_), wide.size()));
  }
  Tensor t = *this;
  t.wide_ = std::make_shared<const Wide>(std::move(wide));
  t.terms_.reset();
  return t;
}

Tensor Tensor::with_wide(Wide wide, Wide terms) const {
  if (terms.size() != wide.size()) throw InternalError("tensor given float64 values and terms of different counts");
  Tensor t = with_wide(std::move(wide));
  t.terms_ = std::make_shared<const Wide>(std::move(terms));
  return t;
}

Tensor Tensor::gathered(Shape shape, const std::function<std::int64_t(std::int64_t)>& from) const {
  Tensor t = uninitialized(std::move(shape));
  const Scalar* in = data();
  Scalar* out = t.mutable_data();
  const std::int64_t n = t.size();
  for (std::int64_t i = 0; i < n; ++i) out[i] = in[from(i)];
  if (!wide_) return t;
  Wide w(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) w[static_cast<std::size_t>(i)] = (*wide_)[static_cast<std::size_t>(from(i))];
  return t.with_wide(std::move(w));
}

}  // namespace attn
