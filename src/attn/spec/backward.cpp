// backward: where attn backward's upstream gradient comes from. One of
//   {"grad_output": tensor}  the gradient of the loss with respect to the output, given
//   {"seed": N}              the same, drawn ~ N(0, 1) from the seed (as the random block draws)
//   {"target": tensor}       loss = mean((output − target)²), and its gradient
// Without the block, the gradient of sum(output): all ones. The tensors' shapes are the output's,
// which attn backward checks once the forward pass has made it.
#include <fmt/format.h>

#include <limits>

#include "attn/core/error.hpp"
#include "attn/spec/readers.hpp"

namespace attn {

void read_backward(const ReadContext& ctx, const json& root, Spec& s) {
  const json& b = root["backward"];
  if (!b.is_object()) {
    fail("backward", fmt::format("expected an object with one of \"grad_output\", \"seed\" or \"target\", got {}", describe(b)));
  }
  check_keys(b, "backward", {"grad_output", "seed", "target", "comment"});
  int given = 0;
  for (const char* key : {"grad_output", "seed", "target"}) given += b.contains(key) ? 1 : 0;
  if (given != 1) {
    fail("backward", fmt::format("give exactly one of \"grad_output\" (a tensor of the output's shape), \"seed\" (a number: the gradient "
                                 "drawn ~ N(0, 1)) or \"target\" (a tensor of the output's shape: loss = mean((output − target)²)); got {}",
                                 given == 0 ? std::string("none") : fmt::format("{}", given)));
  }
  auto& bw = s.backward;
  if (b.contains("seed")) {
    const json& j = b["seed"];
    if (!j.is_number_integer() || j.get<std::int64_t>() < 0) fail("backward.seed", fmt::format("expected a whole number ≥ 0, got {}", describe(j)));
    bw.upstream = Spec::Backward::Upstream::Seed;
    bw.seed = j.get<std::uint64_t>();
    bw.path = "backward.seed";
    return;
  }
  const bool target = b.contains("target");
  bw.path = target ? "backward.target" : "backward.grad_output";
  bw.upstream = target ? Spec::Backward::Upstream::Target : Spec::Backward::Upstream::Given;
  bw.tensor = read_tensor(ctx, b[target ? "target" : "grad_output"], bw.path, "a tensor of the output's shape");
}

}  // namespace attn
