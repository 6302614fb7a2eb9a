// Which door an option came through (the CLI's flags, the Python module's keywords), for messages
// that name it as that door spells it (options.hpp). Nothing else: nvcc's files include it too.
#pragma once

namespace attn {

// The CLI's "--summary-threshold 0", Python's "summary_threshold=0".
enum class Door { Cli, Python };

}  // namespace attn
