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

}  // namespace attn
