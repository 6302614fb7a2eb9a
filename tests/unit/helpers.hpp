// Small helpers shared by the unit tests: build tensors, run a spec text, read values.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "attn/spec/parse.hpp"
#include "attn/numerics/backend.hpp"
#include "attn/core/error.hpp"
#include "attn/pipeline/pipeline.hpp"
#include "attn/core/spec.hpp"

namespace attn::test {

inline Trace trace_of(const std::string& json_text) {
  auto backend = make_cpu_backend();
  return run_pipeline(parse_spec(json_text, "test.json"), *backend);
}

inline const Step& step(const Trace& t, std::string_view id) {
  const Step* s = t.find(id);
  if (s == nullptr) FAIL("trace has no step " << id);
  return *s;
}

// A step's dims as the letters the output prints.
inline std::vector<std::string> letters(const Dims& dims) {
  std::vector<std::string> out;
  for (const Dim d : dims) out.emplace_back(dim_name(d));
  return out;
}

inline std::vector<Scalar> values(const Step& s) { return {s.value.values().begin(), s.value.values().end()}; }

inline std::vector<std::string> ids(const Trace& t) {
  std::vector<std::string> out;
  for (const auto& s : t.steps) out.push_back(s.id);
  return out;
}

// The InputError message a spec text produces ("" if it is accepted).
inline std::string error_of(const std::string& json_text) {
  try {
    trace_of(json_text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  double m = 0;
  for (std::int64_t i = 0; i < a.size(); ++i) m = std::max(m, static_cast<double>(std::fabs(a.data()[i] - b.data()[i])));
  return m;
}

}  // namespace attn::test
