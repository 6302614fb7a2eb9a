// Finding one of attn's dlopen'ed modules (the CUDA backend, the SentencePiece tokenizer) wherever
// the binary is: beside it, in an installed tree's lib/attn, or in the build tree it was built in.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

// The places a module named file_name is looked for, in order: beside the executable (the directory
// of /proc/self/exe), <exe dir>/../lib/attn/, then build_path (the build tree's copy; none if empty).
std::vector<std::string> module_candidates(std::string_view file_name, std::string_view build_path);

// dlopens (RTLD_NOW | RTLD_LOCAL) the first candidate that exists, loads and that `accept` takes:
// accept (when given) returns "" to take the module, or why not (the module is then closed and the
// next place tried). Returns the handle, or nullptr with `tried` saying where it looked and why each
// place failed ("PATH: not there; PATH: <dlerror>; …").
void* open_module(std::string_view file_name, std::string_view build_path, std::string& tried,
                  const std::function<std::string(void*)>& accept = {});

}  // namespace attn
