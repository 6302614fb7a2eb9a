// attn exercise's class: a roster CSV (a header with an "id" column, "name" optional; RFC 4180
// quotes, one record a line) or --students N. Each refusal names the file and line.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "attn/core/error.hpp"
#include "attn/spec/exercise.hpp"
#include "attn/spec/parse.hpp"

namespace attn {

namespace {

constexpr std::size_t kMaxIdBytes = 64;

[[noreturn]] void refuse(const std::string& file, std::size_t line, const std::string& what) {
  throw InputError(line == 0 ? fmt::format("{}: {}", file, what) : fmt::format("{}:{}: {}", file, line, what));
}

std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  return first == std::string::npos ? "" : s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

// One line's fields: commas separate, a field in double quotes may hold commas and "" for a quote.
std::vector<std::string> fields(const std::string& line, const std::string& file, std::size_t at) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      out.back() += '"';
      ++i;
    } else if (c == '"' && (quoted || trimmed(out.back()).empty())) {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  if (quoted) refuse(file, at, "a quoted field is not closed on its line (one student a line)");
  for (auto& f : out) f = trimmed(f);
  return out;
}

// An id names the student's folder: no slash, no control character, not "." or "..", not hidden.
void check_id(const std::string& id, const std::string& file, std::size_t line) {
  if (id.empty()) refuse(file, line, "the id is empty");
  const bool control = std::any_of(id.begin(), id.end(), [](char c) { return std::iscntrl(static_cast<unsigned char>(c)); });
  if (id.find('/') != std::string::npos || id.find('\\') != std::string::npos || id.front() == '.' || control || id.size() > kMaxIdBytes) {
    refuse(file, line, fmt::format("the id \"{}\" names the student's folder: use letters, digits, '-' or '_' (at most {} bytes, "
                                   "no slash, not starting with '.')", id, kMaxIdBytes));
  }
}

std::vector<std::string> lines_of(std::string text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.erase(0, 3);  // a spreadsheet's byte-order mark
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

// The header's "id" and "name" columns (name: npos when absent).
std::pair<std::size_t, std::size_t> header_columns(const std::string& header, const std::string& file) {
  auto names = fields(header, file, 1);
  for (auto& n : names) std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
  const auto id = std::find(names.begin(), names.end(), "id");
  const auto name = std::find(names.begin(), names.end(), "name");
  if (id == names.end()) {
    refuse(file, 1, fmt::format("the header has no \"id\" column (its columns: {}); a roster starts with a header such as id,name",
                                fmt::join(names, ", ")));
  }
  return {static_cast<std::size_t>(id - names.begin()), name == names.end() ? std::string::npos : static_cast<std::size_t>(name - names.begin())};
}

}  // namespace

std::vector<Student> read_roster(const std::string& path) {
  const auto lines = lines_of(read_input(path));
  const auto [id_col, name_col] = header_columns(lines.front(), path);
  std::vector<Student> students;
  std::map<std::string, std::size_t> first_line;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    if (trimmed(lines[i]).empty()) continue;
    const auto f = fields(lines[i], path, i + 1);
    const std::size_t needed = std::max(id_col, name_col == std::string::npos ? 0 : name_col) + 1;
    if (f.size() < needed) refuse(path, i + 1, fmt::format("{} fields, the header's columns need {}", f.size(), needed));
    Student s{f[id_col], name_col == std::string::npos ? "" : f[name_col]};
    check_id(s.id, path, i + 1);
    if (const auto [at, fresh] = first_line.emplace(s.id, i + 1); !fresh)
      refuse(path, i + 1, fmt::format("duplicate id \"{}\" (first on line {})", s.id, at->second));
    students.push_back(std::move(s));
  }
  if (students.empty()) refuse(path, 0, "no students: the roster has a header and no lines under it");
  return students;
}

std::vector<Student> numbered_students(std::int64_t n) {
  const auto width = fmt::format("{}", n).size();
  std::vector<Student> students;
  for (std::int64_t i = 1; i <= n; ++i) students.push_back({fmt::format("{:0{}}", i, width), ""});
  return students;
}

}  // namespace attn
