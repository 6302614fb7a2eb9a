// The "random" block: reading it, and generating the tensors it fills in (refused before allocating
// when one would exceed --max-memory). Which tensors to fill is decided by the entry and weight readers.
#include "attn/spec/random_block.hpp"

#include <fmt/format.h>

#include <cmath>

#include "attn/core/bytes.hpp"
#include "attn/numerics/random.hpp"

namespace attn {

namespace {

// Refuses a tensor the random block would generate when it cannot fit, before allocating it.
void require_generatable(const ReadContext& ctx, const std::string& path, const Shape& shape) {
  double n = 1;
  for (auto d : shape) n *= static_cast<double>(d);
  const double bytes = n * sizeof(Scalar);
  if (bytes > static_cast<double>(ctx.max_bytes)) {
    fail(path, fmt::format("generating {} floats would take {}, more than --max-memory {}", shape_string(shape), human_bytes(bytes),
                           human_bytes(static_cast<double>(ctx.max_bytes))));
  }
}

}  // namespace

Tensor RandomFill::draw_numpy(const Shape& shape, const std::string& path, std::vector<std::string>& notes) const {
  notes.push_back(fmt::format("{}: draw {} of rs = np.random.RandomState({}): rs.{}({})", path, ++*draws, seed,
                              numpy_normal ? "randn" : "rand", fmt::join(shape, ", ")));
  Tensor t(shape);
  Tensor::Wide drawn(static_cast<std::size_t>(t.size()));  // NumPy's float64 draws, for attn check's float64 judge
  for (std::int64_t i = 0; i < t.size(); ++i) {
    drawn[static_cast<std::size_t>(i)] = numpy_normal ? numpy->randn() : numpy->rand();
    t.mutable_data()[i] = static_cast<Scalar>(drawn[static_cast<std::size_t>(i)]);
  }
  return t.with_wide(std::move(drawn));
}

Tensor RandomFill::sequence(ReadContext& ctx, const std::string& path, std::int64_t length, std::int64_t width) const {
  Shape shape{B.value_or(1), length, width};
  require_generatable(ctx, path, shape);
  if (numpy) {
    const Shape drawn = B ? shape : Shape{shape[1], shape[2]};
    return draw_numpy(drawn, path, ctx.notes).reshaped(shape);
  }
  ctx.notes.push_back(fmt::format("{}: random N(0, 1), seed {}", path, seed));
  Tensor t = Tensor::unpopulated(shape);
  ctx.draws.push_back({t.size(), [t, seed = seed, path](std::int64_t first, std::int64_t n) mutable {
                         populate_pages(t.mutable_data() + first, static_cast<std::size_t>(n) * sizeof(Scalar));
                         fill_normal(seed, path, t.mutable_data() + first, n, first);
                       }});
  return t;
}

Tensor RandomFill::weight(ReadContext& ctx, const std::string& path, Shape shape, std::int64_t in, std::string_view in_name) const {
  require_generatable(ctx, path, shape);
  if (numpy) return draw_numpy(shape, path, ctx.notes);
  ctx.notes.push_back(fmt::format("{}: random U(-1/√{}, 1/√{}), seed {}", path, in_name, in_name, seed));
  // generated when read: a product streams it (never held), a reader of all values fills it
  return generated_uniform(seed, path, std::move(shape), 1.0 / std::sqrt(static_cast<double>(in)));
}

RandomFill read_random(const json& root) {
  RandomFill r;
  if (!root.contains("random")) return r;
  const json& j = root["random"];
  if (!j.is_object()) fail("random", fmt::format("expected an object like {{\"seed\": 0, \"T\": 4, \"C\": 8}}, got {}", describe(j)));
  check_keys(j, "random", {"seed", "B", "T", "S", "C", "Cs", "dk", "dv", "Co", "fused", "output_projection", "generator", "distribution"});
  r.present = true;
  if (!j.contains("seed")) fail("random.seed", "required: a non-negative integer");
  if (!j["seed"].is_number_unsigned()) {  // nlohmann stores every non-negative integer literal as unsigned
    fail("random.seed", fmt::format("expected a non-negative integer, got {}", describe(j["seed"])));
  }
  r.seed = j["seed"].get<std::uint64_t>();
  for (auto [key, slot] : {std::pair{"B", &r.B}, std::pair{"T", &r.T}, std::pair{"S", &r.S}, std::pair{"C", &r.C}, std::pair{"Cs", &r.Cs},
                           std::pair{"dk", &r.dk}, std::pair{"dv", &r.dv}, std::pair{"Co", &r.Co}}) {
    if (j.contains(key)) *slot = read_positive(j[key], key_path("random", key));
  }
  if (j.contains("fused")) r.fused = read_bool(j["fused"], "random.fused");
  if (j.contains("output_projection")) r.output_projection = read_bool(j["output_projection"], "random.output_projection");
  bool numpy = false;
  if (j.contains("generator")) numpy = read_choice<bool>(j["generator"], "random.generator", {{"mt19937_64", false}, {"numpy", true}});
  if (j.contains("distribution")) {
    if (!numpy) fail("random.distribution", "only the \"numpy\" generator takes a distribution (\"rand\" or \"randn\")");
    r.numpy_normal = read_choice<bool>(j["distribution"], "random.distribution", {{"rand", false}, {"randn", true}});
  }
  if (numpy) {
    if (r.seed > 0xFFFFFFFFULL) fail("random.seed", fmt::format("NumPy's RandomState takes seeds 0 .. 2**32 - 1, got {}", r.seed));
    r.numpy = std::make_shared<NumpyRandomState>(static_cast<std::uint32_t>(r.seed));
  }
  return r;
}

}  // namespace attn
