// --step: see pager.hpp.
#include "attn/render/pager.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <algorithm>
#include <iostream>
#include <sstream>
#include <tuple>
#include <vector>

#include "attn/render/layout.hpp"
#include "attn/render/pager_predict.hpp"

namespace attn {

namespace {

constexpr char kEsc = '\x1b';
constexpr char kCtrlD = '\x04';

// The terminal's settings while raw, for a signal handler to put back.
termios g_saved{};
int g_fd = -1;

termios g_raw{};
volatile std::sig_atomic_t g_resized = 0;  // SIGWINCH came: redraw at the new size

extern "C" void note_resize(int) { g_resized = 1; }

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
    struct sigaction winch {};  // without SA_RESTART: the read waiting for a key returns, and the step is redrawn
    winch.sa_handler = note_resize;
    sigemptyset(&winch.sa_mask);
    sigaction(SIGWINCH, &winch, nullptr);
    active_ = tcsetattr(fd, TCSANOW, &raw) == 0;
  }
  ~RawInput() {
    if (g_fd >= 0) tcsetattr(g_fd, TCSANOW, &g_saved);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGWINCH}) std::signal(sig, SIG_DFL);
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

// The lines of a text, each without its "\n".
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// One step as the text walkthrough prints it, in two parts: the heading, which stays in view (the
// whole header on the first screen, else the walkthrough's title line; then the step's title,
// formula and shape), and the body under it, which scrolls when the step is taller than the screen.
struct StepScreen {
  std::vector<std::string> heading, body;
  std::size_t step_lines = 0;  // the heading's last lines that are the step's
};

StepScreen step_screen(const Trace& trace, const TextOptions& options, std::size_t index, bool whole_header) {
  std::ostringstream head, step;
  if (whole_header) render_text_header(trace, head, options);
  else head << wrap(trace.config.title.empty() ? "Attention Tracer" : "Attention Tracer · " + trace.config.title, static_cast<std::size_t>(std::max(options.width, 20)), "", "  ");
  render_text_step(trace, index, step, options);
  StepScreen s{lines_of(head.str()), {}};
  const auto lines = lines_of(step.str());
  // the step's title "[n] id · title", its formula's lines, then its shape "    [T, S] = [2, 3]"
  const auto title = std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.starts_with("["); });
  auto end = title == lines.end() ? lines.begin() : std::find_if(title + 1, lines.end(), [](const std::string& l) { return l.starts_with("    ["); });
  end = end == lines.end() ? (title == lines.end() ? lines.begin() : title + 1) : end + 1;
  s.heading.insert(s.heading.end(), lines.begin(), end);
  s.step_lines = static_cast<std::size_t>(end - lines.begin());
  s.body.assign(end, lines.end());
  return s;
}

// A line's height on a terminal `cols` wide: its cells (colour escapes take none), wrapped.
std::size_t rows_of(const std::string& line, std::size_t cols) {
  std::string shown;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] != kEsc) {
      shown += line[i];
      continue;
    }
    for (i += 2; i < line.size() && !(line[i] >= 0x40 && line[i] <= 0x7e); ++i) {  // "\x1b[...m": up to its final byte
    }
  }
  return std::max<std::size_t>(1, (cells(shown) + cols - 1) / std::max<std::size_t>(cols, 1));
}

std::size_t rows_of(const std::vector<std::string>& lines, std::size_t cols) {
  std::size_t n = 0;
  for (const auto& l : lines) n += rows_of(l, cols);
  return n;
}

// The terminal's rows and columns (standard output's; 0 and 0 where it does not say).
std::pair<std::size_t, std::size_t> terminal_size() {
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0) return {0, 0};
  return {ws.ws_row, ws.ws_col};
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
    if (seq == "[A" || seq == "OA") return {PagerAction::LineUp};
    if (seq == "[B" || seq == "OB") return {PagerAction::LineDown};
    if (seq == "[5~") return {PagerAction::PageUp};
    if (seq == "[6~") return {PagerAction::PageDown};
    return {};  // another key (F1, Insert, …): nothing
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
  if (c == 'n') return {PagerAction::Next};
  if (c == ' ') return {PagerAction::PageOrNext};
  if (c == 'g') return {PagerAction::First};
  if (c == 'G') return {PagerAction::Last};
  if (c == 'k') return {PagerAction::LineUp};
  if (c == 'j') return {PagerAction::LineDown};
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

namespace {

// The walkthrough's state: the step in view, how far its body is scrolled, and what the prompt says.
class Pager {
 public:
  Pager(const Trace& trace, const TextOptions& options, std::vector<std::size_t> shown, int in_fd, std::ostream& out, bool raw)
      : trace_(trace), options_(options), shown_(std::move(shown)), in_fd_(in_fd), out_(out), raw_(raw), predict_(trace, options, shown_) {}

  void run() {
    if (!raw_) render_text_header(trace_, out_, options_);
    while (true) {
      if (redraw_ && predict_.pending(shown_[at_]) && !ask()) break;
      if (redraw_) draw();
      redraw_ = false;
      write_prompt();
      const PagerAction a = raw_ ? read_key() : read_line();
      if (a.kind == PagerAction::Quit) break;
      apply(a);
    }
    if (raw_) out_ << "\n";  // leave the last step on the screen, the shell prompt below it
    if (const auto tally = predict_.tally(); !tally.empty()) out_ << (raw_ ? "" : "\n") << tally << "\n";
    out_ << std::flush;
  }

 private:
  // --predict: the step's heading without its shape (the first answer), then its questions, each
  // answer read as a line (in raw mode the terminal edits and echoes it meanwhile). False: quit.
  bool ask() {
    if (raw_) out_ << "\x1b[H\x1b[2J";
    const StepScreen s = step_screen(trace_, options_, shown_[at_], at_ == 0);
    auto end = s.heading.end();
    if (end != s.heading.begin() && (end - 1)->starts_with("    [")) --end;  // (the shape line)
    for (auto k = raw_ ? s.heading.begin() : s.heading.end() - static_cast<std::ptrdiff_t>(s.step_lines); k < end; ++k) out_ << *k << "\n";
    return predict_.ask(shown_[at_], out_, [this]() { return read_answer(); });
  }
  std::optional<std::string> read_answer() {
    std::string line;
    if (!raw_) return std::getline(std::cin, line) ? std::optional<std::string>(line) : std::nullopt;
    tcsetattr(g_fd, TCSANOW, &g_saved);
    char c = 0;
    ssize_t got = 0;
    while ((got = ::read(in_fd_, &c, 1)) > 0 || (got < 0 && errno == EINTR)) {
      if (got > 0 && c == '\n') break;
      if (got > 0) line += c;
    }
    tcsetattr(g_fd, TCSANOW, &g_raw);
    g_resized = 0;  // (the step is drawn whole next, at the size it then has)
    if (got <= 0) return std::nullopt;
    return line;
  }

  // Raw mode: home, clear, then the step; a step taller than the screen as its heading and the part
  // of its body from line top_ that fits. Lines: the step printed whole.
  void draw() {
    if (!raw_) {
      render_text_step(trace_, shown_[at_], out_, options_);
      return;
    }
    layout();
    out_ << "\x1b[H\x1b[2J";
    for (const auto& l : screen_.heading) out_ << l << "\n";
    for (std::size_t k = top_; k < end_; ++k) out_ << screen_.body[k] << "\n";
    if (!tall_) out_ << "\n";
  }

  // The step in view fitted to the terminal: whether it is taller than the screen, and if so how
  // many rows its body gets (avail_) and the lines of it shown (top_ .. end_).
  void layout() {
    screen_ = step_screen(trace_, options_, shown_[at_], at_ == 0);
    if (auto replies = predict_.reply_lines(shown_[at_]); !replies.empty()) {  // what the learner predicted, above the step's values
      replies.emplace_back();
      screen_.body.insert(screen_.body.begin(), replies.begin(), replies.end());
    }
    std::tie(rows_, cols_) = terminal_size();
    const std::size_t whole = rows_of(screen_.heading, cols_) + rows_of(screen_.body, cols_);
    tall_ = rows_ > 0 && cols_ > 0 && whole + 2 > rows_;  // (+ the blank line and the prompt)
    if (!tall_) {
      top_ = 0, end_ = screen_.body.size();
      return;
    }
    if (at_ == 0) {  // pinned, the walkthrough's header would take the rows the step needs: only its title
      // stays, as on every other step (the rest of the header scrolls above the step's body)
      const auto header_end = screen_.heading.end() - static_cast<std::ptrdiff_t>(screen_.step_lines);
      auto rest = screen_.heading.begin() + 1;
      while (rest != header_end && rest->starts_with("  ")) ++rest;  // (the title's wrapped lines)
      std::vector<std::string> body(rest, header_end);
      body.emplace_back();
      body.insert(body.end(), screen_.body.begin(), screen_.body.end());
      screen_.body = std::move(body);
      screen_.heading = step_screen(trace_, options_, shown_[at_], false).heading;
    }
    avail_ = rows_ - 1 - std::min(rows_ - 1, rows_of(screen_.heading, cols_));
    if (avail_ < 3) {  // a screen too small to keep a heading: all of it scrolls
      screen_.body.insert(screen_.body.begin(), screen_.heading.begin(), screen_.heading.end());
      screen_.heading.clear();
      avail_ = rows_ - 1;
    }
    top_ = std::min(top_, last_top());
    end_ = fitting_end(top_);
  }

  // One past the last body line that fits from line `from` on.
  std::size_t fitting_end(std::size_t from) const {
    std::size_t used = 0, k = from;
    while (k < screen_.body.size() && used + rows_of(screen_.body[k], cols_) <= avail_) used += rows_of(screen_.body[k++], cols_);
    return std::max(k, std::min(from + 1, screen_.body.size()));  // (a line taller than the screen: shown alone)
  }

  // The first line of the page that ends at the body's last line, and of the page before line `to`.
  std::size_t last_top() const { return page_before(screen_.body.size()); }
  std::size_t page_before(std::size_t to) const {
    std::size_t used = 0, k = to;
    while (k > 0 && used + rows_of(screen_.body[k - 1], cols_) <= avail_) used += rows_of(screen_.body[--k], cols_);
    return std::min(k, to > 0 ? to - 1 : 0);
  }

  // The prompt on the last line, rewritten in place in raw mode: the step, the lines in view of a
  // tall one, then a typed number, a note or the keys; cut to the terminal's width.
  void write_prompt() {
    const bool last = at_ + 1 == shown_.size();  // (→ goes nowhere: not offered)
    std::string what = raw_ ? fmt::format("{}← back · number+Enter: go to · q quit", last ? "" : "→ next · ")
                            : fmt::format("{}b: back · a number: go to · q: quit", last ? "" : "Enter: next · ");
    if (raw_ && tall_) what = fmt::format("↑/↓ PgUp/PgDn{} · ← back · q quit", last ? "" : " · → next");
    if (raw_ && !keys_.number().empty()) what = fmt::format("go to step: {}", keys_.number());
    else if (!note_.empty()) what = note_;
    const std::string where = raw_ && tall_ ? fmt::format(" · lines {}–{} of {}", top_ + 1, end_, screen_.body.size()) : "";
    std::string prompt = fmt::format("── step {}/{}{} · {} ──", at_ + 1, shown_.size(), where, what);
    if (raw_ && cols_ > 0 && cells(prompt) >= cols_) prompt = clip(prompt, cols_ - 1);  // a wrapped prompt would scroll the screen
    if (raw_) out_ << "\r\x1b[K" << prompt << std::flush;
    else out_ << "\n" << prompt << " " << std::flush;
  }

  PagerAction read_key() {
    char c = 0;
    const auto got = ::read(in_fd_, &c, 1);
    if (got < 0 && errno == EINTR) {  // a signal: the terminal was resized, or the shell gave it back
      redraw_ = redraw_ || g_resized != 0;
      g_resized = 0;
      if (redraw_) draw(), redraw_ = false;
      return {};
    }
    if (got <= 0) return {PagerAction::Quit};
    const PagerAction a = keys_.feed(c);
    if (c == kEsc) {  // a lone Esc (no sequence follows within 50 ms) drops a typed number
      pollfd p{in_fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) == 0) keys_ = KeyDecoder{};
    }
    return a;
  }

  PagerAction read_line() {
    std::string line;
    if (!std::getline(std::cin, line)) return {PagerAction::Quit};
    const PagerAction a = line_action(line);
    if (a.kind == PagerAction::None) note_ = "(Enter, b, a step number or q, then Enter)";  // a line it does not know
    return a;
  }

  // Moves as `a` asks, and says when to redraw (else only the prompt is written again).
  void apply(const PagerAction& a) {
    if (a.kind == PagerAction::None) return;
    note_.clear();
    if (a.kind >= PagerAction::LineUp) return scroll(a.kind);
    if (raw_ && tall_ && a.kind == PagerAction::First) return scroll_to(0);
    if (raw_ && tall_ && a.kind == PagerAction::Last) return scroll_to(last_top());
    if (raw_ && tall_ && a.kind == PagerAction::PageOrNext && end_ < screen_.body.size()) return scroll(PagerAction::PageDown);
    const std::size_t n = shown_.size();
    std::size_t next = at_;
    switch (a.kind) {
      case PagerAction::Next:
      case PagerAction::PageOrNext:  // the last step stays: only q or Ctrl-D ends the walkthrough
        if (at_ + 1 < n) next = at_ + 1;
        else note_ = "(the last step: q quits)";
        break;
      case PagerAction::Back: next = at_ > 0 ? at_ - 1 : 0; break;
      case PagerAction::First: next = 0; break;
      case PagerAction::Last: next = n - 1; break;
      case PagerAction::Jump:
        if (a.step >= 1 && a.step <= n) next = a.step - 1;
        else note_ = fmt::format("(no step {}: 1–{})", a.step, n);
        break;
      default: break;
    }
    redraw_ = note_.empty() && (next != at_ || !raw_);  // lines: a step is printed again when asked for
    if (next != at_) top_ = 0;
    at_ = next;
  }

  // ↑/↓ a line, PgUp/PgDn a page, within a tall step (a step that fits: nothing).
  void scroll(PagerAction::Kind kind) {
    if (!raw_ || !tall_) return;
    std::size_t top = top_;
    if (kind == PagerAction::LineUp) top = top > 0 ? top - 1 : 0;
    if (kind == PagerAction::LineDown) top = std::min(top + 1, last_top());
    if (kind == PagerAction::PageUp) top = page_before(top_);
    if (kind == PagerAction::PageDown) top = std::min(end_, last_top());
    scroll_to(top);
  }
  void scroll_to(std::size_t top) {
    redraw_ = top != top_;
    top_ = top;
  }

  const Trace& trace_;
  const TextOptions& options_;
  const std::vector<std::size_t> shown_;
  const int in_fd_;
  std::ostream& out_;
  const bool raw_;
  KeyDecoder keys_;
  std::size_t at_ = 0;  // the step in view, an index into shown_
  std::string note_;    // a line under the prompt: "no step 12 (1–9)"
  bool redraw_ = true;
  StepScreen screen_;                                           // the step in view, as drawn
  bool tall_ = false;                                           // taller than the screen: its body scrolls
  std::size_t rows_ = 0, cols_ = 0, avail_ = 0, top_ = 0, end_ = 0;  // the body's lines top_ .. end_ in avail_ rows
  PredictSession predict_;                                      // --predict: the questions asked before steps, the score
};

}  // namespace

void page_steps(const Trace& trace, const TextOptions& options, int in_fd, std::ostream& out, bool raw) {
  std::vector<std::size_t> shown = options.steps;
  if (shown.empty())
    for (std::size_t i = 0; i < trace.steps.size(); ++i) shown.push_back(i);
  if (shown.empty()) return;
  RawInput input(raw ? in_fd : -1);
  Pager(trace, options, std::move(shown), in_fd, out, raw && input.active()).run();  // a terminal that refuses raw mode: lines
}

}  // namespace attn
