// Loading traces (JSON or .npy directories) and comparing them step by step with
// |a - b| <= atol + rtol * |b|; non-finite values must match exactly.
#include "attn/diff.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "attn/error.hpp"
#include "attn/npy.hpp"
#include "attn/render/render.hpp"

namespace attn {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// The pipeline's order of step ids, for directories without a trace.json.
const std::vector<std::string> kStepOrder = {"x", "source", "qkv", "q", "k", "v", "q.view", "q.heads", "k.view", "k.heads",
                                             "v.view", "v.heads", "k.T", "scores", "scaled", "mask", "masked", "weights",
                                             "context", "merged", "output"};

std::size_t order_of(const std::string& id) {
  const auto it = std::find(kStepOrder.begin(), kStepOrder.end(), id);
  return static_cast<std::size_t>(it - kStepOrder.begin());
}

void flatten(const json& j, std::vector<Scalar>& out, const std::string& where) {
  if (j.is_array()) {
    for (const auto& e : j) flatten(e, out, where);
  } else if (j.is_number()) {
    out.push_back(static_cast<Scalar>(j.get<double>()));
  } else if (j.is_string() && (j == "-inf" || j == "inf" || j == "nan")) {
    const auto s = j.get<std::string>();
    out.push_back(s == "nan" ? std::numeric_limits<Scalar>::quiet_NaN()
                             : (s == "inf" ? 1 : -1) * std::numeric_limits<Scalar>::infinity());
  } else {
    throw InputError(fmt::format("{}: expected numbers in data, got {}", where, j.dump()));
  }
}

Labels labels_of(const json& j) {
  if (!j.is_array() || j.empty()) return {};
  if (j[0].is_array()) return j.get<Labels>();
  return {j.get<std::vector<std::string>>()};
}

// metadata_only: ids, order and labels, no values (a dump directory's trace.json, whose .npy files
// are read one by one).
LoadedTrace load_json_trace(const std::string& path, bool metadata_only = false) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open the trace ({})", path, std::strerror(errno)));
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: not a JSON trace: {}", path, e.what()));
  }
  if (!doc.is_object() || doc.value("format", "") != "attn-trace" || !doc.contains("steps") || !doc["steps"].is_array()) {
    throw InputError(fmt::format("{}: not an attn trace (expected the output of attn run --format json)", path));
  }
  LoadedTrace t;
  t.origin = path;
  if (doc.contains("config") && doc["config"].is_object()) {
    TraceConfig c;
    const auto& cj = doc["config"];
    c.title = cj.value("title", "");
    c.tokens = labels_of(cj.value("tokens", json()));
    c.source_tokens = labels_of(cj.value("source_tokens", json()));
    t.config = c;
  }
  for (const auto& s : doc["steps"]) {
    const auto id = s.value("id", "");
    const auto where = fmt::format("{}: step {}", path, id);
    Shape shape = s.value("shape", Shape{});
    if (metadata_only) {
      t.steps.push_back({id, Tensor(), s.value("dims", std::vector<std::string>{})});
      continue;
    }
    if (s.contains("npy") && s["npy"].is_string()) {
      // a --dump trace.json: the values are in the .npy file beside it
      const auto file = (fs::path(path).parent_path() / s["npy"].get<std::string>()).string();
      Tensor value = read_npy(file, where, NonFinite::Allow);
      if (value.shape() != shape) {
        throw InputError(fmt::format("{}: {} holds {}, the trace says {}", where, file, shape_string(value.shape()), shape_string(shape)));
      }
      t.steps.push_back({id, std::move(value), s.value("dims", std::vector<std::string>{})});
      continue;
    }
    std::vector<Scalar> values;
    flatten(s.value("data", json()), values, where);
    if (element_count(shape) != static_cast<std::int64_t>(values.size())) {
      throw InputError(fmt::format("{}: shape {} does not hold {} values", where, shape_string(shape), values.size()));
    }
    t.steps.push_back({id, Tensor(shape, std::move(values)), s.value("dims", std::vector<std::string>{})});
  }
  return t;
}

LoadedTrace load_npy_dir(const std::string& path) {
  LoadedTrace t;
  t.origin = path;
  std::vector<std::string> order;
  const fs::path trace_json = fs::path(path) / "trace.json";
  if (fs::exists(trace_json)) {
    // A dump from attn run --dump: take its order and labels; the .npy files hold the values.
    const LoadedTrace j = load_json_trace(trace_json.string(), /*metadata_only=*/true);
    t.config = j.config;
    for (const auto& s : j.steps) order.push_back(s.id);
  }
  std::vector<std::string> ids;
  for (const auto& entry : fs::directory_iterator(path)) {
    if (entry.path().extension() == ".npy") ids.push_back(entry.path().stem().string());
  }
  if (ids.empty()) throw InputError(fmt::format("{}: no <step id>.npy files in this directory", path));
  std::sort(ids.begin(), ids.end(), [&](const std::string& a, const std::string& b) {
    const auto ia = std::find(order.begin(), order.end(), a) - order.begin();
    const auto ib = std::find(order.begin(), order.end(), b) - order.begin();
    if (ia != ib) return ia < ib;
    if (order_of(a) != order_of(b)) return order_of(a) < order_of(b);
    return a < b;
  });
  for (const auto& id : ids) {
    t.steps.push_back({id, read_npy((fs::path(path) / (id + ".npy")).string(), fmt::format("{}/{}.npy", path, id), NonFinite::Allow), {}});
  }
  return t;
}

Shape squeezed(const Shape& s) {
  Shape out;
  for (auto d : s)
    if (d != 1) out.push_back(d);
  return out;
}

}  // namespace

std::string value_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.6g}", v);
}

const LoadedStep* LoadedTrace::find(std::string_view id) const {
  for (const auto& s : steps)
    if (s.id == id) return &s;
  return nullptr;
}

LoadedTrace load_trace(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return load_npy_dir(path);
  if (!fs::exists(path, ec)) throw InputError(fmt::format("{}: no such file or directory", path));
  return load_json_trace(path);
}

LoadedTrace loaded_from(const Trace& trace, std::string origin) {
  LoadedTrace t;
  t.origin = std::move(origin);
  t.config = trace.config;
  for (const auto& s : trace.steps) t.steps.push_back({s.id, s.value, s.dims});
  return t;
}

StepDiff compare_step(const std::string& id, const Tensor& a, const Tensor& b, const Tolerance& tol,
                      const std::optional<TraceConfig>& config, const std::vector<std::string>& dims) {
  StepDiff d;
  d.id = id;
  d.shape_a = a.shape();
  d.shape_b = b.shape();
  if (a.shape() != b.shape()) {
    if (squeezed(a.shape()) != squeezed(b.shape())) {
      d.status = StepStatus::ShapeMismatch;
      return d;
    }
    d.note = "shapes differ only by size-1 axes";
  }
  struct Bad {
    std::int64_t i;
    double err;
  };
  std::vector<Bad> bad;
  for (std::int64_t i = 0; i < a.size(); ++i) {
    const double x = a.data()[i], y = b.data()[i];
    ++d.compared;
    bool ok;
    double err;
    if (!std::isfinite(x) || !std::isfinite(y)) {
      ok = (std::isnan(x) && std::isnan(y)) || x == y;
      err = ok ? 0 : std::numeric_limits<double>::infinity();
    } else {
      err = std::fabs(x - y);
      ok = err <= tol.atol + tol.rtol * std::fabs(y);
      d.max_abs = std::max(d.max_abs, err);
    }
    if (!ok) bad.push_back({i, err});
  }
  d.differ = static_cast<std::int64_t>(bad.size());
  d.status = bad.empty() ? StepStatus::Same : StepStatus::Differ;
  std::stable_sort(bad.begin(), bad.end(), [](const Bad& l, const Bad& r) { return l.err > r.err; });
  const bool labelled = config && dims.size() == a.shape().size();
  for (std::size_t k = 0; k < bad.size() && k < 5; ++k) {
    const auto i = bad[k].i;
    std::string pos;
    if (labelled) {
      pos = position_label(*config, dims, a.shape(), i);
    } else {
      std::vector<std::int64_t> idx(a.shape().size());
      auto f = i;
      for (std::size_t ax = idx.size(); ax-- > 0;) idx[ax] = f % a.shape()[ax], f /= a.shape()[ax];
      pos = fmt::format("[{}]", fmt::join(idx, ", "));
    }
    d.worst.push_back({pos, a.data()[i], b.data()[i]});
  }
  return d;
}

DiffReport diff_traces(const LoadedTrace& a, const LoadedTrace& b, const Tolerance& tol) {
  DiffReport r;
  r.a = a.origin;
  r.b = b.origin;
  r.tol = tol;
  for (const auto& sa : a.steps) {
    const LoadedStep* sb = b.find(sa.id);
    if (sb == nullptr) {
      StepDiff d;
      d.id = sa.id;
      d.status = StepStatus::OnlyInA;
      d.shape_a = sa.value.shape();
      r.steps.push_back(d);
      continue;
    }
    r.steps.push_back(compare_step(sa.id, sa.value, sb->value, tol, a.config, sa.dims));
  }
  for (const auto& sb : b.steps) {
    if (a.find(sb.id) != nullptr) continue;
    StepDiff d;
    d.id = sb.id;
    d.status = StepStatus::OnlyInB;
    d.shape_b = sb.value.shape();
    r.steps.push_back(d);
  }
  for (std::size_t i = 0; i < r.steps.size(); ++i) {
    if (r.steps[i].status != StepStatus::Same) {
      r.first_diverging = static_cast<int>(i);
      break;
    }
  }
  return r;
}

void render_diff_text(const DiffReport& r, std::ostream& out) {
  out << fmt::format("attn diff\n  A: {}\n  B: {}\n  tolerance: |a − b| ≤ {} + {}·|b|; non-finite values must match exactly\n", r.a, r.b,
                     r.tol.atol, r.tol.rtol);
  if (r.same()) {
    out << "\nsame: every step of A is in B with the same shape and values within the tolerance\n";
  } else {
    const auto& d = r.steps[static_cast<std::size_t>(r.first_diverging)];
    out << fmt::format("\nfirst diverging step: {}\n", d.id);
    switch (d.status) {
      case StepStatus::OnlyInA: out << "  only in A (B has no such step)\n"; break;
      case StepStatus::OnlyInB: out << "  only in B (A has no such step)\n"; break;
      case StepStatus::ShapeMismatch:
        out << fmt::format("  shapes differ: A {} vs B {}\n", shape_string(d.shape_a), shape_string(d.shape_b));
        break;
      default: {
        out << fmt::format("  {} of {} entries differ; largest |a − b| = {}\n", d.differ, d.compared, value_text(d.max_abs));
        std::size_t w = 8;
        for (const auto& e : d.worst) w = std::max(w, e.position.size());
        out << fmt::format("  {:<{}}  {:>12}  {:>12}  {:>12}\n", "position", w, "A", "B", "|a − b|");
        for (const auto& e : d.worst) {
          const double err = std::isfinite(e.a) && std::isfinite(e.b) ? std::fabs(e.a - e.b) : std::numeric_limits<double>::infinity();
          out << fmt::format("  {:<{}}  {:>12}  {:>12}  {:>12}\n", e.position, w, value_text(e.a), value_text(e.b), value_text(err));
        }
      }
    }
  }
  out << "\nper step:\n";
  std::size_t w = 4;
  for (const auto& d : r.steps) w = std::max(w, d.id.size());
  int same = 0, differ = 0, only_a = 0, only_b = 0;
  for (const auto& d : r.steps) {
    std::string what;
    switch (d.status) {
      case StepStatus::Same:
        ++same;
        what = fmt::format("same      {} values, largest |a − b| {}", d.compared, value_text(d.max_abs));
        break;
      case StepStatus::Differ:
        ++differ;
        what = fmt::format("differ    {} of {} values, largest |a − b| {}", d.differ, d.compared, value_text(d.max_abs));
        break;
      case StepStatus::ShapeMismatch:
        ++differ;
        what = fmt::format("shape     A {} vs B {}", shape_string(d.shape_a), shape_string(d.shape_b));
        break;
      case StepStatus::OnlyInA: ++only_a, what = "only in A"; break;
      case StepStatus::OnlyInB: ++only_b, what = "only in B"; break;
    }
    if (!d.note.empty()) what += " (" + d.note + ")";
    out << fmt::format("  {:<{}}  {}\n", d.id, w, what);
  }
  out << fmt::format("summary: {} steps: {} same, {} differ, {} only in A, {} only in B\n", r.steps.size(), same, differ, only_a, only_b);
}

}  // namespace attn
