#!/usr/bin/env python3
"""The words that name the layers below a checkpoint's traced layer say an MLP whose weights are all 0
adds nothing (issue 41: "layer 0 (attention and MLP)" for the attention-only induction model).

The induction checkpoint's MLP tensors are read here and must all be 0; its layer 1's x note must say
layer 0's MLP adds nothing. Then three-layer GPT-2 checkpoints are written from its tensors (layer 2 a
copy of layer 1) with every MLP zero, with layer 1's MLP given one nonzero bias, and the random
tiny-gpt2 is run as it is: each note must name exactly the zero MLPs.

Usage: zero_mlp_words.py ATTN_BINARY EXAMPLES_DIR     (exit 0 pass, 1 fail)
"""
import json
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path


def read_safetensors(path):
    """{name: (shape, [floats])} of an F32 safetensors file."""
    data = Path(path).read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        assert entry["dtype"] == "F32", f"{name}: {entry['dtype']}"
        a, b = entry["data_offsets"]
        raw = data[8 + n + a:8 + n + b]
        out[name] = (entry["shape"], list(struct.unpack(f"<{len(raw) // 4}f", raw)))
    return out


def write_safetensors(path, tensors):
    header, blobs, at = {}, [], 0
    for name in sorted(tensors):
        shape, values = tensors[name]
        raw = struct.pack(f"<{len(values)}f", *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    Path(path).write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def x_note(attn, spec):
    """The x step's note (the layer input's provenance), its lines joined."""
    out = subprocess.run([attn, "run", str(spec), "--steps", "x", "--color", "never", "--width", "400"], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"FAIL: attn run {spec}: {out.stderr.strip()}")
    for line in out.stdout.splitlines():
        if "output, of the embeddings" in line:
            return " ".join(line.split())
    raise SystemExit(f"FAIL: attn run {spec}: no x note in\n{out.stdout}")


def main():
    attn, examples = sys.argv[1], Path(sys.argv[2])
    failures = []

    def expect(what, note, words):
        if not note.endswith(words):
            failures.append(f"{what}: expected the note to end with\n    {words}\n  got\n    {note}")

    source = examples / "checkpoints" / "induction"
    tensors = read_safetensors(source / "model.safetensors")
    mlp = [name for name in tensors if ".mlp." in name]
    nonzero = [name for name in mlp if any(v != 0 for v in tensors[name][1])]
    if len(mlp) != 8 or nonzero:
        failures.append(f"induction: expected 8 MLP tensors, all 0; {len(mlp)}, nonzero: {nonzero}")
    expect("induction (layer 1)", x_note(attn, examples / "induction.json"),
           "and layer 0 (attention; its MLP's weights are all 0, so the MLP adds nothing)")
    expect("tiny-gpt2 (random MLPs)", x_note(attn, examples / "tiny_gpt2.json"), "and layer 0 (attention and MLP)")

    with tempfile.TemporaryDirectory() as tmp:
        def three_layers(name, bias_of_layer_1):
            d = Path(tmp) / name
            d.mkdir()
            three = dict(tensors)
            for key, value in tensors.items():
                if key.startswith("h.1."):
                    three["h.2." + key[4:]] = value
            if bias_of_layer_1 is not None:
                shape, values = three["h.1.mlp.c_proj.bias"]
                three["h.1.mlp.c_proj.bias"] = (shape, [bias_of_layer_1] + values[1:])
            write_safetensors(d / "model.safetensors", three)
            config = json.loads((source / "config.json").read_text())
            config["n_layer"] = 3
            (d / "config.json").write_text(json.dumps(config))
            shutil.copy(source / "tokenizer.json", d / "tokenizer.json")
            spec = Path(tmp) / f"{name}.json"
            spec.write_text(json.dumps({"checkpoint": {"path": str(d), "layer": 2}, "sentence": "rain hill fox rain hill fox"}))
            return x_note(attn, spec)

        expect("three layers, every MLP 0", three_layers("zero", None),
               "and layers 0 .. 1 (attention; every layer's MLP has weights all 0, so the MLPs add nothing)")
        expect("three layers, layer 1's c_proj.bias[0] = 0.25", three_layers("one", 0.25),
               "and layers 0 .. 1 (attention and MLP; the MLP of layer 0 has weights all 0 and adds nothing)")

    for f in failures:
        print("FAIL:", f)
    print("zero MLPs: " + ("ok" if not failures else f"{len(failures)} failures"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
