#!/usr/bin/env bash
# The one command that writes golden/: runs attn for every line of golden/MANIFEST and rewrites only
# the files whose bytes changed. Refuses under CI. Read `git diff golden/` before committing.
# Usage: scripts/update-goldens.sh [BUILD_DIR]   (default: build; builds attn first)
set -euo pipefail
if [[ -n "${CI:-}" ]]; then
  echo "update-goldens: refusing to run under CI (CI=$CI): goldens are written by a person who reads the diff" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
cd "$root"
cmake --build "$build" --target attn >/dev/null
attn="$build/attn"
changed=0
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
while read -r golden args; do
  [[ -z "$golden" || "$golden" == \#* ]] && continue
  want=0
  if [[ "$args" == exit=* ]]; then
    want=${args%% *}
    want=${want#exit=}
    args=${args#* }
  fi
  rc=0
  # shellcheck disable=SC2086  # the manifest's arguments are split on purpose
  env -u COLUMNS "$attn" $args >"$tmp" || rc=$?  # 80 columns, as the golden tests run it
  if [[ "$rc" != "$want" ]]; then
    echo "update-goldens: attn $args exited $rc, the manifest says $want; golden/$golden left as it was" >&2
    exit 1
  fi
  if ! cmp -s "$tmp" "golden/$golden"; then
    cat "$tmp" >"golden/$golden"
    echo "updated golden/$golden"
    changed=$((changed + 1))
  fi
done <golden/MANIFEST
echo "update-goldens: $changed file(s) changed; read them with: git diff golden/"
