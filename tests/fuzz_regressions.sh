#!/usr/bin/env bash
# Runs attn on every saved fuzzing regression (tests/fuzz-regressions): exit 0, 1 or 2 passes;
# 3 (an internal error) or death by a signal fails.
# Usage: fuzz_regressions.sh ATTN DIR
set -u
attn=$1 dir=$2
n=0 bad=0
for f in "$dir"/*.json "$dir"/*.npy; do
  [[ -e $f ]] || continue
  n=$((n + 1))
  if [[ $f == *.npy ]]; then
    printf '{"embeddings": {"npy": "%s"}, "weights": {"W_q": "identity", "W_k": "identity", "W_v": "identity"}}' "$f" |
      "$attn" run - >/dev/null 2>&1
  else
    "$attn" run "$f" >/dev/null 2>&1
  fi
  rc=$?
  if [[ $rc -gt 2 ]]; then
    echo "FAIL $(basename "$f"): exit $rc"
    bad=$((bad + 1))
  fi
done
echo "fuzz regressions: $n inputs, $bad failed"
[[ $bad -eq 0 ]]
