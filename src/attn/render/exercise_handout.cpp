// A student's handout, once as blocks (headings, paragraphs, tables) and then written as markdown or
// as a web page, so the two say the same; the worked solution and key.json beside it.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <sstream>

#include "attn/core/text.hpp"
#include "attn/render/exercise.hpp"
#include "attn/render/exercise_blocks.hpp"
#include "attn/render/render.hpp"

namespace attn {

namespace {

using Label = std::function<std::string(std::int64_t b, std::int64_t i)>;

// One table per index of a tensor's leading axes (batch rows, heads), the last two axes as rows and
// columns (a vector: one row); cell(flat) fills each cell.
void add_tables(std::vector<HandoutBlock>& blocks, const std::vector<std::int64_t>& shape, const std::function<std::string(std::int64_t lead)>& caption,
                const Label& row, const Label& col, const std::function<std::string(std::int64_t flat)>& cell) {
  const std::size_t r = shape.size();
  const std::int64_t cols = r == 0 ? 1 : shape[r - 1], rows = r < 2 ? 1 : shape[r - 2];
  std::int64_t leads = 1;
  for (std::size_t a = 0; a + 2 < r; ++a) leads *= shape[a];
  for (std::int64_t lead = 0; lead < leads; ++lead) {
    HandoutBlock table{HandoutBlock::Table, 0, leads > 1 ? caption(lead) : "", {}};
    std::vector<std::string> header{""};
    for (std::int64_t j = 0; j < cols; ++j) header.push_back(col(lead, j));
    table.rows.push_back(header);
    for (std::int64_t i = 0; i < rows; ++i) {
      std::vector<std::string> line{r < 2 ? "" : row(lead, i)};
      for (std::int64_t j = 0; j < cols; ++j) line.push_back(cell((lead * rows + i) * cols + j));
      table.rows.push_back(line);
    }
    blocks.push_back(std::move(table));
  }
}

std::string index_label(std::int64_t, std::int64_t i) { return fmt::format("{}", i); }

// The token axis an input's rows (and, for given scores, columns) run along; none for a weight.
std::optional<Dim> input_axis(const std::string& path, bool columns) {
  if (path == "scores") return columns ? Dim::S : Dim::T;
  if (columns) return std::nullopt;
  if (path == "embeddings" || path == "q") return Dim::T;
  if (path == "source.embeddings" || path == "k" || path == "v") return Dim::S;
  return std::nullopt;
}

void add_input(std::vector<HandoutBlock>& blocks, const ExercisePaper& p, const ExerciseInput& in) {
  const std::string name = in.path.starts_with("weights.") ? in.path.substr(8) : in.path;
  if (!in.word.empty()) {
    blocks.push_back({HandoutBlock::Para, 0, fmt::format("{} = {}", name, in.word), {}});
    return;
  }
  blocks.push_back({HandoutBlock::Heading, 3, fmt::format("{} · [{}]", name, fmt::join(in.shape, ", ")), {}});
  // leading axes: a per-head weight's heads; a batched tensor's batch rows (given scores: and heads)
  const bool per_head = in.path.starts_with("weights.");
  const std::int64_t heads = !per_head && in.shape.size() == 4 ? in.shape[1] : 1;
  const auto labels = [&p, &in, heads](bool columns) -> Label {
    const auto axis = input_axis(in.path, columns);
    if (!axis) return index_label;
    return [&p, axis, heads](std::int64_t lead, std::int64_t i) { return distinct_axis_label(p.trace->config, *axis, i, lead / heads); };
  };
  const auto caption = [per_head, heads](std::int64_t lead) {
    if (per_head) return fmt::format("head {}", lead);
    return heads > 1 ? fmt::format("batch {}, head {}", lead / heads, lead % heads) : fmt::format("batch {}", lead);
  };
  const int decimals = p.settings->value_decimals;
  add_tables(blocks, in.shape, caption, labels(false), labels(true), [&](std::int64_t flat) { return format_fixed(static_cast<Scalar>(in.values[static_cast<std::size_t>(flat)]), decimals); });
}

// The leading axes' names for one table of a step: "batch 0, head 1".
std::string lead_caption(const Step& step, std::int64_t lead) {
  const auto& shape = step.value.shape();
  std::vector<std::string> parts;
  for (std::size_t a = shape.size() - 2; a-- > 0;) {
    parts.insert(parts.begin(), fmt::format("{} {}", step.dims[a] == Dim::B ? "batch" : step.dims[a] == Dim::H ? "head" : std::string(dim_name(step.dims[a])), lead % shape[a]));
    lead /= shape[a];
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

void add_question(std::vector<HandoutBlock>& blocks, const ExercisePaper& p, std::size_t n, const Step& step) {
  const auto& shape = step.value.shape();
  blocks.push_back({HandoutBlock::Heading, 3, fmt::format("{}. {}: {}", n, step.id, step.title), {}});
  blocks.push_back({HandoutBlock::Para, 0, fmt::format("{} · [{}] = [{}]", step.formula, fmt::join(step.dims, ", "), fmt::join(shape, ", ")), {}});
  // the batch row of a table (the labels of a batch row's own tokens)
  const auto b_of = [&step](std::int64_t lead) -> std::int64_t {
    const auto& sh = step.value.shape();
    if (step.dims.empty() || step.dims[0] != Dim::B || sh.size() < 3) return 0;
    std::int64_t inner = 1;
    for (std::size_t a = 1; a + 2 < sh.size(); ++a) inner *= sh[a];
    return lead / inner;
  };
  const auto axis_label_of = [&p, &step, b_of](std::size_t from_end) -> Label {
    if (step.value.rank() < static_cast<int>(from_end)) return index_label;
    const Dim d = step.dims[step.dims.size() - from_end];
    return [&p, d, b_of](std::int64_t lead, std::int64_t i) { return distinct_axis_label(p.trace->config, d, i, b_of(lead)); };
  };
  add_tables(blocks, shape, [&step](std::int64_t lead) { return lead_caption(step, lead); }, axis_label_of(2), axis_label_of(1),
             [](std::int64_t) { return std::string(); });
}

std::string mode_words(const TraceConfig& c) {
  switch (c.mode) {
    case Mode::Causal: return "Causal self-attention (a query sees no later key)";
    case Mode::Cross: return "Cross-attention (queries from the target, keys and values from the source)";
    case Mode::MultiHead: return "Multi-head self-attention";
    case Mode::Self: break;
  }
  return "Self-attention";
}

}  // namespace

std::vector<HandoutBlock> handout_blocks(const ExercisePaper& p) {
  const auto& c = p.trace->config;
  const auto& s = *p.settings;
  std::vector<HandoutBlock> blocks;
  blocks.push_back({HandoutBlock::Heading, 1, c.title.empty() ? "Attention exercise" : c.title, {}});
  const std::string who = p.student.name.empty() ? fmt::format("Name: ____________________ · id {}", p.student.id) : fmt::format("{} · id {}", p.student.name, p.student.id);
  blocks.push_back({HandoutBlock::Para, 0, fmt::format("{} · variant {}", who, p.code), {}});
  blocks.push_back({HandoutBlock::Para, 0, fmt::format("{} · {} · scale {}", mode_words(c), widths_text(c, ", "), c.scale), {}});
  // an asked step that holds -inf (the masked scores): say how to write it, as attn grade reads it
  const bool blocked = std::any_of(p.key.begin(), p.key.end(), [](const auto& k) {
    const auto v = k.step->value.values();
    return std::any_of(v.begin(), v.end(), [](Scalar x) { return x == -std::numeric_limits<Scalar>::infinity(); });
  });
  blocks.push_back({HandoutBlock::Para, 0, fmt::format("Give every answer to {} decimals (within ±{} of the exact value counts).{}", s.decimals,
                                                format_fixed(static_cast<Scalar>(s.tolerance()), s.decimals + 1),
                                                blocked ? " Write a masked (blocked) entry as -inf." : ""), {}});
  blocks.push_back({HandoutBlock::Heading, 2, "The inputs", {}});
  for (const auto& in : p.inputs) add_input(blocks, p, in);
  blocks.push_back({HandoutBlock::Heading, 2, "The questions", {}});
  for (std::size_t i = 0; i < p.key.size(); ++i) add_question(blocks, p, i + 1, *p.key[i].step);
  return blocks;
}

void render_handout_markdown(const ExercisePaper& p, std::ostream& out) { write_blocks_markdown(handout_blocks(p), out); }

void render_handout_html(const ExercisePaper& p, std::ostream& out) {
  out << handout_page_start(fmt::format("{} · {}", p.student.id, p.code));
  write_blocks_html(handout_blocks(p), out);
  out << handout_page_end();
}

void render_solution_markdown(const ExercisePaper& p, std::ostream& out) {
  const std::string who = p.student.name.empty() ? "" : p.student.name + ", ";
  out << fmt::format("<!-- the worked solution for {}id {}, variant {} -->\n\n", who, p.student.id, p.code);
  TextOptions o;
  o.explain = true;
  o.precision = p.settings->decimals;
  o.heatmaps = {};
  for (const auto& k : p.key) o.steps.push_back(static_cast<std::size_t>(k.step - p.trace->steps.data()));
  render_markdown(*p.trace, out, o);
}

}  // namespace attn
