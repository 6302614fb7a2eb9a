#!/usr/bin/env bash
# An error at a terminal wraps to its width (COLUMNS here, 80), under "attn: " with a two-space
# indent, and says the same words; to a pipe it is one whole line. script(1) gives attn a terminal.
# Usage: tty_errors.sh ATTN
set -euo pipefail
attn=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '{"mode": "self", "embedings": [[1, 2]]}\n' >"$work/bad.json"
if ! command -v script >/dev/null; then echo "SKIPPED: script(1) is not installed"; exit 77; fi
piped=$("$attn" run "$work/bad.json" 2>&1 >/dev/null || true)
[[ $(printf '%s\n' "$piped" | wc -l) == 1 ]] || { echo "FAIL: piped, the message is not one line:"; echo "$piped"; exit 1; }
tty=$(COLUMNS=80 script -qec "'$attn' run '$work/bad.json'" /dev/null | tr -d '\r' || true)
lines=$(printf '%s\n' "$tty" | wc -l)
widest=$(printf '%s\n' "$tty" | while IFS= read -r l; do printf '%s\n' "${#l}"; done | sort -n | tail -1)
joined=$(printf '%s\n' "$tty" | sed -e ':a' -e 'N' -e '$!ba' -e 's/\n  / /g')
if [[ $lines -lt 2 || $widest -gt 80 || $joined != "$piped" ]]; then
  echo "FAIL: at a terminal of 80 columns: $lines lines, widest $widest, the same words: $([[ $joined == "$piped" ]] && echo yes || echo no)"
  printf '%s\n' "$tty"
  exit 1
fi
echo "ok: the error wraps to 80 columns at a terminal ($lines lines, widest $widest) and is one line in a pipe"
# a message with a word longer than the line (a deep JSON path) is cut where the line ends
tty=$(cd "$(dirname "$0")/bad" && COLUMNS=80 script -qec "'$attn' run deep-nesting.json" /dev/null | tr -d '\r' || true)
widest=$(printf '%s\n' "$tty" | while IFS= read -r l; do printf '%s\n' "${#l}"; done | sort -n | tail -1)
if [[ $widest -gt 80 || $(printf '%s\n' "$tty" | wc -l) -lt 3 ]]; then echo "FAIL: the deep-nesting error at 80 columns:"; printf '%s\n' "$tty"; exit 1; fi
echo "ok: an error with a 100-character path wraps to 80 columns (widest $widest)"
# --help of attn and of every subcommand, at COLUMNS=80: no line wider
for sub in "" run check diff diagnose cost decode heads tokenize; do
  widest=$(COLUMNS=80 "$attn" $sub --help | python3 -c 'import sys; print(max(len(l.rstrip("\n")) for l in sys.stdin))')
  if [[ $widest -gt 80 ]]; then echo "FAIL: attn $sub --help at COLUMNS=80 has a line of $widest columns"; exit 1; fi
done
echo "ok: attn --help and every subcommand's --help fit 80 columns"
