#!/usr/bin/env bash
# The trace stays on the GPU: `attn run --backend cuda --steps weights --timings` copies back the
# weights and their row sums and nothing else, and a run showing every step copies each step's values
# once (views share them). Exit 77, saying so, where attn has no CUDA backend or no device.
# Usage: cuda_traffic.sh ATTN WORK_DIR
set -u
attn=$1 work=$2
mkdir -p "$work"
spec=$work/traffic.json
# B = 2, H = 4, T = 64, C = 32: weights [2, 4, 64, 64] = 131072 bytes, row sums [2, 4, 64] = 2048
echo '{"mode": "causal", "heads": 4, "random": {"seed": 1, "B": 2, "T": 64, "C": 32}}' > "$spec"
out=$("$attn" run "$spec" --backend cuda --steps weights --heatmap none --timings 2>&1)
rc=$?
if [[ $rc -eq 2 && $out == *"--backend cuda:"* ]]; then
  echo "SKIPPED (no device): ${out#attn: }"
  exit 77
fi
[[ $rc -eq 0 ]] || { echo "FAIL: attn exited $rc: $out"; exit 1; }
line=$(grep '^cuda: ' <<<"$out")
echo "--steps weights --heatmap none: $line"
# x [2, 64, 32] and W_q, W_k, W_v [32, 32] up: 16384 + 3 · 4096 = 28672 bytes
[[ $line == *"(28672 and 133120 bytes)" ]] || { echo "FAIL: expected 28672 bytes up and 133120 back (the weights and their row sums)"; exit 1; }
# the weights' heatmap marks blocked cells: it reads those cells of the masked step, 4 bytes each,
# and copies nothing else (less than one more [B, H, T, S] step's 131072 bytes)
line=$("$attn" run "$spec" --backend cuda --steps weights --timings | grep '^cuda: ')
echo "--steps weights: $line"
back=$(sed -E 's/.*and ([0-9]+) bytes\)$/\1/' <<<"$line")
(( back > 133120 && back < 133120 + 131072 )) || { echo "FAIL: expected the weights, their row sums and single entries of masked back"; exit 1; }
# every step shown, each copied once: x, q, k, v, q.heads, k.heads, v.heads, k.T, context, merged
# (10 · 16384 bytes; q.view, k.view and v.view share q, k and v's copies), scores, scaled, masked,
# weights (4 · 131072), the [T, S] mask pattern (16384) and the row sums (2048): 706560 bytes
all=$("$attn" run "$spec" --backend cuda --timings | grep '^cuda: ')
echo "every step: $all"
[[ $all == *"(28672 and 706560 bytes)" ]] || { echo "FAIL: expected 28672 bytes up and 706560 back"; exit 1; }
echo "ok: only what is shown is copied back, each step once"
