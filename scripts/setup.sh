#!/usr/bin/env bash
# Installs the Debian packages attn needs to build and test, only when they are missing.
# Usage: scripts/setup.sh [--tests] [--bench]
#   --tests adds what the tests use: numpy, torch, tmux, rsvg-convert, chromium with a DevTools
#           client (python3-websocket), clang with its sanitizers, libFuzzer and OpenMP runtime
#   --bench adds that and what bench/run.py uses: Google Benchmark, GNU time, and OpenBLAS, which
#           becomes NumPy's and PyTorch's BLAS (Debian's alternatives), so the anchors are optimised
# Runs apt-get as root, or through sudo otherwise. Downloads nothing else.
set -euo pipefail

tests=0 bench=0
for arg in "$@"; do
  case "$arg" in
    --tests) tests=1 ;;
    --bench) tests=1 bench=1 ;;
    *) echo "setup: unknown option '$arg' (expected --tests or --bench)" >&2; exit 2 ;;
  esac
done

pkgs=(cmake ninja-build g++ pkg-config libcli11-dev libfmt-dev nlohmann-json3-dev catch2 libeigen3-dev)
if [[ $tests -eq 1 ]]; then
  pkgs+=(python3 python3-numpy python3-torch tmux librsvg2-bin chromium python3-websocket clang libclang-rt-14-dev libomp-dev)
fi
if [[ $bench -eq 1 ]]; then
  pkgs+=(libbenchmark-dev time libopenblas0-pthread)
fi

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all packages present"
  exit 0
fi

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
