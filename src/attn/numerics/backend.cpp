// Backend-independent helpers of the backend interface.
#include "attn/numerics/backend.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <filesystem>
#include <string>

#include "attn/core/error.hpp"
#include "attn/io/module_path.hpp"
#include "attn/core/options.hpp"

namespace attn {

std::unique_ptr<Backend> make_backend(std::string_view name, Door door) {
  if (name == "cpu") return make_cpu_backend();
  if (name == "cuda") {
#ifdef ATTN_CUDA_MODULE
    // The CUDA backend is a module loaded on demand: the CUDA libraries it links are large, and a
    // run on the CPU (the 2 ms cat/sat walkthrough) must not pay for loading them. It is looked for
    // beside attn, in <attn's dir>/../lib/attn, then where it was built.
    using Make = Backend* (*)();
    Make make = nullptr;
    std::string tried;
    const std::string file = std::filesystem::path(ATTN_CUDA_MODULE).filename().string();
    void* module = open_module(file, ATTN_CUDA_MODULE, tried, [&make](void* lib) -> std::string {
      make = reinterpret_cast<Make>(dlsym(lib, "attn_make_cuda_backend"));
      return make != nullptr ? "" : "has no attn_make_cuda_backend";
    });
    if (module == nullptr) throw InputError(option_with(door, "backend", "cuda") + ": cannot load the CUDA backend (" + tried + ")");
    return std::unique_ptr<Backend>(make());  // the module stays loaded for the process's life
#else
    throw InputError(option_with(door, "backend", "cuda") + ": this build of attn has no CUDA backend (configure with -DATTN_CUDA=ON where nvcc is installed)");
#endif
  }
  throw InputError(option_with(door, "backend", name) + ": expected cpu or cuda");
}

}  // namespace attn
