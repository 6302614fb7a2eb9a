#!/usr/bin/env bash
# --step for real: attn runs in a tmux pane (a real terminal), keys are sent with send-keys and the
# screen is read with capture-pane. Also checks that --color auto colours a terminal and honours
# NO_COLOR. Skipped (exit 77, with the reason) only when tmux is absent.
# Usage: step_tmux.sh ATTN SOURCE_DIR
set -u
attn=$1
src=$2
if ! command -v tmux >/dev/null; then
  echo "SKIPPED: tmux is not installed (scripts/setup.sh --tests installs it)"
  exit 77
fi
sock="attn-test-$$"
tmx() { tmux -L "$sock" "$@"; }
trap 'tmx kill-server 2>/dev/null' EXIT
fail() {
  echo "FAIL: $1"
  echo "---- screen ----"
  tmx capture-pane -p -t "${2:-t}" 2>/dev/null | sed '/^$/d' | tail -25
  exit 1
}
# Waits up to 10 s for the screen to contain a fixed string.
wait_for() {
  local pane=$1 text=$2
  for _ in $(seq 100); do
    tmx capture-pane -p -t "$pane" -S -200 | grep -qF -- "$text" && return 0
    sleep 0.1
  done
  return 1
}
# The same for the visible screen alone (a screen cleared by a redraw goes into tmux's history).
wait_visible() {
  local pane=$1 text=$2
  for _ in $(seq 100); do
    tmx capture-pane -p -t "$pane" | grep -qF -- "$text" && return 0
    sleep 0.1
  done
  return 1
}
last_prompt() { tmx capture-pane -p -t "$1" -S -200 | grep -F "── step" | tail -1; }
screen() { tmx capture-pane -p -t "$1"; }  # the visible screen only

cd "$src" || exit 1
# single keys, redrawn in place
tmx new-session -d -s t -x 140 -y 60 "$attn run examples/cat_sat.json --step --color never --heatmap none; echo EXITED \$?; sleep 30"
wait_for t "── step 1/9 · → next · ← back · number+Enter: go to · q quit ──" || fail "no prompt after step 1"
screen t | grep -qF "[1] x · Input embeddings" || fail "step 1 not shown"
screen t | grep -qF "[2] q · Queries" && fail "step 2 shown before a key"
tmx send-keys -t t Right
wait_for t "── step 2/9" || fail "→ did not advance to step 2"
screen t | grep -qF "[2] q · Queries" || fail "step 2 not shown after →"
screen t | grep -qF "[1] x · Input embeddings" && fail "step 2 was not redrawn in place (step 1 still on the screen)"
tmx send-keys -t t Space
wait_for t "── step 3/9" || fail "Space did not advance to step 3"
tmx send-keys -t t Enter
wait_for t "── step 4/9" || fail "Enter did not advance to step 4"
tmx send-keys -t t Left
wait_for t "── step 3/9" || fail "← did not go back to step 3"
tmx send-keys -t t b
wait_for t "── step 2/9" || fail "b did not go back to step 2"
screen t | grep -qF "[2] q · Queries" || fail "step 2 not shown after b"
tmx send-keys -t t 7
wait_for t "go to step: 7" || fail "a typed number is not shown"
tmx send-keys -t t Enter
wait_for t "── step 7/9" || fail "7 Enter did not go to step 7"
screen t | grep -qF "[7] scaled · Scaled scores" || fail "step 7 not shown after 7 Enter"
tmx send-keys -t t 1 2 Enter
wait_for t "(no step 12: 1–9)" || fail "an out-of-range step is not said"
tmx send-keys -t t Up
sleep 0.3
[[ "$(last_prompt t)" == *"step 7/9"* ]] || fail "↑ moved (last prompt: $(last_prompt t))"
screen t | grep -qF '^[[A' && fail "↑ was echoed"
tmx send-keys -t t End
wait_for t "── step 9/9" || fail "End did not go to the last step"
[[ $(last_prompt t) == "── step 9/9 · ← back · number+Enter: go to · q quit ──" ]] || fail "the last step's prompt offers → next, or not ← back ($(last_prompt t))"
tmx send-keys -t t Right
wait_for t "(the last step: q quits)" || fail "→ on the last step did not stay there"
tmx capture-pane -p -t t | grep -qF "EXITED" && fail "→ on the last step ended the walkthrough"
tmx send-keys -t t q
wait_for t "EXITED 0" || fail "q did not quit with exit 0"
screen t | grep -qF "[8] weights" && fail "q still printed later steps"
# Ctrl-Z gives the shell its terminal back; after fg the keys are single keys again
tmx new-session -d -s z -x 140 -y 60 "bash --norc --noprofile"
sleep 0.3
tmx send-keys -t z "$attn run examples/cat_sat.json --step --color never --heatmap none" Enter
wait_for z "── step 1/9" || fail "no prompt (Ctrl-Z session)" z
tmx send-keys -t z C-z
sleep 0.5
tmx send-keys -t z "fg" Enter
sleep 0.5
tmx send-keys -t z Right
wait_for z "── step 2/9" || fail "after Ctrl-Z and fg, → did not advance" z
screen z | grep -qF '^[[C' && fail "after Ctrl-Z and fg, → was echoed (the terminal stayed in line mode)" z
tmx send-keys -t z q
# Ctrl-D quits too
tmx new-session -d -s d -x 140 -y 60 "$attn run examples/cat_sat.json --step --color never; echo EXITED \$?; sleep 30"
wait_for d "── step 1/9" || fail "no prompt (Ctrl-D session)" d
tmx send-keys -t d C-d
wait_for d "EXITED 0" || fail "Ctrl-D did not quit with exit 0" d
# the line-mode fallback (a terminal without cursor control): Enter, a number, b, q, each with Enter
tmx new-session -d -s l -x 140 -y 60 "TERM=dumb $attn run examples/cat_sat.json --step --color never --heatmap none; echo EXITED \$?; sleep 30"
wait_for l "── step 1/9 · Enter: next · b: back · a number: go to · q: quit ──" || fail "no line-mode prompt" l
tmx send-keys -t l Enter
wait_for l "── step 2/9" || fail "line mode: Enter did not advance" l
tmx send-keys -t l 5 Enter
wait_for l "── step 5/9" || fail "line mode: 5 did not go to step 5" l
tmx send-keys -t l b Enter
wait_for l "── step 4/9" || fail "line mode: b did not go back" l
tmx send-keys -t l q Enter
wait_for l "EXITED 0" || fail "line mode: q did not quit" l

# a step taller than the screen (80 × 24): its heading (the title, formula and shape) stays at the top,
# the body scrolls under it: ↑/↓ a line, PgUp/PgDn a page; the prompt says which lines are in view
last=$("$attn" run examples/induction.json --steps weights --color never --width 80 | tail -1 | sed 's/ *$//')
tmx new-session -d -s s -x 80 -y 24 "$attn run examples/induction.json --step --steps scores,weights --color never; echo EXITED \$?; sleep 30"
wait_visible s "── step 1/2 · lines 1–" || fail "a tall step: the prompt does not say which lines are in view" s
[[ $(screen s | head -1) == "Attention Tracer · GPT-2"* ]] || fail "a tall step scrolled the screen (its first line is not the walkthrough's title)" s
[[ $(screen s | tail -1) == "── step 1/2 · lines 1–"*"↑/↓ PgUp/PgDn · → next · ← back · q quit ──" ]] || fail "a tall step: the prompt (with → and ←) is not on the last row" s
# on the first step only the walkthrough's title line and the step's title, formula and shape stay: the
# rest of the walkthrough's header scrolls with the body, which gets the other rows
[[ $(screen s | sed '/^$/d' | sed -n 2p) == "[13] scores · Attention scores"* ]] || fail "step 1: the walkthrough's header is pinned above the step's title" s
[[ $(screen s | tail -1) =~ lines\ 1–([0-9]+)\  && $(( ${BASH_REMATCH[1]} )) -ge 16 ]] || fail "step 1: the body does not get the rows the header left (fewer than 16 lines)" s
body_first() { screen s | awk 'f { print; exit } /^    \[/ { f = 1 }'; }  # the line under the step's shape
first_line=$(body_first)
[[ -n $first_line ]] || fail "a tall step: no body under its heading" s
tmx send-keys -t s Down
wait_visible s "── step 1/2 · lines 2–" || fail "↓ did not scroll a line" s
[[ $(body_first) != "$first_line" ]] || fail "↓ did not scroll the body (its first line is still first)" s
screen s | grep -qF "[13] scores · Attention scores" || fail "↓ scrolled the step's title away" s
tmx send-keys -t s Up
wait_visible s "── step 1/2 · lines 1–" || fail "↑ did not scroll back" s
[[ $(body_first) == "$first_line" ]] || fail "↑ did not bring the body's first line back" s
tmx send-keys -t s j
wait_visible s "── step 1/2 · lines 2–" || fail "j did not scroll a line down" s
tmx send-keys -t s k
wait_visible s "── step 1/2 · lines 1–" || fail "k did not scroll a line up" s
tmx send-keys -t s Space
wait_visible s "── step 1/2 · lines " || fail "no prompt after Space" s
sleep 0.3
[[ $(screen s | tail -1) == "── step 1/2 · lines "* && $(screen s | tail -1) != "── step 1/2 · lines 1–"* ]] || fail "Space on a tall step did not page down within it" s
tmx send-keys -t s Home
wait_visible s "── step 1/2 · lines 1–" || fail "Home did not go to the top of the step" s
tmx send-keys -t s Right
wait_visible s "── step 2/2 · lines 1–" || fail "→ on a tall step did not go to the next step, at its top" s
for line in "[17] weights · Attention weights" "    weights = softmax(masked, dim=-1)" "    [H, T, T] = [4, 16, 16]"; do
  screen s | grep -qF -- "$line" || fail "a tall step: '$line' not shown at the top" s
done
[[ $(screen s | tail -1) =~ lines\ 1–([0-9]+)\ of\ ([0-9]+) && ${BASH_REMATCH[1]} -lt ${BASH_REMATCH[2]} ]] || fail "the tall step's last line is in view before scrolling" s
[[ $(screen s | tail -1) == *"↑/↓ PgUp/PgDn · ← back · q quit ──" ]] || fail "the last step's prompt does not offer ← back alone (no → next)" s
# the last step: Space, End and G reach its bottom; g and Home its top; Space at the bottom stays
tmx send-keys -t s Space
sleep 0.3
[[ $(screen s | tail -1) =~ lines\ ([0-9]+)– && ${BASH_REMATCH[1]} -gt 1 ]] || fail "Space on the last (tall) step did not page down" s
tmx send-keys -t s g
wait_visible s "── step 2/2 · lines 1–" || fail "g did not go to the top of the step" s
for key in End G; do
  tmx send-keys -t s $key
  sleep 0.3
  [[ $(screen s | tail -1) =~ lines\ [0-9]+–([0-9]+)\ of\ ([0-9]+) && ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" ]] || fail "$key did not go to the bottom of the step" s
  [[ $(screen s | tail -2 | head -1) == "$last" ]] || fail "$key: the step's last line '$last' is not above the prompt" s
  tmx send-keys -t s Home
  wait_visible s "── step 2/2 · lines 1–" || fail "Home did not go back to the top of the step" s
done
tmx send-keys -t s End Space
wait_visible s "(the last step: q quits)" || fail "Space at the bottom of the last step did not say it is the last" s
tmx send-keys -t s Home
wait_visible s "── step 2/2 · lines 1–" || fail "Home did not go back to the top of the step" s
for _ in $(seq 10); do  # PgDn until the prompt says the last line is in view
  prompt=$(screen s | tail -1)
  [[ $prompt =~ lines\ [0-9]+–([0-9]+)\ of\ ([0-9]+) && ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" ]] && break
  tmx send-keys -t s NPage
  sleep 0.3
done
[[ $prompt =~ lines\ [0-9]+–([0-9]+)\ of\ ([0-9]+) && ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" ]] || fail "PgDn did not reach the step's last line ($prompt)" s
[[ $(screen s | tail -2 | head -1) == "$last" ]] || fail "PgDn: the step's last line '$last' is not above the prompt" s
for line in "[17] weights · Attention weights" "    weights = softmax(masked, dim=-1)" "    [H, T, T] = [4, 16, 16]"; do
  screen s | grep -qF -- "$line" || fail "at the bottom of a tall step, '$line' is not shown at the top" s
done
[[ $(screen s | head -1) == "Attention Tracer · GPT-2"* ]] || fail "PgDn scrolled the screen" s
first=$(sed -E 's/.*lines ([0-9]+)–.*/\1/' <<<"$prompt")
tmx send-keys -t s PPage
sleep 0.3
now=$(screen s | tail -1)
[[ $now =~ lines\ [0-9]+–([0-9]+)\  && ${BASH_REMATCH[1]} -eq $((first - 1)) ]] || fail "PgUp did not go back a page, to the lines just above line $first ($now)" s
tmx send-keys -t s Left
wait_visible s "── step 1/2 · lines 1–" || fail "← from a tall step did not go back to step 1, at its top" s
tmx send-keys -t s q
wait_visible s "EXITED 0" || fail "q did not quit a tall step with exit 0" s
# resized taller than the step: drawn whole again, the plain keys in the prompt
tmx new-session -d -s r -x 80 -y 24 "$attn run examples/induction.json --step --steps scores,weights --color never; echo EXITED \$?; sleep 30"
wait_visible r "── step 1/2 · lines 1–" || fail "no tall-step prompt (resize session)" r
tmx resize-window -t r -y 80
wait_visible r "── step 1/2 · → next · ← back" || fail "after the terminal grew, the step was not redrawn whole" r
tmx send-keys -t r q

# --color auto on a terminal: colour; with NO_COLOR set: the shade ramp instead.
tmx new-session -d -s c -x 140 -y 60 "COLORTERM=truecolor $attn run examples/masked_4x4.json --steps weights; sleep 30"
wait_for c "heatmap of weights" || fail "no heatmap on a terminal" c
tmx capture-pane -e -p -t c | grep -q $'\e\\[[0-9;]*48;' || fail "--color auto did not colour a terminal" c
tmx new-session -d -s n -x 140 -y 60 "NO_COLOR=1 $attn run examples/masked_4x4.json --steps weights; sleep 30"
wait_for n "heatmap of weights" || fail "no heatmap with NO_COLOR" n
tmx capture-pane -e -p -t n | grep -q $'\e\\[[0-9;]*48;' && fail "NO_COLOR was not honoured" n
tmx capture-pane -p -t n | grep -qF "t0  ██ ·· ·· ··" || fail "no shaded heatmap with NO_COLOR" n
# --color auto on a dumb terminal: the shades, no escape codes
tmx new-session -d -s m -x 140 -y 60 "TERM=dumb $attn run examples/masked_4x4.json --steps weights; sleep 30"
wait_for m "heatmap of weights" || fail "no heatmap with TERM=dumb" m
tmx capture-pane -e -p -t m | grep -q $'\e\\[[0-9;]*48;' && fail "TERM=dumb got colour codes" m
tmx capture-pane -p -t m | grep -qF "t0  ██ ·· ·· ··" || fail "no shaded heatmap with TERM=dumb" m

# --predict: before scores and weights (the input's exercise.predict) the pager asks, checks each
# answer, shows the replies above the step's values, and counts the right ones when q quits.
tmx new-session -d -s p -x 120 -y 50 "$attn run tests/data/predict_cross.json --predict --color never --heatmap none; echo EXITED \$?; sleep 30"
wait_for p "── step 1/10" || fail "--predict did not start the pager (it implies --step)" p
tmx send-keys -t p 7 Enter
wait_visible p "1. What is the shape of scores, in numbers (like [2, 3])?" || fail "no shape question before scores" p
screen p | grep -qF "[T, S] = [3, 4]" && fail "the shape was shown before it was asked" p
screen p | grep -qF "2.0000" && fail "the scores were shown before they were asked" p
tmx send-keys -t p "[3, 3]" Enter
wait_visible p "▸ Not quite: you said [3, 3]; scores is [3, 4]: T = 3 queries, S = 4 keys (S, the keys, is 4, not 3)." || fail "a wrong shape was not answered" p
wait_visible p "2. Which key has the largest scores in \"sat\"'s row? (a token)" || fail "no key question" p
tmx send-keys -t p dog Enter
wait_visible p "There is no key \"dog\": the keys are le₁, chat, le₂, tapis. Type one of them." || fail "an unknown key was not said" p
tmx send-keys -t p chat Enter
wait_visible p "▸ Right: \"sat\"'s row of scores is largest at \"chat\"." || fail "the right key was not said right" p
tmx send-keys -t p 1.5 Enter
wait_visible p "── step 7/10" || fail "the step was not revealed after its questions" p
screen p | grep -qF "▸ Not quite: you said 1.5; scores[2, 0] (query \"sat\", key \"le₁\") is 1.0000: 0.50 too high." || fail "the replies are not above the revealed step" p
screen p | grep -qE "sat +1\.0000 +2\.0000 +1\.0000 +0\.0000" || fail "the scores were not revealed" p
tmx send-keys -t p Left Right
sleep 0.3
screen p | grep -qF "What is the shape" && fail "a step answered was asked again" p
tmx send-keys -t p 9 Enter
wait_visible p "1. What is the shape of weights" || fail "no question before weights" p
tmx send-keys -t p 3x4 Enter
wait_visible p "2. Which key does \"sat\" attend to most? (a token)" || fail "no key question on weights" p
tmx send-keys -t p chat Enter
wait_visible p "3. What is weights[2, 0] (query \"sat\", key \"le₁\")" || fail "no value question on weights" p
tmx send-keys -t p .23 Enter
wait_visible p "▸ Right: weights[2, 0] (query \"sat\", key \"le₁\") is 0.2303; you said .23, 0.0003 off." || fail "a right value was not said right" p
tmx send-keys -t p q
wait_visible p "── 4 of 6 predictions right ──" || fail "the count of right predictions is not shown at the end" p
wait_visible p "EXITED 0" || fail "q did not quit --predict with exit 0" p
# not a terminal: refused, exit 2, naming --predict
tmx new-session -d -s o -x 160 -y 20 "$attn run tests/data/predict_cross.json --predict | cat; echo EXITED \${PIPESTATUS[0]}; sleep 30"
wait_for o "EXITED 2" || fail "--predict with standard output not a terminal did not exit 2" o
tmx capture-pane -p -t o | grep -qF "attn: --predict: standard output is not a terminal, so the questions would go unseen." || fail "the refusal does not say why" o
echo "step_tmux: --step (→ Space Enter ← b, a number, ↑ on a short step ignored, q, Ctrl-D; line mode; a tall step at 80 × 24: heading kept, the header scrolling, ↑/↓ j/k PgUp/PgDn Space, Home/End g/G, resize), --predict (questions, replies, the count, the refusal without a terminal) and --color auto / NO_COLOR checked in a tmux terminal"
