#!/usr/bin/env bash
# Nothing of the user's is overwritten or deleted: --dump and --svg-dir refuse a directory holding
# files attn did not write (exit 2, naming the first), replace attn's own earlier output as a whole
# (stale files included), and write anyway with --force, leaving the user's other files alone.
# Usage: output_dir_check.sh ATTN SOURCE_DIR WORK_DIR
set -u
attn=$1 src=$2 work=$3/output-dir
rm -rf "$work" && mkdir -p "$work"
cd "$src" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

# a student's own work in the directory: refused, untouched
mkdir "$work/mine" && printf 'my weights' >"$work/mine/weights.npy" && printf 'my q' >"$work/mine/q.npy"
err=$("$attn" run examples/cat_sat.json --dump "$work/mine" 2>&1 >/dev/null); rc=$?
[[ $rc == 2 ]] || fail "--dump into a directory of the user's files exited $rc"
[[ $err == "attn: --dump $work/mine: the directory holds 2 files attn did not write (q.npy, …); attn writes only into a new or empty directory, or one with its own earlier output: choose another, or pass --force to write there anyway" ]] || fail "message: $err"
[[ $(cat "$work/mine/weights.npy") == "my weights" ]] || fail "the user's weights.npy was changed"

# attn's own earlier output is replaced as a whole: a 2-head dump, then a 1-head one
"$attn" run examples/cross_translation.json --dump "$work/dump" >/dev/null || fail "first dump"
[[ -f $work/dump/q.view.npy ]] || fail "the 2-head dump has no q.view.npy"
[[ -f $work/dump/inputs/source.npy && -f $work/dump/inputs/W_q.npy ]] || fail "the cross dump has no inputs/source.npy and inputs/W_q.npy"
"$attn" run examples/cat_sat.json --dump "$work/dump" >/dev/null || fail "second dump into attn's own output"
[[ ! -e $work/dump/q.view.npy ]] || fail "a stale q.view.npy of the earlier problem stayed"
[[ -f $work/dump/weights.npy && -f $work/dump/trace.json ]] || fail "the second dump is incomplete"
[[ ! -e $work/dump/inputs/source.npy && -f $work/dump/inputs/x.npy ]] || fail "inputs/ was not replaced as a whole (a stale source.npy, or no x.npy)"

# a file the user put into attn's inputs/: refused, then kept by --force (and so is inputs/)
printf 'mine' >"$work/dump/inputs/extra.npy"
"$attn" run examples/cat_sat.json --dump "$work/dump" >/dev/null 2>&1 && fail "a user's file in inputs/ was not protected"
"$attn" run examples/cat_sat.json --dump "$work/dump" --force >/dev/null || fail "--force with a user's file in inputs/"
[[ $(cat "$work/dump/inputs/extra.npy") == mine && -f $work/dump/inputs/x.npy ]] || fail "--force lost the user's inputs/extra.npy or x.npy"
rm "$work/dump/inputs/extra.npy"

# a file added by the user to attn's output: refused, then --force writes and keeps it
printf 'notes' >"$work/dump/notes.txt"
"$attn" run examples/cat_sat.json --dump "$work/dump" >/dev/null 2>&1 && fail "a user's file in attn's output was not protected"
"$attn" run examples/cat_sat.json --dump "$work/dump" --force >/dev/null || fail "--force"
[[ $(cat "$work/dump/notes.txt") == notes ]] || fail "--force deleted the user's notes.txt"
"$attn" run examples/cat_sat.json --dump "$work/mine" --force >/dev/null || fail "--force into the user's directory"
printf 'my q' | cmp -s - "$work/mine/q.npy" && fail "--force did not replace q.npy"

# --svg-dir follows the same rules; a path that is a file is refused
mkdir "$work/pics" && printf 'x' >"$work/pics/weights.svg"
"$attn" run examples/cat_sat.json --svg-dir "$work/pics" >/dev/null 2>&1 && fail "--svg-dir overwrote the user's weights.svg"
[[ $(cat "$work/pics/weights.svg") == x ]] || fail "the user's weights.svg was changed"
"$attn" run examples/cat_sat.json --svg-dir "$work/svg" >/dev/null && "$attn" run examples/masked_4x4.json --svg-dir "$work/svg" >/dev/null ||
  fail "--svg-dir over its own output"
[[ -f $work/svg/mask.svg ]] || fail "--svg-dir did not write"
err=$("$attn" run examples/cat_sat.json --dump "$work/mine/weights.npy" 2>&1 >/dev/null)
[[ $err == "attn: --dump $work/mine/weights.npy: exists and is not a directory" ]] || fail "a file as --dump: $err"
echo "ok: refused, replaced, forced, kept"
