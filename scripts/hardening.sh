#!/usr/bin/env bash
# Hardening: the whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer (clang), then a
# bounded libFuzzer run over the input path (JSON, .npy and safetensors) seeded from examples/ and the bad-input
# catalogue, then random calls of the Python module built under the same sanitizers. Any sanitizer
# report, crash or hang fails. Run after scripts/setup.sh --tests.
# Usage: scripts/hardening.sh [FUZZ_SECONDS] [MODULE_CALLS]   (default 60, split between the three
# targets; 10000 calls of attn_tracer)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=${1:-60}
module_calls=${2:-10000}
jobs=$(nproc)

echo "== sanitizers: ASan + UBSan build, whole test suite"
# (ATTN_CUDA=OFF: nvcc takes no clang sanitizer flags; the CUDA backend is checked by its parity test.)
# One build for both halves: ATTN_FUZZ adds libFuzzer's coverage instrumentation (fuzzer-no-link, whose
# hooks the sanitizer runtime provides) and the fuzz targets, so the suite and the fuzzers share objects.
cmake -S . -B build-asan -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTN_SANITIZE=ON -DATTN_FUZZ=ON -DATTN_CUDA=OFF >/dev/null
cmake --build build-asan -j "$jobs"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir build-asan --output-on-failure -j "$jobs"

echo "== fuzzing: ${seconds} s over the input path"
fz=build-asan/fuzz-run
rm -rf "$fz" && mkdir -p "$fz"
corpus=$fz/corpus
rm -rf "$corpus" && mkdir -p "$corpus/spec" "$corpus/npy" "$corpus/safetensors"
cp tests/bad/safetensors/*.safetensors "$corpus/safetensors/"
cp examples/*.json tests/bad/*.json "$corpus/spec/"
cp tests/bad/*.npy "$corpus/npy/"
build-asan/attn run examples/cat_sat.json --dump "$corpus/npy-dump" >/dev/null
cp "$corpus"/npy-dump/*.npy "$corpus/npy/"
spec_seconds=$((seconds * 3 / 5))
npy_seconds=$((seconds / 5))
st_seconds=$((seconds - spec_seconds - npy_seconds))
# -timeout: an input taking 10 s is a hang; -rss_limit_mb: a runaway allocation is a bug too
build-asan/fuzz_spec -max_total_time="$spec_seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
  -dict=fuzz/spec.dict -artifact_prefix="$fz/" "$corpus/spec" 2>&1 | tee "$fz"/fuzz_spec.log | grep -E "^#[0-9]+ +(DONE|INITED)|ERROR|crash" || true
build-asan/fuzz_npy -max_total_time="$npy_seconds" -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$fz/" "$corpus/npy" 2>&1 | tee "$fz"/fuzz_npy.log | grep -E "^#[0-9]+ +(DONE|INITED)|ERROR|crash" || true
build-asan/fuzz_safetensors -max_total_time="$st_seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -artifact_prefix="$fz/" "$corpus/safetensors" 2>&1 | tee "$fz"/fuzz_safetensors.log | grep -E "^#[0-9]+ +(DONE|INITED)|ERROR|crash" || true
if ls "$fz"/crash-* "$fz"/timeout-* "$fz"/oom-* >/dev/null 2>&1; then
  echo "hardening: the fuzzer found failing inputs: $(ls "$fz"/crash-* "$fz"/timeout-* "$fz"/oom-* 2>/dev/null)" >&2
  exit 1
fi
for t in spec npy safetensors; do
  echo "fuzz_$t: $(grep -E '^Done [0-9]+ runs' "$fz"/fuzz_$t.log || grep -E '^#[0-9]+ +DONE' "$fz"/fuzz_$t.log | tail -1)"
done

echo "== the Python module's side door: ${module_calls} random calls under ASan + UBSan"
# The module is built with the sanitizers, python3 is not: clang's ASan runtime is preloaded into it,
# and leaks are not looked for (CPython keeps its objects to the end by design).
if [[ -f build-asan/python/attn_tracer/_core$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))') ]]; then
  asan_runtime=$(clang -print-file-name=libclang_rt.asan-x86_64.so)
  LD_PRELOAD=$asan_runtime ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 PYTHONPATH=build-asan/python \
    timeout 600 /usr/bin/python3 tests/python/fuzz_module.py "$root" "$module_calls"
else
  echo "hardening: attn_tracer was not built (python3-dev and pybind11-dev: scripts/setup.sh); its fuzz is skipped"
fi
echo "hardening: sanitizer suite passed, fuzzing found nothing"
