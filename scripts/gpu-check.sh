#!/usr/bin/env bash
# Everything that needs a GPU, in one go, on a machine that has one (CI has none):
#   build with CUDA in build-gpu, then bench/gpu.py (alone on the machine: its figures are timings),
#   then side by side the whole test suite (ctest), the per-primitive test and the CPU/CUDA parity
#   test, and compute-sanitizer's memcheck, racecheck and synccheck on every example with --backend cuda.
# Usage: scripts/gpu-check.sh LOG_DIR [SECONDS]
#   LOG_DIR receives build.log, bench.txt, ctest.log, primitives.log, parity.log, sanitizer.log and summary.txt
#   (with the bytes attn run moves over PCIe at B = 8, T = 1024);
#   SECONDS (default 570) is the whole run's budget: what has not finished by then is stopped, and said.
# Environment: ATTN_DEPS_PREFIX, a folder holding the Debian packages' files (usr/include, usr/lib/...)
# where the machine has no such packages installed (dpkg -x of libcli11-dev, libfmt-dev, nlohmann-json3-dev,
# catch2, libeigen3-dev, libpcre2-dev, libsentencepiece-dev, libicu-dev and their libraries, pkgconf; the static
# libraries that CMake configs name, libCatch2WithMain.a and libpcre2-8.a, must stay: they are what the build links).
set -uo pipefail
cd "$(dirname "$0")/.."
log=${1:?usage: scripts/gpu-check.sh LOG_DIR [SECONDS]}
budget=${2:-570}
mkdir -p "$log"
start=$(date +%s)
left() { echo $(( budget - ($(date +%s) - start) )); }
summary() { echo "$*" | tee -a "$log/summary.txt"; }

summary "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1); $(g++ --version | head -1); $(nvcc --version | tail -1)"
cmake_args=(-S . -B build-gpu -G Ninja -DATTN_CUDA=ON -DATTN_PYTHON="$(command -v python3)")
if [[ -n "${ATTN_DEPS_PREFIX:-}" ]]; then
  D=$(cd "$ATTN_DEPS_PREFIX" && pwd)
  lib=$D/usr/lib/x86_64-linux-gnu
  export PATH="$PATH:$D/usr/bin" LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PKG_CONFIG_PATH="$lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$D" CMAKE_POLICY_VERSION_MINIMUM=3.5
  command -v pkg-config >/dev/null || ln -sf "$D/usr/bin/pkgconf" "$D/usr/bin/pkg-config"
  cmake_args+=(-DCMAKE_PREFIX_PATH="$D/usr" -DCMAKE_CXX_FLAGS="-isystem $D/usr/include" -DCMAKE_MODULE_LINKER_FLAGS="-L$lib")
fi
{ cmake "${cmake_args[@]}" && ninja -C build-gpu; } > "$log/build.log" 2>&1
rc=$?
summary "build: rc $rc ($(( $(date +%s) - start )) s)"
[[ $rc -eq 0 ]] || { tail -40 "$log/build.log"; exit 1; }

PYTHONUNBUFFERED=1 timeout $(( $(left) / 4 )) python3 bench/gpu.py --build build-gpu > "$log/bench.txt" 2>&1
summary "bench: rc $? ($(( $(date +%s) - start )) s)"

timeout 150 build-gpu/tests/attn_parity examples > "$log/parity.log" 2>&1
summary "parity: rc $? ($(( $(date +%s) - start )) s): $(tail -1 "$log/parity.log")"
timeout 100 build-gpu/tests/attn_primitives > "$log/primitives.log" 2>&1
summary "primitives: rc $? ($(( $(date +%s) - start )) s): $(grep '^summary' "$log/primitives.log")"
# what a run at B = 8, T = 1024, C = 768, H = 12 moves over PCIe, as attn run reports it
big=$(mktemp --suffix .json)
echo '{"mode": "causal", "heads": 12, "random": {"seed": 0, "B": 8, "T": 1024, "C": 768, "fused": true, "output_projection": true}}' > "$big"
for args in "" "--steps weights" "--fused"; do
  timeout 120 build-gpu/attn run "$big" --backend cuda --timings $args > "$log/run.txt" 2>&1
  summary "pcie, attn run --backend cuda --timings $args: $(tail -1 "$log/run.txt")"
  [[ -n $args ]] || summary "$(grep -E '^\[[0-9]+\]|time:' "$log/run.txt" | paste - - | sed -E 's/ +/ /g')"
done
rm -f "$log/run.txt"

# side by side from here: the suite on most cores, the sanitizers on the rest
t=$(( $(left) - 15 ))
( timeout $t ctest --test-dir build-gpu -j 10 --output-on-failure --timeout 300 > "$log/ctest.log" 2>&1; echo "ctest rc $?" >> "$log/ctest.log" ) &
( out=$(timeout $(( t - 5 )) compute-sanitizer --tool memcheck --error-exitcode 99 build-gpu/tests/attn_primitives 2>&1)
  echo "memcheck attn_primitives rc $? $(echo "$out" | grep -E 'ERROR SUMMARY|^summary' | tr '\n' ' ')"
  echo "$out" | grep -B2 -A12 "Invalid\|FAIL" | head -60 ) > "$log/sanitizer-primitives.tmp" 2>&1 &
for tool in memcheck racecheck synccheck; do
  (
    for ex in examples/*.json; do
      [[ $(left) -gt 30 ]] || { echo "$tool: out of time before $ex"; break; }
      for fused in "" --fused; do
        cmd=run
        [[ $ex == *_backward.json && -z $fused ]] && cmd=backward  # the backward pass's kernels too
        out=$(timeout 120 compute-sanitizer --tool $tool --error-exitcode 99 build-gpu/attn $cmd "$ex" --backend cuda $fused 2>&1 >/dev/null)
        r=$?
        echo "$tool $ex $fused rc $r $(echo "$out" | grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^attn:' | head -2 | tr '\n' ' ')"
        [[ $r -eq 0 || $r -eq 2 ]] || echo "$out" | head -40
      done
    done
  ) > "$log/sanitizer-$tool.tmp" 2>&1 &
done
wait
cat "$log"/sanitizer-*.tmp > "$log/sanitizer.log"; rm -f "$log"/sanitizer-*.tmp
summary "$(tail -1 "$log/ctest.log"); $(grep -c ' rc 0 ' "$log/sanitizer.log") sanitizer runs clean, $(grep -E -c ' rc (99|1|3|124|134|139) ' "$log/sanitizer.log") not ($(( $(date +%s) - start )) s)"
grep -E "tests passed|tests failed|The following tests" -A 30 "$log/ctest.log" | head -40 >> "$log/summary.txt"
for t in "parity" "backend primitives"; do grep -E "^ *[0-9]+/[0-9]+ Test +#[0-9]+: $t" "$log/ctest.log" >> "$log/summary.txt"; done
cat "$log/summary.txt"
