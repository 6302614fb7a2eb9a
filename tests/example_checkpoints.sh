#!/usr/bin/env bash
# The checkpoints in examples/checkpoints are the test script's output, byte for byte: rewrite them
# with tests/reference/make_checkpoints.py --example examples/checkpoints (and read the golden diff).
set -euo pipefail
python=${1:-/usr/bin/python3}
root=$(cd "$(dirname "$0")/.." && pwd)
if ! "$python" -c "import numpy, sentencepiece" 2>/dev/null; then
  echo "SKIPPED: $python lacks numpy or sentencepiece (scripts/setup.sh --tests installs them)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$python" "$root/tests/reference/make_checkpoints.py" --example "$tmp/checkpoints" >/dev/null
# every directory it writes (examples/checkpoints/induction is scripts/train_induction.py's: induction_check.py)
for d in "$tmp"/checkpoints/*/; do
  diff -r "$d" "$root/examples/checkpoints/$(basename "$d")"
done
echo "examples/checkpoints: $(cd "$tmp/checkpoints" && echo *) identical to what make_checkpoints.py --example writes"
