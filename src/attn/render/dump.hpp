// Traces written to a directory for other tools: --dump (every step as .npy, the trace's JSON and a
// steps.py that loads them) and --svg-dir (the heatmaps as SVG files). The directory is OutputDir's:
// never a file of the user's overwritten without --force.
#pragma once

#include <string>

#include "attn/core/spec.hpp"
#include "attn/core/trace.hpp"

namespace attn {

// attn run --dump DIR: every step as DIR/<step id>.npy, plus DIR/trace.json pointing at them, and
// the inputs the steps' code names as DIR/inputs/<name>.npy (x, W_q, b_q, …, masks, norm weights),
// into a directory that OutputDir takes (force: --force).
void dump_trace(const Trace& trace, const Spec& spec, const std::string& dir, bool force = false);

struct TextOptions;
// attn run --svg-dir DIR: the heatmap pictures as DIR/<step id>[.b<batch>.h<head>].svg.
void write_svg_pictures(const Trace& trace, const TextOptions& options, const std::string& dir, bool force = false);

}  // namespace attn
