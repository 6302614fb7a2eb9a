// What a trace will cost before it runs: a dry run of the one pipeline on the shape-only backend
// gives every step's shape and floating-point operations; the bytes follow. Used to refuse runs
// that would not fit (--max-memory) and by attn cost.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "attn/core/bytes.hpp"  // human_bytes, parse_bytes, default_max_memory: this header's users had them from here
#include "attn/core/spec.hpp"
#include "attn/core/trace.hpp"
#include "attn/numerics/backend.hpp"

namespace attn {

// every step's shape and flops; no values (fused: the trace of attn run --fused, with no [T, S] step)
Trace plan_trace(const Spec& spec, bool fused = false);

// Bytes the trace keeps: every step's values once (views share them) plus the row sums.
double kept_bytes(const Trace& trace);
double step_bytes(const Step& step);

// Throws InputError (exit 2) with the estimate and the largest step when the trace would keep more
// than max_bytes.
void require_fits(const Trace& plan, std::int64_t max_bytes, const std::string& why_limit);

// Throws DeviceError (exit 2) with the estimate and the largest step when the spec's trace (its
// dry run, plan_trace) would keep more than the backend's free memory; nothing where the backend
// does not say how much it has (the CPU). Call it after make_backend, before run_pipeline.
void require_fits_on(Backend& backend, const Spec& spec, bool fused = false);

// The memory this machine can give a run now: /proc/meminfo's MemAvailable, or less where a cgroup
// limits the process (v2: memory.max − memory.current; v1: limit_in_bytes − usage_in_bytes); 0 when
// neither can be read.
std::int64_t machine_available_bytes();
// Throws InputError (exit 2) when `bytes` (the estimate of `what`, detail saying what it counts) is
// more than the machine has available: the refusal before anything runs. Nothing when unknown.
void require_machine_fits(double bytes, const std::string& what, const std::string& detail);

struct SizeArgs {
  std::int64_t B = 1, T = 0, S = 0, C = 0, H = 1;
  std::int64_t Hkv = 0;  // key/value heads (grouped-query); 0: H
  std::int64_t Cs = 0, dk = 0, dv = 0, Co = 0;  // 0: C (Cs, dk, Co) and dk (dv)
  Mode mode = Mode::Self;
  bool batched = false;
  bool fused = false, output_projection = true;
};
// A spec of the given sizes whose tensors have shapes only: attn cost without allocating anything.
Spec spec_from_sizes(const SizeArgs& sizes);

// A whole model's run over T tokens (a checkpoint's, beyond its mapped file), at its peak: the residual
// stream and one layer's MLP (up, gate and their product: 3 · T · I floats, with the stream's 4 · T ·
// C), and one layer's attention trace: every step (attn run, decode) or, streamed (attn heads), its
// trace without the [H, T, S] steps plus `extra` bytes (its blocks of weights, what it keeps).
struct ModelSizes {
  std::int64_t C = 0, H = 0, Hkv = 0, hd = 0, I = 0;
  bool encoder = false;
  std::int64_t mlp_rows = 0;  // the MLP's rows a block (residual.hpp's mlp_block_rows; 0: all T at once)
};
struct RunEstimate {
  double total = 0, attention = 0, mlp = 0;
};
RunEstimate model_run_bytes(const ModelSizes& m, std::int64_t T, bool streamed, double extra);

// attn cost: per step FLOPs and bytes, totals, and how they grow with T (doubling T quadruples
// every [T, S] step).
void render_cost(const Spec& spec, std::ostream& out);

}  // namespace attn
