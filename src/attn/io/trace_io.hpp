// Traces on disk: reading one back (attn's JSON trace, a --dump directory, or a student's directory
// of <step id>.npy files) and writing a dump. The JSON text itself is render/json.cpp's.
#pragma once

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

// attn run --dump DIR: every step as DIR/<step id>.npy, plus DIR/trace.json pointing at them, and
// the inputs the steps' code names as DIR/inputs/<name>.npy (x, W_q, b_q, …, masks, norm weights),
// into a directory that OutputDir takes (force: --force).
void dump_trace(const Trace& trace, const Spec& spec, const std::string& dir, bool force = false);

struct TextOptions;
// attn run --svg-dir DIR: the heatmap pictures as DIR/<step id>[.b<batch>.h<head>].svg.
void write_svg_pictures(const Trace& trace, const TextOptions& options, const std::string& dir, bool force = false);

}  // namespace attn
