// Where the walkthrough starts: given scores, given q, k (and v), or embeddings with weights (and a
// cross source), each given or generated. Sets B, T, S, C and H; labels, masks and expect are read
// after it, by their own readers.
#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <sstream>

#include "attn/spec/readers.hpp"

namespace attn {

namespace {

// Adds a leading batch dimension of 1 to an unbatched tensor.
Tensor batched(const Tensor& t, bool has_batch) {
  if (has_batch) return t;
  Shape s = t.shape();
  s.insert(s.begin(), 1);
  return t.reshaped(std::move(s));
}

// Embeddings [T, C] or [B, T, C] as (B, T, C), from JSON or from the random block.
struct Sequence {
  Tensor x;  // (B, L, C)
  bool has_batch = false;
};

Sequence read_sequence(ReadContext& ctx, const json& parent, const std::string& parent_path, const char* key, std::string_view len,
                       const RandomFill& rnd, std::optional<std::int64_t> random_len, std::string_view random_name) {
  const auto path = key_path(parent_path, key);
  const auto expected = fmt::format("a [{0}, C] or [B, {0}, C] array of numbers", len);
  if (parent.contains(key)) {
    Tensor t = read_tensor(ctx, parent[key], path, expected);
    if (t.rank() != 2 && t.rank() != 3) fail(path, fmt::format("expected {}, got shape {}", expected, shape_string(t.shape())));
    Sequence s{batched(t, t.rank() == 3), t.rank() == 3};
    // A random block next to given embeddings must agree with them.
    auto agree = [&](std::optional<std::int64_t> v, std::int64_t actual, const char* name) {
      if (v && *v != actual) fail(fmt::format("random.{}", name), fmt::format("{} disagrees with {} ({} = {})", *v, path, name, actual));
    };
    if (rnd.present) {
      if (parent_path.empty()) agree(rnd.C, s.x.dim(2), "C");
      else agree(rnd.Cs, s.x.dim(2), "Cs");
      if (s.has_batch) agree(rnd.B, s.x.dim(0), "B");
      if (std::string_view(key) == "embeddings" && parent_path.empty()) agree(rnd.T, s.x.dim(1), "T");
    }
    return s;
  }
  if (!rnd.present || !rnd.C || !random_len) {
    fail(path, fmt::format("required: {} (or a \"random\" block with {} and C to generate it)", expected, random_name));
  }
  const std::int64_t width = parent_path.empty() ? *rnd.C : rnd.Cs.value_or(*rnd.C);
  return {rnd.sequence(ctx, path, *random_len, width), rnd.B.has_value()};
}

// How many positions the labels of `obj` name (a sentence's words, or a list of tokens), if any:
// with them a random block needs no T (or S) of its own.
std::optional<std::int64_t> labelled_length(const json& obj) {
  if (obj.contains("sentence") && obj["sentence"].is_string()) {
    std::istringstream in(obj["sentence"].get<std::string>());
    return static_cast<std::int64_t>(std::distance(std::istream_iterator<std::string>(in), std::istream_iterator<std::string>()));
  }
  if (obj.contains("tokens") && obj["tokens"].is_array() && !obj["tokens"].empty()) {
    const json& t = obj["tokens"];
    return static_cast<std::int64_t>(t[0].is_array() ? t[0].size() : t.size());
  }
  return std::nullopt;
}

// What each entry point excludes.
void exclude(const json& root, std::initializer_list<const char*> keys, std::string_view because) {
  for (const char* k : keys)
    if (root.contains(k)) fail(k, fmt::format("cannot be combined with {}", because));
}

// Given scores: [T, S], [B, T, S] or [B, H, T, S], with an optional v.
void read_scores_entry(ReadContext& ctx, const json& root, Spec& s) {
  exclude(root, {"embeddings", "q", "k", "weights", "random"}, "scores (scores are the starting point)");
  if (s.cross()) fail("mode", "\"cross\" needs keys from a source sequence; given scores start after that: use \"self\" or \"causal\"");
  if (s.scale_given && s.scale_kind == ScaleKind::SqrtDk) {
    fail("scale", "\"sqrt_dk\" needs d_k, which given scores do not carry: give a number, or \"none\" (the default: scores taken as already scaled)");
  }
  if (!s.scale_given) s.scale_kind = ScaleKind::None;
  Tensor sc = read_tensor(ctx, root["scores"], "scores", "a [T, S], [B, T, S] or [B, H, T, S] array of numbers");
  if (sc.rank() < 2 || sc.rank() > 4) {
    fail("scores", fmt::format("expected a [T, S], [B, T, S] or [B, H, T, S] array, got shape {}", shape_string(sc.shape())));
  }
  s.batched = sc.rank() >= 3;
  std::optional<std::int64_t> data_heads;
  if (sc.rank() == 4) data_heads = sc.dim(1);
  s.H = resolve_heads(root, s.mode, data_heads, "scores");
  if (sc.rank() < 4 && s.H > 1) {
    fail("scores", fmt::format("expected [B, H, T, S] with H = {}, got shape {}", s.H, shape_string(sc.shape())));
  }
  s.T = sc.dim(-2), s.S = sc.dim(-1);
  s.B = s.batched ? sc.dim(0) : 1;
  s.scores = sc.reshaped({s.B, s.H, s.T, s.S});
  read_kv_heads(root, s);
  if (root.contains("v")) {
    Tensor v = read_tensor(ctx, root["v"], "v", "a [T, C] or [B, T, C] array of numbers");
    const Shape want = s.batched ? Shape{s.B, s.S, v.dim(-1)} : Shape{s.S, v.dim(-1)};
    expect_shape(v, "v", want, " (one value row per key)");
    s.C = v.dim(-1);
    s.v = batched(v, s.batched);
  }
  s.Cs = s.dk = s.dv = s.Co = s.C;  // no projections: C is the values' width, or unknown (0)
  check_heads_divide(s);
}

// Given q, k (and v): the projections are skipped.
void read_qkv_entry(ReadContext& ctx, const json& root, const json& src, Spec& s) {
  exclude(root, {"embeddings", "weights", "random"}, "q, k, v (projections are skipped when q, k, v are given)");
  for (const char* k : {"q", "k"})
    if (!root.contains(k)) fail(k, "required: q and k are given together (v is optional)");
  if (src.contains("embeddings")) fail("source.embeddings", "cannot be combined with q, k, v (k and v already come from the source)");
  Tensor q = read_tensor(ctx, root["q"], "q", "a [T, C] or [B, T, C] array of numbers");
  if (q.rank() != 2 && q.rank() != 3) fail("q", fmt::format("expected a [T, C] or [B, T, C] array, got shape {}", shape_string(q.shape())));
  s.batched = q.rank() == 3;
  s.B = s.batched ? q.dim(0) : 1, s.T = q.dim(-2), s.C = q.dim(-1);
  s.H = resolve_heads(root, s.mode, std::nullopt, "");
  read_kv_heads(root, s);
  // grouped-query attention: keys are Hkv·hs wide, hs = dk / H
  if (s.grouped() && s.C % s.H != 0) fail("heads", fmt::format("H = {} does not divide dk = {} (the width of q; each head gets hs = dk / H features)", s.H, s.C));
  const std::int64_t dkv = s.grouped() ? s.C / s.H * s.Hkv : s.C;
  Tensor k = read_tensor(ctx, root["k"], "k", s.grouped() ? "a [S, Hkv·hs] or [B, S, Hkv·hs] array of numbers" : "a [S, C] or [B, S, C] array of numbers");
  s.S = k.rank() >= 2 ? k.dim(-2) : 0;
  if (k.rank() == q.rank() && k.dim(-1) != dkv) {
    Shape want = k.shape();
    want.back() = dkv;
    fail("k", s.grouped() ? fmt::format("expected {}, got {} (keys are Hkv·hs = {}·{} = {} wide: kv_heads = {} heads of hs = dk / H = {} / {})", shape_string(want),
                                        shape_string(k.shape()), s.Hkv, s.C / s.H, dkv, s.Hkv, s.C, s.H)
                          : fmt::format("expected {}, got {} (keys are as wide as the queries: dk = {}, the width of q)", shape_string(want),
                                        shape_string(k.shape()), s.C));
  }
  // The keys are k's rows: cross-attention's source, causal attention's cached keys, and (given q, k
  // and v) self-attention's too, every query seeing every key (spec.cpp notes it, and refuses what
  // needs the two sequences aligned).
  const bool own_length = true;
  const Shape want_k = s.batched ? Shape{s.B, own_length ? s.S : s.T, dkv} : Shape{own_length ? s.S : s.T, dkv};
  expect_shape(k, "k", want_k, own_length ? (s.grouped() ? " (k is [S, Hkv·hs])" : " (k is [S, C] with the width C of q)") : " (self-attention: keys come from the same T tokens; use mode \"cross\" for another sequence)");
  s.S = k.dim(-2);
  s.q = batched(q, s.batched), s.k = batched(k, s.batched);
  // Given q and k are dk = C wide; values may be wider or narrower (dv).
  s.Cs = s.dk = s.dv = s.Co = s.C;
  if (root.contains("v")) {
    Tensor v = read_tensor(ctx, root["v"], "v", "a [S, dv] or [B, S, dv] array of numbers");
    if (v.rank() != k.rank() || !std::equal(k.shape().begin(), k.shape().end() - 1, v.shape().begin())) {
      Shape want = k.shape();
      want.back() = v.rank() >= 1 ? v.shape().back() : 1;
      expect_shape(v, "v", want, " (one value row per key, as k; any width dv)");
    }
    s.v = batched(v, s.batched);
    s.dv = s.Co = v.shape().back();
    if (s.grouped()) {
      if (s.dv % s.Hkv != 0) fail("v", fmt::format("is {} wide, which kv_heads = {} does not divide (v is [S, Hkv·hv])", s.dv, s.Hkv));
      s.dv = s.Co = s.dv / s.Hkv * s.H;  // the merged context's width, H·hv
    }
  }
  check_heads_divide(s);
}

// Cross mode's keys and values: source.embeddings, given or generated, as wide and as batched as x.
void read_cross_source(ReadContext& ctx, const json& root, const json& src, const RandomFill& rnd, Spec& s) {
  if (!root.contains("source") && !rnd.present) {
    fail("source", "required for mode \"cross\": {\"tokens\": [...], \"embeddings\": [S, Cs] or [B, S, Cs]}");
  }
  std::optional<std::int64_t> random_s = rnd.S ? rnd.S : labelled_length(src) ? labelled_length(src) : std::optional<std::int64_t>(s.T);
  Sequence y = read_sequence(ctx, src, "source", "embeddings", "S", rnd, random_s, "S");
  // Any width Cs (W_k and W_v read it); the batch must be the embeddings'.
  const Shape want = s.batched ? Shape{s.B, y.x.dim(1), y.x.dim(2)} : Shape{y.x.dim(1), y.x.dim(2)};
  const Shape got = y.has_batch ? y.x.shape() : Shape{y.x.dim(1), y.x.dim(2)};
  if (y.has_batch != s.batched || got != want) {
    expect_shape(y.has_batch ? y.x : y.x.reshaped(got), "source.embeddings", want,
                 fmt::format(" (source is [{}S, Cs]: the batch of embeddings)", s.batched ? "B, " : ""));
  }
  s.source = y.x;
  s.S = s.source.dim(1);
  s.Cs = s.source.dim(2);
}

// Embeddings (with a cross source), then the weights that project them.
void read_embeddings_entry(ReadContext& ctx, const json& root, const json& src, const RandomFill& rnd, Spec& s) {
  Sequence x = read_sequence(ctx, root, "", "embeddings", "T", rnd, rnd.T ? rnd.T : labelled_length(root), "T");
  s.batched = x.has_batch;
  s.x = x.x;
  s.B = s.x.dim(0), s.T = s.x.dim(1), s.C = s.x.dim(2);
  if (s.cross()) read_cross_source(ctx, root, src, rnd, s);
  else s.S = s.T, s.Cs = s.C;
  if (rnd.Cs && !s.cross()) fail("random.Cs", fmt::format("is the width of a cross-attention source (mode is \"{}\")", mode_name(s.mode)));
  std::string heads_path;
  auto data_heads = heads_in_weights(root, heads_path);
  s.H = resolve_heads(root, s.mode, data_heads, heads_path);
  read_kv_heads(root, s);
  read_weights(ctx, root, s, rnd);  // sets dk, dv, Co and checks H divides dk and dv
}

}  // namespace

const json& read_source(const json& root, const Spec& s) {
  static const json kEmpty = json::object();
  if (!root.contains("source")) return kEmpty;
  const json& src = root["source"];
  if (!s.cross()) fail("source", fmt::format("only mode \"cross\" reads a source sequence (mode is \"{}\")", mode_name(s.mode)));
  if (!src.is_object()) fail("source", fmt::format("expected an object with tokens and embeddings, got {}", describe(src)));
  check_keys(src, "source", {"tokens", "sentence", "embeddings"});
  return src;
}

void read_entry(ReadContext& ctx, const json& root, const json& src, const RandomFill& rnd, Spec& s) {
  const bool has_scores = root.contains("scores");
  const bool has_qk = root.contains("q") || root.contains("k");
  const bool has_v = root.contains("v");
  s.entry = has_scores ? Entry::Scores : (has_qk || has_v) ? Entry::QKV : Entry::Embeddings;
  switch (s.entry) {
    case Entry::Scores: read_scores_entry(ctx, root, s); break;
    case Entry::QKV: read_qkv_entry(ctx, root, src, s); break;
    case Entry::Embeddings: read_embeddings_entry(ctx, root, src, rnd, s); break;
  }
}

}  // namespace attn
