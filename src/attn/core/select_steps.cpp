// Step selection (select_steps.hpp): ids, then from..to, each unknown id refused naming the option
// as its door spells it, with the trace's steps and a did-you-mean.
#include "attn/core/select_steps.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "attn/core/error.hpp"
#include "attn/core/options.hpp"
#include "attn/core/suggest.hpp"

namespace attn {

std::vector<std::size_t> select_steps(const Trace& trace, const std::vector<std::string>& ids, const std::string& from,
                                      const std::string& to, Door door, std::string_view ids_key) {
  std::vector<std::string_view> all;
  for (const auto& s : trace.steps) all.push_back(s.id);
  auto index_of = [&](const std::string& id, std::string_view key) {
    for (std::size_t i = 0; i < trace.steps.size(); ++i)
      if (trace.steps[i].id == id) return i;
    throw InputError(fmt::format("{}: this trace has no step \"{}\"{}; its steps: {}", option_with(door, key, id), id, did_you_mean(id, all),
                                 fmt::join(all, ", ")));
  };
  std::vector<bool> keep(trace.steps.size(), ids.empty());
  for (const auto& id : ids) keep[index_of(id, ids_key)] = true;
  if (trace.steps.empty()) return {};
  const std::size_t lo = from.empty() ? 0 : index_of(from, "from");
  const std::size_t hi = to.empty() ? trace.steps.size() - 1 : index_of(to, "to");
  if (lo > hi) throw InputError(fmt::format("{} comes after {} in this trace", option_with(door, "from", from), option_with(door, "to", to)));
  std::vector<std::size_t> out;
  for (std::size_t i = lo; i <= hi; ++i)
    if (keep[i]) out.push_back(i);
  return out;
}

}  // namespace attn
