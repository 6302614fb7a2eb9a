#!/usr/bin/env python3
"""The house's two rules about src/attn/, checked: every source file is named in docs/layout.md, and
every #include "attn/..." runs down the layers (a folder includes only its own layer and the ones
below it). The layers, lowest first, are LAYERS below; docs/layout.md draws the same list.

Exit 1 naming each file missing from docs/layout.md, each file in a folder with no layer, and each
include that runs up (file, line, what it includes); 0 otherwise. `ctest -R layers` runs it.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Lowest first. A folder may include its own layer and every layer below it, never one above.
LAYERS = [
    ["core"],                                        # the vocabulary: depends on nothing above it
    ["io"],                                          # files: npy, JSON reading, trace files, module paths
    ["numerics"],                                    # the backends and the numeric tables
    ["model/formats", "model/tokenizers", "model/families"],
    ["model/architectures"],                         # a checkpoint's layers, by its family's features
    ["pipeline"],                                    # the passes: spec + backend -> trace
    ["tools", "model/tools"],                        # check, diff, diagnose, cost, explain; heads, generate
    ["spec"],                                        # an input read: JSON -> Spec (a checkpoint's runs its lower layers)
    ["render"],                                      # trace (and tools' results) -> a stream
]
SOURCE = re.compile(r".*\.(cpp|hpp|cu|cuh|hpp\.in)$")


def folder(path):
    """src/attn/model/tools/heads.cpp -> model/tools; src/attn/numerics/cpu/gemm.cpp -> numerics."""
    parts = pathlib.PurePosixPath(path).relative_to("src/attn").parts[:-1]
    if not parts:
        return ""
    return "/".join(parts[:2]) if parts[0] == "model" else parts[0]


def main():
    rank = {f: i for i, layer in enumerate(LAYERS) for f in layer}
    files = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "src" / "attn").rglob("*") if p.is_file() and SOURCE.match(p.name))
    layout = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    words = re.findall(r"[\w.]+", layout)
    named = set(words) | {w.split(".")[0] for w in words}  # "gemm" or "gemm.cpp" names gemm.cpp and gemm.hpp
    problems = []
    for f in files:
        name = pathlib.PurePosixPath(f).name
        stem = name.split(".")[0]
        if name not in named and stem not in named:
            problems.append(f"{f}: not named in docs/layout.md (add it, with what it holds, under its folder)")
        if folder(f) not in rank:
            problems.append(f"{f}: its folder '{folder(f)}' is not one of scripts/layers.py's layers")
    for f in files:
        here = rank.get(folder(f))
        if here is None:
            continue
        for n, line in enumerate((ROOT / f).read_text(encoding="utf-8").splitlines(), 1):
            m = re.match(r'\s*#\s*include\s+"attn/([^"]+)"', line)
            if not m or m.group(1) == "version.hpp":
                continue
            there = rank.get(folder("src/attn/" + m.group(1)))
            if there is not None and there > here:
                problems.append(f"{f}:{n}: includes attn/{m.group(1)}, a layer above {folder(f)}/ ({LAYERS[there][0]} over {LAYERS[here][0]})")
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s): docs/layout.md names every source file, and includes run down the layers", file=sys.stderr)
        return 1
    print(f"{len(files)} source files in {len(rank)} folders: all named in docs/layout.md, every include runs down the layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
