// Step layout (blocks, summarising, head/batch filters) and step selection.
#include "attn/render/layout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "attn/core/error.hpp"
#include "attn/render/render.hpp"
#include "attn/core/suggest.hpp"
#include "attn/core/select_steps.hpp"

namespace attn {
namespace {

ShownIndices shown(std::int64_t n, bool summarise, std::int64_t edge) {
  ShownIndices out;
  if (!summarise || n <= 2 * edge) {
    for (std::int64_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  for (std::int64_t i = 0; i < edge; ++i) out.push_back(i);
  out.push_back(std::nullopt);
  for (std::int64_t i = n - edge; i < n; ++i) out.push_back(i);
  return out;
}

}  // namespace

HeatScale heat_scale(const Step& s) {
  if (s.id == "weights" || s.kind == ValueKind::Mask) return {0, 1};
  HeatScale h{std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()};
  for (Scalar v : s.value.values())
    if (std::isfinite(v)) h.lo = std::min(h.lo, double(v)), h.hi = std::max(h.hi, double(v));
  if (!(h.lo <= h.hi)) h = {0, 1};
  return h;
}

HeatScale fitted_heat_scale(const Step& s, const Step* masked, std::int64_t offset, std::int64_t count) {
  if (s.kind == ValueKind::Mask) return heat_scale(s);
  HeatScale h{std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(), true};
  for (std::int64_t i = offset; i < offset + count; ++i) {
    const Scalar v = s.value.at(i);
    if (std::isfinite(v) && !blocked(masked, i)) h.lo = std::min(h.lo, double(v)), h.hi = std::max(h.hi, double(v));
  }
  return h.lo <= h.hi ? h : heat_scale(s);
}

bool is_scalar(const Step& s) { return s.dims.size() == 1 && s.dims[0] == Dim::One && s.value.size() == 1; }

std::string shape_line(const Step& s) {
  return is_scalar(s) ? "a scalar (one number)" : fmt::format("[{}] = {}", fmt::join(s.dims, ", "), shape_string(s.value.shape()));
}

StepLayout layout_step(const Step& s, const TraceConfig& config, const ViewOptions& o) {
  StepLayout l;
  const auto& shape = s.value.shape();
  const std::size_t r = shape.size();
  l.summarised = s.value.size() > o.summary_threshold;
  if (r == 1) {
    // a vector (a bias's gradient, a loss): one row
    l.row_dim = Dim::One, l.col_dim = s.dims[0];
    l.row_count = 1, l.col_count = shape[0];
    l.rows = {0};
    l.cols = shown(shape[0], l.summarised, o.edge_items);
    l.blocks.push_back(Block{});
    return l;
  }
  std::vector<ShownIndices> axes;
  for (std::size_t a = 0; a < r; ++a) {
    const Dim d = s.dims[a];
    if (d == Dim::H && o.head) axes.push_back({*o.head});
    else if (d == Dim::Hkv && o.head) axes.push_back({*o.head / (config.H / config.Hkv)});  // the kv head query head h reads
    else if (d == Dim::B && o.batch) axes.push_back({*o.batch});
    else axes.push_back(shown(shape[a], l.summarised, o.edge_items));
  }
  l.row_dim = s.dims[r - 2];
  l.col_dim = s.dims[r - 1];
  l.row_count = shape[r - 2];
  l.col_count = shape[r - 1];
  l.rows = axes[r - 2];
  l.cols = axes[r - 1];

  // Leading (batch, head, ...) indices in row-major order; a gap stands for the blocks it skips.
  std::vector<std::int64_t> lead;
  auto walk = [&](auto&& self, std::size_t axis) -> void {
    if (axis + 2 == r) {
      Block b;
      std::int64_t block = 0;
      std::vector<std::string> parts, keys;
      for (std::size_t a = 0; a < lead.size(); ++a) {
        block = block * shape[a] + lead[a];
        const Dim d = s.dims[a];
        if (d == Dim::B) b.batch = lead[a], b.has_batch = true;
        if (d == Dim::H) b.head = lead[a];
      }
      for (std::size_t a = 0; a < lead.size(); ++a) {
        const Dim d = s.dims[a];
        if (d == Dim::B) parts.push_back(fmt::format("batch {}", lead[a])), keys.push_back(fmt::format("b{}", lead[a]));
        else if (d == Dim::H) parts.push_back(fmt::format("head {}", lead[a])), keys.push_back(fmt::format("h{}", lead[a]));
        else if (d == Dim::Hkv) parts.push_back(fmt::format("kv head {}", lead[a])), keys.push_back(fmt::format("kv{}", lead[a]));
        else if (is_token_axis(d)) {
          // a [.., T, H, hs] view: one block per token
          parts.push_back(fmt::format("token {} \"{}\"", lead[a], distinct_axis_label(config, d, lead[a], b.batch)));
          keys.push_back(fmt::format("t{}", lead[a]));
        } else {
          parts.push_back(fmt::format("{} {}", d, lead[a])), keys.push_back(fmt::format("{}{}", d, lead[a]));
        }
      }
      b.title = fmt::format("{}", fmt::join(parts, " · "));
      b.key = fmt::format("{}", fmt::join(keys, "."));
      b.offset = block * l.row_count * l.col_count;
      b.row_offset = block * l.row_count;
      l.blocks.push_back(std::move(b));
      return;
    }
    for (const auto& idx : axes[axis]) {
      if (!idx) {
        Block gap;
        gap.gap = true;
        gap.title = fmt::format("{} {} .. {} not shown", s.dims[axis], o.edge_items, shape[axis] - o.edge_items - 1);
        l.blocks.push_back(std::move(gap));
        continue;
      }
      lead.push_back(*idx);
      self(self, axis + 1);
      lead.pop_back();
    }
  };
  walk(walk, 0);
  return l;
}

std::vector<std::string> heatmap_steps(const Trace& trace, const std::vector<std::string>& requested) {
  std::vector<std::string> out;
  for (const auto& h : requested) {
    if (h == "none") continue;
    if (trace.find(h) == nullptr) {
      try {
        select_steps(trace, {h}, "", "");  // refuses ids this trace does not have, with the ids it has
      } catch (const InputError& e) {
        std::string m = e.what();
        if (m.starts_with("--steps ")) m.replace(0, 8, "--heatmap ");
        throw InputError(m);
      }
    }
    if (!heatmap_able(*trace.find(h))) {
      throw InputError(fmt::format("--heatmap {}: not a queries × keys step; heatmaps draw scores, scaled, masked or weights", h));
    }
    out.push_back(h);
  }
  return out;
}

void check_view(const Trace& trace, const ViewOptions& o, Door door) {
  const auto& c = trace.config;
  if (o.head && (*o.head < 0 || *o.head >= c.H)) {
    throw InputError(fmt::format("{}: this trace has H = {} (heads 0 .. {})", option_with(door, "head", *o.head), c.H, c.H - 1));
  }
  if (o.batch && (*o.batch < 0 || *o.batch >= c.B)) {
    // an input without a batch dimension has B = 1 and shows no batch axis: only batch row 0 is there
    throw InputError(fmt::format("{}: this trace has B = {} (batch rows 0 .. {}{})", option_with(door, "batch", *o.batch), c.B, c.B - 1,
                                 c.batched ? "" : "; the input has no batch dimension"));
  }
  check_range(door, "summary_threshold", o.summary_threshold, kPositiveRange);
}

void check_text_options(const TextOptions& o) {
  check_range(o.door, "precision", o.precision, kPrecisionRange);
  check_range(o.door, "width", o.width, kWidthRange);
}

void check_text_options(const Trace& trace, const TextOptions& o) {
  check_text_options(o);
  check_view(trace, o.view, o.door);
}

}  // namespace attn
