#!/usr/bin/env bash
# "checkpoint": {"model": "org/name"} and `attn tokenize org/name` find the model in a cache laid out as
# the hub's client writes it (refs/<revision> naming a commit, snapshots/<commit>/ holding symlinks
# into blobs/), through HF_HUB_CACHE, HF_HOME and the default under HOME; a model or revision not
# cached, a malformed id and "path" with "model" are refused with exit 2 and what was searched.
# Usage: hub_cache_check.sh ATTN SOURCE_DIR WORK_DIR
set -u
attn=$1 src=$(cd "$2" && pwd) work=$3/hub-cache
rm -rf "$work" && mkdir -p "$work"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# a cache holding examples/checkpoints/tiny-llama as org "tiny", name "llama", at two commits
make_cache() {  # make_cache ROOT
  local repo=$1/models--tiny--llama c1=0123456789abcdef0123456789abcdef01234567 c2=89abcdef0123456789abcdef0123456789abcdef
  mkdir -p "$repo/blobs" "$repo/refs" "$repo/snapshots/$c1" "$repo/snapshots/$c2"
  for f in "$src"/examples/checkpoints/tiny-llama/*; do
    local blob
    blob=$(sha256sum "$f" | cut -c1-64)
    cp "$f" "$repo/blobs/$blob"
    ln -s "../../blobs/$blob" "$repo/snapshots/$c1/$(basename "$f")"
    ln -s "../../blobs/$blob" "$repo/snapshots/$c2/$(basename "$f")"
  done
  echo -n "$c1" > "$repo/refs/main"
  mkdir -p "$repo/refs/pr" && echo "$c2" > "$repo/refs/pr/1"
}
make_cache "$work/hf_hub_cache"
make_cache "$work/hf_home/hub"
make_cache "$work/home/.cache/huggingface/hub"

input() { echo "{\"checkpoint\": {$1, \"layer\": 1}, \"sentence\": \"the cat sat\"}" > "$work/in.json"; echo "$work/in.json"; }
want=$("$attn" run "$(input "\"path\": \"$src/examples/checkpoints/tiny-llama\"")" --format json | sed 's/"title": "[^"]*"//; /"note"/d; /checkpoint:/d')

check_found() {  # check_found LABEL ENV... -- JSON_FIELDS
  local label=$1; shift
  local got
  got=$(env "$@" "$attn" run "$(input "$FIELDS")" --format json 2>&1 | sed 's/"title": "[^"]*"//; /"note"/d; /checkpoint:/d')
  [[ "$got" == "$want" ]] && echo "ok   $label" || fail "$label: the trace differs from the same checkpoint by path (${got:0:300})"
}
FIELDS='"model": "tiny/llama"'
check_found "HF_HUB_CACHE" HF_HUB_CACHE="$work/hf_hub_cache" HF_HOME=/nonexistent HOME=/nonexistent
check_found "HF_HOME/hub" -u HF_HUB_CACHE HF_HOME="$work/hf_home" HOME=/nonexistent
check_found "HOME/.cache/huggingface/hub" -u HF_HUB_CACHE -u HF_HOME HOME="$work/home"
FIELDS='"model": "tiny/llama", "revision": "pr/1"'
check_found "a revision under refs/" HF_HUB_CACHE="$work/hf_hub_cache"
FIELDS='"model": "tiny/llama", "revision": "89abcdef0123456789abcdef0123456789abcdef"'
check_found "a commit hash" HF_HUB_CACHE="$work/hf_hub_cache"

FIELDS='"model": "tiny/llama"'
for cmd in "heads:Llama (tiny/llama)" "decode:largest |decoded"; do
  out=$(HF_HUB_CACHE="$work/hf_hub_cache" "$attn" "${cmd%%:*}" "$(input "$FIELDS")" 2>&1)
  rc=$?
  [[ $rc -eq 0 && $out == *"${cmd#*:}"* ]] && echo "ok   attn ${cmd%%:*}" || fail "attn ${cmd%%:*}: exit $rc, ${out:0:300}"
done
out=$(HF_HUB_CACHE="$work/hf_hub_cache" "$attn" tokenize tiny/llama "the cat" 2>&1)
[[ $? -eq 0 && $out == *"the"* ]] && echo "ok   attn tokenize tiny/llama" || fail "attn tokenize tiny/llama: $out"

refuse() {  # refuse LABEL EXPECTED_MESSAGE_START ENV... -- (JSON fields in FIELDS)
  local label=$1 expect=$2; shift 2
  local err rc
  err=$(env "$@" "$attn" run "$(input "$FIELDS")" 2>&1 >/dev/null); rc=$?
  if [[ $rc -ne 2 || $err != "attn: $expect"* ]]; then fail "$label: exit $rc, $err"; else echo "ok   refused: $label"; fi
}
FIELDS='"model": "tiny/gpt5"'
refuse "a model not cached" "checkpoint.model: \"tiny/gpt5\" is not in the model hub's local cache: no $work/hf_hub_cache/models--tiny--gpt5 (chosen by \$HF_HUB_CACHE); attn downloads nothing" HF_HUB_CACHE="$work/hf_hub_cache"
refuse "the default cache named as such" "checkpoint.model: \"tiny/gpt5\" is not in the model hub's local cache: no $work/home/.cache/huggingface/hub/models--tiny--gpt5 (the default, as neither HF_HUB_CACHE nor HF_HOME is set)" -u HF_HUB_CACHE -u HF_HOME HOME="$work/home"
FIELDS='"model": "tiny/llama", "revision": "v2"'
refuse "a revision not cached" "checkpoint.model: revision \"v2\" of \"tiny/llama\" is not cached in $work/hf_hub_cache/models--tiny--llama (refs: main, pr; snapshots: 0123456789ab, 89abcdef0123)" HF_HUB_CACHE="$work/hf_hub_cache"
FIELDS='"model": "llama"'
refuse "a malformed id" "checkpoint.model: expected a model hub id \"org/name\" (e.g. \"meta-llama/Llama-3.2-1B\"), got \"llama\"" HF_HUB_CACHE="$work/hf_hub_cache"
FIELDS='"model": "tiny/llama", "path": "x"'
refuse "path and model" "checkpoint.model: give \"path\"" HF_HUB_CACHE="$work/hf_hub_cache"
FIELDS='"path": "x", "revision": "main"'
refuse "revision without model" "checkpoint.revision: names a revision of \"model\" in the hub's cache; give \"model\" too" HF_HUB_CACHE="$work/hf_hub_cache"
out=$(HF_HUB_CACHE="$work/hf_hub_cache" "$attn" tokenize tiny/none "x" 2>&1); rc=$?
[[ $rc -eq 2 && $out == "attn: tokenize tiny/none: \"tiny/none\" is not in the model hub's local cache"* ]] && echo "ok   refused: attn tokenize of a model not cached" || fail "tokenize tiny/none: exit $rc, $out"
[[ $fails -eq 0 ]] && echo "hub cache: all passed" || { echo "hub cache: $fails failed"; exit 1; }
