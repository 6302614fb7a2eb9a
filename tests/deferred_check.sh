#!/usr/bin/env bash
# Deferred steps have the eager bits: every problem's JSON trace (every step, every value) is the
# same byte for byte with deferral on (the default) and off (ATTN_DEFER=0), at sizes where the CPU
# backend defers scores, scaled, masked and weights and streams seeded weights into the projections;
# and a --mistake run too.
# Usage: deferred_check.sh ATTN WORK_DIR
set -u
attn=$1 work=$2/deferred
mkdir -p "$work"
fail=0
check() {  # name, JSON input, extra arguments
  local name=$1 input=$2
  shift 2
  printf '%s' "$input" >"$work/$name.json"
  ATTN_DEFER=0 "$attn" run "$work/$name.json" --format json "$@" >"$work/$name.eager" 2>&1
  local rc_eager=$?
  "$attn" run "$work/$name.json" --format json "$@" >"$work/$name.deferred" 2>&1
  local rc=$?
  if [[ $rc != "$rc_eager" ]] || ! cmp -s "$work/$name.eager" "$work/$name.deferred"; then
    echo "FAIL $name: deferred (exit $rc) and eager (exit $rc_eager) traces differ"; fail=1
  else
    echo "ok   $name ($(wc -c <"$work/$name.eager") bytes, exit $rc)"
  fi
}
r='"seed": 5, "T": 130, "C": 32, "output_projection": true'
check causal "{\"mode\": \"causal\", \"heads\": 4, \"random\": {$r}}"
check self_batched "{\"mode\": \"self\", \"heads\": 4, \"random\": {$r, \"B\": 2}, \"padding\": {\"lengths\": [130, 77]}}"
check cross "{\"mode\": \"cross\", \"heads\": 4, \"random\": {$r, \"S\": 150, \"Cs\": 24, \"dv\": 8}}"
check bottom_right "{\"mode\": \"causal\", \"causal_align\": \"bottom-right\", \"heads\": 2, \"q\": $(python3 -c 'import json,random; random.seed(1); print(json.dumps([[random.uniform(-1,1) for _ in range(8)] for _ in range(100)]))'), \"k\": $(python3 -c 'import json,random; random.seed(2); print(json.dumps([[random.uniform(-1,1) for _ in range(8)] for _ in range(700)]))')}"
check fill "{\"mode\": \"causal\", \"heads\": 4, \"random\": {$r}, \"mask_fill\": -1e9}"
check scale_none "{\"mode\": \"causal\", \"heads\": 4, \"scale\": \"none\", \"random\": {$r}}"
check masked_rows "{\"mode\": \"causal\", \"causal_align\": \"bottom-right\", \"heads\": 4, \"masked_row\": \"zeros\", \"random\": {$r, \"B\": 1}, \"padding\": {\"lengths\": [60]}}"
# rows with every key blocked under the NaN policy: NaN weights and context rows, as stated, not an overflow
# (T · C = 256 · 256: v's heads and the context are deferred re-layouts)
check masked_rows_nan "{\"mode\": \"self\", \"heads\": 4, \"masked_row\": \"nan\", \"random\": {\"seed\": 5, \"T\": 256, \"C\": 256}, \"attn_mask\": {\"keep\": $(python3 -c 'import json; print(json.dumps([[(i % 9 != 4) and j <= i for j in range(256)] for i in range(256)]))')}}"
# queries that see no key at all (T > S, bottom-right), given the uniform policy: their weights are 1/S
check empty_rows_uniform "{\"mode\": \"causal\", \"causal_align\": \"bottom-right\", \"masked_row\": \"uniform\", \"heads\": 2, \"q\": $(python3 -c 'import json,random; random.seed(3); print(json.dumps([[random.uniform(-1,1) for _ in range(8)] for _ in range(700)]))'), \"k\": $(python3 -c 'import json,random; random.seed(4); print(json.dumps([[random.uniform(-1,1) for _ in range(8)] for _ in range(100)]))')}"
check mistake_after "{\"mode\": \"causal\", \"heads\": 4, \"random\": {$r}}" --mistake mask-after-softmax
check mistake_axis "{\"mode\": \"causal\", \"heads\": 4, \"random\": {$r}}" --mistake softmax-wrong-axis
# the causal and padding keep pattern is a rule, never held: flipped, and per batch row
check mistake_flipped "{\"mode\": \"causal\", \"heads\": 4, \"masked_row\": \"zeros\", \"random\": {$r, \"B\": 2}, \"padding\": {\"lengths\": [130, 70]}}" --mistake mask-flipped
check padded_causal "{\"mode\": \"causal\", \"heads\": 2, \"random\": {\"seed\": 4, \"B\": 3, \"T\": 300, \"C\": 16}, \"padding\": {\"lengths\": [300, 120, 200]}}"
# fused W_qkv with T·dk = 64·1024 entries per part: q, k and v are deferred column slices of qkv
check fused "{\"mode\": \"causal\", \"heads\": 8, \"random\": {\"seed\": 5, \"T\": 64, \"C\": 1024, \"fused\": true}}"
# seeded weights streamed into a product of a few rows (B·T = 8, k in blocks of 16 rows), and
# materialised under ATTN_DEFER=0
check few_rows "{\"mode\": \"multi-head\", \"heads\": 4, \"random\": {\"seed\": 3, \"B\": 2, \"T\": 4, \"C\": 72, \"fused\": true, \"output_projection\": true}}"
check few_rows_separate "{\"mode\": \"cross\", \"random\": {\"seed\": 3, \"T\": 3, \"S\": 5, \"C\": 33, \"Cs\": 17, \"output_projection\": true}}"
# today's variants: the products read rotated heads (a plain tensor) and a fused qkv with positions added
check window_padded "{\"mode\": \"causal\", \"heads\": 2, \"window\": 37, \"masked_row\": \"zeros\", \"random\": {\"seed\": 7, \"B\": 2, \"T\": 300, \"C\": 16}, \"padding\": {\"lengths\": [300, 150]}}"
check alibi_capped "{\"mode\": \"causal\", \"heads\": 3, \"alibi\": true, \"softcap\": 30, \"random\": {\"seed\": 8, \"B\": 2, \"T\": 200, \"C\": 24}}"
check rope_fused "{\"mode\": \"causal\", \"heads\": 4, \"random\": {\"seed\": 6, \"B\": 2, \"T\": 150, \"C\": 64, \"fused\": true}, \"positions\": \"sinusoidal\", \"rope\": {\"style\": \"interleaved\", \"dims\": 8, \"offset\": 7}}"
# a kept score of inf (a mistaken run may hold one): its row's 1/sum is NaN, and the whole row with it
check nan_row "{\"mode\": \"causal\", \"random\": {\"seed\": 1, \"T\": 256, \"C\": 2}, \"weights\": {\"W_q\": \"identity\", \"W_k\": \"identity\", \"W_v\": \"identity\"}, \"embeddings\": $(python3 -c 'import json; print(json.dumps([[2e19, 0] for _ in range(256)]))')}" --mistake scale-missing
check overflow "{\"mode\": \"self\", \"heads\": 4, \"random\": {$r}, \"embeddings\": $(python3 -c 'import json; print(json.dumps([[1e21 if (i+j)%7==0 else 0.5 for j in range(32)] for i in range(130)]))')}"
# the same bytes on 1 and 3 threads and with every kernel this CPU runs (fixed chunks, handed out
# dynamically; the blockwise packing of a generated weight by two readers; each kernel's fma chains)
vary() {  # name: compares runs against the deferred trace written above
  local name=$1 want="$work/$1.deferred" bad=0
  for threads in 1 3; do
    "$attn" run "$work/$name.json" --format json --threads "$threads" >"$work/$name.t$threads" 2>&1
    cmp -s "$want" "$work/$name.t$threads" || { echo "FAIL $name: --threads $threads differs"; bad=1; }
  done
  for kernel in portable avx2 avx512; do  # (one this CPU lacks runs the widest it has)
    ATTN_GEMM_KERNEL=$kernel "$attn" run "$work/$name.json" --format json >"$work/$name.$kernel" 2>&1
    cmp -s "$want" "$work/$name.$kernel" || { echo "FAIL $name: ATTN_GEMM_KERNEL=$kernel differs"; bad=1; }
  done
  if [[ $bad == 0 ]]; then echo "ok   $name: the same bytes on 1 and 3 threads and every kernel"; else fail=1; fi
}
vary fused
vary padded_causal
vary masked_rows_nan
exit $fail
