// The keys of today's attention variants: absolute positions (more to come: rotary, grouped-query,
// windows, ALiBi, soft-capping). Each reader validates its block against the sizes read_entry set.
#include <fmt/format.h>

#include <algorithm>

#include "attn/position_tables.hpp"
#include "attn/spec/readers.hpp"

namespace attn {

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
  s.position_table = Tensor::uninitialized({s.T, s.C});
  std::copy(table.data(), table.data() + s.T * s.C, s.position_table.mutable_data());
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
  check_keys(j, "rope", {"theta", "style", "dims", "offset"});
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
  RopeTables t = rope_tables(r.table_first, rows, r.dims, r.theta);
  r.cos = std::move(t.cos);
  r.sin = std::move(t.sin);
  s.rope = std::move(r);
}

}  // namespace attn
