// The recorder turns the forward pass's tensors into trace steps: words from the step table, dims
// as the input wrote them, the backend's time for the step, and the policy checks (non-finite
// values, fully masked rows). The numerics never see any of this.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "attn/numerics/backend.hpp"
#include "attn/pipeline/pipeline.hpp"
#include "attn/pipeline/step_text.hpp"
#include "attn/core/spec.hpp"
#include "attn/core/trace.hpp"

namespace attn {

class Recorder {
 public:
  // lenient: a mistaken trace keeps non-finite values and fully masked rows (a student's can hold them).
  // shown: the step ids the run shows (empty: all); the others are fetched from a device only when read.
  // timings: wait for the backend after each step, so that its time is the step's (--timings).
  Recorder(const Spec& spec, Backend& backend, bool lenient, std::vector<std::string> shown = {}, bool timings = false);

  // Steps whose values are rounded as a document printed them (PipelineOptions::rounded): emit
  // records and returns the rounded values.
  void round_as_printed(std::map<std::string, PrintedStep, std::less<>> printed) { rounded_ = std::move(printed); }
  // Records `t` as step `step`; returns it. `view`: shares the values of an earlier step.
  BackendTensor emit(StepId step, BackendTensor t, bool view = false);
  // Each row's sum (rows, as the last step's leading axes), attached to the last step.
  void attach_row_sums(const BackendTensor& sums);
  // After the masked step: counts the query rows with every key blocked, and refuses them when
  // the policy is "error" (both when the next step is recorded: a device counts meanwhile).
  void check_masked_rows(const BackendTensor& masked);
  // The same for query rows (flat over B, H, T) found to have no key some other way (the fused pass).
  void check_empty_rows(const Backend::EmptyRows& empty);

  TextFacts facts;
  const TraceConfig& config() const { return trace_.config; }
  TraceConfig& config() { return trace_.config; }
  // The trace, once deferred steps that could overflow (a deferred product) are checked too.
  Trace take();

 private:
  bool dropped(Dim d) const;  // an axis of length 1 the display leaves out
  Dims display_dims(const Dims& full) const;
  Shape display_shape(const Dims& full, const Shape& shape) const;
  void require_finite(const Step& step) const;
  void check_deferred() const;  // deferred steps so far, in order

  const Spec& s_;
  Backend& be_;
  bool lenient_;
  std::vector<std::string> shown_;
  bool timings_;
  std::vector<bool> checked_;
  // per step: the backend buffer its values came from (weak: a freed buffer's address may come back)
  std::vector<std::weak_ptr<const BackendBuffer>> buffers_;  // per step: whether its values are checked for values out of range
  bool shown(std::string_view id) const;
  // The masked step's count of fully masked rows, on its way (a device's): settled by the next step
  // (whose words may say it) or by take(), so the host does not wait for the device in between.
  std::function<Backend::EmptyRows()> pending_rows_;
  void settle_rows();
  std::map<std::string, PrintedStep, std::less<>> rounded_;  // see round_as_printed
  BackendTensor rounded(std::string_view id, BackendTensor t);
  std::size_t nan_from_ = SIZE_MAX;  // steps from this one on may hold NaN (the masked-row policy)
  Trace trace_;
  std::chrono::steady_clock::time_point clock_ = std::chrono::steady_clock::now();
};

}  // namespace attn
