// Loading traces from JSON files and .npy directories (a --dump's, or a student's).
#include "attn/io/trace_io.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "attn/core/error.hpp"
#include "attn/io/npy.hpp"
#include "attn/core/steps.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

LoadedTrace loaded(const Trace& trace, std::string origin, bool with_config) {
  LoadedTrace t;
  t.origin = std::move(origin);
  if (with_config) t.config = trace.config;
  for (const auto& s : trace.steps) t.steps.push_back({s.id, s.value, s.dims});
  return t;
}

LoadedTrace load_json_file(const std::string& path, bool metadata_only) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open the trace ({})", path, std::strerror(errno)));
  return loaded(read_json_trace(in, path, metadata_only), path, true);
}

LoadedTrace load_npy_dir(const std::string& path) {
  LoadedTrace t;
  t.origin = path;
  std::vector<std::string> order;
  const fs::path trace_json = fs::path(path) / "trace.json";
  if (fs::exists(trace_json)) {
    // A dump from attn run --dump: take its order and labels; the .npy files hold the values.
    const LoadedTrace j = load_json_file(trace_json.string(), /*metadata_only=*/true);
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
    if (step_order(a) != step_order(b)) return step_order(a) < step_order(b);
    return a < b;
  });
  for (const auto& id : ids) {
    // named by its step id: the message adds the file's path
    t.steps.push_back({id, read_npy((fs::path(path) / (id + ".npy")).string(), id, NonFinite::Allow), {}});
  }
  return t;
}

}  // namespace

const LoadedStep* LoadedTrace::find(std::string_view id) const {
  for (const auto& s : steps)
    if (s.id == id) return &s;
  return nullptr;
}

LoadedTrace load_trace(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return load_npy_dir(path);
  if (!fs::exists(path, ec)) throw InputError(fmt::format("{}: no such file or directory", path));
  return load_json_file(path, false);
}

LoadedTrace loaded_from(const Trace& trace, std::string origin) { return loaded(trace, std::move(origin), true); }

}  // namespace attn
