// Finding attn's modules beside the code that asks (attn, or attn_tracer's _core), in the tree it is
// installed in, or in the build tree. Only the places: open_module's callers check what they load.
#include "attn/io/module_path.hpp"

#include <dlfcn.h>
#include <link.h>

#include <filesystem>
#include <system_error>

// Where install() puts the modules, relative to the install prefix and to the executable's directory
// (CMakeLists.txt defines both from ATTN_INSTALL_MODULEDIR and CMAKE_INSTALL_BINDIR).
#ifndef ATTN_INSTALL_MODULE_DIR
#define ATTN_INSTALL_MODULE_DIR "lib/attn"
#endif
#ifndef ATTN_MODULE_DIR_FROM_BIN
#define ATTN_MODULE_DIR_FROM_BIN "../lib/attn"
#endif

namespace attn {

namespace fs = std::filesystem;

namespace {

// PREFIX of a library installed under PREFIX/lib/… (the Python package's directory is at most three
// below it: lib/python3.11/site-packages/attn_tracer, lib/python3/dist-packages/attn_tracer); empty
// when no "lib" or "lib64" is that close.
fs::path install_prefix_of_library(const fs::path& library_dir) {
  fs::path dir = library_dir;
  for (int up = 0; up < 3 && dir.has_relative_path(); ++up) {
    dir = dir.parent_path();
    const fs::path name = dir.filename();
    if (name == "lib" || name == "lib64") return dir.parent_path();
  }
  return {};
}

}  // namespace

ModuleHost module_host() {
  Dl_info info{};
  link_map* map = nullptr;
  // The main program's link_map has an empty name; a library's is the path it was loaded from.
  if (dladdr1(reinterpret_cast<void*>(&module_host), &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) != 0 && map != nullptr &&
      map->l_name != nullptr && map->l_name[0] != '\0') {
    std::error_code ec;
    const fs::path file = fs::absolute(map->l_name, ec);
    if (!ec) return {file.lexically_normal().string(), false};
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return {ec ? std::string() : exe.string(), true};
}

std::vector<std::string> module_candidates(std::string_view file_name, std::string_view build_path, const ModuleHost& host) {
  std::vector<std::string> out;
  const auto add = [&out](const fs::path& p) {
    const std::string s = p.lexically_normal().string();
    for (const auto& c : out)
      if (c == s) return;
    out.push_back(s);
  };
  if (!host.file.empty()) {
    const fs::path dir = fs::path(host.file).parent_path();
    add(dir / file_name);
    if (host.is_executable) {
      add(dir / ATTN_MODULE_DIR_FROM_BIN / file_name);
    } else if (const fs::path prefix = install_prefix_of_library(dir); !prefix.empty()) {
      add(prefix / ATTN_INSTALL_MODULE_DIR / file_name);
    }
  }
  if (!build_path.empty()) add(fs::path(build_path));
  return out;
}

std::vector<std::string> module_candidates(std::string_view file_name, std::string_view build_path) {
  return module_candidates(file_name, build_path, module_host());
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
