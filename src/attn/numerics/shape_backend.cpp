// The shape-only backend: every primitive returns the shape it would produce and counts the
// floating-point operations it would do. Used for cost estimates before anything is allocated.
#include <fmt/format.h>

#include "attn/numerics/backend.hpp"
#include "attn/numerics/backend_checks.hpp"
#include "attn/core/error.hpp"

namespace attn {
namespace {

namespace check = backend_checks;
constexpr std::string_view kName = "shapes";

class ShapeBackend final : public Backend {
 public:
  std::string_view name() const override { return kName; }
  BackendTensor upload(const Tensor& t) override { return {t.shape(), nullptr}; }
  Tensor fetch(const BackendTensor& t, Fetch) override { return Tensor::shape_only(t.shape); }

  BackendTensor matmul(const BackendTensor& a, const BackendTensor& b) override {
    check::matmul(kName, a, b);
    const double n_batch = a.shape[0], m = a.shape[1], k = a.shape[2], n = b.shape.back();
    flops_ += 2 * n_batch * m * k * n;
    return {{a.shape[0], a.shape[1], b.shape.back()}, nullptr};
  }
  BackendTensor add_bias(const BackendTensor& a, const BackendTensor& bias) override {
    check::add_bias(kName, a, bias);
    flops_ += static_cast<double>(element_count(a.shape));
    return {a.shape, nullptr};
  }
  BackendTensor rotate_pairs(const BackendTensor& a, const BackendTensor& cos, const BackendTensor& sin, std::int64_t first, bool) override {
    check::rotate_pairs(kName, a, cos, sin, first);
    flops_ += 6.0 * static_cast<double>(a.shape[0] * a.shape[1] * cos.shape[1]);  // per pair: 4 products, 2 sums
    return {a.shape, nullptr};
  }
  BackendTensor soft_cap(const BackendTensor& a, double cap) override {
    check::soft_cap(kName, a, cap);
    flops_ += 3.0 * static_cast<double>(element_count(a.shape));  // divide, tanh, multiply
    return {a.shape, nullptr};
  }
  BackendTensor distance_bias(const BackendTensor& slopes, std::int64_t T, std::int64_t S, std::int64_t) override {
    check::distance_bias(kName, slopes);
    flops_ += static_cast<double>(slopes.shape[0] * T * S);
    return {{slopes.shape[0], T, S}, nullptr};
  }
  BackendTensor append_rows(const BackendTensor& a, const BackendTensor& b) override {
    check::append_rows(kName, a, b);
    Shape out = a.shape;
    out[out.size() - 2] += b.shape[b.shape.size() - 2];
    return {out, nullptr};
  }
  BackendTensor repeat_heads(const BackendTensor& a, std::int64_t n, bool) override {
    check::repeat_heads(kName, a, n);
    return {{a.shape[0], a.shape[1] * n, a.shape[2], a.shape[3]}, nullptr};
  }
  BackendTensor transpose_last2(const BackendTensor& a) override {
    check::transpose_last2(kName, a);
    return {{a.shape[0], a.shape[2], a.shape[1]}, nullptr};
  }
  BackendTensor swap_axes_1_2(const BackendTensor& a) override {
    check::swap_axes_1_2(kName, a);
    return {{a.shape[0], a.shape[2], a.shape[1], a.shape[3]}, nullptr};
  }
  BackendTensor slice_columns(const BackendTensor& a, std::int64_t offset, std::int64_t width) override {
    check::slice_columns(kName, a, offset, width);
    return {{a.shape[0], width}, nullptr};
  }
  BackendTensor scale(const BackendTensor& a, double) override {
    flops_ += static_cast<double>(element_count(a.shape));
    return {a.shape, nullptr};
  }
  BackendTensor masked_fill(const BackendTensor& scores, const BackendTensor& keep, double) override {
    check::masked_fill(kName, scores, keep);
    return {scores.shape, nullptr};
  }
  BackendTensor softmax_rows(const BackendTensor& a, EmptyRow) override {
    check::softmax_rows(kName, a);
    flops_ += 5.0 * static_cast<double>(element_count(a.shape));  // max, subtract, exp, sum, divide
    return {a.shape, nullptr};
  }
  BackendTensor add(const BackendTensor& a, const BackendTensor& b) override {
    check::same_shape(kName, "add", a, b);
    flops_ += static_cast<double>(element_count(a.shape));
    return {a.shape, nullptr};
  }
  BackendTensor mul(const BackendTensor& a, const BackendTensor& b) override {
    check::same_shape(kName, "mul", a, b);
    flops_ += static_cast<double>(element_count(a.shape));
    return {a.shape, nullptr};
  }
  BackendTensor softmax_backward_rows(const BackendTensor& w, const BackendTensor& dw) override {
    check::softmax_backward_rows(kName, w, dw);
    flops_ += 4.0 * static_cast<double>(element_count(w.shape));  // product and sum for the dot, difference, product
    return {w.shape, nullptr};
  }
  BackendTensor row_sums(const BackendTensor& a) override {
    check::row_sums(kName, a);
    flops_ += static_cast<double>(element_count(a.shape));
    return {{a.shape[0]}, nullptr};
  }
  BackendTensor mask_keep(std::int64_t B, std::int64_t T, std::int64_t S, bool, std::int64_t, std::int64_t, const std::vector<std::int64_t>& lengths,
                          bool) override {
    check::mask_keep(kName, B, T, S, lengths);
    return {{B, T, S}, nullptr};
  }
  BackendTensor keep_and(const BackendTensor& keep, const BackendTensor& other) override {
    check::keep_and(kName, keep, other);
    return {keep.shape, nullptr};
  }
  BackendTensor add_mask(const BackendTensor& scores, const BackendTensor& add) override {
    check::add_mask(kName, scores, add);
    flops_ += static_cast<double>(element_count(scores.shape));
    return {scores.shape, nullptr};
  }
  BackendTensor rms_norm_rows(const BackendTensor& a, const BackendTensor& w, double) override {
    check::rms_norm_rows(kName, a, w);
    flops_ += 4.0 * static_cast<double>(element_count(a.shape));  // square, sum, two products
    return {a.shape, nullptr};
  }
  EmptyRows empty_rows(const BackendTensor& a) override {
    check::empty_rows(kName, a);
    return {};
  }
  BackendTensor fused_attention(const BackendTensor& q, const BackendTensor& k, const BackendTensor& v, double, const FusedMask& mask,
                                EmptyRow) override {
    check::fused_attention(kName, q, k, v, mask);
    // per query row and key: a dot product of hs, a scale, exp and sum, and a product of hv
    flops_ += static_cast<double>(q.shape[0] * q.shape[1] * q.shape[2] * k.shape[2]) * (2.0 * static_cast<double>(q.shape[3] + v.shape[3]) + 4.0);
    return {{q.shape[0], q.shape[1], q.shape[2], v.shape[3]}, nullptr};
  }
  double take_flops() override {
    const double f = flops_;
    flops_ = 0;
    return f;
  }

 private:
  double flops_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_shape_backend() { return std::make_unique<ShapeBackend>(); }

}  // namespace attn
