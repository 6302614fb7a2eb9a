#!/usr/bin/env bash
# One case of the bad-input catalogue (tests/bad/catalogue.tsv): attn must exit 2 (never 3, an
# internal error, never a crash), print exactly "attn: <message>" on stderr and nothing on stdout.
# Usage: bad_check.sh ATTN BAD_DIR WORK_DIR NAME
set -u
attn=$1 bad=$2 work=$3 name=$4
line=$(grep -P "^\Q$name\E\t" "$bad/catalogue.tsv")
IFS=$'\t' read -r _ args stdin expect <<<"$line"
dir=$bad
if [[ $name == huge-file ]]; then
  dir=$work
  truncate -s 600M "$work/huge.json"  # sparse: refused from its size, never read
fi
cd "$dir" || exit 1
# shellcheck disable=SC2086  # the catalogue's arguments are split on purpose
case $stdin in
  closed) "$attn" $args <&- >"$work/bad-$name.out" 2>"$work/bad-$name.err" ;;
  empty) "$attn" $args </dev/null >"$work/bad-$name.out" 2>"$work/bad-$name.err" ;;
  *) "$attn" $args >"$work/bad-$name.out" 2>"$work/bad-$name.err" ;;
esac
rc=$?
[[ $name == huge-file ]] && rm -f "$work/huge.json"
err=$(cat "$work/bad-$name.err")
if [[ $rc != 2 ]]; then
  echo "FAIL $name: attn $args exited $rc (expected 2)"; echo "stderr: $err"; exit 1
fi
if [[ $err != "attn: $expect" ]]; then
  printf 'FAIL %s: stderr differs\n  expected: attn: %s\n  got:      %s\n' "$name" "$expect" "$err"; exit 1
fi
if [[ -s $work/bad-$name.out ]]; then
  echo "FAIL $name: printed on stdout although the input was refused"; exit 1
fi
echo "ok $name: exit 2, attn: $expect"
