// The output directory guard and its manifest (one file name a line, after a header line).
#include "attn/io/output_dir.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "attn/core/error.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
constexpr const char* kHeader = "attn output manifest 1: files attn wrote here, replaced as a whole by its next run";

bool plain(const std::string& name) { return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos; }

// The files an earlier run of attn listed ("x.npy", or one level down "inputs/x.npy"), or nothing
// when there is no (readable) manifest.
std::set<std::string> listed(const fs::path& dir) {
  std::set<std::string> out;
  std::ifstream in(dir / OutputDir::kManifest);
  std::string line;
  if (!in || !std::getline(in, line) || line != kHeader) return out;
  while (std::getline(in, line)) {
    const auto slash = line.find('/');
    if (slash == std::string::npos ? plain(line) : plain(line.substr(0, slash)) && plain(line.substr(slash + 1))) out.insert(line);
  }
  return out;
}

// A subdirectory attn wrote: every entry in it a file the manifest lists.
bool ours_dir(const fs::path& dir, const std::string& name, const std::set<std::string>& ours) {
  std::error_code ec;
  bool any = false;
  for (const auto& e : fs::directory_iterator(dir / name, ec)) {
    if (!e.is_regular_file() || ours.count(name + "/" + e.path().filename().string()) == 0) return false;
    any = true;
  }
  return !ec && (any || std::any_of(ours.begin(), ours.end(), [&](const std::string& f) { return f.rfind(name + "/", 0) == 0; }));
}

}  // namespace

OutputDir::OutputDir(std::string dir, std::string option, bool force) : dir_(std::move(dir)), option_(std::move(option)) {
  std::error_code ec;
  const fs::path d(dir_);
  if (fs::exists(d, ec) && !fs::is_directory(d, ec)) {
    throw InputError(fmt::format("{} {}: exists and is not a directory", option_, dir_));
  }
  if (!fs::exists(d, ec)) {
    fs::create_directories(d, ec);
    if (ec) throw InputError(fmt::format("{} {}: cannot create the directory ({})", option_, dir_, ec.message()));
    return;
  }
  const auto ours = listed(d);
  std::vector<std::string> others;
  for (const auto& e : fs::directory_iterator(d, ec)) {
    const auto name = e.path().filename().string();
    if (name == kManifest) continue;
    const bool mine = e.is_directory() ? ours_dir(d, name, ours) : ours.count(name) != 0 && e.is_regular_file();
    if (!mine) others.push_back(name);
  }
  if (ec) throw InputError(fmt::format("{} {}: cannot read the directory ({})", option_, dir_, ec.message()));
  std::sort(others.begin(), others.end());
  if (!others.empty() && !force) {
    throw InputError(fmt::format("{} {}: the directory holds {} attn did not write ({}{}); attn writes only into a new or empty "
                                 "directory, or one with its own earlier output: choose another, or pass --force to write there anyway",
                                 option_, dir_, others.size() == 1 ? "a file" : fmt::format("{} files", others.size()), others.front(),
                                 others.size() > 1 ? ", …" : ""));
  }
  // attn's own earlier output goes, stale files included; what attn did not write stays
  std::set<std::string> dirs;
  for (const auto& name : ours) {
    if (const auto slash = name.find('/'); slash != std::string::npos) {
      if (!fs::is_directory(d / name.substr(0, slash), ec)) continue;  // (a file of that name is not ours to enter)
      dirs.insert(name.substr(0, slash));
    }
    if (fs::is_regular_file(d / name, ec)) fs::remove(d / name, ec);
  }
  for (const auto& sub : dirs)
    if (fs::is_empty(d / sub, ec)) fs::remove(d / sub, ec);  // a user's file left there keeps it
  fs::remove(d / kManifest, ec);
}

std::string OutputDir::file(const std::string& name) {
  if (const auto slash = name.find('/'); slash != std::string::npos) {
    std::error_code ec;
    const fs::path sub = fs::path(dir_) / name.substr(0, slash);
    if (!fs::is_directory(sub, ec)) fs::create_directory(sub, ec);
    if (ec) throw InputError(fmt::format("{} {}: cannot create {} ({})", option_, dir_, sub.string(), ec.message()));
  }
  written_.push_back(name);
  return (fs::path(dir_) / name).string();
}

void OutputDir::finish() {
  std::ofstream out((fs::path(dir_) / kManifest).string(), std::ios::binary | std::ios::trunc);
  out << kHeader << "\n";
  for (const auto& name : written_) out << name << "\n";
  if (!out) throw InputError(fmt::format("{} {}: cannot write {}", option_, dir_, kManifest));
}

}  // namespace attn
