// Where attn's modules are looked for, from the executable and from attn_tracer's extension, installed
// and in the build tree (the install itself is tests/install_check.sh).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "attn/io/module_path.hpp"

using attn::ModuleHost;
using attn::module_candidates;
using Places = std::vector<std::string>;

TEST_CASE("an installed attn looks beside itself, then in PREFIX/lib/attn, the build tree last", "[module_path]") {
  const ModuleHost attn{"/opt/p/bin/attn", true};
  CHECK(module_candidates("attn_unicode.so", "/src/build/attn_unicode.so", attn) ==
        Places{"/opt/p/bin/attn_unicode.so", "/opt/p/lib/attn/attn_unicode.so", "/src/build/attn_unicode.so"});
  // the build tree's attn finds its own modules beside it, once
  const ModuleHost built{"/src/build/attn", true};
  CHECK(module_candidates("attn_unicode.so", "/src/build/attn_unicode.so", built) ==
        Places{"/src/build/attn_unicode.so", "/src/lib/attn/attn_unicode.so"});
}

TEST_CASE("attn_tracer installed under PREFIX/lib finds PREFIX/lib/attn, not python3's directory", "[module_path]") {
  const std::string build = "/src/build/attn_sentencepiece.so";
  CHECK(module_candidates("attn_sentencepiece.so", build, {"/home/u/.local/lib/python3.11/site-packages/attn_tracer/_core.so", false}) ==
        Places{"/home/u/.local/lib/python3.11/site-packages/attn_tracer/attn_sentencepiece.so",
               "/home/u/.local/lib/attn/attn_sentencepiece.so", build});
  CHECK(module_candidates("attn_sentencepiece.so", build, {"/usr/lib/python3/dist-packages/attn_tracer/_core.so", false}) ==
        Places{"/usr/lib/python3/dist-packages/attn_tracer/attn_sentencepiece.so", "/usr/lib/attn/attn_sentencepiece.so", build});
  // the build tree's package (build/python/attn_tracer) has no lib above it: beside it, then the build path
  CHECK(module_candidates("attn_sentencepiece.so", build, {"/src/build/python/attn_tracer/_core.so", false}) ==
        Places{"/src/build/python/attn_tracer/attn_sentencepiece.so", build});
  // a "lib" further up than an installed package can be is not taken for its prefix
  CHECK(module_candidates("m.so", "", {"/lib/a/b/c/d/_core.so", false}) == Places{"/lib/a/b/c/d/m.so"});
}

TEST_CASE("the running test binary is its own module host", "[module_path]") {
  const ModuleHost host = attn::module_host();
  CHECK(host.is_executable);
  CHECK(host.file.find("attn_tests") != std::string::npos);
}
