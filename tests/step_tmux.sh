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
last_prompt() { tmx capture-pane -p -t "$1" -S -200 | grep -F "── step" | tail -1; }

cd "$src" || exit 1
tmx new-session -d -s t -x 140 -y 60 "$attn run examples/cat_sat.json --step --color never --heatmap none; echo EXITED \$?; sleep 30"
wait_for t "── step 1/9 · Enter: next · b: back · q: quit ──" || fail "no prompt after step 1"
tmx capture-pane -p -t t | grep -qF "[1] x · Input embeddings" || fail "step 1 not shown"
tmx capture-pane -p -t t | grep -qF "[2] q · Queries" && fail "step 2 shown before Enter"
tmx send-keys -t t Enter
wait_for t "── step 2/9" || fail "Enter did not advance to step 2"
tmx capture-pane -p -t t -S -200 | grep -qF "[2] q · Queries" || fail "step 2 not shown after Enter"
tmx send-keys -t t b Enter
sleep 0.3
[[ "$(last_prompt t)" == *"step 1/9"* ]] || fail "b did not go back to step 1 (last prompt: $(last_prompt t))"
tmx send-keys -t t Enter
sleep 0.2
tmx send-keys -t t Enter
wait_for t "── step 3/9" || fail "Enter did not advance to step 3"
tmx send-keys -t t q Enter
wait_for t "EXITED 0" || fail "q did not quit with exit 0"
tmx capture-pane -p -t t -S -200 | grep -qF "[4] v · Values" && fail "q still printed later steps"

# --color auto on a terminal: colour; with NO_COLOR set: the shade ramp instead.
tmx new-session -d -s c -x 140 -y 60 "COLORTERM=truecolor $attn run examples/masked_4x4.json --steps weights; sleep 30"
wait_for c "heatmap of weights" || fail "no heatmap on a terminal" c
tmx capture-pane -e -p -t c | grep -q $'\e\\[[0-9;]*48;' || fail "--color auto did not colour a terminal" c
tmx new-session -d -s n -x 140 -y 60 "NO_COLOR=1 $attn run examples/masked_4x4.json --steps weights; sleep 30"
wait_for n "heatmap of weights" || fail "no heatmap with NO_COLOR" n
tmx capture-pane -e -p -t n | grep -q $'\e\\[[0-9;]*48;' && fail "NO_COLOR was not honoured" n
tmx capture-pane -p -t n | grep -qF "t0  ██ ·· ·· ··" || fail "no shaded heatmap with NO_COLOR" n
echo "step_tmux: --step (Enter, b, q) and --color auto / NO_COLOR checked in a tmux terminal"
