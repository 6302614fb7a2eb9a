// What the subcommands share: resource limits, loading an input within them, the text width and fitting reports to it, tolerances, colour.
#include "cli.hpp"

#include <charconv>
#include <system_error>

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

std::string FittedFormatter::make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const {
  const auto w = static_cast<std::size_t>(width_);
  std::istringstream in(CLI::Formatter::make_help(app, std::move(name), mode));
  std::ostringstream os;
  for (std::string line; std::getline(in, line);) {
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
