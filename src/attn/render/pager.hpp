// --step: a walkthrough one step at a time, driven by single keys in a terminal and redrawn in
// place; or, where keys cannot be read one by one (not a terminal, TERM=dumb), by lines.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <optional>
#include <string>

#include "attn/render/render.hpp"

namespace attn {

// What a key (or a typed number) asks for. LineUp … PageDown scroll a step taller than the screen;
// First/Last go to its top/bottom (in a step that fits: to the first/last step); PageOrNext (Space)
// pages down while lines of the step remain, then goes to the next step.
struct PagerAction {
  enum Kind { None, Next, Back, First, Last, Jump, Quit, PageOrNext, LineUp, LineDown, PageUp, PageDown } kind = None;
  std::size_t step = 0;  // Jump: 1-based step number
};

// Turns the bytes a terminal sends in raw mode into actions: → Enter n: next; Space: a page, else
// next; ← b p: back; Home/End, g/G: first/last (the top/bottom of a tall step); digits then Enter:
// jump; Backspace edits the digits, Esc drops them; q, Ctrl-D: quit; ↑/↓, k/j: a line up/down,
// PgUp/PgDn: a page. Escape sequences (arrows) may arrive split across reads.
class KeyDecoder {
 public:
  PagerAction feed(char byte);
  // The digits typed so far ("" when none): the prompt shows them.
  const std::string& number() const { return digits_; }

 private:
  std::string digits_;
  std::string escape_;  // an escape sequence being read
};

// The same commands as a line: "" or "n" next, "b" back, "q" quit, a number: jump.
PagerAction line_action(const std::string& line);

// Pages through `trace`'s selected steps. raw: single keys and redrawing (in and out are a
// terminal, standard output the one whose size is read); otherwise lines. In raw mode a step taller
// than the terminal keeps its heading (the walkthrough's title line, the step's title, formula and
// shape) at the top and the rest scrolls under it (on the first step, the rest of the walkthrough's
// header too); the prompt says which lines are in view. Returns when the reader quits.
void page_steps(const Trace& trace, const TextOptions& options, int in_fd, std::ostream& out, bool raw);

}  // namespace attn
