// A trace: the run's configuration and its ordered steps, each with a stable id, a title, a formula,
// symbolic dims and the tensor. Renderers read it; nothing here computes or formats.
#pragma once

#include <optional>
#include <limits>
#include <string>
#include <vector>

#include "attn/core/spec.hpp"
#include "attn/core/tensor.hpp"

namespace attn {

enum class ValueKind {
  Real,  // ordinary numbers
  Mask,  // 1 = may attend, 0 = blocked
  Index,  // whole numbers that name something (T5's buckets), shown without decimals
};

struct Step {
  std::string id;                 // stable key: text, JSON, goldens, check and diff all use it
  std::string title;              // "Attention scores"
  std::string formula;            // "scores = q · kᵀ"
  std::string code;               // the PyTorch that computes it: "scores = q @ k_T" (pipeline/step_code.cpp)
  Dims dims;                      // symbolic, one per axis of value: {B, H, T, hs}
  Tensor value;                   // shape matches dims
  ValueKind kind = ValueKind::Real;
  std::optional<Tensor> row_sums;  // weights: each row's sum, shape = value's without the last axis
  std::string note;                // one line of context: "factor 1/√64 = 0.125"
  double flops = 0;                // floating-point operations the step took (counted by cost estimates)
  double seconds = 0;              // time the backend took for the step (--timings; never in goldens)
  bool view = false;               // shares its values with an earlier step (q.view): no bytes of its own
};

struct TraceConfig {
  std::string title;
  Mode mode = Mode::Self;
  bool batched = false;
  std::int64_t B = 1, T = 0, S = 0, C = 0, H = 1, hs = 0;  // C, hs = 0: unknown (scores given)
  std::int64_t Hkv = 1;  // key/value heads; H unless grouped-query (kv_heads)
  std::int64_t Cs = 0, dk = 0, dv = 0, Co = 0, hv = 0;      // the general widths (0: unknown)
  bool general = false;  // some width differs from C: shapes use dk, dv, Co, Cs, hv
  Layout layout = Layout::XW;
  std::string scale;       // "1/√hs = 1/√64 = 0.125", "none", "0.25 (given)"
  Scalar scale_factor = 1;
  double scale_exact = 1;  // the same factor in float64 (1/√hs, or as given): what a float64 run multiplies by
  Entry entry = Entry::Embeddings;
  bool causal = false;
  std::int64_t window = 0;  // a sliding window's width, with causal; 0 = none
  std::vector<std::int64_t> lengths;
  std::int64_t first_position = 0;  // the position of row 0 along P (rotary tables)
  std::int64_t query_first_position = 0, key_first_position = 0;  // the first query's and key's (RoPE)
  bool rope_interleaved = false;   // RoPE's pairs are (2i, 2i + 1), not (i, i + R/2)
  std::string rope_scaling;        // RoPE's frequency scaling, described ("" = none)
  bool fused = false;              // attn run --fused: the context in one pass, no [T, S] step
  std::string rope_bands;          // with llama3 scaling, each pair's band: 'h' kept, 'm' smoothed, 'l' divided by the factor
  bool learned_positions = false;  // the positions step is a given table, not sinusoids
  Scalar softcap = 0;              // the capped step's c; 0 = no capping
  std::string scale_source;        // where a scale that is not 1/√hs comes from ("Gemma 2's query_pre_attn_scalar = 24: 1/√24"; "" = given)
  std::string starts_from;         // what x is, when not given embeddings ("a checkpoint layer's input x"; "" = the entry's name)
  struct QkNorm {                  // q.norm and k.norm: whose, over what, with which weight
    std::string family;            // "Qwen3", "Gemma 3", "OLMo 2" ("" = no q/k norm)
    bool whole_width = false;      // OLMo 2: all of q's (k's) features at once, before the head split
    bool plus_one = false;         // Gemma: × (1 + w)
  } qk_norm;
  Labels tokens, source_tokens;
  std::vector<std::string> token_pieces;  // a checkpoint's vocabulary spellings of the tokens ("Ġcat"), for JSON and hover text
  std::vector<std::string> notes;
};

// The label of index `index` along axis `dim` in batch row `b`: a token for T and S, "h3" for H,
// the index itself otherwise, as it stands (a repeated token not told apart; see the next one).
std::string axis_label(const TraceConfig& config, Dim dim, std::int64_t index, std::int64_t b);
// The same, with a token that occurs more than once on its axis told apart by its occurrence as a
// subscript: "the₁" … "the₂". The tables, the pictures and every report's prose (explain, check,
// diff, diagnose) name a token this way, so a sentence names the row the table shows.
std::string distinct_axis_label(const TraceConfig& config, Dim dim, std::int64_t index, std::int64_t b);
// n in subscript digits: 2 → "₂", 12 → "₁₂": a repeated token's occurrence, wherever one is numbered
// (distinct_axis_label; attn heads' labels).
std::string subscript(std::int64_t n);

// "[0, 1] (query \"cat\", key \"the₂\")": a flat index of a step's tensor, with its tokens named as
// the tables name them (distinct_axis_label).
std::string position_label(const TraceConfig& config, const Dims& dims, const Shape& shape,
                           std::int64_t flat_index);

// "C = 3 · H = 1 · hs = 3", or with general widths "C = 3 · dk = 2 · dv = 2 · Co = 2 · H = 1 · hs = 2
// · hv = 2" (Cs too in cross mode); "H = 1" alone when C is unknown. Headers of every report.
std::string widths_text(const TraceConfig& config, std::string_view separator);

struct Trace {
  TraceConfig config;
  std::vector<Step> steps;

  const Step* find(std::string_view id) const {
    for (const auto& s : steps)
      if (s.id == id) return &s;
    return nullptr;
  }
};

// Which cells of a step are blocked (heatmaps, explanations): -inf in the trace's masked step of the same shape. A blocked
// weight is exactly 0, which alone would look like a small weight. nullptr: nothing is blocked.
const Step* blocking_step(const Trace& trace, const Step& step);
inline bool blocked(const Step* masked, std::int64_t at) {
  return masked != nullptr && masked->value.at(at) == -std::numeric_limits<Scalar>::infinity();
}

}  // namespace attn
