// A shape plus row-major float32 values, shared and immutable once built.
// Views (reshaped) share storage with the tensor they come from; nothing here computes attention.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
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
  explicit StorageAllocator(bool populate_large) noexcept : populate(populate_large) {}
  template <typename U>
  StorageAllocator(const StorageAllocator<U>& o) noexcept : populate(o.populate) {}
  bool populate = true;  // false: the writer populates its own parts (populate_pages), side by side
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

// Has the kernel back [p, p + bytes) with pages now, in one call, instead of a fault per page on first
// write (whole pages: those the range touches).
void populate_pages(void* p, std::size_t bytes);

std::int64_t element_count(const Shape& shape);
// Whether none of p[0, n) is inf or NaN: a branch-free pass over the exponent bits.
bool all_finite(const Scalar* p, std::int64_t n);
std::string shape_string(const Shape& shape);  // "[2, 4, 512]"

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Shape shape);                     // zero-filled
  Tensor(Shape shape, const std::vector<Scalar>& values);  // values.size() == element_count(shape)
  // Values left unset: for a producer that writes every element (the backends).
  static Tensor uninitialized(Shape shape);
  // The same, with large storage left for its writers to populate part by part (populate_pages).
  static Tensor unpopulated(Shape shape);
  // A shape with no values: what a cost estimate (a dry run) works with.
  static Tensor shape_only(Shape shape);
  // Values computed when first needed: `fill` writes all of them (on the first data() or values()),
  // `element` computes one (at(), without filling). For trace steps that are cheap functions of
  // others (scores × factor, a mask applied): shown, dumped or compared exactly as if kept, never
  // held unless asked for. Both must give the same bits.
  // `nonfinite`, when given, finds the first flat index whose value is not finite (or -1) without
  // filling: for a deferred step that could overflow where its inputs did not (a product), or a
  // device's tensor (searched there). Its argument: -inf counts as finite (a masked step's blocks).
  using FindNonfinite = std::function<std::int64_t(bool minus_inf_allowed)>;
  static Tensor deferred(Shape shape, std::function<void(Scalar*)> fill, std::function<Scalar(std::int64_t)> element,
                         FindNonfinite nonfinite = {});
  // Values generated in order from any position, never held unless a reader needs them all (the
  // seeded weights: a random stream that skips ahead). `open(first)` returns a reader whose calls
  // write the next values from flat index `first` on (or, given a null `out`, skip them). data()
  // fills from open(0); at() reads one value; a reader of all values once, in order (a product's
  // B), takes open() itself (reader()).
  using Reader = std::function<void(Scalar* out, std::int64_t n)>;
  using OpenAt = std::function<Reader(std::int64_t first)>;
  // A 2-D generated tensor may also give whole columns: columns(j0, j1, out) writes columns
  // [j0, j1), each as one row of out ((j1 − j0) × rows): for a weight stored as its transpose (a
  // checkpoint's nn.Linear [out, in]), read along its stored rows. Thread-safe: products call it from
  // every thread at once.
  using Columns = std::function<void(std::int64_t j0, std::int64_t j1, Scalar* out)>;
  static Tensor generated(Shape shape, OpenAt open, Columns columns = {});
  // The generated tensor's open(), while its values are not held; else null.
  const OpenAt* reader() const { return deferred_ && deferred_->open && !deferred_->storage ? &deferred_->open : nullptr; }
  // Its columns(), while its values are not held; else null.
  const Columns* column_reader() const { return deferred_ && deferred_->columns && !deferred_->storage ? &deferred_->columns : nullptr; }
  // The deferred tensor's first non-finite entry, or -1 (also when held, or when no check was given).
  std::int64_t deferred_nonfinite(bool minus_inf_allowed = false) const {
    return deferred_ && deferred_->nonfinite ? deferred_->nonfinite(minus_inf_allowed) : -1;
  }
  // Whether a deferred tensor can say where its first non-finite entry is without being filled.
  bool finds_nonfinite() const { return deferred_ && deferred_->nonfinite && !deferred_->storage; }
  bool has_data() const { return storage_ != nullptr || deferred_ != nullptr; }
  // Whether the values are held (false for a deferred tensor not yet filled).
  bool held() const { return storage_ != nullptr || (deferred_ && deferred_->storage); }

  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  std::int64_t dim(int axis) const;  // axis < 0 counts from the end
  std::int64_t size() const {
    return storage_ ? static_cast<std::int64_t>(storage_->size()) : deferred_ ? element_count(shape_) : 0;
  }
  bool empty() const { return size() == 0; }

  std::span<const Scalar> values() const;
  const Scalar* data() const;
  // One value by flat index; a deferred tensor not yet filled computes just this one.
  Scalar at(std::int64_t flat) const;
  // Writable access is for the producer that has just created the tensor, before it is shared.
  Scalar* mutable_data() { return storage_ ? storage_->data() : nullptr; }

  // The same values under another shape with the same element count: a view, no copy.
  Tensor reshaped(Shape shape) const;

  // The values in float64, where they are known beyond float32: an input as its JSON text wrote it,
  // a NumPy draw before its float32 rounding, a table computed in double, a float64 run's step. What
  // attn check's float64 judge computes from; null where only the float32 values are known.
  using Wide = std::vector<double>;
  const Wide* wide() const { return wide_.get(); }
  // This tensor (the same float32 values, shared) with its float64 values; wide.size() == size().
  Tensor with_wide(Wide wide) const;
  // A float64 run's step also says, per value, the size of the terms that made it (Σ|a|·|b| for a
  // product's sum; |x| for an input): float32 arithmetic's rounding moves a value by a few 2⁻²⁴ of
  // that, far more than of the value itself where a sum cancels. Null where not known.
  const Wide* wide_terms() const { return terms_.get(); }
  Tensor with_wide(Wide wide, Wide terms) const;
  // Value i in float64: the wide one where known, else the float32 one widened.
  double wide_at(std::int64_t flat) const { return wide_ ? (*wide_)[static_cast<std::size_t>(flat)] : static_cast<double>(at(flat)); }
  // A tensor of `shape` whose value i is this one's value from(i) (a transpose, a slice, a
  // reordering), the float64 values, where known, moved the same way (not the terms: inputs have none).
  Tensor gathered(Shape shape, const std::function<std::int64_t(std::int64_t)>& from) const;

 private:
  struct Deferred {
    std::once_flag once;
    std::function<void(Scalar*)> fill;
    std::function<Scalar(std::int64_t)> element;
    FindNonfinite nonfinite;
    OpenAt open;                       // a generated tensor's values in order
    Columns columns;                   // and its columns, where it has them
    std::shared_ptr<Storage> storage;  // set once filled
  };
  const Storage* storage() const;  // fills a deferred tensor

  Shape shape_;
  std::shared_ptr<Storage> storage_;
  std::shared_ptr<Deferred> deferred_;  // shared by reshaped views, so one fill serves all
  std::shared_ptr<const Wide> wide_;    // see wide()
  std::shared_ptr<const Wide> terms_;   // see wide_terms()
};

}  // namespace attn
