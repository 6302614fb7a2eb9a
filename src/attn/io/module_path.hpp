// Finding one of attn's dlopen'ed modules (the CUDA backend, the SentencePiece and Unicode tokenizer
// helpers) wherever the code asking for it is: the attn executable or attn_tracer's Python extension,
// in the build tree or installed. Not the loading of the module's functions (its callers do that).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

// Where the code that looks lives: the executable itself (attn, the tests), or a shared library loaded
// into another program (attn_tracer's _core in python3), by its file's path.
struct ModuleHost {
  std::string file;          // the executable (/proc/self/exe) or the shared library
  bool is_executable = true;
};

// The running code's host: dladdr on this library's own code; the executable where that is the main
// program (or where the answer cannot be had).
ModuleHost module_host();

// The places a module named file_name is looked for, in order, from host:
// - an executable (PREFIX/bin/attn): beside it, then its installed module directory (PREFIX/lib/attn,
//   as install() puts it: <exe dir>/../lib/attn);
// - a shared library (PREFIX/lib/python3.11/site-packages/attn_tracer/_core.so): beside it, then
//   PREFIX/lib/attn, PREFIX being the parent of the nearest "lib" or "lib64" at most three directories
//   above the library's own directory (none when there is no such directory: the build tree's);
// then build_path (the build tree's copy; none if empty), last: an installed attn never prefers it.
std::vector<std::string> module_candidates(std::string_view file_name, std::string_view build_path, const ModuleHost& host);
std::vector<std::string> module_candidates(std::string_view file_name, std::string_view build_path);

// dlopens (RTLD_NOW | RTLD_LOCAL) the first candidate that exists, loads and that `accept` takes:
// accept (when given) returns "" to take the module, or why not (the module is then closed and the
// next place tried). Returns the handle, or nullptr with `tried` saying where it looked and why each
// place failed ("PATH: not there; PATH: <dlerror>; …").
void* open_module(std::string_view file_name, std::string_view build_path, std::string& tried,
                  const std::function<std::string(void*)>& accept = {});

}  // namespace attn
