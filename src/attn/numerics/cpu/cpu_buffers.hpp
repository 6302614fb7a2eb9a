// The CPU backend's buffers and deferred steps: what a BackendTensor holds on the CPU (a tensor, or
// a recipe computed when read), and the work sizes below which work stays on the calling thread.
// Included by cpu_backend.cpp inside its anonymous namespace.
constexpr std::int64_t kRowChunk = 64;  // rows per parallel block of a shared-weight product
constexpr std::int64_t kFewRows = 32;   // products of up to this many rows in all leave B unpacked
constexpr std::int64_t kColumnChunk = 64;  // columns per parallel block of a product whose B is read by columns

// Work below this many floating-point operations (or elements moved) runs on the calling thread: a
// thread team costs more than it saves there, and idle OpenMP workers spin on the CPU afterwards
// (a 2×3 walkthrough spent 70 ms of CPU so). Which thread does a fixed chunk never changes its bits.
constexpr double kParallelWork = 1 << 18;
bool parallel(double work) { return work >= kParallelWork; }

using Matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Map = Eigen::Map<Matrix>;

// Elementwise steps at least this large (scaled, masked) are deferred.
constexpr std::int64_t kDeferMin = std::int64_t{1} << 16;

// ATTN_DEFER=0 computes and holds every step (and every generated weight): the test that deferred
// steps have the eager bits compares the two.
bool deferral() {
  const char* v = std::getenv("ATTN_DEFER");
  return v == nullptr || std::string_view(v) != "0";
}

// A buffer holds a tensor; a deferred step's tensor computes its values from the recipe it also
// holds here, so the next primitive can read the recipe instead of the values.
// Columns [offset, offset + width) of every row of src (rows, ld): q, k and v as parts of qkv.
struct ColumnSlice {
  Tensor src;
  std::int64_t ld = 0, offset = 0, width = 0;
  // entry (row, col) of the slice
  const Scalar* at(std::int64_t row, std::int64_t col) const { return src.data() + row * ld + offset + col; }
};

struct CpuBuffer final : BackendBuffer {
  explicit CpuBuffer(Tensor t) : tensor(std::move(t)) {}
  Tensor tensor;
  std::shared_ptr<const ColumnSlice> slice;      // a column slice of a held tensor, deferred
  std::shared_ptr<const cpu::Operand> matrices;  // a re-layout (heads first), deferred: its matrices read in place
  std::optional<Tensor> swap_of;                 // held (A, C, B, D) whose axes 1 and 2 this (A, B, C, D) swaps
  std::shared_ptr<const cpu::Operand> transpose_of;  // (N, m, n) matrices whose last two axes this swaps, deferred
  std::shared_ptr<const cpu::Product> product;   // scores = q · kᵀ, deferred
  std::shared_ptr<const cpu::Elementwise> lazy;  // scaled / masked, deferred
  std::shared_ptr<const cpu::Softmax> softmax;   // weights, deferred
  std::shared_ptr<const cpu::KeepRule> rule;     // a causal / padding keep pattern, deferred: its rule
};

const CpuBuffer& buffer(const BackendTensor& t) {
  const auto* b = dynamic_cast<const CpuBuffer*>(t.buffer.get());
  if (b == nullptr) throw InternalError("cpu backend given a tensor from another backend");
  return *b;
}

const Tensor& host(const BackendTensor& t) { return buffer(t).tensor; }

bool deferred(const BackendTensor& t) {
  const auto& b = buffer(t);
  return b.product || b.lazy || b.softmax;
}

// t as (batches, rows, cols) matrices: read in place where t is a deferred re-layout of that shape,
// else t's own values (filled, if deferred).
cpu::Operand operand(const BackendTensor& t, std::int64_t batches, std::int64_t rows, std::int64_t cols) {
  const auto& b = buffer(t);
  if (const auto& m = b.matrices; m && !b.tensor.held() && m->batches == batches && m->rows == rows && m->cols == cols) return *m;
  return cpu::Operand::contiguous(b.tensor, batches, rows, cols);
}

// A deferred re-layout: (batches, rows, cols) values read from `op`, held only when asked for.
Tensor relayout(Shape shape, std::shared_ptr<const cpu::Operand> op, Tensor::FindNonfinite nonfinite = {}) {
  const std::int64_t rows = op->rows, cols = op->cols;
  return Tensor::deferred(
      std::move(shape),
      [op, rows, cols](Scalar* out) {
#pragma omp parallel for collapse(2) schedule(static) if (parallel(static_cast<double>(op->batches * rows * cols)))
        for (std::int64_t i = 0; i < op->batches; ++i)
          for (std::int64_t r = 0; r < rows; ++r) std::copy_n(op->matrix(i) + r * op->ld, cols, out + (i * rows + r) * cols);
      },
      [op, rows, cols](std::int64_t f) { return op->at(f / (rows * cols), f % (rows * cols) / cols, f % cols); }, std::move(nonfinite));
}

BackendTensor wrap(Tensor t) {
  Shape s = t.shape();
  return BackendTensor{std::move(s), std::make_shared<CpuBuffer>(std::move(t))};
}

// Fills `out` (count entries) by `rows(r0, rows, out)` over fixed blocks of whole rows, in parallel.
template <typename Rows>
void fill_rows(std::int64_t row_count, std::int64_t width, Scalar* out, const Rows& rows) {
  constexpr std::int64_t kBlock = 32;
  const std::int64_t blocks = (row_count + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(dynamic, 1) if (parallel(static_cast<double>(row_count * width)))
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t r0 = b * kBlock;
    rows(r0, std::min(kBlock, row_count - r0), out + r0 * width);
  }
}

BackendTensor defer_product(Shape shape, std::shared_ptr<const cpu::Product> p, std::int64_t width) {
  const std::int64_t count = element_count(shape);
  Tensor t = Tensor::deferred(
      shape, [p, count, width](Scalar* out) { fill_rows(count / width, width, out, [&](auto r0, auto n, Scalar* o) { p->values(r0 * width, n * width, o); }); },
      [p](std::int64_t i) {
        Scalar v;
        p->values(i, 1, &v);
        return v;
      },
      [p](bool minus_inf_allowed) { return p->first_nonfinite(minus_inf_allowed); });
  auto b = std::make_shared<CpuBuffer>(std::move(t));
  b->product = std::move(p);
  return BackendTensor{std::move(shape), std::move(b)};
}

BackendTensor defer_elementwise(Shape shape, cpu::Elementwise e) {
  auto recipe = std::make_shared<const cpu::Elementwise>(std::move(e));
  const std::int64_t count = element_count(shape), width = shape.back();
  Tensor t = Tensor::deferred(
      shape,
      [recipe, count, width](Scalar* out) {
        fill_rows(count / width, width, out, [&](auto r0, auto n, Scalar* o) { recipe->values(r0 * width, n * width, o); });
      },
      [recipe](std::int64_t i) {
        Scalar v;
        recipe->values(i, 1, &v);
        return v;
      });
  auto b = std::make_shared<CpuBuffer>(std::move(t));
  b->lazy = std::move(recipe);
  return BackendTensor{std::move(shape), std::move(b)};
}

BackendTensor defer_softmax(Shape shape, std::shared_ptr<const cpu::Softmax> sm) {
  Tensor t = Tensor::deferred(
      shape, [sm](Scalar* out) { fill_rows(sm->rows(), sm->width(), out, [&](auto r0, auto n, Scalar* o) { sm->compute_rows(r0, n, o); }); },
      [sm](std::int64_t i) { return sm->entry(i); });
  auto b = std::make_shared<CpuBuffer>(std::move(t));
  b->softmax = std::move(sm);
  return BackendTensor{std::move(shape), std::move(b)};
}

// The recipe of a deferred elementwise step over `t` (its base, as it stands), or none.
std::shared_ptr<const cpu::Elementwise> recipe_over(const BackendTensor& t) {
  const auto& b = buffer(t);
  if (b.lazy) return b.lazy;
  cpu::Elementwise e;
  if (b.product) e.product = b.product;
  else e.held = b.tensor;
  return std::make_shared<const cpu::Elementwise>(std::move(e));
}
