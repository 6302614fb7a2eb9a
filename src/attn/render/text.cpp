// The terminal walkthrough: header, then each step with its formula, symbolic and concrete shape and
// its tensor as labelled, aligned matrices (one block per batch row and head). Large tensors are
// summarised with edge items and "…", as numpy prints them.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "attn/render/render.hpp"

namespace attn {

std::string format_fixed(Scalar v, int precision) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{:.{}f}", v, precision);
  // "-0.0000" is a rounding artefact, not a negative number.
  if (s.front() == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

namespace {

constexpr std::string_view kEllipsis = "…";

// The indices shown along one axis: all, or the edges with a gap (nullopt) between them.
std::vector<std::optional<std::int64_t>> shown(std::int64_t n, bool summarise, std::int64_t edge) {
  std::vector<std::optional<std::int64_t>> out;
  if (!summarise || n <= 2 * edge) {
    for (std::int64_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  for (std::int64_t i = 0; i < edge; ++i) out.push_back(i);
  out.push_back(std::nullopt);
  for (std::int64_t i = n - edge; i < n; ++i) out.push_back(i);
  return out;
}

// Display width in terminal cells: counts UTF-8 code points, not bytes.
std::size_t cells(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

std::string pad_left(std::string_view s, std::size_t width) {
  const auto w = cells(s);
  return std::string(width > w ? width - w : 0, ' ') + std::string(s);
}

std::string pad_right(std::string_view s, std::size_t width) {
  const auto w = cells(s);
  return std::string(s) + std::string(width > w ? width - w : 0, ' ');
}

class TextRenderer {
 public:
  TextRenderer(const Trace& trace, std::ostream& out, const TextOptions& o) : tr_(trace), c_(trace.config), out_(out), o_(o) {}

  void render() {
    header();
    if (o_.shapes_only) {
      shape_flow();
      return;
    }
    for (std::size_t i = 0; i < tr_.steps.size(); ++i) step(i + 1, tr_.steps[i]);
  }

 private:
  void header() {
    out_ << "Attention Tracer";
    if (!c_.title.empty()) out_ << " · " << c_.title;
    out_ << "\n";
    std::string sizes = c_.batched ? fmt::format("B = {}", c_.B) : "B = 1 (no batch dimension)";
    sizes += fmt::format(" · T = {} · S = {}", c_.T, c_.S);
    sizes += c_.C > 0 ? fmt::format(" · C = {} · H = {} · hs = {}", c_.C, c_.H, c_.hs) : fmt::format(" · H = {}", c_.H);
    out_ << fmt::format("mode {} · {}\n", c_.mode, sizes);
    out_ << fmt::format("scale {} · starts from {}", c_.scale, c_.entry);
    if (c_.entry == "embeddings") out_ << fmt::format(" · layout {}", c_.layout);
    out_ << "\n";
    for (const auto& n : c_.notes) out_ << "  note: " << n << "\n";
  }

  static std::string symbolic(const Step& s) { return fmt::format("[{}]", fmt::join(s.dims, ", ")); }

  void shape_flow() {
    out_ << "\nShape flow\n";
    std::size_t id_w = 2, title_w = 4, sym_w = 0;
    for (const auto& s : tr_.steps) {
      id_w = std::max(id_w, cells(s.id));
      title_w = std::max(title_w, cells(s.title));
      sym_w = std::max(sym_w, cells(symbolic(s)));
    }
    for (std::size_t i = 0; i < tr_.steps.size(); ++i) {
      const auto& s = tr_.steps[i];
      out_ << fmt::format("{:>3}. {}  {}  {} = {}\n", i + 1, pad_right(s.id, id_w), pad_right(s.title, title_w),
                          pad_left(symbolic(s), sym_w), shape_string(s.value.shape()));
    }
  }

  void step(std::size_t n, const Step& s) {
    out_ << fmt::format("\n[{}] {} · {}\n", n, s.id, s.title);
    out_ << "    " << s.formula << "\n";
    out_ << fmt::format("    {} = {}\n", symbolic(s), shape_string(s.value.shape()));
    if (!s.note.empty()) out_ << "    " << s.note << "\n";
    tensor(s);
  }

  std::string label(const std::string& dim, std::int64_t index, std::int64_t b) const { return axis_label(c_, dim, index, b); }

  std::string block_title(const Step& s, const std::vector<std::int64_t>& lead) const {
    std::vector<std::string> parts;
    std::int64_t b = 0;
    for (std::size_t a = 0; a < lead.size(); ++a)
      if (s.dims[a] == "B") b = lead[a];
    for (std::size_t a = 0; a < lead.size(); ++a) {
      const auto& d = s.dims[a];
      if (d == "B") parts.push_back(fmt::format("batch {}", lead[a]));
      else if (d == "H") parts.push_back(fmt::format("head {}", lead[a]));
      else if (d == "T") parts.push_back(fmt::format("query {} \"{}\"", lead[a], label(d, lead[a], b)));
      else if (d == "S") parts.push_back(fmt::format("key {} \"{}\"", lead[a], label(d, lead[a], b)));
      else parts.push_back(fmt::format("{} {}", d, lead[a]));
    }
    return fmt::format("{}", fmt::join(parts, " · "));
  }

  std::string number(const Step& s, Scalar v) const {
    if (s.kind == ValueKind::Mask) return v != 0 ? "1" : "0";
    return format_fixed(v, o_.precision);
  }

  void tensor(const Step& s) {
    const auto& shape = s.value.shape();
    const int r = static_cast<int>(shape.size());
    const bool summarise = s.value.size() > o_.summary_threshold;
    std::vector<std::vector<std::optional<std::int64_t>>> axes;
    for (int a = 0; a < r; ++a) axes.push_back(shown(shape[static_cast<std::size_t>(a)], summarise, o_.edge_items));
    if (summarise) {
      out_ << fmt::format("    (summarised: {} values; edges of {} shown)\n", s.value.size(), o_.edge_items);
    }
    const std::string row_dim = s.dims[static_cast<std::size_t>(r - 2)];
    const std::string col_dim = s.dims[static_cast<std::size_t>(r - 1)];

    // One width for every number column of the step keeps blocks aligned with each other.
    std::size_t num_w = 1;
    for (Scalar v : s.value.values()) num_w = std::max(num_w, number(s, v).size());
    if (s.row_sums)
      for (Scalar v : s.row_sums->values()) num_w = std::max(num_w, number(s, v).size());

    std::vector<std::int64_t> lead;
    blocks(s, axes, lead, row_dim, col_dim, num_w);
  }

  // One matrix per combination of the leading (batch, head, ...) indices, in row-major order;
  // a summarised leading axis prints one line for the blocks it skips.
  void blocks(const Step& s, const std::vector<std::vector<std::optional<std::int64_t>>>& axes, std::vector<std::int64_t>& lead,
              const std::string& row_dim, const std::string& col_dim, std::size_t num_w) {
    const auto& shape = s.value.shape();
    const std::size_t lead_n = shape.size() - 2;
    if (lead.size() == lead_n) {
      std::int64_t block = 0, b = 0;
      for (std::size_t a = 0; a < lead_n; ++a) {
        block = block * shape[a] + lead[a];
        if (s.dims[a] == "B") b = lead[a];
      }
      out_ << "\n";
      if (lead_n > 0) out_ << "    " << block_title(s, lead) << "\n";
      const auto rows = shape[lead_n], cols = shape[lead_n + 1];
      matrix(s, block * rows * cols, b, row_dim, col_dim, axes[lead_n], axes[lead_n + 1], num_w, block * rows);
      return;
    }
    const std::size_t axis = lead.size();
    for (const auto& idx : axes[axis]) {
      if (!idx) {
        out_ << fmt::format("\n    {} ({} {} .. {} not shown)\n", kEllipsis, s.dims[axis], o_.edge_items,
                            shape[axis] - o_.edge_items - 1);
        continue;
      }
      lead.push_back(*idx);
      blocks(s, axes, lead, row_dim, col_dim, num_w);
      lead.pop_back();
    }
  }

  void matrix(const Step& s, std::int64_t base, std::int64_t b, const std::string& row_dim, const std::string& col_dim,
              const std::vector<std::optional<std::int64_t>>& row_axis, const std::vector<std::optional<std::int64_t>>& col_axis,
              std::size_t num_w, std::int64_t sum_base) {
    const auto cols = s.value.shape().back();
    std::size_t label_w = 0;
    for (const auto& i : row_axis) label_w = std::max(label_w, i ? cells(label(row_dim, *i, b)) : cells(kEllipsis));
    std::vector<std::size_t> col_w;
    for (const auto& j : col_axis) col_w.push_back(std::max(num_w, j ? cells(label(col_dim, *j, b)) : cells(kEllipsis)));
    const bool sums = s.row_sums.has_value();

    std::string head = "    " + std::string(label_w, ' ');
    for (std::size_t c = 0; c < col_axis.size(); ++c)
      head += "  " + pad_left(col_axis[c] ? label(col_dim, *col_axis[c], b) : std::string(kEllipsis), col_w[c]);
    if (sums) head += "  │ " + pad_left("sum", num_w);
    out_ << head << "\n";
    for (const auto& i : row_axis) {
      std::string line = "    " + pad_right(i ? label(row_dim, *i, b) : std::string(kEllipsis), label_w);
      for (std::size_t c = 0; c < col_axis.size(); ++c) {
        std::string cell = (i && col_axis[c]) ? number(s, s.value.data()[base + *i * cols + *col_axis[c]]) : std::string(kEllipsis);
        line += "  " + pad_left(cell, col_w[c]);
      }
      if (sums) line += "  │ " + pad_left(i ? number(s, s.row_sums->data()[sum_base + *i]) : std::string(kEllipsis), num_w);
      out_ << line << "\n";
    }
  }

  const Trace& tr_;
  const TraceConfig& c_;
  std::ostream& out_;
  const TextOptions& o_;
};

}  // namespace

void render_text(const Trace& trace, std::ostream& out, const TextOptions& options) {
  TextRenderer(trace, out, options).render();
}

}  // namespace attn
