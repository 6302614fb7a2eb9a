#!/usr/bin/env python3
"""Looks at attn's SVG pictures the way a person would: renders each with rsvg-convert to PNG, then
checks the image's size against the SVG's and that it is not blank (enough distinct colours, with
the viridis cells and the grey of blocked cells present). PNG decoded with the standard library.

Usage: svg_render.py PATH_TO_ATTN SOURCE_DIR
Exit 0 ok, 1 a bad picture, 77 skipped (rsvg-convert absent).
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib


def decode_png(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, height, ctype = 8, b"", 0, 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", chunk[:10])
            assert depth == 8, f"bit depth {depth}"
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    bpp = {2: 3, 6: 4}[ctype]
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    pixels = set()
    for line in rows:
        for i in range(0, stride, bpp):
            pixels.add(tuple(line[i:i + 3]))
    return width, height, pixels


def main():
    attn, src = os.path.abspath(sys.argv[1]), sys.argv[2]
    if shutil.which("rsvg-convert") is None:
        print("SKIPPED: rsvg-convert is not installed (Debian librsvg2-bin; scripts/setup.sh --tests installs it)")
        return 77
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([attn, "run", "examples/cross_translation.json", "--svg-dir", tmp, "--heatmap", "scores,weights"],
                       cwd=src, check=True, stdout=subprocess.DEVNULL)
        subprocess.run([attn, "run", "examples/masked_4x4.json", "--svg-dir", os.path.join(tmp, "masked")],
                       cwd=src, check=True, stdout=subprocess.DEVNULL)
        files = sorted(os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith(".svg"))
        files += sorted(os.path.join(tmp, "masked", f) for f in os.listdir(os.path.join(tmp, "masked")) if f.endswith(".svg"))
        names = [os.path.basename(f) for f in files]
        want = ["scores.h0.svg", "scores.h1.svg", "weights.h0.svg", "weights.h1.svg", "mask.svg", "weights.svg"]
        if names != want:
            print(f"FAIL: pictures {names}, expected {want}")
            failures += 1
        for svg in files:
            text = open(svg).read()
            w, h = map(int, re.search(r'<svg [^>]*width="(\d+)" height="(\d+)"', text).groups())
            png = svg[:-4] + ".png"
            subprocess.run(["rsvg-convert", svg, "-o", png], check=True)
            pw, ph, colours = decode_png(png)
            ok = (pw, ph) == (w, h) and len(colours) >= 20 and (230, 230, 230) in colours and (255, 255, 255) in colours
            print(f"{'ok  ' if ok else 'FAIL'} {os.path.relpath(svg, tmp):18s} {pw}x{ph} px, {len(colours)} distinct colours")
            failures += 0 if ok else 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
