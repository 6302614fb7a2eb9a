#include "attn/model/formats/hub_cache.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "attn/core/error.hpp"

namespace attn::model {

namespace fs = std::filesystem;

HubCache hub_cache() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v != nullptr ? v : "";
  };
  if (const auto v = env("HF_HUB_CACHE"); !v.empty()) return {v, "HF_HUB_CACHE"};
  if (const auto v = env("HF_HOME"); !v.empty()) return {(fs::path(v) / "hub").string(), "HF_HOME"};
  return {(fs::path(env("HOME")) / ".cache" / "huggingface" / "hub").string(), "HOME"};
}

bool looks_like_hub_id(const std::string& s) {
  const auto slash = s.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == s.size() || s.find('/', slash + 1) != std::string::npos) return false;
  const std::string org = s.substr(0, slash), name = s.substr(slash + 1);
  return org != "." && org != ".." && name != "." && name != "..";
}

std::string find_in_hub_cache(const std::string& model, const std::string& revision, const std::string& where) {
  if (!looks_like_hub_id(model)) {
    throw InputError(fmt::format("{}: expected a model hub id \"org/name\" (e.g. \"meta-llama/Llama-3.2-1B\"), got \"{}\"", where, model));
  }
  const HubCache cache = hub_cache();
  const std::string folder = "models--" + model.substr(0, model.find('/')) + "--" + model.substr(model.find('/') + 1);
  const fs::path repo = fs::path(cache.dir) / folder;
  const std::string chosen = cache.chosen_by == "HOME" ? "the default, as neither HF_HUB_CACHE nor HF_HOME is set"
                                                       : fmt::format("chosen by ${}", cache.chosen_by);
  std::error_code ec;
  if (!fs::is_directory(repo, ec)) {
    throw InputError(fmt::format("{}: \"{}\" is not in the model hub's local cache: no {} ({}); attn downloads nothing: fetch it with the "
                                 "hub's tools, or give \"path\"",
                                 where, model, repo.string(), chosen));
  }
  // a branch or tag names a commit under refs/; a commit hash names its snapshot directly
  std::string commit = revision;
  const fs::path ref = repo / "refs" / revision;
  if (fs::is_regular_file(ref, ec)) {
    std::ifstream in(ref);
    std::getline(in, commit);
    while (!commit.empty() && (commit.back() == '\n' || commit.back() == '\r' || commit.back() == ' ')) commit.pop_back();
  }
  const fs::path snapshot = repo / "snapshots" / commit;
  if (commit.empty() || commit.find('/') != std::string::npos || !fs::is_directory(snapshot, ec)) {
    std::vector<std::string> refs;
    for (const auto& e : fs::directory_iterator(repo / "refs", ec)) refs.push_back(e.path().filename().string());
    std::vector<std::string> snaps;
    for (const auto& e : fs::directory_iterator(repo / "snapshots", ec)) snaps.push_back(e.path().filename().string().substr(0, 12));
    std::sort(refs.begin(), refs.end());
    std::sort(snaps.begin(), snaps.end());
    throw InputError(fmt::format("{}: revision \"{}\" of \"{}\" is not cached in {} (refs: {}; snapshots: {})", where, revision, model, repo.string(),
                                 refs.empty() ? "none" : fmt::format("{}", fmt::join(refs, ", ")),
                                 snaps.empty() ? "none" : fmt::format("{}", fmt::join(snaps, ", "))));
  }
  return snapshot.string();
}

}  // namespace attn::model
