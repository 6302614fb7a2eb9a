// Step layout (blocks, summarising, head/batch filters) and step selection.
#include "attn/render/layout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "attn/core/error.hpp"
#include "attn/render/render.hpp"
#include "attn/core/suggest.hpp"

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

const Step* blocking_step(const Trace& trace, const Step& step) {
  if (step.kind == ValueKind::Mask) return nullptr;
  const Step* masked = trace.find("masked");
  // the same axes, not only the same sizes: x [T, C] is no score matrix when C happens to equal T
  return masked != nullptr && masked->value.shape() == step.value.shape() && masked->dims == step.dims ? masked : nullptr;
}

std::string markup_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// Word-wraps a paragraph to `width` cells, the prefixes included: the first line starts with
// `first`, the others with `rest` (a hanging indent). A word longer than a line stands alone.
std::string wrap(const std::string& text, std::size_t width, const std::string& first, const std::string& rest) {
  // words, with "=" glued to its neighbours ("C = 32" is never broken)
  std::vector<std::string> words;
  {
    std::istringstream in(text);
    for (std::string w; in >> w;) {
      if (words.size() >= 2 && words.back() == "=") {
        words.pop_back();
        words.back() += " = " + w;
      } else {
        words.push_back(w);
      }
    }
  }
  std::string line, out;
  for (std::string word : words) {
    // a word wider than a whole line (a long path) is cut, at whole characters, where the line ends
    for (;;) {
      const std::size_t prefix = cells(out.empty() ? first : rest);
      const std::size_t room = width > prefix + 1 ? width - prefix : 1;
      if (!line.empty() && prefix + cells(line) + 1 + cells(word) > width) {
        out += (out.empty() ? first : rest) + line + "\n";
        line.clear();
        continue;
      }
      if (!line.empty() || cells(word) <= room) break;
      std::size_t n = 0, i = 0;
      while (i < word.size()) {
        const auto [c, len] = decode_utf8(word, i);
        const auto w = static_cast<std::size_t>(char_width(c));
        if (n + w > room && i > 0) break;
        n += w;
        i += len;
      }
      out += (out.empty() ? first : rest) + word.substr(0, i) + "\n";
      word.erase(0, i);
      if (word.empty()) break;
    }
    if (word.empty()) continue;
    if (!line.empty()) line += ' ';
    line += word;
  }
  if (!line.empty()) out += (out.empty() ? first : rest) + line + "\n";
  return out;
}

std::vector<std::string> split_parts(const std::string& text) {
  std::vector<std::string> out;
  for (std::size_t at = 0;;) {
    const auto next = text.find(" · ", at);
    out.push_back(text.substr(at, next == std::string::npos ? std::string::npos : next - at));
    if (next == std::string::npos) return out;
    at = next + std::string_view(" · ").size();
  }
}

std::string join_fitting(const std::vector<std::string>& parts, std::size_t width, const std::string& lead) {
  std::string out, line = lead;
  bool fresh = true;  // nothing after the line's lead yet
  for (std::size_t k = 0; k < parts.size(); ++k) {
    // (room for the " ·" that ends a line broken after this part, unless it is the last)
    if (!fresh && cells(line) + 3 + cells(parts[k]) + (k + 1 < parts.size() ? 2 : 0) > width) {
      out += line + " ·\n";
      line = lead + "  ";
      fresh = true;
    }
    line += (fresh ? "" : " · ") + parts[k];
    fresh = false;
  }
  return out + line + "\n";
}

std::string fit_lines(const std::string& text, std::size_t width) {
  std::ostringstream os;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto indent = line.find_first_not_of(' ');
    const std::string lead(indent == std::string::npos ? 0 : indent, ' ');
    const std::string body = line.substr(lead.size());
    if (cells(line) <= width || line.find('\x1b') != std::string::npos) {
      os << line << "\n";
      continue;
    }
    // "label:   value": the value wraps under itself; other runs of spaces make a table row, left whole
    if (const auto gap = body.find("  "); gap != std::string::npos) {
      const auto value = body.find_first_not_of(' ', gap);
      if (gap == 0 || body[gap - 1] != ':' || value == std::string::npos || body.find("  ", value) != std::string::npos || lead.size() + value + 20 > width) {
        os << line << "\n";
        continue;
      }
      os << wrap(body.substr(value), width, lead + body.substr(0, value), std::string(lead.size() + value, ' '));
      continue;
    }
    // between " · " parts, unless a part alone is too long for a line: then at words
    const auto parts = split_parts(body);
    const bool parts_fit = parts.size() > 1 && std::all_of(parts.begin(), parts.end(), [&](const std::string& p) {
      return cells(p) + lead.size() + 4 <= width;
    });
    os << (parts_fit ? join_fitting(parts, width, lead) : wrap(body, width, lead, lead + "  "));
  }
  return os.str();
}

std::string clip(std::string_view s, std::size_t max_cells) {
  if (cells(s) <= max_cells) return std::string(s);
  if (max_cells == 0) return {};
  // whole characters (with the marks that combine with them) up to max_cells − 1 columns, then "…"
  std::size_t n = 0, i = 0;
  while (i < s.size()) {
    const auto [c, len] = decode_utf8(s, i);
    const auto w = static_cast<std::size_t>(char_width(c));
    if (n + w > max_cells - 1) break;
    n += w;
    i += len;
  }
  return std::string(s.substr(0, i)) + "…";
}

std::string pad_left(std::string_view s, std::size_t width) {
  const auto w = cells(s);
  return std::string(width > w ? width - w : 0, ' ') + std::string(s);
}

std::string pad_right(std::string_view s, std::size_t width) {
  const auto w = cells(s);
  return std::string(s) + std::string(width > w ? width - w : 0, ' ');
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
          parts.push_back(fmt::format("token {} \"{}\"", lead[a], axis_label(config, d, lead[a], b.batch)));
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

std::vector<std::size_t> select_steps(const Trace& trace, const std::vector<std::string>& ids, const std::string& from,
                                      const std::string& to, Door door, std::string_view ids_key) {
  std::vector<std::string_view> all;
  for (const auto& s : trace.steps) all.push_back(s.id);
  auto index_of = [&](const std::string& id, std::string_view key) {
    for (std::size_t i = 0; i < trace.steps.size(); ++i)
      if (trace.steps[i].id == id) return i;
    throw InputError(fmt::format("{}: this trace has no step \"{}\"{}; its steps: {}", option_with(door, key, id), id, did_you_mean(id, all),
                                 fmt::join(all, ", ")));
  };
  std::vector<bool> keep(trace.steps.size(), ids.empty());
  for (const auto& id : ids) keep[index_of(id, ids_key)] = true;
  if (trace.steps.empty()) return {};
  const std::size_t lo = from.empty() ? 0 : index_of(from, "from");
  const std::size_t hi = to.empty() ? trace.steps.size() - 1 : index_of(to, "to");
  if (lo > hi) throw InputError(fmt::format("{} comes after {} in this trace", option_with(door, "from", from), option_with(door, "to", to)));
  std::vector<std::size_t> out;
  for (std::size_t i = lo; i <= hi; ++i)
    if (keep[i]) out.push_back(i);
  return out;
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

std::vector<std::string> code_lines(const std::string& code) {
  std::vector<std::string> lines;
  std::size_t from = 0;
  for (std::size_t at; (at = code.find("; ", from)) != std::string::npos; from = at + 2) lines.push_back(code.substr(from, at - from));
  if (from < code.size()) lines.push_back(code.substr(from));
  return lines;
}

}  // namespace attn
