// The weights block: W_q [C, dk], W_k [Cs, dk], W_v [Cs, dv] ("identity" or per-head too), or a fused
// W_qkv [C, 2·dk + dv], W_o [dv, Co] and the biases, stored in x@W form whatever the layout; what it
// lacks comes from the random block. The widths dk, dv and Co follow from what is given. Also how many
// heads the input asks for. Embeddings, source and given q/k/v/scores are entry.cpp's.
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
  return t.gathered({c, r}, [r, c](std::int64_t o) { return (o % r) * c + o / r; });  // out[j, i] = t[i, j]
}

// Columns [offset, offset + width) of a [rows, n] matrix, or entries of a vector.
Tensor columns(const Tensor& t, std::int64_t offset, std::int64_t width) {
  if (t.rank() == 1) return t.gathered({width}, [offset](std::int64_t o) { return offset + o; });
  const auto n = t.dim(1);
  return t.gathered({t.dim(0), width}, [n, offset, width](std::int64_t o) { return o / width * n + offset + o % width; });
}

// How a [rows, cols] weight is written in this layout: x@W [in, out], torch [out, in].
std::string layout_shape(Layout layout, const std::string& in, const std::string& out) {
  return layout == Layout::XW ? fmt::format("[{}, {}]", in, out) : fmt::format("[{}, {}]", out, in);
}

// A projection as the input gave it, in x@W form [in, out]; empty when absent.
struct Given {
  std::optional<Tensor> w;
  bool identity = false;
  std::string path;
  std::int64_t out() const { return w ? w->dim(1) : 0; }
};

struct WeightReader {
  ReadContext& ctx;
  const RandomFill& rnd;
  const json& obj;
  Layout layout;
  std::int64_t H;

  bool has(const char* key) const { return obj.contains(key); }

  // W (x@W [in, out], torch [out, in]), "identity" ([in, in]), or per-head [H, in, h] (torch
  // [H, h, in]) stacked head by head into [in, H·h]. `in_name` is the legend letter of `in`.
  Given projection(const char* key, std::int64_t in, const std::string& in_name, const std::string& out_name, bool per_head_allowed,
                   std::int64_t heads = 0) const {
    const std::int64_t H = heads > 0 ? heads : this->H;  // W_k and W_v have Hkv heads
    Given g;
    g.path = key_path("weights", key);
    const json& j = obj[key];
    const auto expected = fmt::format("{} = {} matrix{}, or \"identity\"", layout_shape(layout, in_name, out_name),
                                      layout_shape(layout, std::to_string(in), out_name),
                                      per_head_allowed ? fmt::format(", per-head [H, {}, h]", in_name) : "");
    if (j.is_string()) {
      if (j.get<std::string>() != "identity") fail(g.path, fmt::format("expected a {}, got {}", expected, describe(j)));
      ctx.notes.push_back(fmt::format("{}: identity", g.path));
      g.w = identity(in);
      g.identity = true;
      return g;
    }
    Tensor t = read_tensor(ctx, j, g.path, "a " + expected);
    if (t.rank() == 3 && per_head_allowed) {
      const bool xw = layout == Layout::XW;
      const auto h = xw ? t.dim(2) : t.dim(1);
      const Shape want = xw ? Shape{H, in, h} : Shape{H, h, in};
      expect_shape(t, g.path, want,
                   xw ? fmt::format(" (per-head weights are [H, {}, h] with H = {}, {} = {})", in_name, H, in_name, in)
                      : fmt::format(" (per-head torch weights are [H, h, {}] with H = {}, {} = {})", in_name, H, in_name, in));
      // Head k owns output columns k·h .. (k+1)·h of the stacked [in, H·h] (x@W) matrix.
      const Tensor out = t.gathered({in, H * h}, [=](std::int64_t o) {
        const auto i = o / (H * h), k = o % (H * h) / h, c = o % h;
        return xw ? (k * in + i) * h + c : (k * h + c) * in + i;
      });
      ctx.notes.push_back(fmt::format("{}: {} per-head matrices stacked into [{}, {}] = [{}, {}]", g.path, H, in_name, out_name, in, H * h));
      g.w = std::move(out);
      return g;
    }
    if (t.rank() != 2 || (layout == Layout::XW ? t.dim(0) : t.dim(1)) != in) {
      // the other layout's orientation fits: say so, it is the usual slip
      const bool other_fits = t.rank() == 2 && (layout == Layout::XW ? t.dim(1) : t.dim(0)) == in;
      const auto hint = other_fits ? fmt::format("; that is the {} layout's {}: set \"layout\": \"{}\", or transpose it",
                                                 layout == Layout::XW ? "torch" : "x@W", layout_shape(layout == Layout::XW ? Layout::Torch : Layout::XW, in_name, out_name),
                                                 layout == Layout::XW ? "torch" : "x@W")
                                   : "";
      // where the input width comes from, when it is the data's (a student may have the data wrong, not the weight)
      const std::string from = in_name == "C" ? fmt::format(" (C = {}, the embeddings' width)", in)
                               : in_name == "Cs" ? fmt::format(" (Cs = {}, the source's width)", in)
                                                 : "";
      fail(g.path, fmt::format("expected {} = {}{}, got {}{}", layout_shape(layout, in_name, out_name), layout_shape(layout, std::to_string(in), out_name),
                               from, shape_string(t.shape()), hint));
    }
    g.w = layout == Layout::XW ? t : transpose2(t);
    return g;
  }

  // A weight the input does not give, from the random block.
  Tensor generated(const char* key, Shape shape, std::string_view in_name) const {
    return rnd.weight(ctx, key_path("weights", key), shape, shape[0], in_name);
  }

  Tensor bias(const char* key, std::int64_t n, std::string_view width) const {
    const auto path = key_path("weights", key);
    Tensor t = read_tensor(ctx, obj[key], path, fmt::format("a vector of {} = {} numbers", width, n));
    if (t.shape() != Shape{n}) fail(path, fmt::format("expected [{}] = [{}], got {}", width, n, shape_string(t.shape())));
    return t;
  }
};

// The width a given weight fixes must be the one already fixed; and divisible by H (by Hkv for k and v).
void require_width(const Given& g, std::int64_t want, const std::string& from, Layout layout, const std::string& in_name, std::int64_t in,
                   const std::string& out_name) {
  if (!g.w || g.out() == want) return;
  const auto got = layout == Layout::XW ? Shape{in, g.out()} : Shape{g.out(), in};
  if (g.identity) {
    fail(g.path, fmt::format("\"identity\" is [{0}, {0}], but {1} = {2} (from {3}): give a {4} = {5} matrix", in, out_name, want, from,
                             layout_shape(layout, in_name, out_name), layout_shape(layout, std::to_string(in), std::to_string(want))));
  }
  fail(g.path, fmt::format("expected {} = {} ({} = {}, from {}), got {}", layout_shape(layout, in_name, out_name),
                           layout_shape(layout, std::to_string(in), std::to_string(want)), out_name, want, from, shape_string(got)));
}

void require_divisible(const Given& g, std::int64_t width, std::int64_t H, Layout layout, std::int64_t in, const std::string& out_name,
                       const char* heads_name = "H") {
  if (width % H == 0) return;
  if (g.w && !g.identity) {
    const auto got = layout == Layout::XW ? Shape{in, width} : Shape{width, in};
    fail(g.path, fmt::format("expected {} with {} divisible by {} = {}, got {}", layout_shape(layout, std::to_string(in), out_name), out_name,
                             heads_name, H, shape_string(got)));
  }
  if (std::string_view(heads_name) != "H") {
    fail(g.path, fmt::format("is {} wide, which kv_heads = {} does not divide (each key/value head gets {} / kv_heads features)", width, H, out_name));
  }
  const bool classic = out_name == "dk" && width == in;
  if (classic) fail("heads", fmt::format("H = {} does not divide C = {} (each head gets hs = C / H features)", H, width));
  fail("heads", fmt::format("H = {} does not divide {} = {} (each head gets {} = {} / H features)", H, out_name, width,
                            out_name == "dk" ? "hs" : "hv", out_name));
}

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
    if (fused && r.has(b)) fail(key_path("weights", b), "the projection is fused (W_qkv): give b_qkv, a vector of 2·dk + dv numbers");
  }
  if (!fused && r.has("b_qkv")) fail("weights.b_qkv", "needs weights.W_qkv (b_qkv is the fused projection's bias)");
  return fused;
}

// dv where the input states it without a W_v: W_o's input width, the root "dv", the random block's.
struct StatedDv {
  std::optional<std::int64_t> value;
  std::string from;
};

StatedDv stated_dv(const WeightReader& r, const json& root, const RandomFill& rnd) {
  if (r.has("W_o") && r.obj["W_o"].is_array()) {
    const Tensor w = read_tensor(r.ctx, r.obj["W_o"], "weights.W_o", "a [dv, Co] matrix");
    if (w.rank() == 2) return {r.layout == Layout::XW ? w.dim(0) : w.dim(1), "weights.W_o"};
  }
  if (root.contains("dv")) return {read_positive(root["dv"], "dv"), "dv"};
  if (rnd.dv) return {rnd.dv, "random.dv"};
  return {};
}

// W_qkv [C, 2·dk + dv] and b_qkv, given or generated; dv as stated, else dk = dv.
std::string read_fused(const WeightReader& r, const json& root, Spec& s) {
  const StatedDv dv = stated_dv(r, root, r.rnd);
  Tensor w;
  const auto want_text = [&](const std::string& n) {
    return fmt::format("{} = {}", layout_shape(r.layout, "C", "2·dk + dv"), layout_shape(r.layout, std::to_string(s.C), n));
  };
  if (r.has("W_qkv")) {
    const Given g = r.projection("W_qkv", s.C, "C", s.grouped() ? "dk + Hkv·(hs + hv)" : "2·dk + dv", false);
    w = *g.w;
    const auto n = g.out();
    const auto got = shape_string(r.layout == Layout::XW ? Shape{s.C, n} : Shape{n, s.C});
    if (s.grouped()) {
      // q | k | v = H·hs | Hkv·hs | Hkv·hv: n = (H + Hkv)·hs + Hkv·hv
      const auto H = s.H, Hkv = s.Hkv;
      if (dv.value) require_divisible(Given{}, *dv.value, H, r.layout, s.C, "dv");
      const auto hv_kv = dv.value ? *dv.value / H * Hkv : 0;
      const auto unit = dv.value ? H + Hkv : H + 2 * Hkv;
      if (n <= hv_kv || (n - hv_kv) % unit != 0) {
        fail(g.path, fmt::format("expected {} with H = {} query heads and kv_heads = {}{}: a width of {}, got {}",
                                 want_text("dk + Hkv·(hs + hv)"), H, Hkv, dv.value ? fmt::format(", dv = {} (from {})", *dv.value, dv.from) : "",
                                 dv.value ? fmt::format("(H + Hkv)·hs + {} = {}·hs + {}", hv_kv, unit, hv_kv) : fmt::format("(H + 2·Hkv)·hs = {}·hs", unit), got));
      }
      const auto hs = (n - hv_kv) / unit;
      s.dk = H * hs;
      s.dv = dv.value ? *dv.value : s.dk;
    } else if (dv.value) {
      if (n <= *dv.value || (n - *dv.value) % 2 != 0) {
        fail(g.path, fmt::format("expected {} with dv = {} (from {}), got {}", want_text(fmt::format("2·dk + {}", *dv.value)), *dv.value,
                                 dv.from, got));
      }
      s.dv = *dv.value, s.dk = (n - s.dv) / 2;
    } else {
      if (n % 3 != 0) {
        fail(g.path, fmt::format("expected {} with dk = dv (q | k | v; give W_o or \"dv\" for another value width), got {}", want_text("3·dk"), got));
      }
      s.dk = s.dv = n / 3;
    }
    require_divisible(Given{}, s.dk, s.H, r.layout, s.C, "dk");
    require_divisible(Given{}, s.dv, s.H, r.layout, s.C, "dv");
  } else {
    s.dk = r.rnd.dk.value_or(s.C);
    s.dv = dv.value.value_or(s.dk);
    require_divisible(Given{}, s.dk, s.H, r.layout, s.C, "dk");
    require_divisible(Given{}, s.dv, s.H, r.layout, s.C, "dv");
    w = r.generated("W_qkv", {s.C, s.dk + s.dkv() + s.dvkv()}, "C");
  }
  std::optional<Tensor> b;
  if (r.has("b_qkv")) b = r.bias("b_qkv", s.dk + s.dkv() + s.dvkv(), s.grouped() ? "dk + Hkv·(hs + hv)" : "2·dk + dv");
  if (s.cross()) {
    // Cross-attention projects x (queries) and source (keys, values) separately, so the fused
    // weight is split here, as nn.MultiheadAttention splits in_proj_weight.
    if (s.Cs != s.C) {
      fail("weights.W_qkv", fmt::format("one fused weight projects x and the source alike, but the source is Cs = {} wide and x C = {}: "
                                        "give W_q [C, dk], W_k [Cs, dk] and W_v [Cs, dv]", s.Cs, s.C));
    }
    draw_seeded(r.ctx);  // a generated W_qkv gets its values before they are split
    const auto dkv = s.dkv(), dvkv = s.dvkv();
    s.w.W_q = columns(w, 0, s.dk), s.w.W_k = columns(w, s.dk, dkv), s.w.W_v = columns(w, s.dk + dkv, dvkv);
    if (b) s.w.b_q = columns(*b, 0, s.dk), s.w.b_k = columns(*b, s.dk, dkv), s.w.b_v = columns(*b, s.dk + dkv, dvkv);
    r.ctx.notes.push_back("weights.W_qkv: split into W_q, W_k, W_v (cross-attention projects x and source separately)");
  } else {
    s.w.W_qkv = std::move(w);
    s.w.b_qkv = std::move(b);
  }
  return dv.value ? dv.from : "weights.W_qkv, with dk = dv";
}

// W_q [C, dk], W_k [Cs, dk], W_v [Cs, dv], each given or generated, and their biases. The first
// given of W_q, W_k fixes dk; W_v fixes dv.
std::string read_separate(const WeightReader& r, const json& root, Spec& s) {
  const bool gen = r.rnd.present;
  auto given = [&](const char* key, std::int64_t in, const char* in_name, const char* out_name, std::int64_t heads) {
    if (r.has(key)) return r.projection(key, in, in_name, out_name, true, heads);
    if (!gen) {
      fail(key_path("weights", key), fmt::format("required: a {} = {} matrix, per-head [H, {}, h], or \"identity\" (or give W_qkv)",
                                                 layout_shape(r.layout, in_name, out_name), layout_shape(r.layout, std::to_string(in), out_name),
                                                 in_name));
    }
    return Given{};
  };
  const char* cs = s.cross() ? "Cs" : "C";  // keys and values read the source in cross mode, else x
  // grouped: k and v have Hkv of the H heads, Hkv·hs and Hkv·hv wide
  const char* kw = s.grouped() ? "Hkv·hs" : "dk";
  const char* vw = s.grouped() ? "Hkv·hv" : "dv";
  Given q = given("W_q", s.C, "C", "dk", s.H), k = given("W_k", s.Cs, cs, kw, s.Hkv), v = given("W_v", s.Cs, cs, vw, s.Hkv);
  // dk from the first of W_q, W_k given as numbers, else from "identity", else the random block's
  const Given* dk_from = q.w && !q.identity ? &q : k.w && !k.identity ? &k : q.w ? &q : k.w ? &k : nullptr;
  if (dk_from == &k && s.grouped()) require_divisible(k, k.out(), s.Hkv, r.layout, s.Cs, kw, "kv_heads");
  s.dk = dk_from == nullptr ? r.rnd.dk.value_or(s.C) : dk_from == &k && s.grouped() ? k.out() / s.Hkv * s.H : dk_from->out();
  const std::string dk_source = dk_from ? dk_from->path : "random.dk";
  require_divisible(dk_from ? *dk_from : Given{}, s.dk, s.H, r.layout, dk_from == &k ? s.Cs : s.C, "dk");
  require_width(q, s.dk, dk_source, r.layout, "C", s.C, "dk");
  require_width(k, s.dkv(), dk_source, r.layout, cs, s.Cs, kw);
  std::string dv_from = v.path;
  if (v.w) {
    if (s.grouped()) require_divisible(v, v.out(), s.Hkv, r.layout, s.Cs, vw, "kv_heads");
    s.dv = s.grouped() ? v.out() / s.Hkv * s.H : v.out();
  } else {
    const StatedDv dv = stated_dv(r, root, r.rnd);
    s.dv = dv.value.value_or(s.dk);
    dv_from = dv.value ? dv.from : "dk = dv";
  }
  if (r.rnd.dk && dk_from != nullptr && *r.rnd.dk != s.dk) {
    fail("random.dk", fmt::format("{} disagrees with {} (dk = {})", *r.rnd.dk, dk_from->path, s.dk));
  }
  require_divisible(v, s.dv, s.H, r.layout, s.Cs, "dv");
  s.w.W_q = q.w ? *q.w : r.generated("W_q", {s.C, s.dk}, "C");
  s.w.W_k = k.w ? *k.w : r.generated("W_k", {s.Cs, s.dkv()}, s.Cs == s.C ? "C" : "Cs");
  s.w.W_v = v.w ? *v.w : r.generated("W_v", {s.Cs, s.dvkv()}, s.Cs == s.C ? "C" : "Cs");
  if (r.has("b_q")) s.w.b_q = r.bias("b_q", s.dk, "dk");
  if (r.has("b_k")) s.w.b_k = r.bias("b_k", s.dkv(), kw);
  if (r.has("b_v")) s.w.b_v = r.bias("b_v", s.dvkv(), vw);
  return dv_from;
}

// W_o [dv, Co] (given, "identity", or generated [dv, Co] with Co = random.Co or C) and b_o [Co].
void read_output(const WeightReader& r, const json& root, Spec& s, const std::string& dv_from) {
  if (root.contains("dv") && read_positive(root["dv"], "dv") != s.dv) {
    fail("dv", fmt::format("is {}, but the values are dv = {} wide (from {})", read_positive(root["dv"], "dv"), s.dv, dv_from));
  }
  if (r.rnd.dv && *r.rnd.dv != s.dv) fail("random.dv", fmt::format("{} disagrees with {} (dv = {})", *r.rnd.dv, dv_from, s.dv));
  if (r.rnd.Co && !r.rnd.output_projection) fail("random.Co", "is W_o's output width: it needs \"output_projection\": true");
  s.Co = s.dv;
  if (r.has("W_o")) {
    const Given g = r.projection("W_o", s.dv, "dv", "Co", false);
    s.w.W_o = *g.w;
    s.Co = g.out();
    if (r.rnd.Co && *r.rnd.Co != s.Co) fail("random.Co", fmt::format("{} disagrees with weights.W_o (Co = {})", *r.rnd.Co, s.Co));
  } else if (r.rnd.output_projection) {
    s.Co = r.rnd.Co.value_or(s.C);
    s.w.W_o = r.generated("W_o", {s.dv, s.Co}, s.dv == s.C ? "C" : "dv");
  }
  if (r.has("b_o")) {
    if (!s.w.W_o) fail("weights.b_o", "needs weights.W_o (b_o is the output projection's bias)");
    s.w.b_o = r.bias("b_o", s.Co, "Co");
  }
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
  const bool grouped = root.contains("kv_heads");  // then W_k and W_v hold kv heads, W_q alone tells H
  for (const char* key : {"W_q", "W_k", "W_v"}) {
    if (grouped && key[2] != 'q') break;
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
  // given q, k or v: their widths are dk and dv; given scores with v: the values' width
  const char* of_qk = s.entry == Entry::QKV ? "the width of q and k; " : "";
  if (s.entry == Entry::Scores && s.C > 0 && s.C % s.H != 0) {
    fail("heads", fmt::format("H = {} does not divide C = {} (each head gets hs = C / H features)", s.H, s.C));
  }
  if (s.dk > 0 && s.dk % s.H != 0) fail("heads", fmt::format("H = {} does not divide dk = {} ({}each head gets hs = dk / H features)", s.H, s.dk, of_qk));
  if (s.dv > 0 && s.dv % s.H != 0) fail("heads", fmt::format("H = {} does not divide dv = {} (each head gets hv = dv / H features)", s.H, s.dv));
}

void read_weights(ReadContext& ctx, const json& root, Spec& s, const RandomFill& rnd) {
  if (s.mode == Mode::MultiHead && s.H < 2) fail("heads", fmt::format("mode \"multi-head\" needs H > 1, got {}", s.H));
  const WeightReader r{ctx, rnd, weights_block(root, rnd), s.layout, s.H};
  const std::string dv_from = fused_projection(r, rnd) ? read_fused(r, root, s) : read_separate(r, root, s);
  read_output(r, root, s, dv_from);
}

}  // namespace attn
