// The output directory guard and its manifest (one file name a line, after a header line).
#include "attn/output_dir.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "attn/error.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
constexpr const char* kHeader = "attn output manifest 1: files attn wrote here, replaced as a whole by its next run";

// The files an earlier run of attn listed, or nothing when there is no (readable) manifest.
std::set<std::string> listed(const fs::path& dir) {
  std::set<std::string> out;
  std::ifstream in(dir / OutputDir::kManifest);
  std::string line;
  if (!in || !std::getline(in, line) || line != kHeader) return out;
  while (std::getline(in, line))
    if (!line.empty() && line.find('/') == std::string::npos && line != "." && line != "..") out.insert(line);
  return out;
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
    if (ours.count(name) == 0 || !e.is_regular_file()) others.push_back(name);
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
  for (const auto& name : ours) {
    fs::remove(d / name, ec);
  }
  fs::remove(d / kManifest, ec);
}

std::string OutputDir::file(const std::string& name) {
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
