// Finding attn's modules beside the binary, in an installed tree, or in the build tree.
#include "attn/module_path.hpp"

#include <dlfcn.h>

#include <filesystem>
#include <system_error>

namespace attn {

namespace fs = std::filesystem;

std::vector<std::string> module_candidates(std::string_view file_name, std::string_view build_path) {
  std::vector<std::string> out;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    out.push_back((exe.parent_path() / file_name).string());
    out.push_back((exe.parent_path() / ".." / "lib" / "attn" / file_name).lexically_normal().string());
  }
  if (!build_path.empty()) {
    const std::string b(build_path);
    bool seen = false;
    for (const auto& c : out) seen = seen || c == b;
    if (!seen) out.push_back(b);
  }
  return out;
}

void* open_module(std::string_view file_name, std::string_view build_path, std::string& tried,
                  const std::function<std::string(void*)>& accept) {
  tried.clear();
  const auto note = [&tried](const std::string& place, const std::string& why) {
    if (!tried.empty()) tried += "; ";
    tried += place + ": " + why;
  };
  for (const auto& c : module_candidates(file_name, build_path)) {
    std::error_code ec;
    if (!fs::exists(c, ec)) {
      note(c, "not there");
      continue;
    }
    void* lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* e = dlerror();
      note(c, e != nullptr ? e : "dlopen failed");
      continue;
    }
    if (accept) {
      const std::string why = accept(lib);
      if (!why.empty()) {
        note(c, why);
        dlclose(lib);
        continue;
      }
    }
    return lib;
  }
  if (tried.empty()) tried = "no place to look";
  return nullptr;
}

}  // namespace attn
