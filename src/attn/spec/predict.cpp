// exercise.predict: the steps `attn run --predict` asks the learner about before showing them. Only
// that key of the "exercise" block is read here; its other keys (ask, values, decimals) belong to
// attn exercise's reader and are neither read nor refused here. Checking an answer is tools/predict's.
#include <fmt/format.h>

#include <algorithm>

#include "attn/core/steps.hpp"
#include "attn/core/suggest.hpp"
#include "attn/spec/readers.hpp"

namespace attn {

void read_predict(const json& root, Spec& s) {
  const json& e = root["exercise"];
  if (!e.is_object()) fail("exercise", fmt::format("expected an object such as {{\"predict\": [\"weights\"]}}, got {}", describe(e)));
  if (!e.contains("predict")) return;
  const json& p = e["predict"];
  if (!p.is_array() || p.empty()) {
    fail("exercise.predict", fmt::format("expected a list of step ids to predict, such as [\"scores\", \"weights\"], got {}", describe(p)));
  }
  std::vector<std::string_view> ids;
  for (const auto& info : all_steps()) ids.push_back(info.id);
  for (std::size_t i = 0; i < p.size(); ++i) {
    const std::string path = fmt::format("exercise.predict[{}]", i);
    const std::string id = read_string(p[i], path);
    if (!step_from_id(id)) fail(path, fmt::format("expected a step id, got \"{}\"{}", id, did_you_mean(id, ids)));
    if (std::find(s.predict.begin(), s.predict.end(), id) != s.predict.end()) fail(path, fmt::format("\"{}\" is listed twice", id));
    s.predict.push_back(id);
  }
}

}  // namespace attn
