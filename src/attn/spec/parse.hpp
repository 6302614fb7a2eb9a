// Reading an input into a Spec: the JSON text (hand-written tensors, a random block, or a checkpoint's
// layer, which runs the layers below it) validated key by key, each refusal naming its JSON path.
// The readers of each block are readers.hpp's; the Spec itself is core/spec.hpp's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "attn/core/spec.hpp"

namespace attn {

// origin names the input in messages ("examples/cat_sat.json", "<stdin>"); base_dir is where
// {"npy": "path"} tensors are looked up ("" = the working directory).
// max_bytes caps each tensor the random block generates (0: half of physical memory), so an
// absurd size is refused with its estimate instead of failing to allocate.
Spec parse_spec(std::string_view json_text, const std::string& origin, const std::string& base_dir = "",
                std::int64_t max_bytes = 0);
// path "-" reads standard input.
Spec load_spec(const std::string& path, std::int64_t max_bytes = 0);
// An input file's text ("-": standard input), refused when missing, a directory, empty or too large.
std::string read_input(const std::string& path);

}  // namespace attn
