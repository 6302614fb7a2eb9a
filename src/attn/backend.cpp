// Backend-independent helpers of the backend interface.
#include "attn/backend.hpp"

#include <dlfcn.h>

#include <string>

#include "attn/error.hpp"

namespace attn {

void BackendTensor::throw_bad_view(const Shape& from, const Shape& to) {
  throw InternalError("backend view " + shape_string(from) + " -> " + shape_string(to) + " changes the size");
}

std::unique_ptr<Backend> make_backend(std::string_view name) {
  if (name == "cpu") return make_cpu_backend();
  if (name == "cuda") {
#ifdef ATTN_CUDA_MODULE
    // The CUDA backend is a module loaded on demand: the CUDA libraries it links are large, and a
    // run on the CPU (the 2 ms cat/sat walkthrough) must not pay for loading them.
    void* module = dlopen(ATTN_CUDA_MODULE, RTLD_NOW | RTLD_LOCAL);
    if (module == nullptr) {
      throw InputError(std::string("--backend cuda: cannot load the CUDA backend (") + dlerror() + ")");
    }
    using Make = Backend* (*)();
    auto make = reinterpret_cast<Make>(dlsym(module, "attn_make_cuda_backend"));
    if (make == nullptr) throw InputError(std::string("--backend cuda: ") + ATTN_CUDA_MODULE + " has no attn_make_cuda_backend");
    return std::unique_ptr<Backend>(make());  // the module stays loaded for the process's life
#else
    throw InputError("--backend cuda: this build of attn has no CUDA backend (configure with -DATTN_CUDA=ON where nvcc is installed)");
#endif
  }
  throw InputError("--backend " + std::string(name) + ": expected cpu or cuda");
}

}  // namespace attn
