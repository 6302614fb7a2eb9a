#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then everything from there and from another directory:
# bin/attn's numbers, an installed example run from PREFIX/share/doc/attn, its modules loaded from PREFIX/lib/attn (never the build tree's), the CUDA refusal,
# attn_tracer imported from the prefix with the build tree on no path, `man attn` rendered, and the bash
# and zsh completions completing. Parts whose tool is missing (man, zsh) are named and the test exits
# 77; a failure anywhere exits 1. Nothing outside the temporary prefix is written.
# Usage: install_check.sh CMAKE BUILD_DIR SOURCE_DIR PYTHON PYTHON_MODULE(1|0) CUDA(1|0)
set -u
cmake=$1 build=$(cd "$2" && pwd) src=$(cd "$3" && pwd) python=$4 python_module=$5 cuda=$6
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix attn=$tmp/prefix/bin/attn
fails=0 skipped=()
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
skip() { echo "SKIPPED: $*"; skipped+=("$1"); }

# ---- the install itself ----
if ! "$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1; then
  cat "$tmp/install.log"
  echo "FAIL: cmake --install $build --prefix $prefix"
  exit 1
fi
for f in bin/attn lib/attn/attn_sentencepiece.so lib/attn/attn_unicode.so share/man/man1/attn.1 \
         share/bash-completion/completions/attn share/zsh/site-functions/_attn; do
  [[ -f $prefix/$f ]] || fail "not installed: PREFIX/$f"
done
for f in share/doc/attn/examples/cat_sat.json share/doc/attn/examples/checkpoints/tiny-bert/vocab.txt share/doc/attn/docs/input-format.md; do
  [[ -f $prefix/$f ]] || fail "not installed: PREFIX/$f"
done
mkdir -p "$tmp/elsewhere" && cd "$tmp/elsewhere" || exit 1

# ---- an installed example (and the checkpoint it reads), run in PREFIX/share/doc/attn as the man page says ----
out=$(cd "$prefix/share/doc/attn" && "$attn" run examples/bert_pair.json 2>&1)
grep -q "\[CLS\]" <<<"$out" || fail "installed attn run examples/bert_pair.json in PREFIX/share/doc/attn: no [CLS] in: ${out:0:400}"

# ---- the installed attn, run from another directory; its modules from PREFIX/lib/attn ----
out=$("$attn" run "$src/examples/cat_sat.json" 2>&1)
grep -q "cat  0.6405  0.3595" <<<"$out" || fail "installed attn run examples/cat_sat.json: no 'cat  0.6405  0.3595' row in: $out"
# loads_module EXAMPLE MODULE: the installed attn's output is the build tree's, and MODULE came from the prefix
loads_module() {
  local example=$1 module=$2
  LD_DEBUG=files "$attn" run "$src/examples/$example" >"$tmp/out" 2>"$tmp/ld" || { fail "installed attn run examples/$example: exit $?: $(grep -v '^ *[0-9]*:' "$tmp/ld")"; return; }
  "$build/attn" run "$src/examples/$example" 2>&1 | cmp -s - "$tmp/out" || fail "installed attn run examples/$example differs from the build tree's"
  grep -q "file=$prefix/lib/attn/$module \[0\];  dynamically loaded" "$tmp/ld" ||
    fail "examples/$example: $module was not loaded from PREFIX/lib/attn: $(grep "file=.*$module" "$tmp/ld" | head -1)"
}
loads_module bert_pair.json attn_unicode.so     # BERT's vocab.txt: the Unicode module
loads_module t5_encoder.json attn_sentencepiece.so  # T5's spiece.model: the SentencePiece module

# ---- --backend cuda: refused with exit 2 and a message where no GPU is; the module from the prefix ----
gpu=""
if [[ -e /dev/nvidia0 ]]; then gpu="/dev/nvidia0 exists"
elif command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q "^GPU [0-9]*:"; then gpu="nvidia-smi -L lists one"; fi
LD_DEBUG=files "$attn" run "$src/examples/cat_sat.json" --backend cuda >/dev/null 2>"$tmp/ld"
rc=$?
err=$(grep -v '^ *[0-9]*:' "$tmp/ld")
if [[ $cuda == 1 ]]; then
  cuda_module=$(cd "$build" && ls libattn_cuda.so attn_cuda.so 2>/dev/null | head -1)
  grep -q "file=$prefix/lib/attn/$cuda_module \[0\];  dynamically loaded" "$tmp/ld" ||
    fail "--backend cuda: the CUDA module was not loaded from PREFIX/lib/attn: $err"
  expected="no usable CUDA device|no CUDA device on this machine"
else
  expected="this build of attn has no CUDA backend"
fi
if [[ -n $gpu ]]; then
  echo "(a CUDA device is present, $gpu: the refusal of --backend cuda is checked only on a machine without one)"
elif [[ $rc -ne 2 ]] || ! grep -Eq "^attn: --backend cuda: ($expected)" <<<"$err"; then
  fail "installed attn --backend cuda without a GPU: exit $rc, expected 2 and 'attn: --backend cuda: $expected': $err"
fi

# ---- attn_tracer from the prefix: python3 -I (no PYTHONPATH, no user site, no current directory) ----
if [[ $python_module == 1 ]]; then
  site_dir=$prefix/$("$python" "$src/scripts/python_site_dir.py" "$prefix")
  LD_DEBUG=files "$python" -I - "$site_dir" "$prefix" "$src" >"$tmp/py" 2>"$tmp/ld" <<'EOF'
import site, sys
site_dir, prefix, src = sys.argv[1:]
site.addsitedir(site_dir)
import attn_tracer
assert attn_tracer.__file__.startswith(prefix + "/"), f"attn_tracer imported from {attn_tracer.__file__}, not the prefix"
w = attn_tracer.run(src + "/examples/cat_sat.json").steps["weights"].array
assert round(float(w[0, 0]), 4) == 0.6405 and round(float(w[0, 1]), 4) == 0.3595, f"cat/sat weights {w}"
bert = attn_tracer.run(src + "/examples/bert_pair.json").config
print("ok", attn_tracer.__file__, bert["tokens"] if "tokens" in bert else "")
EOF
  [[ $? -eq 0 ]] || fail "attn_tracer from the prefix: $(cat "$tmp/py"; grep -v '^ *[0-9]*:' "$tmp/ld")"
  grep -q "file=$prefix/lib/attn/attn_unicode.so \[0\];  dynamically loaded by $site_dir/attn_tracer/_core" "$tmp/ld" ||
    fail "attn_tracer from the prefix did not load PREFIX/lib/attn/attn_unicode.so: $(grep "file=.*attn_unicode.so" "$tmp/ld" | head -1)"
else
  echo "(attn_tracer was not built in this build: not installed, not checked)"
fi

# ---- the man page: found from PATH as `man attn` finds it, rendered without a warning ----
if command -v man >/dev/null && command -v groff >/dev/null; then
  page=$(env -u MANPATH PATH="$prefix/bin:$PATH" man -w attn 2>&1)
  [[ $page == "$prefix/share/man/man1/attn.1" ]] || fail "man -w attn with PREFIX/bin on PATH: '$page', expected PREFIX/share/man/man1/attn.1"
  warnings=$(MANWIDTH=80 man -l "$prefix/share/man/man1/attn.1" 2>&1 >"$tmp/man.txt"; groff -ww -man -Tutf8 "$prefix/share/man/man1/attn.1" 2>&1 >/dev/null)
  [[ -z $warnings ]] || fail "man -l / groff -ww warn on attn.1: $warnings"
  for want in "attn run \[OPTIONS\] file" "^   attn tokenize$" "--format TEXT:\{text,json,markdown,svg,html\}" "cat  0.6405  0.3595"; do
    grep -Eq -- "$want" "$tmp/man.txt" || fail "man attn: no line matching '$want'"
  done
  grep -q "$prefix/share/doc/attn/examples" "$tmp/man.txt" || fail "man attn: no FILES line naming PREFIX/share/doc/attn/examples"
  # every option's spec whole on its tag line: none split, as "[0 -" / "12] decimals", into its description
  grep -Eq -- "--precision INT:INT in \[0 - 12\]$" "$tmp/man.txt" || fail "man attn: --precision's spec is split: $(grep -A1 -- "--precision" "$tmp/man.txt")"
  # no command's section lists its options twice (once as entries, once as the raw --help block)
  dup=$(awk '/^   attn [a-z]+$/ { s = $2 } s != "" && match($0, /^ +--[a-z-]+/) { o = $1; if (seen[s, o]++ == 1) print "attn " s " lists " o " twice" }' "$tmp/man.txt")
  [[ -z $dup ]] || fail "man attn: $dup"
else
  skip "man" "(man-db and groff-base are not installed: scripts/setup.sh --tests)"
fi

# ---- bash completion: the installed file sourced, _attn called as bash calls it ----
cat >"$tmp/complete.bash" <<'EOF'
source "$1" || exit 1
c() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _attn; echo "$*|${COMPREPLY[*]}"; }
c attn r; c attn ""; c attn run x.json --for; c attn run x.json --format ""; c attn run x.json --format = ma
c attn check x.json --format ""; c attn run x.json --precision ""; c attn run --mistake scale-s; c attn diff --a
EOF
bash_out=$(bash --norc --noprofile "$tmp/complete.bash" "$prefix/share/bash-completion/completions/attn" 2>&1)
expect_completion() {  # WORDS WANTED: the completion of WORDS is exactly WANTED
  grep -qxF "$1|$2" <<<"$bash_out" || fail "bash: '$1<TAB>' gives '$(grep -F "$1|" <<<"$bash_out" | cut -d'|' -f2-)', expected '$2'"
}
expect_completion "attn r" "run"
expect_completion "attn run x.json --format " "text json markdown svg html"
expect_completion "attn run x.json --format = ma" "markdown"
expect_completion "attn check x.json --format " "text json"
expect_completion "attn run x.json --precision " ""
expect_completion "attn run --mistake scale-s" "scale-sqrt-c"
expect_completion "attn diff --a" "--atol"
grep -F "attn run x.json --for|" <<<"$bash_out" | grep -qw -- "--format" || fail "bash: 'attn run x.json --for<TAB>' does not offer --format: $bash_out"
subs=$(grep -F "attn |" <<<"$bash_out" | cut -d'|' -f2)
for s in run backward check diff diagnose cost decode heads tokenize; do
  grep -qw "$s" <<<"$subs" || fail "bash: 'attn <TAB>' does not offer $s: '$subs'"
done

# ---- zsh completion: parses, and completes in an interactive zsh (compinit, on a pseudo-terminal) ----
# A listing is read up to its last entry ("text"); a completed line is run (attn is a function there
# that prints its words), so what TAB wrote is read back whole rather than as the terminal's redrawing.
cat >"$tmp/complete.zsh" <<'EOF'
zmodload zsh/zpty || exit 1
zpty z 'zsh -f -i'
# (the markers are split in the typed line, so that only the command's output matches them)
zpty -w z "PS1='> '; fpath=($1 \$fpath); autoload -U compinit; compinit -u -D; attn() { print -r -- \"wor\"\"ds:\$*:\" }; print rea\"\"dy"
zpty -r z out '*ready*'
zpty -n -w z $'attn run spec --format \t'
zpty -r z out '*text*' && print -r -- "listed: ${out//$'\n'/ }"
zpty -n -w z $'\C-u'
zpty -w z $'attn dia\t'
zpty -r z out '*words:*:*' && print -r -- "ran: $out"
zpty -w z $'attn run spec --forma\tm\t'
zpty -r z out '*words:*:*' && print -r -- "ran: $out"
zpty -d z
EOF
if command -v zsh >/dev/null; then
  zsh -n "$prefix/share/zsh/site-functions/_attn" || fail "zsh -n: _attn does not parse"
  zsh_out=$(timeout 20 zsh -f "$tmp/complete.zsh" "$prefix/share/zsh/site-functions" 2>&1 | sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g')
  listed=$(grep "^listed: " <<<"$zsh_out")
  for want in text json markdown svg html; do
    grep -qw "$want" <<<"$listed" || fail "zsh: 'attn run spec --format <TAB>' does not list $want: $(cat -v <<<"$zsh_out")"
  done
  grep -q "words:diagnose:" <<<"$zsh_out" || fail "zsh: 'attn dia<TAB>' did not become 'attn diagnose': $(cat -v <<<"$zsh_out")"
  grep -Eq "words:run spec --format[= ]markdown:" <<<"$zsh_out" ||
    fail "zsh: 'attn run spec --forma<TAB>m<TAB>' did not become 'attn run spec --format=markdown': $(cat -v <<<"$zsh_out")"
else
  skip "zsh" "(zsh is not installed: scripts/setup.sh --tests)"
fi

if [[ $fails -gt 0 ]]; then
  echo "$fails failure(s)"
  exit 1
fi
if [[ ${#skipped[@]} -gt 0 ]]; then
  echo "SKIPPED (the rest passed): ${skipped[*]}"
  exit 77
fi
echo "install: bin/attn, its modules, attn_tracer, man attn and the bash and zsh completions all work from $prefix"
