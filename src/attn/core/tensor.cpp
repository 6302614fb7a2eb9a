// Tensor storage and shape helpers. No arithmetic on values lives here.
#include "attn/core/tensor.hpp"

#include <fmt/format.h>
#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#include "attn/core/error.hpp"

namespace attn {

namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;

constexpr int kPopulateWrite = 23;  // MADV_POPULATE_WRITE (Linux 5.14); older kernels refuse it harmlessly

std::size_t mapped_size(std::size_t bytes) { return (bytes + kHugePage - 1) / kHugePage * kHugePage; }

// Large mappings freed lately, kept (populated) for the next large allocation: the kept mapping
// closest in size is taken, its tail unmapped when it is larger, grown (mremap, only the new pages
// populated) when it is smaller. A computation that makes and drops large tensors over and over
// (attn heads' blocks of rows, each a little wider than the last; a checkpoint's layers) then has the
// kernel zero its pages about once, not at every allocation. At most kCachedBytes are kept, the
// oldest unmapped first. Their stale values are no one's: a Tensor is either filled by its producer
// (uninitialized) or zeroed here (Tensor(Shape)).
class MappingCache {
 public:
  struct Taken {
    void* p = nullptr;
    std::size_t populated = 0;  // bytes from p on that are backed already
  };
  Taken take(std::size_t size) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (kept_.empty()) return {};
    auto best = kept_.begin();  // the closest in size, the latest kept of those
    auto distance = [&](std::size_t n) { return n > size ? n - size : size - n; };
    for (auto it = kept_.begin(); it != kept_.end(); ++it)
      if (distance(it->second) <= distance(best->second)) best = it;
    const auto [p, have] = *best;
    bytes_ -= have;
    kept_.erase(best);
    if (have >= size) {
      if (have > size) munmap(static_cast<char*>(p) + size, have - size);  // (both multiples of kHugePage)
      return {p, size};
    }
    void* grown = mremap(p, have, size, MREMAP_MAYMOVE);
    if (grown == MAP_FAILED) {
      munmap(p, have);
      return {};
    }
    return {grown, have};
  }
  void give(void* p, std::size_t size) {
    std::vector<std::pair<void*, std::size_t>> out;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (size > kCachedBytes) {
        out.emplace_back(p, size);
      } else {
        while (bytes_ + size > kCachedBytes) {
          out.push_back(kept_.front());
          bytes_ -= kept_.front().second;
          kept_.erase(kept_.begin());
        }
        kept_.emplace_back(p, size);
        bytes_ += size;
      }
    }
    for (const auto& [q, n] : out) munmap(q, n);
  }

 private:
  static constexpr std::size_t kCachedBytes = std::size_t{512} << 20;
  std::mutex mutex_;
  std::vector<std::pair<void*, std::size_t>> kept_;  // oldest first
  std::size_t bytes_ = 0;
};

MappingCache& mappings() {
  static auto* cache = new MappingCache;  // never destroyed: tensors may be freed during exit
  return *cache;
}
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
  const auto [kept, populated] = mappings().take(size);
  void* p = kept;
  if (p == nullptr) {
    p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
  }
  if (!populate || populated == size) return static_cast<T*>(p);
  // The kernel zeroes the pages one thread at a time per call: from 8 MB on (where a thread team
  // pays for itself), the threads each populate their own slices (2-core VM: 4.3 -> 8 GB/s).
  constexpr std::size_t kSlice = std::size_t{512} << 10;
  char* from = static_cast<char*>(p) + populated;
  const std::size_t rest = size - populated;
  const auto slices = static_cast<std::int64_t>((rest + kSlice - 1) / kSlice);
#pragma omp parallel for schedule(dynamic, 1) if (rest >= (std::size_t{8} << 20) && !omp_in_parallel())
  for (std::int64_t i = 0; i < slices; ++i) populate_pages(from + i * kSlice, std::min(kSlice, rest - static_cast<std::size_t>(i) * kSlice));
  return static_cast<T*>(p);
}

template <typename T>
void StorageAllocator<T>::deallocate(T* p, std::size_t n) noexcept {
  if (n * sizeof(T) < kHugePage) std::allocator<T>().deallocate(p, n);
  else mappings().give(p, mapped_size(n * sizeof(T)));
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
