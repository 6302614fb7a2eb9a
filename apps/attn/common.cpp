// What the subcommands share: resource limits, loading an input within them, the text width and fitting reports to it, tolerances, colour.
#include "cli.hpp"

#include <charconv>
#include <string_view>
#include <system_error>
#include <vector>

#include "attn/core/suggest.hpp"

namespace attn_cli {

void add_resources(CLI::App* cmd, Resources& r) {
  cmd->add_option("--max-memory", r.max_memory, "refuse runs whose kept tensors exceed this (e.g. 8G; default half of physical memory)");
  cmd->add_option("--threads", r.threads, "threads for the CPU backend (default: all cores); results are the same for any count")
      ->check(CLI::PositiveNumber);
}

// Reads the spec and refuses it, with the estimate, when its trace would not fit in memory.
// fused: the trace of attn run --fused, which holds no [T, S] step.
attn::Spec load_checked(const std::string& file, const Resources& r, bool fused) {
  r.apply();
  const auto max = r.max_bytes();
  attn::Spec spec = attn::load_spec(file, max);
  attn::require_fits(attn::plan_trace(spec, fused), max, r.why());
  return spec;
}

// --width, else $COLUMNS when it is a number from 20 to 1000, else the terminal's width when standard
// output is one, else 80.
int terminal_width(int given) {
  if (given > 0) return given;
  if (const char* c = std::getenv("COLUMNS")) {
    char* end = nullptr;
    const long w = std::strtol(c, &end, 10);
    if (end != c && *end == '\0' && w >= 20 && w <= 1000) return static_cast<int>(w);
  }
  struct winsize ws {};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20) return std::min<int>(ws.ws_col, 1000);
  return 80;
}

// (the fitting itself is the renderers': attn::fit_lines)
std::string fitted(const std::string& text, int width) { return attn::fit_lines(text, static_cast<std::size_t>(width)); }

void print_fitted(const std::string& text, int width) { std::cout << fitted(text, width); }

namespace {

// An example command of a footer, as a shell reads it: the indent, a transcript's "$ " prompt, the
// words (split at blanks outside quotes, a quoted part kept whole), and a trailing "# comment" with
// the column it starts at.
struct ShellLine {
  std::string indent, prompt;
  std::vector<std::string> words;
  std::string comment;
  std::size_t comment_col = 0;
  bool continues = false;  // the line ended in " \": the command goes on on the next line
};

ShellLine split_shell(const std::string& line) {
  ShellLine s;
  const auto start = line.find_first_not_of(' ');
  s.indent = line.substr(0, start);
  std::size_t i = start;
  if (line.compare(i, 2, "$ ") == 0) s.prompt = "$ ", i += 2;
  std::string word;
  char quote = 0;
  for (; i < line.size(); ++i) {
    const char c = line[i];
    if (quote == 0 && c == '#' && word.empty()) {  // a comment starts a word
      s.comment_col = attn::cells(line.substr(0, i));
      const auto text = line.find_first_not_of(' ', i + 1);
      s.comment = text == std::string::npos ? "" : line.substr(text);
      break;
    }
    if (quote == 0 && c == ' ') {
      if (!word.empty()) s.words.push_back(word), word.clear();
      continue;
    }
    if (quote == 0 && (c == '\'' || c == '"')) quote = c;
    else if (c == quote) quote = 0;
    word += c;
  }
  if (!word.empty()) s.words.push_back(word);
  if (!s.words.empty() && s.words.back() == "\\") s.words.pop_back(), s.continues = true;
  return s;
}

// The words laid out within `width`, breaking between words: a line ends in " \" where it breaks,
// or in the pipe when it breaks after one (a pipe never starts a line); the next lines are indented
// 4 more. A word longer than a line stays whole (a line may pass the width rather than not paste).
std::vector<std::string> command_lines(const ShellLine& s, std::size_t width) {
  std::vector<std::string> out;
  const std::string more = s.indent + std::string(s.prompt.size() + 4, ' ');
  std::string cur = s.indent + s.prompt;
  bool fresh = true;  // nothing on `cur` yet but its indent
  for (std::size_t k = 0; k < s.words.size(); ++k) {
    const auto& word = s.words[k];
    const std::size_t reserve = k + 1 < s.words.size() || s.continues ? 2 : 0;  // room for " \"
    if (fresh || word == "|" || attn::cells(cur) + 1 + attn::cells(word) + reserve <= width) {
      cur += (fresh ? "" : " ") + word;
      fresh = false;
      continue;
    }
    out.push_back(cur.ends_with(" |") ? cur : cur + " \\");
    cur = more + word;
  }
  out.push_back(s.continues ? cur + " \\" : cur);
  return out;
}

// An example command fitted to the width so that it still pastes into a shell (command_lines); its
// comment wrapped under its own column with a "# " a line, or above the command where there is no
// room beside it.
std::string fit_command(const std::string& line, std::size_t width) {
  const ShellLine s = split_shell(line);
  const auto code = command_lines(s, width);
  std::ostringstream os;
  if (s.comment.empty()) {
    for (const auto& l : code) os << l << "\n";
    return os.str();
  }
  if (code.size() == 1 && attn::cells(code[0]) < s.comment_col && s.comment_col + 20 < width) {
    os << attn::wrap(s.comment, width, attn::pad_right(code[0], s.comment_col) + "# ", std::string(s.comment_col, ' ') + "# ");
    return os.str();
  }
  os << attn::wrap(s.comment, width, s.indent + "# ", s.indent + "# ");
  for (const auto& l : code) os << l << "\n";
  return os.str();
}

// A footer's example command: "attn …", "$ attn …" or "echo …" under an indent, or the line after one
// that ended in "\" or "|" (the shell reads on).
bool is_command(const std::string& line, bool continued) {
  const auto start = line.find_first_not_of(' ');
  if (start == std::string::npos) return false;
  if (continued) return true;
  const std::string_view text = std::string_view(line).substr(start);
  return start >= 2 && (text.starts_with("attn ") || text.starts_with("$ attn ") || text.starts_with("echo "));
}

}  // namespace

std::string FittedFormatter::make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const {
  const auto w = static_cast<std::size_t>(width_);
  std::istringstream in(CLI::Formatter::make_help(app, std::move(name), mode));
  std::ostringstream os;
  bool continued = false;  // the last line was a command that the shell reads on from
  for (std::string line; std::getline(in, line);) {
    const bool command = is_command(line, continued);
    continued = command && (line.ends_with("\\") || line.ends_with("|"));
    if (command && attn::cells(line) > w) {
      os << fit_command(line, w);
      continue;
    }
    if (attn::cells(line) <= w) {
      os << line << "\n";
      continue;
    }
    // "  --name TEXT    description": the description's column is where the run of spaces ends
    const auto names = line.find_first_not_of(' ');
    const auto gap = names == std::string::npos ? std::string::npos : line.find("  ", names);
    const auto desc = gap == std::string::npos ? std::string::npos : line.find_first_not_of(' ', gap);
    if (desc != std::string::npos && desc + 20 < w) {
      os << attn::wrap(line.substr(desc), w, line.substr(0, desc), std::string(desc, ' '));
    } else {
      os << fitted(line + "\n", width_);
    }
  }
  return os.str();
}

void print_error(const std::string& message) {
  const std::string text = "attn: " + message + "\n";
  // wrapped only for a reader at a terminal; a pipe or a log gets each message on its one line
  if (!isatty(STDERR_FILENO)) {
    std::cerr << text;
    return;
  }
  int width = 0;
  if (const char* c = std::getenv("COLUMNS")) width = std::atoi(c);
  struct winsize ws {};
  if ((width < 20 || width > 1000) && ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0) width = ws.ws_col;
  std::cerr << fitted(text, width >= 20 && width <= 1000 ? width : 80);
}

void add_tolerances(CLI::App* cmd, attn::Tolerance& t) {
  cmd->add_option("--atol", t.atol, "absolute tolerance (default 1e-5)")->check(tolerance_check());
  cmd->add_option("--rtol", t.rtol, "relative tolerance, times |b| (default 1e-4)")->check(tolerance_check());
}

CLI::Validator in_range(attn::IntRange range) {
  // (described as CLI11's own Range and PositiveNumber are in --help)
  const std::string description = range.hi == attn::kNoLimit && range.lo == 1 ? "POSITIVE" : fmt::format("INT in [{} - {}]", range.lo, range.hi);
  return CLI::Validator(
      [range](std::string& text) {
        std::int64_t value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec == std::errc::invalid_argument || end != text.data() + text.size()) return std::string();  // CLI11's conversion says so
        if (ec == std::errc::result_out_of_range) return attn::range_refusal(text, range);
        return attn::range_problem(value, range);
      },
      description);
}

CLI::Validator tolerance_check() {
  return CLI::Validator(
      [](std::string& text) {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value)) return std::string();  // CLI11's conversion says so
        return attn::tolerance_problem(value);
      },
      "NONNEGATIVE");
}

CLI::Validator member_of(std::vector<std::string> names) {
  const CLI::Validator member = CLI::IsMember(names);
  return CLI::Validator(
      [member, names](std::string& text) {
        std::string problem = member(text);
        if (problem.empty()) return problem;
        const std::vector<std::string_view> candidates(names.begin(), names.end());
        return problem + attn::did_you_mean(text, candidates);
      },
      member.get_description());
}

attn::ColorMode color_mode(const std::string& choice) {
  if (choice == "never") return attn::ColorMode::None;
  if (choice == "256") return attn::ColorMode::Ansi256;
  if (choice == "truecolor") return attn::ColorMode::TrueColor;
  if (choice == "auto") {
    const char* no_color = std::getenv("NO_COLOR");  // https://no-color.org: set and not empty
    const char* term = std::getenv("TERM");          // a dumb terminal shows escape codes as text
    if (!isatty(STDOUT_FILENO) || (no_color != nullptr && *no_color != '\0') || (term != nullptr && std::string_view(term) == "dumb")) {
      return attn::ColorMode::None;
    }
  }
  const char* colorterm = std::getenv("COLORTERM");
  const std::string ct = colorterm != nullptr ? colorterm : "";
  return ct == "truecolor" || ct == "24bit" ? attn::ColorMode::TrueColor : attn::ColorMode::Ansi256;
}

}  // namespace attn_cli
