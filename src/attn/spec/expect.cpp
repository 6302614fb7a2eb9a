// expect: the numbers a document printed, per step id, and how many decimals each was printed with
// (parse_json notes them as it reads the text: the DOM keeps only the double). Comparing them is check.cpp's job.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

#include "attn/core/error.hpp"
#include "attn/spec/readers.hpp"

namespace attn {

void read_expect(const json& root, const std::map<std::string, std::vector<int>>& decimals,
                 const std::map<std::string, std::vector<std::string>>& literals, Spec& s) {
  const json& e = root["expect"];
  if (!e.is_object()) fail("expect", fmt::format("expected an object of step ids, like {{\"weights\": [[1, 0], [0.4, 0.6]]}}, got {}", describe(e)));
  for (const auto& item : e.items()) {
    const std::string path = key_path("expect", item.key());
    if (item.key() == "tolerance") {
      if (!item.value().is_number() || item.value().get<double>() < 0) {
        fail(path, fmt::format("expected a non-negative number, got {}", describe(item.value())));
      }
      s.expect_tolerance = item.value().get<double>();
      continue;
    }
    Expectation x;
    x.id = item.key();
    // Shape from the first entries, as for tensors; entries may be numbers, null (not printed)
    // or the strings "-inf", "inf", "nan".
    if (!item.value().is_array()) fail(path, fmt::format("expected the printed values as nested arrays, got {}", describe(item.value())));
    const NestedArray a(item.value(), path, {"expected the printed values as nested arrays, got an empty array", false, true});
    x.shape = a.shape();
    a.for_each_leaf([&x](const json& j, const LeafPath& at) {
      if (j.is_null()) {
        x.values.push_back(std::numeric_limits<double>::quiet_NaN());
        x.present.push_back(false);
      } else if (j.is_number()) {
        x.values.push_back(j.get<double>());
        x.present.push_back(true);
      } else if (j.is_string() && (j == "-inf" || j == "inf" || j == "nan")) {
        const auto str = j.get<std::string>();
        x.values.push_back(str == "nan" ? std::numeric_limits<double>::quiet_NaN()
                                        : (str == "inf" ? 1 : -1) * std::numeric_limits<double>::infinity());
        x.present.push_back(true);
      } else {
        fail(at.str(), fmt::format("expected a number, null (not printed), \"-inf\", \"inf\" or \"nan\", got {}", describe(j)));
      }
    });
    if (const auto it = decimals.find(x.id); it != decimals.end()) x.decimals = it->second;
    if (const auto it = literals.find(x.id); it != literals.end()) x.literals = it->second;
    if (x.decimals.size() != x.values.size()) throw InternalError("expect: printed-precision pass disagrees with the values");
    s.expect.push_back(std::move(x));
  }
}

}  // namespace attn
