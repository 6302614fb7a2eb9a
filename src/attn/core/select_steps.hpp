// Which steps of a trace to show: ids, then a range from..to, by trace order. Shared by run, backward,
// check and the Python module (every door), before any renderer sees the trace.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "attn/core/door.hpp"
#include "attn/core/trace.hpp"

namespace attn {

// Steps to show: ids (all when empty), then the range from..to (inclusive, by trace order).
// Unknown ids are an InputError naming the option (steps, from, to; ids_key for the ids, as the door
// spells it) and the trace's steps.
std::vector<std::size_t> select_steps(const Trace& trace, const std::vector<std::string>& ids, const std::string& from,
                                      const std::string& to, Door door = Door::Cli, std::string_view ids_key = "steps");

}  // namespace attn
