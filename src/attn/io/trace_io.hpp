// Traces on disk, read back: attn's JSON trace, a --dump directory, or a student's directory of
// <step id>.npy files. Writing them is render/'s (json.cpp, dump.cpp).
#pragma once

#include <istream>
#include <optional>
#include <string>
#include <vector>

#include "attn/core/trace.hpp"

namespace attn {

struct LoadedStep {
  std::string id;
  Tensor value;
  Dims dims;  // empty when unknown (a student's .npy)
};

struct LoadedTrace {
  std::string origin;
  std::optional<TraceConfig> config;  // when read from attn's JSON (labels for positions)
  std::vector<LoadedStep> steps;      // in pipeline order where known

  const LoadedStep* find(std::string_view id) const;
};

LoadedTrace load_trace(const std::string& path);  // JSON trace file, or a directory of .npy files
LoadedTrace loaded_from(const Trace& trace, std::string origin);

// render/json.cpp's output read back (trace_json.cpp): the whole config and every step (title, formula, dims, values,
// row sums), so that render_json of the result gives the same bytes. "npy" steps are read from the
// directory of `origin`; metadata_only keeps shapes without values. InputError when it is no trace.
Trace read_json_trace(std::istream& in, const std::string& origin, bool metadata_only = false);

}  // namespace attn
