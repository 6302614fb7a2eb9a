// Directories attn writes into (--dump, --svg-dir): attn never overwrites or deletes a file it did
// not write. A directory is taken when it is new, empty, or holds only attn's own earlier output
// (listed in the manifest attn leaves there), which is then replaced as a whole, stale files included.
// Anything else is refused naming the first conflict, unless the user passes --force.
#pragma once

#include <string>
#include <vector>

namespace attn {

class OutputDir {
 public:
  static constexpr const char* kManifest = ".attn-output";

  // Refuses (InputError, naming `option` and the first conflict) or clears attn's earlier output.
  // force: write even where other files are; same-named files are replaced, others left as they are.
  OutputDir(std::string dir, std::string option, bool force);

  // The path of a file to write, recorded for the manifest: "x.npy", or one directory down
  // ("inputs/x.npy"; the directory is made).
  std::string file(const std::string& name);
  // Writes the manifest: the files written, so that the next run may replace them.
  void finish();

 private:
  std::string dir_, option_;
  std::vector<std::string> written_;
};

}  // namespace attn
