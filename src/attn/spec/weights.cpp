// The weights block: W_q, W_k, W_v (square, "identity" or per-head), or a fused W_qkv, W_o and the
// biases, stored in x@W form whatever the layout; what it lacks comes from the random block. Also how
// many heads the input asks for. Embeddings, source and given q/k/v/scores are entry.cpp's.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "attn/spec/readers.hpp"

namespace attn {

namespace {

Tensor identity(std::int64_t c) {
  Tensor t({c, c});
  for (std::int64_t i = 0; i < c; ++i) t.mutable_data()[i * c + i] = 1;
  return t;
}

Tensor transpose2(const Tensor& t) {
  const auto r = t.dim(0), c = t.dim(1);
  Tensor out({c, r});
  for (std::int64_t i = 0; i < r; ++i)
    for (std::int64_t j = 0; j < c; ++j) out.mutable_data()[j * r + i] = t.data()[i * c + j];
  return out;
}

// Columns [offset, offset + width) of a [rows, n] matrix, or entries of a vector.
Tensor columns(const Tensor& t, std::int64_t offset, std::int64_t width) {
  if (t.rank() == 1) {
    return Tensor({width}, std::vector<Scalar>(t.data() + offset, t.data() + offset + width));
  }
  const auto rows = t.dim(0), n = t.dim(1);
  Tensor out({rows, width});
  for (std::int64_t i = 0; i < rows; ++i)
    std::copy(t.data() + i * n + offset, t.data() + i * n + offset + width, out.mutable_data() + i * width);
  return out;
}

struct WeightReader {
  ReadContext& ctx;
  const RandomFill& rnd;
  const json& obj;
  Layout layout;
  std::int64_t C;
  std::int64_t H;

  bool has(const char* key) const { return obj.contains(key); }

  // A square [C, C] projection, "identity", or per-head [H, C, hs] (torch: [H, hs, C]) stacked.
  Tensor projection(const char* key, bool per_head_allowed) const {
    const auto path = key_path("weights", key);
    const auto hs = C / H;
    const json& j = obj[key];
    if (j.is_string()) {
      if (j.get<std::string>() != "identity") {
        fail(path, fmt::format("expected a [C, C] = [{0}, {0}] matrix or \"identity\", got {1}", C, describe(j)));
      }
      ctx.notes.push_back(fmt::format("{}: identity", path));
      return identity(C);
    }
    Tensor t = read_tensor(ctx, j, path, fmt::format("a [C, C] = [{0}, {0}] matrix or \"identity\"", C));
    if (t.rank() == 3 && per_head_allowed) {
      const Shape want = layout == Layout::XW ? Shape{H, C, hs} : Shape{H, hs, C};
      expect_shape(t, path,  want,
                   layout == Layout::XW ? fmt::format(" (per-head weights are [H, C, hs] with H = {}, C = {}, hs = {})", H, C, hs)
                                        : fmt::format(" (per-head torch weights are [H, hs, C] with H = {}, hs = {}, C = {})", H, hs, C));
      // Head h owns output columns h*hs .. (h+1)*hs of the stacked [C, C] (x@W) matrix.
      Tensor out({C, C});
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t i = 0; i < C; ++i)
          for (std::int64_t c = 0; c < hs; ++c) {
            const Scalar v = layout == Layout::XW ? t.data()[(h * C + i) * hs + c] : t.data()[(h * hs + c) * C + i];
            out.mutable_data()[i * C + h * hs + c] = v;
          }
      ctx.notes.push_back(fmt::format("{}: {} per-head matrices stacked into [C, C] = [{}, {}]", path, H, C, C));
      return out;
    }
    expect_shape(t, path, {C, C},
                 per_head_allowed ? fmt::format(" (or per-head [H, C, hs] = [{}, {}, {}])", H, C, C / H) : "");
    return layout == Layout::XW ? t : transpose2(t);
  }

  Tensor fused() const {
    const auto path = std::string("weights.W_qkv");
    const Shape want = layout == Layout::XW ? Shape{C, 3 * C} : Shape{3 * C, C};
    Tensor t = read_tensor(ctx, obj["W_qkv"], path, fmt::format("a {} matrix", shape_string(want)));
    expect_shape(t, path, want,
                 layout == Layout::XW ? " (x@W layout: [C, 3C], columns q | k | v)" : " (torch layout: [3C, C], rows q | k | v)");
    return layout == Layout::XW ? t : transpose2(t);
  }

  // A weight the input does not give, from the random block.
  Tensor generated(const char* key, Shape shape) const { return rnd.weight(ctx, key_path("weights", key), std::move(shape), C); }

  Tensor bias(const char* key, std::int64_t n) const {
    const auto path = key_path("weights", key);
    Tensor t = read_tensor(ctx, obj[key], path, fmt::format("a vector of {} numbers", n));
    expect_shape(t, path, {n});
    return t;
  }
};

// The weights object, checked; an empty one when it is absent and the random block makes every weight.
const json& weights_block(const json& root, const RandomFill& rnd) {
  static const std::vector<std::string_view> kWeightKeys = {"W_q", "W_k", "W_v", "W_qkv", "W_o",
                                                            "b_q", "b_k", "b_v", "b_qkv", "b_o"};
  static const json kEmpty = json::object();
  if (!root.contains("weights")) {
    if (!rnd.present) fail("weights", "required: an object with W_q, W_k, W_v (or W_qkv), or a \"random\" block to generate them");
    return kEmpty;
  }
  const json& w = root["weights"];
  if (!w.is_object()) fail("weights", fmt::format("expected an object with W_q, W_k, W_v (or W_qkv), got {}", describe(w)));
  check_keys(w, "weights", kWeightKeys);
  return w;
}

// Whether q, k and v come from one fused W_qkv (given, or generated with random.fused); mixtures
// of fused and separate weights or biases are refused.
bool fused_projection(const WeightReader& r, const RandomFill& rnd) {
  const bool any_separate = r.has("W_q") || r.has("W_k") || r.has("W_v");
  if (r.has("W_qkv") && any_separate) {
    fail("weights.W_qkv", "give either W_qkv (fused) or W_q, W_k, W_v (separate), not both");
  }
  if (rnd.fused && any_separate) {
    fail("random.fused", "is true, but weights.W_q/W_k/W_v are given; fused generation makes W_qkv");
  }
  const bool fused = r.has("W_qkv") || rnd.fused;
  for (const char* b : {"b_q", "b_k", "b_v"}) {
    if (fused && r.has(b)) fail(key_path("weights", b), "the projection is fused (W_qkv): give b_qkv, a vector of 3C numbers");
  }
  if (!fused && r.has("b_qkv")) fail("weights.b_qkv", "needs weights.W_qkv (b_qkv is the fused projection's bias)");
  return fused;
}

// W_qkv [C, 3C] and b_qkv [3C], given or generated.
void read_fused(const WeightReader& r, Spec& s) {
  Tensor w = r.has("W_qkv") ? r.fused() : r.generated("W_qkv", {s.C, 3 * s.C});
  std::optional<Tensor> b;
  if (r.has("b_qkv")) b = r.bias("b_qkv", 3 * s.C);
  if (s.cross()) {
    // Cross-attention projects x (queries) and source (keys, values) separately, so the fused
    // weight is split here, as nn.MultiheadAttention splits in_proj_weight.
    s.w.W_q = columns(w, 0, s.C), s.w.W_k = columns(w, s.C, s.C), s.w.W_v = columns(w, 2 * s.C, s.C);
    if (b) s.w.b_q = columns(*b, 0, s.C), s.w.b_k = columns(*b, s.C, s.C), s.w.b_v = columns(*b, 2 * s.C, s.C);
    r.ctx.notes.push_back("weights.W_qkv: split into W_q, W_k, W_v (cross-attention projects x and source separately)");
  } else {
    s.w.W_qkv = std::move(w);
    s.w.b_qkv = std::move(b);
  }
}

// W_q, W_k, W_v, each given or generated, and their biases.
void read_separate(const WeightReader& r, Spec& s) {
  auto one = [&](const char* key, std::optional<Tensor>& slot) {
    if (r.has(key)) slot = r.projection(key, true);
    else if (r.rnd.present) slot = r.generated(key, {s.C, s.C});
    else fail(key_path("weights", key),
              fmt::format("required: a [C, C] = [{0}, {0}] matrix, per-head [H, C, hs], or \"identity\" (or give W_qkv)", s.C));
  };
  one("W_q", s.w.W_q);
  one("W_k", s.w.W_k);
  one("W_v", s.w.W_v);
  if (r.has("b_q")) s.w.b_q = r.bias("b_q", s.C);
  if (r.has("b_k")) s.w.b_k = r.bias("b_k", s.C);
  if (r.has("b_v")) s.w.b_v = r.bias("b_v", s.C);
}

}  // namespace

// H as the input sets it: `heads`, else the per-head weights' first dimension, else the mode's default.
std::int64_t resolve_heads(const json& root, Mode mode, std::optional<std::int64_t> from_data, const std::string& data_path) {
  if (root.contains("heads")) {
    const auto h = read_positive(root["heads"], "heads");
    if (from_data && *from_data != h) {
      fail(data_path, fmt::format("has {} heads, but heads = {}", *from_data, h));
    }
    return h;
  }
  if (from_data) return *from_data;
  return mode == Mode::MultiHead ? 2 : 1;
}

// Per-head weights tell H when `heads` is absent.
std::optional<std::int64_t> heads_in_weights(const json& root, std::string& where) {
  if (!root.contains("weights") || !root["weights"].is_object()) return std::nullopt;
  for (const char* key : {"W_q", "W_k", "W_v"}) {
    const json& w = root["weights"].value(key, json());
    if (w.is_array() && !w.empty() && w[0].is_array() && !w[0].empty() && w[0][0].is_array()) {
      where = key_path("weights", key);
      return static_cast<std::int64_t>(w.size());
    }
  }
  return std::nullopt;
}

void check_heads_divide(const Spec& s) {
  if (s.mode == Mode::MultiHead && s.H < 2) fail("heads", fmt::format("mode \"multi-head\" needs H > 1, got {}", s.H));
  if (s.C > 0 && s.C % s.H != 0) {
    fail("heads", fmt::format("H = {} does not divide C = {} (each head gets hs = C / H features)", s.H, s.C));
  }
}

void read_weights(ReadContext& ctx, const json& root, Spec& s, const RandomFill& rnd) {
  const WeightReader r{ctx, rnd, weights_block(root, rnd), s.layout, s.C, s.H};
  if (fused_projection(r, rnd)) read_fused(r, s);
  else read_separate(r, s);
  if (r.has("W_o")) s.w.W_o = r.projection("W_o", false);
  else if (rnd.output_projection) s.w.W_o = r.generated("W_o", {s.C, s.C});
  if (r.has("b_o")) {
    if (!s.w.W_o) fail("weights.b_o", "needs weights.W_o (b_o is the output projection's bias)");
    s.w.b_o = r.bias("b_o", s.C);
  }
}

}  // namespace attn
