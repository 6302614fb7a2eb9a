// Recording steps: display dims, timing, copies to the host and the policy checks.
#include "attn/pipeline/recorder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "attn/core/error.hpp"
#include "attn/pipeline/step_code.hpp"

namespace attn {

Recorder::Recorder(const Spec& spec, Backend& backend, bool lenient, std::vector<std::string> shown, bool timings)
    : s_(spec), be_(backend), lenient_(lenient), shown_(std::move(shown)), timings_(timings) {
  trace_.config = make_config(spec);
}

bool Recorder::shown(std::string_view id) const { return shown_.empty() || std::find(shown_.begin(), shown_.end(), id) != shown_.end(); }

namespace {

// Steps whose values are not checked for values out of range: re-layouts (an earlier step's
// values, moved), the inputs (refused when not finite as they are read) and the 0/1 mask pattern.
bool checked_for_range(StepId id) { return !step_info(id).relayout && id != StepId::X && id != StepId::Source && id != StepId::Mask; }

// Steps where -inf is an answer, not an overflow: the blocked positions.
bool minus_inf_allowed(std::string_view id) { return id == "masked" || id == "mask.add"; }

}  // namespace

// The shown dims: no B without a batch dimension in the input, no H with one head (nor Hkv with one
// kv head), S written T when keys are the queries' own tokens; with every width equal to C the classic
// letters (C, hs, 3C) stand for Cs, dk, dv, Co, hv and 2dk+dv; with one head hs is dk (C) and hv is dv
// (C); with one kv head Hkv·hs is hs and Hkv·hv is hv.
bool Recorder::dropped(Dim d) const {
  return (d == Dim::B && !s_.batched) || (d == Dim::H && s_.H == 1) || (d == Dim::Hkv && s_.Hkv == 1);
}

Dims Recorder::display_dims(const Dims& full) const {
  const bool general = s_.general();
  Dims out;
  for (Dim d : full) {
    if (dropped(d)) continue;
    if (s_.Hkv == 1 && d == Dim::dkv) d = Dim::hs;
    if (s_.Hkv == 1 && d == Dim::dvkv) d = Dim::hv;
    if (!general && d == Dim::dvkv) d = Dim::dkv;
    if (!general && d == Dim::DqkvG) d = Dim::C3G;
    if (!general && (d == Dim::Cs || d == Dim::dk || d == Dim::dv || d == Dim::Co)) d = Dim::C;
    if (!general && d == Dim::hv) d = Dim::hs;
    if (!general && d == Dim::Dqkv) d = Dim::C3;
    if (d == Dim::S && s_.keys_are_queries()) d = Dim::T;
    if (s_.H == 1 && d == Dim::hs) d = general ? Dim::dk : Dim::C;
    if (s_.H == 1 && d == Dim::hv) d = general ? Dim::dv : Dim::C;
    out.push_back(d);
  }
  return out;
}

Shape Recorder::display_shape(const Dims& full, const Shape& shape) const {
  Shape out;
  for (std::size_t i = 0; i < full.size(); ++i)
    if (!dropped(full[i])) out.push_back(shape[i]);
  return out;
}

namespace {

// v rounded to `decimals` as a document did: half away from zero, as by hand; but at a tie (within
// float noise of half a unit: 0.825 may be 0.82499999 or 0.82500001) the document's own printed
// digit decides, where it is one of the two.
double rounded_value(double v, int decimals, double printed) {
  if (decimals < 0 || !std::isfinite(v)) return v;
  const double unit = std::pow(10.0, decimals), units = v * unit, down = std::floor(units);
  double n = std::round(units);
  if (std::fabs(units - down - 0.5) < 1e-4 && std::isfinite(printed)) {
    const double p = std::round(printed * unit);
    if (p == down || p == down + 1) n = p;
  }
  return n / unit;
}

}  // namespace

// The step's values rounded, entry by entry, to the decimals a document printed them with: a float64
// backend's values in float64 (and their float32 rounding beside them), a float32 one's from float32.
BackendTensor Recorder::rounded(std::string_view id, BackendTensor t) {
  const auto it = rounded_.find(id);
  if (it == rounded_.end()) return t;
  const PrintedStep& printed = it->second;
  Tensor host = be_.download(t);
  if (static_cast<std::size_t>(host.size()) != printed.decimals.size() || printed.values.size() != printed.decimals.size()) {
    throw InternalError(fmt::format("step {}: {} printed entries to round {} values", id, printed.decimals.size(), host.size()));
  }
  const Tensor::Wide* wide = host.wide();
  Tensor::Wide values(printed.decimals.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double v = wide != nullptr ? (*wide)[i] : static_cast<double>(host.data()[i]);
    values[i] = rounded_value(v, printed.decimals[i], printed.values[i]);
  }
  Tensor out = Tensor::uninitialized(host.shape());
  for (std::size_t i = 0; i < values.size(); ++i) out.mutable_data()[i] = static_cast<Scalar>(values[i]);
  return be_.upload(wide != nullptr ? out.with_wide(std::move(values)) : out);
}

BackendTensor Recorder::emit(StepId id, BackendTensor t, bool view) {
  settle_rows();
  const auto& name = step_info(id).id;
  if (!rounded_.empty()) t = rounded(name, std::move(t));
  StepText text = step_text(id, s_, trace_.config, facts);
  if (text.dims.size() != t.shape.size()) {
    throw InternalError(fmt::format("step {}: dims {} for shape {}", name, text.dims.size(), shape_string(t.shape)));
  }
  // The step's time: from the previous step's end until the backend has finished this one (with
  // --timings; otherwise a device runs on while the host records).
  if (timings_) be_.synchronize();
  const auto now = std::chrono::steady_clock::now();
  Step step;
  step.id = std::string(name);
  step.seconds = std::chrono::duration<double>(now - clock_).count();
  step.title = std::move(text.title);
  step.formula = std::move(text.formula);
  step.code = step_code(id, s_, trace_.config, facts);
  step.dims = display_dims(text.dims);
  // a step that shares an earlier step's values (a view) shares its host copy too: nothing moves twice;
  // a step the run does not show stays on a device until something reads it
  const Shape shape = display_shape(text.dims, t.shape);
  const Step* same = nullptr;
  for (std::size_t k = trace_.steps.size(); k-- > 0 && t.buffer != nullptr && same == nullptr;)
    if (!buffers_[k].owner_before(t.buffer) && !t.buffer.owner_before(buffers_[k]) && trace_.steps[k].value.size() == element_count(t.shape))
      same = &trace_.steps[k];
  step.value = same != nullptr ? same->value.reshaped(shape) : be_.fetch(t, shown(name) ? Backend::Fetch::Soon : Backend::Fetch::OnRead).reshaped(shape);
  buffers_.push_back(t.buffer);
  step.kind = text.kind;
  step.note = std::move(text.note);
  step.flops = be_.take_flops();
  step.view = view;
  checked_.push_back(checked_for_range(id));
  // held values are checked now; a deferred step (finite whenever its inputs are, or searched where
  // it lives: a device's) when the trace is taken
  if (!lenient_ && nan_from_ == SIZE_MAX && step.value.held() && checked_.back()) require_finite(step);
  trace_.steps.push_back(std::move(step));
  clock_ = std::chrono::steady_clock::now();  // the checks and the copy to the host are not the step's
  return t;
}

void Recorder::attach_row_sums(const BackendTensor& sums) {
  const Dims rows{Dim::B, Dim::H, Dim::T};
  const auto when = shown(trace_.steps.back().id) ? Backend::Fetch::Soon : Backend::Fetch::OnRead;
  trace_.steps.back().row_sums = be_.fetch(sums, when).reshaped(display_shape(rows, sums.shape));
}

// A number that left float32's range is reported, never printed as if it were an answer.
void Recorder::require_finite(const Step& step) const {
  const bool allow_minus_inf = minus_inf_allowed(step.id);  // blocked positions
  const auto values = step.value.values();
  // First a branch-free pass (exponent bits all ones: inf or nan), in parallel over fixed chunks;
  // only a step that has such a value is searched for its first offending entry.
  const auto n = static_cast<std::int64_t>(values.size());
  const Scalar* p = values.data();
  bool special = false;
#pragma omp parallel for reduction(|| : special) schedule(static) if (n >= (1 << 18))
  for (std::int64_t c = 0; c < n; c += 4096) special = special || !all_finite(p + c, std::min<std::int64_t>(4096, n - c));
  if (!special) return;
  check_deferred();  // an earlier deferred step that overflowed is the one to name
  for (std::int64_t i = 0; i < n; ++i) {
    const Scalar v = p[i];
    if (std::isfinite(v) || (allow_minus_inf && v == -std::numeric_limits<Scalar>::infinity())) continue;
    throw InputError(fmt::format("{}: the values leave float32's range ({} at flat index {}); scale the inputs down", step.id,
                                 std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"), i));
  }
}

void Recorder::check_deferred() const {
  if (lenient_) return;
  for (std::size_t k = 0; k < std::min(nan_from_, trace_.steps.size()); ++k) {
    const Step& step = trace_.steps[k];
    if (!checked_[k]) continue;
    const auto i = step.value.deferred_nonfinite(minus_inf_allowed(step.id));
    if (i < 0) continue;
    const Scalar v = step.value.at(i);
    throw InputError(fmt::format("{}: the values leave float32's range ({} at flat index {}); scale the inputs down", step.id,
                                 std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"), i));
  }
}

Trace Recorder::take() {
  settle_rows();
  check_deferred();
  return std::move(trace_);
}

void Recorder::check_masked_rows(const BackendTensor& masked) {
  // The masked step's query rows with every key at -inf (none in a dry run), counted where the
  // values are (a deferred masked step is not computed for this, a device's not copied).
  pending_rows_ = be_.empty_rows_later(masked.view({element_count(masked.shape) / s_.S, s_.S}));
}

void Recorder::settle_rows() {
  if (!pending_rows_) return;
  const auto count = std::move(pending_rows_);
  pending_rows_ = nullptr;
  check_empty_rows(count());
}

void Recorder::check_empty_rows(const Backend::EmptyRows& empty) {
  facts.empty_rows = empty.count;
  if (empty.count > 0 && !lenient_ && s_.masked_row == MaskedRow::Error) {
    // A query row with every key blocked has no softmax; name it rather than print NaN.
    const auto r = empty.first;
    const auto i = r % s_.T, h = (r / s_.T) % s_.H, b = r / (s_.T * s_.H);
    const auto& labels = s_.tokens[s_.tokens.size() == 1 ? 0 : static_cast<std::size_t>(b)];
    throw InputError(fmt::format("masked: query row {} \"{}\" (batch {}, head {}) has every key masked; its softmax is undefined", i,
                                 labels[static_cast<std::size_t>(i)], b, h));
  }
  // NaN weights are the stated policy from here on, not an overflow.
  if (empty.count > 0 && s_.masked_row == MaskedRow::Nan) nan_from_ = trace_.steps.size();
}

}  // namespace attn
