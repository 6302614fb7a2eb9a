// --step: see pager.hpp.
#include "attn/pager.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <iostream>
#include <sstream>
#include <vector>

namespace attn {

namespace {

constexpr char kEsc = '\x1b';
constexpr char kCtrlD = '\x04';

// The terminal's settings while raw, for a signal handler to put back.
termios g_saved{};
int g_fd = -1;

termios g_raw{};

extern "C" void restore_and_reraise(int sig) {
  if (g_fd >= 0) tcsetattr(g_fd, TCSANOW, &g_saved);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// Ctrl-Z: the shell gets its terminal back; after fg, raw keys again.
extern "C" void suspend(int) {
  const int saved_errno = errno;
  if (g_fd >= 0) tcsetattr(g_fd, TCSANOW, &g_saved);
  std::signal(SIGTSTP, SIG_DFL);
  sigset_t tstp;  // the signal is blocked while its handler runs: let the default action stop us now
  sigemptyset(&tstp);
  sigaddset(&tstp, SIGTSTP);
  sigprocmask(SIG_UNBLOCK, &tstp, nullptr);
  std::raise(SIGTSTP);  // stops here until SIGCONT
  std::signal(SIGTSTP, suspend);
  if (g_fd >= 0) tcsetattr(g_fd, TCSANOW, &g_raw);
  errno = saved_errno;
}

// Raw input (no line editing, no echo) for the life of the object. Ctrl-C still interrupts, and the
// terminal gets its settings back then too.
class RawInput {
 public:
  explicit RawInput(int fd) {
    if (fd < 0 || tcgetattr(fd, &g_saved) != 0) return;
    termios raw = g_saved;
    raw.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO));
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    g_fd = fd;
    g_raw = raw;
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) std::signal(sig, restore_and_reraise);
    std::signal(SIGTSTP, suspend);
    active_ = tcsetattr(fd, TCSANOW, &raw) == 0;
  }
  ~RawInput() {
    if (g_fd >= 0) tcsetattr(g_fd, TCSANOW, &g_saved);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP}) std::signal(sig, SIG_DFL);
    g_fd = -1;
  }
  RawInput(const RawInput&) = delete;
  RawInput& operator=(const RawInput&) = delete;
  bool active() const { return active_; }

 private:
  bool active_ = false;
};

std::optional<std::size_t> parse_number(const std::string& s) {
  std::size_t n = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), n);
  if (s.empty() || r.ec != std::errc{} || r.ptr != s.data() + s.size()) return std::nullopt;
  return n;
}

// One step as the text walkthrough prints it, under the whole header on the first screen and under
// the title line on the others (so a tall step keeps its own heading in view).
std::string screen(const Trace& trace, const TextOptions& options, std::size_t index, bool whole_header) {
  std::ostringstream s;
  if (whole_header) render_text_header(trace, s, options);
  else s << (trace.config.title.empty() ? "Attention Tracer" : "Attention Tracer · " + trace.config.title) << "\n";
  render_text_step(trace, index, s, options);
  return s.str();
}

}  // namespace

PagerAction KeyDecoder::feed(char c) {
  if (!escape_.empty()) {
    escape_ += c;
    if (escape_.size() == 2) {
      if (c == '[' || c == 'O') return {};
      escape_.clear();  // Esc, then an ordinary key: the key counts
      return feed(c);
    }
    if (!(c >= 0x40 && c <= 0x7e)) return {};  // parameters of a longer sequence
    const std::string seq = escape_.substr(1);
    escape_.clear();
    if (seq == "[C" || seq == "OC") return {PagerAction::Next};
    if (seq == "[D" || seq == "OD") return {PagerAction::Back};
    if (seq == "[H" || seq == "OH" || seq == "[1~" || seq == "[7~") return {PagerAction::First};
    if (seq == "[F" || seq == "OF" || seq == "[4~" || seq == "[8~") return {PagerAction::Last};
    return {};  // another key (↑, ↓, F1, …): nothing
  }
  if (c == kEsc) {
    escape_ = c;
    return {};
  }
  if (c >= '0' && c <= '9') {
    if (digits_.size() < 6) digits_ += c;
    return {};
  }
  if ((c == '\x7f' || c == '\b') && !digits_.empty()) {
    digits_.pop_back();
    return {};
  }
  if (c == '\r' || c == '\n') {
    if (digits_.empty()) return {PagerAction::Next};
    const auto n = parse_number(digits_);
    digits_.clear();
    return {PagerAction::Jump, n.value_or(0)};
  }
  digits_.clear();
  if (c == ' ' || c == 'n') return {PagerAction::Next};
  if (c == 'b' || c == 'p') return {PagerAction::Back};
  if (c == 'q' || c == 'Q' || c == kCtrlD) return {PagerAction::Quit};
  return {};
}

PagerAction line_action(const std::string& line) {
  if (line.empty() || line == "n") return {PagerAction::Next};
  if (line == "b" || line == "p") return {PagerAction::Back};
  if (line == "q") return {PagerAction::Quit};
  if (const auto n = parse_number(line)) return {PagerAction::Jump, *n};
  return {};
}

void page_steps(const Trace& trace, const TextOptions& options, int in_fd, std::ostream& out, bool raw) {
  std::vector<std::size_t> shown = options.steps;
  if (shown.empty())
    for (std::size_t i = 0; i < trace.steps.size(); ++i) shown.push_back(i);
  if (shown.empty()) return;
  const std::size_t n = shown.size();
  RawInput input(raw ? in_fd : -1);
  raw = raw && input.active();  // a terminal that refuses raw mode: lines
  KeyDecoder keys;
  std::size_t at = 0;
  std::string note;  // a line under the prompt: "no step 12 (1–9)"
  bool redraw = true;
  // short enough for an 80-column terminal with a note or a typed number in place of the keys
  const std::string keys_help = raw ? "→ next · ← back · number+Enter: go to · q quit" : "Enter: next · b: back · a number: go to · q: quit";
  if (!raw) render_text_header(trace, out, options);
  while (true) {
    if (redraw) {
      if (raw) out << "\x1b[H\x1b[2J" << screen(trace, options, shown[at], at == 0) << "\n";  // home, clear, the step
      else render_text_step(trace, shown[at], out, options);
      redraw = false;
    }
    // the prompt; in raw mode rewritten in place (a typed number, a note) on its own last line
    std::string what = keys_help;  // a typed number, else a note, else the keys
    if (raw && !keys.number().empty()) what = fmt::format("go to step: {}", keys.number());
    else if (!note.empty()) what = note;
    const std::string prompt = fmt::format("── step {}/{} · {} ──", at + 1, n, what);
    if (raw) {
      out << "\r\x1b[K" << prompt << std::flush;
    } else {
      out << "\n" << prompt << " " << std::flush;
    }
    PagerAction a;
    if (raw) {
      char c = 0;
      const auto got = ::read(in_fd, &c, 1);
      if (got <= 0) a = {PagerAction::Quit};
      else a = keys.feed(c);
      if (c == kEsc && got > 0) {  // a lone Esc (no sequence follows within 50 ms) drops a typed number
        pollfd p{in_fd, POLLIN, 0};
        if (::poll(&p, 1, 50) == 0) keys = KeyDecoder{};
      }
    } else {
      std::string line;
      if (!std::getline(std::cin, line)) a = {PagerAction::Quit};
      else a = line_action(line);
    }
    if (a.kind != PagerAction::None) note.clear();
    std::size_t next = at;
    switch (a.kind) {
      case PagerAction::None:
        if (!raw) note = "(Enter, b, a step number or q, then Enter)";  // a line it does not know
        continue;
      case PagerAction::Quit: next = n; break;
      case PagerAction::Next:  // the last step stays: only q or Ctrl-D ends the walkthrough
        if (at + 1 < n) next = at + 1;
        else note = "(the last step: q quits)";
        break;
      case PagerAction::Back: next = at > 0 ? at - 1 : 0; break;
      case PagerAction::First: next = 0; break;
      case PagerAction::Last: next = n - 1; break;
      case PagerAction::Jump:
        if (a.step >= 1 && a.step <= n) next = a.step - 1;
        else note = fmt::format("(no step {}: 1–{})", a.step, n);
        break;
    }
    if (next >= n) break;
    redraw = note.empty() && (next != at || !raw);  // lines: a step is printed again when asked for
    at = next;
  }
  if (raw) out << "\n";  // leave the last step on the screen, the shell prompt below it
  out << std::flush;
}

}  // namespace attn
