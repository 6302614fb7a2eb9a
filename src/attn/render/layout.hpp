// Which entries of a step are shown, and how they group into matrices (one per batch row and head):
// shared by the text, markdown and heatmap renderers. Selection and layout only; no arithmetic.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <string_view>
#include <vector>

#include "attn/core/options.hpp"
#include "attn/core/text.hpp"
#include "attn/core/trace.hpp"

namespace attn {

struct ViewOptions {
  std::int64_t summary_threshold = 1000;  // tensors with more elements are summarised, numpy-style
  std::int64_t edge_items = 3;            // entries kept at each edge of a summarised axis
  std::optional<std::int64_t> head;       // show only this head (steps with an H axis)
  std::optional<std::int64_t> batch;      // show only this batch row (steps with a B axis)
};

using ShownIndices = std::vector<std::optional<std::int64_t>>;  // nullopt: a gap ("…")

struct Block {
  bool gap = false;          // stands for a run of skipped blocks
  std::string title;         // "batch 0 · head 1"; for a gap "H 3 .. 4 not shown"; "" for 2-D steps
  std::string key;           // "b0.h1": the block in file names; "" for 2-D steps
  std::int64_t batch = 0;    // for labels
  bool has_batch = false;    // the step has a B axis: batch names this block's batch row
  std::int64_t head = -1;    // the block's head, -1 when the step has no H axis
  std::int64_t offset = 0;   // flat index of the block's [0, 0]
  std::int64_t row_offset = 0;  // flat index of the block's first row, into row_sums
};

struct StepLayout {
  bool summarised = false;
  Dim row_dim = Dim::T, col_dim = Dim::S;
  std::int64_t row_count = 0, col_count = 0;
  ShownIndices rows, cols;
  std::vector<Block> blocks;
};

StepLayout layout_step(const Step& step, const TraceConfig& config, const ViewOptions& options);

// A step that is one number (the loss: [1] in the trace, its JSON and files), shown as "loss = 0.0862"
// under the shape line "a scalar" rather than as a 1×1 table.
bool is_scalar(const Step& step);
// The step's shape line: "[T, S] = [2, 2]", or "a scalar (one number)".
std::string shape_line(const Step& step);

// --heatmap: the requested step ids ("none" for no heatmap), each refused unless this trace has it
// and it is a queries × keys step.
std::vector<std::string> heatmap_steps(const Trace& trace, const std::vector<std::string>& requested);

// Refuses --head / --batch outside the trace's H / B, and a --summary-threshold below 1, naming them
// as the door spells them. Every renderer checks its options with it before indexing a step.
void check_view(const Trace& trace, const ViewOptions& options, Door door = Door::Cli);

// A heatmap's colour scale: weights (probabilities) and masks on a fixed 0..1, so patterns compare
// across steps and runs; any other step on the range of its finite values.
struct HeatScale {
  double lo = 0, hi = 1;
  bool fitted = false;  // lo and hi are one block's own smallest and largest value
  double t(double v) const { return hi > lo ? (v - lo) / (hi - lo) : 0.5; }
};
HeatScale heat_scale(const Step& step);
// --heat-range fit: the range of one block's finite values that are not blocked (a near-uniform
// head's 0.17 … 0.24 spread over the whole ramp), or heat_scale when the block has none.
HeatScale fitted_heat_scale(const Step& step, const Step* masked, std::int64_t offset, std::int64_t count);

}  // namespace attn
