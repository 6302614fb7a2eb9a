// The keys of today's attention variants: grouped-query heads, absolute and rotary positions, ALiBi,
// soft-capping (the sliding window is a mask: masks.cpp). Each reader validates its block against the sizes read_entry set.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "attn/numerics/fixed_math.hpp"
#include "attn/numerics/position_tables.hpp"
#include "attn/spec/readers.hpp"
#include "attn/numerics/rope_scaling.hpp"

namespace attn {

void read_kv_heads(const json& root, Spec& s) {
  s.Hkv = s.H;
  if (!root.contains("kv_heads")) return;
  if (s.entry == Entry::Scores) fail("kv_heads", "groups the heads of k and v; given scores start after the keys");
  const auto n = read_positive(root["kv_heads"], "kv_heads");
  if (s.H % n != 0) {
    fail("kv_heads", fmt::format("expected a divisor of H = {} (each key/value head serves H / kv_heads query heads), got {}{}", s.H, n,
                                 root.contains("heads") ? "" : "; \"heads\" is not given, so H is the mode's default"));
  }
  s.Hkv = n;
}

void read_positions(const ReadContext& ctx, const json& root, Spec& s) {
  const json& j = root["positions"];
  if (s.entry != Entry::Embeddings) {
    fail("positions", "are added to the embeddings before the projections; given q, k, v or scores have none");
  }
  if (s.T > kMaxPosition) fail("positions", fmt::format("at most {} positions, got T = {}", kMaxPosition, s.T));
  if (j.is_string()) {
    read_choice<int>(j, "positions", {{"sinusoidal", 0}});
    s.positions = Positions::Sinusoidal;
    s.position_table = sinusoidal_positions(s.T, s.C);
    return;
  }
  if (!j.is_object()) {
    fail("positions", fmt::format("expected \"sinusoidal\" or {{\"learned\": [[...], ...]}} (a [P, C] table, P ≥ T), got {}", describe(j)));
  }
  check_keys(j, "positions", {"learned"});
  if (!j.contains("learned")) fail("positions", "expected {\"learned\": [[...], ...]}: a [P, C] table, one row per position, P ≥ T");
  const Tensor table = read_tensor(ctx, j["learned"], "positions.learned", "a [P, C] table, one row per position, P ≥ T");
  if (table.rank() != 2 || table.dim(1) != s.C || table.dim(0) < s.T) {
    fail("positions.learned", fmt::format("expected [P, {}] with P ≥ T = {} (one row of C = {} per position), got {}", s.C, s.T, s.C,
                                          shape_string(table.shape())));
  }
  s.positions = Positions::Learned;
  s.position_table = table.gathered({s.T, s.C}, [](std::int64_t i) { return i; });  // rows 0 .. T − 1
  if (table.dim(0) > s.T) s.notes.push_back(fmt::format("positions.learned: rows 0 .. {} of {} used", s.T - 1, table.dim(0)));
}

void read_rope(const json& root, Spec& s) {
  const json& j = root["rope"];
  if (s.entry == Entry::Scores) fail("rope", "rotates q and k before the scores; given scores have none to rotate");
  if (!j.is_object()) {
    fail("rope", fmt::format("expected an object like {{\"theta\": 10000, \"style\": \"half\", \"dims\": R, \"offset\": P}} (every key "
                             "optional), got {}",
                             describe(j)));
  }
  check_keys(j, "rope", {"theta", "style", "dims", "offset", "scaling"});
  Spec::Rope r;
  const std::int64_t hs = s.hs();
  if (j.contains("theta")) {
    const json& t = j["theta"];
    if (!t.is_number() || !(t.get<double>() > 0)) fail("rope.theta", fmt::format("expected a positive number (the base, 10000 in RoFormer and Llama 2), got {}", describe(t)));
    r.theta = t.get<double>();
  }
  if (j.contains("style")) r.style = read_choice<RopeStyle>(j["style"], "rope.style", {{"half", RopeStyle::Half}, {"interleaved", RopeStyle::Interleaved}});
  r.dims = hs;
  if (j.contains("dims")) {
    r.dims = read_positive(j["dims"], "rope.dims");
    if (r.dims % 2 != 0 || r.dims > hs) {
      fail("rope.dims", fmt::format("expected an even number of rotated features, at most the head width hs = {}, got {}", hs, r.dims));
    }
  } else if (hs % 2 != 0) {
    fail("rope", fmt::format("the head width hs = {} is odd, and RoPE rotates pairs: give an even \"dims\" < {} (partial rotary)", hs, hs));
  }
  if (j.contains("offset")) {
    const json& o = j["offset"];
    if (!o.is_number_integer() || o.get<std::int64_t>() < 0) fail("rope.offset", fmt::format("expected the first query's position, an integer ≥ 0, got {}", describe(o)));
    r.offset = o.get<std::int64_t>();
  }
  const std::int64_t rows = r.place(s.T, s.S, s.cross());
  if (r.key_first < 0) {
    fail("rope.offset", fmt::format("with S = {} keys ending at the last query, the first key would sit at position {} + {} − {} = {}: "
                                    "give an offset ≥ {}",
                                    s.S, r.offset, s.T, s.S, r.key_first, s.S - s.T));
  }
  const std::int64_t end = r.table_first + rows;
  if (end > kMaxPosition) fail("rope.offset", fmt::format("positions reach {}; attn's tables go up to {}", end - 1, kMaxPosition - 1));
  if (j.contains("scaling")) r.scaling = read_rope_scaling(j["scaling"], [](const std::string& key) { return "rope.scaling" + (key.empty() ? "" : "." + key); });
  RopeTables t = rope_tables(r.table_first, rows, r.dims, r.theta, r.scaling);
  r.cos = std::move(t.cos);
  r.sin = std::move(t.sin);
  s.rope = std::move(r);
}

// Press et al.'s slopes for H heads: 2^(−8(h+1)/H) when H is a power of two; otherwise those of the
// power of two below H, then every other slope of twice that power (their get_slopes).
std::vector<double> alibi_default_slopes(std::int64_t H) {
  auto geometric = [](std::int64_t n) {
    std::vector<double> out;
    for (std::int64_t h = 0; h < n; ++h) out.push_back(fixed::exp(-8.0 * static_cast<double>(h + 1) / static_cast<double>(n) * std::numbers::ln2));
    return out;
  };
  std::int64_t closest = 1;
  while (closest * 2 <= H) closest *= 2;
  std::vector<double> out = geometric(closest);
  if (closest == H) return out;
  const std::vector<double> twice = geometric(2 * closest);
  for (std::size_t i = 0; static_cast<std::int64_t>(out.size()) < H; i += 2) out.push_back(twice[i]);
  return out;
}

void read_alibi(const json& root, Spec& s) {
  const json& j = root["alibi"];
  if (s.cross()) fail("alibi", "biases a query against keys of the same sequence by their distance; in cross mode keys come from another one");
  std::vector<double> slopes;
  if (j.is_boolean() && j.get<bool>()) {
    slopes = alibi_default_slopes(s.H);
  } else if (j.is_object()) {
    check_keys(j, "alibi", {"slopes"});
    const json& m = j["slopes"];
    if (!m.is_array() || static_cast<std::int64_t>(m.size()) != s.H) {
      fail("alibi.slopes", fmt::format("expected {} number{}, one slope per head (H = {}), got {}", s.H, s.H == 1 ? "" : "s", s.H, describe(m)));
    }
    for (std::size_t h = 0; h < m.size(); ++h) {
      if (!m[h].is_number() || !std::isfinite(m[h].get<double>())) fail(fmt::format("alibi.slopes[{}]", h), fmt::format("expected a number, got {}", describe(m[h])));
      slopes.push_back(m[h].get<double>());
    }
    s.alibi_default = false;
  } else {
    fail("alibi", fmt::format("expected true (Press et al.'s slopes) or {{\"slopes\": [one per head]}}, got {}", describe(j)));
  }
  s.alibi_slopes = Tensor::uninitialized({s.H});
  for (std::int64_t h = 0; h < s.H; ++h) s.alibi_slopes.mutable_data()[h] = static_cast<Scalar>(slopes[static_cast<std::size_t>(h)]);
  s.alibi_slopes = s.alibi_slopes.with_wide(std::move(slopes));
}

void read_softcap(const json& root, Spec& s) {
  const json& c = root["softcap"];
  if (!c.is_number() || !(c.get<double>() > 0) || !std::isfinite(c.get<double>()) || c.get<double>() > 1e30) {
    fail("softcap", fmt::format("expected the cap, a positive number (Gemma 2 uses 50), got {}", describe(c)));
  }
  s.softcap = c.get<double>();
}

}  // namespace attn
