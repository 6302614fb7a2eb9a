#!/usr/bin/env bash
# Prints the README's "what the tool found" table: runs `attn check --format json` on every example
# that carries an expect block and tabulates the tool's verdicts, and its why (the variant of the
# computation that reproduces a document's differing values). Nothing in the table is typed by hand.
# Usage: scripts/check-table.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
attn="${1:-$root/build}/attn"
cd "$root"
echo "| example | walkthrough | printed values checked | differ | largest difference | verdict | why (attn check's variant) |"
echo "|---|---|---|---|---|---|---|"
for f in examples/*.json; do
  grep -q '"expect"' "$f" || continue
  rc=0
  report=$("$attn" check "$f" --format json) || rc=$?
  [[ $rc -le 1 ]] || { echo "check-table: attn check $f exited $rc" >&2; exit 1; }
  /usr/bin/python3 - "$f" "$report" <<'PY'
import json, sys
name, r = sys.argv[1], json.loads(sys.argv[2])
largest = max((s["max_abs_difference"] for s in r["steps"]), default=0)
differ = [f'{s["id"]} {s["differ"]}/{s["checked"]}' for s in r["steps"] if s["differ"]]
verdict = "right" if r["differences"] == 0 else "wrong in " + ", ".join(differ)
why = r["why"]
if why is None:
    because = "—"
elif not why["explained_by"]:
    because = "none explains it"
else:
    best = why["explained_by"]
    because = " or ".join(f'`{v["variant"]}`' for v in best)
    if best[0]["explained"] < why["differing"] or best[0]["broken"]:
        because += f' (in part: {best[0]["explained"]}/{why["differing"]})'
    else:
        because += f' ({best[0]["explained"]}/{why["differing"]})'
print(f'| `{name.split("/")[-1][:-5]}` | {r["title"]} | {r["checked"]} | {r["differences"]} | '
      f'{largest:.4g} | {verdict} | {because} |')
PY
done
