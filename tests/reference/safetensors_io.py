#!/usr/bin/env python3
"""Safetensors files written and read directly (no `safetensors` package), byte for byte as the
Rust library and the model hub's save_pretrained lay them out.

File: an 8-byte little-endian header length N, N bytes of JSON header, then the raw little-endian
data. The header is compact JSON (serde_json: no spaces), "__metadata__" first, then one entry per
tensor {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the first data byte),
in data order; the header is padded with spaces to a multiple of 8. The library orders the data by
dtype (larger first: F32 before F16/BF16 before BOOL) and then by name; `order="library"` does that,
`order="given"` keeps the caller's order (what a fuzzer or a hand-made file may have).

Sharded checkpoints: model-00001-of-0000N.safetensors ... and model.safetensors.index.json, written as
transformers writes it: json.dumps({"metadata": {"total_size": bytes}, "weight_map": {name: shard}},
indent=2, sort_keys=True) + "\\n", with tensors filled into shards in state-dict order.

Values: numpy float32, float16, bool, int, and BF16 made from float32 by round-to-nearest-even on the
bit pattern (`Tensor.bf16(array)` or `to_bf16_bits`), stored as uint16.

Self-test: python3 safetensors_io.py
"""
import json
import os
import struct

import numpy as np

# dtype name -> (numpy dtype of the stored bits, bytes per element, rank the library sorts by)
DTYPES = {
    "BOOL": (np.bool_, 1, 0),
    "U8": (np.uint8, 1, 1),
    "I8": (np.int8, 1, 2),
    "I16": (np.int16, 2, 5),
    "U16": (np.uint16, 2, 6),
    "F16": (np.float16, 2, 7),
    "BF16": (np.uint16, 2, 8),  # the raw bits
    "I32": (np.int32, 4, 9),
    "U32": (np.uint32, 4, 10),
    "F32": (np.float32, 4, 11),
    "F64": (np.float64, 8, 12),
    "I64": (np.int64, 8, 13),
    "U64": (np.uint64, 8, 14),
}
_NP_TO_NAME = {np.dtype(np.bool_): "BOOL", np.dtype(np.uint8): "U8", np.dtype(np.int8): "I8",
               np.dtype(np.int16): "I16", np.dtype(np.uint16): "U16", np.dtype(np.float16): "F16",
               np.dtype(np.int32): "I32", np.dtype(np.uint32): "U32", np.dtype(np.float32): "F32",
               np.dtype(np.float64): "F64", np.dtype(np.int64): "I64", np.dtype(np.uint64): "U64"}


def to_bf16_bits(a):
    """float32 array -> uint16 bfloat16 bits, round to nearest, ties to even (as torch's .to(bfloat16))."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    bits = a.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(a)
    if nan.any():  # keep NaN a (quiet) NaN instead of rounding it into infinity
        rounded[nan] = ((bits[nan] >> 16) | 0x40).astype(np.uint16)
    return rounded.reshape(a.shape)


def bf16_bits_to_f32(bits):
    """uint16 bfloat16 bits -> float32 (exact)."""
    bits = np.asarray(bits, dtype=np.uint16)
    return (bits.astype(np.uint32) << 16).view(np.float32)


class Tensor:
    """A tensor as stored: dtype name, shape and the raw little-endian bytes."""

    def __init__(self, dtype, shape, raw):
        self.dtype = dtype
        self.shape = [int(s) for s in shape]
        self.raw = bytes(raw)

    @staticmethod
    def of(array, dtype=None):
        """From a numpy array; dtype "BF16" rounds a float array to bfloat16, "F16"/"F32" convert."""
        a = np.asarray(array)
        if dtype == "BF16":
            return Tensor("BF16", a.shape, to_bf16_bits(a.astype(np.float32)).astype("<u2").tobytes())
        if dtype is not None:
            a = a.astype(DTYPES[dtype][0])
        name = _NP_TO_NAME[a.dtype]
        return Tensor(name, a.shape, np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes())

    @staticmethod
    def bf16(array):
        return Tensor.of(array, "BF16")

    def numpy(self):
        """The stored values: BF16 as float32 (exact), everything else in its own dtype."""
        np_dtype = np.dtype(DTYPES[self.dtype][0]).newbyteorder("<")
        a = np.frombuffer(self.raw, dtype=np_dtype).reshape(self.shape)
        if self.dtype == "BF16":
            return bf16_bits_to_f32(a)
        return a.astype(np_dtype.newbyteorder("="))

    def float32(self):
        return self.numpy().astype(np.float32)


def _as_tensor(v):
    return v if isinstance(v, Tensor) else Tensor.of(v)


def header_bytes(header):
    """The header as the Rust library writes it: compact JSON, spaces up to a multiple of 8."""
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return text + b" " * ((8 - len(text) % 8) % 8)


def serialize(tensors, metadata=None, order="library"):
    """tensors: {name: Tensor or numpy array}; returns the file's bytes."""
    items = [(n, _as_tensor(t)) for n, t in tensors.items()]
    if order == "library":
        items.sort(key=lambda nt: (-DTYPES[nt[1].dtype][2], nt[0]))
    header = {}
    if metadata is None:
        metadata = {"format": "pt"}
    if metadata:
        header["__metadata__"] = metadata
    offset = 0
    for name, t in items:
        expected = DTYPES[t.dtype][1] * int(np.prod(t.shape, dtype=np.int64))
        if len(t.raw) != expected:
            raise ValueError(f"{name}: {len(t.raw)} bytes for {t.dtype} {t.shape} (expected {expected})")
        header[name] = {"dtype": t.dtype, "shape": t.shape, "data_offsets": [offset, offset + len(t.raw)]}
        offset += len(t.raw)
    hb = header_bytes(header)
    return struct.pack("<Q", len(hb)) + hb + b"".join(t.raw for _, t in items)


def save_file(tensors, path, metadata=None, order="library"):
    data = serialize(tensors, metadata, order)
    with open(path, "wb") as f:
        f.write(data)
    return len(data)


def shard_name(i, n):
    return f"model-{i:05d}-of-{n:05d}.safetensors"


def save_sharded(tensors, directory, shards=None, max_shard_bytes=None, metadata=None):
    """Writes shards and model.safetensors.index.json into directory as save_pretrained does.
    tensors: an ordered {name: Tensor or array} (state-dict order). Either `shards` (split into that
    many shards of about equal size, in order) or `max_shard_bytes` (transformers' rule: a new shard
    starts when the next tensor would overflow a non-empty one). Returns the index dict."""
    items = [(n, _as_tensor(t)) for n, t in tensors.items()]
    groups = [[]]
    if shards is not None:
        total = sum(len(t.raw) for _, t in items)
        target = total / shards
        acc = 0
        for name, t in items:
            if groups[-1] and acc + len(t.raw) / 2 > target * len(groups) and len(groups) < shards:
                groups.append([])
            groups[-1].append((name, t))
            acc += len(t.raw)
        while len(groups) < shards:  # never happens for real models; keeps the count honest
            groups.append([])
    else:
        size = 0
        for name, t in items:
            if groups[-1] and size + len(t.raw) > max_shard_bytes:
                groups.append([])
                size = 0
            groups[-1].append((name, t))
            size += len(t.raw)
    n = len(groups)
    weight_map = {}
    for i, group in enumerate(groups, 1):
        fname = shard_name(i, n)
        save_file(dict(group), os.path.join(directory, fname), metadata)
        for name, _ in group:
            weight_map[name] = fname
    index = {"metadata": {"total_size": sum(len(t.raw) for _, t in items)}, "weight_map": weight_map}
    with open(os.path.join(directory, "model.safetensors.index.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(index, indent=2, sort_keys=True) + "\n")
    return index


# ---- reading -------------------------------------------------------------------------------------

class SafetensorsError(ValueError):
    pass


def parse(data, file="<bytes>"):
    """bytes -> ({name: Tensor}, metadata), checking what attn is meant to check."""
    if len(data) < 8:
        raise SafetensorsError(f"{file}: {len(data)} bytes, too short for the 8-byte header length")
    (n,) = struct.unpack("<Q", data[:8])
    if 8 + n > len(data):
        raise SafetensorsError(f"{file}: header length {n} runs past the end ({len(data)} bytes)")
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SafetensorsError(f"{file}: header is not JSON ({e})")
    if not isinstance(header, dict):
        raise SafetensorsError(f"{file}: header is not a JSON object")
    body = data[8 + n:]
    metadata = header.pop("__metadata__", None)
    tensors, spans = {}, []
    for name, e in header.items():
        try:
            dtype, shape, (b, end) = e["dtype"], e["shape"], e["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise SafetensorsError(f"{file}: tensor {name}: malformed entry {e!r}")
        if dtype not in DTYPES:
            raise SafetensorsError(f"{file}: tensor {name}: unknown dtype {dtype}")
        if not (0 <= b <= end <= len(body)):
            raise SafetensorsError(f"{file}: tensor {name}: data_offsets [{b}, {end}] outside the {len(body)} data bytes")
        want = DTYPES[dtype][1] * int(np.prod(shape, dtype=np.int64))
        if end - b != want:
            raise SafetensorsError(f"{file}: tensor {name}: {end - b} bytes for {dtype} {shape} (expected {want})")
        tensors[name] = Tensor(dtype, shape, body[b:end])
        spans.append((b, end, name))
    spans.sort()
    for (b0, e0, n0), (b1, e1, n1) in zip(spans, spans[1:]):
        if b1 < e0:
            raise SafetensorsError(f"{file}: tensors {n0} and {n1} overlap")
    return tensors, metadata


def load_file(path):
    with open(path, "rb") as f:
        tensors, _ = parse(f.read(), path)
    return tensors


def load_checkpoint_tensors(path):
    """A .safetensors file, a model.safetensors.index.json, or a directory holding either."""
    if os.path.isdir(path):
        single = os.path.join(path, "model.safetensors")
        index = os.path.join(path, "model.safetensors.index.json")
        path = single if os.path.exists(single) else index
    if path.endswith(".index.json"):
        with open(path, encoding="utf-8") as f:
            weight_map = json.load(f)["weight_map"]
        base = os.path.dirname(path)
        shards = {s: load_file(os.path.join(base, s)) for s in sorted(set(weight_map.values()))}
        out = {}
        for name, s in weight_map.items():
            if name not in shards[s]:
                raise SafetensorsError(f"{s}: tensor {name} named by the index is not in it")
            out[name] = shards[s][name]
        return out
    return load_file(path)


def load_f32(path):
    """{name: float32 numpy array} for every float tensor of a checkpoint (others left as stored)."""
    out = {}
    for name, t in load_checkpoint_tensors(path).items():
        out[name] = t.float32() if t.dtype in ("F32", "F16", "BF16", "F64") else t.numpy()
    return out


# ---- self-test -----------------------------------------------------------------------------------

def _self_test():
    import tempfile
    rng = np.random.RandomState(0)
    # BF16 rounding against torch where it is there (torch rounds to nearest even)
    special = np.array([0.0, -0.0, 1.0, 1.00390625, 1.01171875, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, 3.4e38,
                        -3.4e38, 1e-40, np.inf, -np.inf], dtype=np.float32)
    x = np.concatenate([special, rng.randn(100000).astype(np.float32) * 10,
                        rng.randint(0, 2 ** 32, 100000, dtype=np.uint64).astype(np.uint32).view(np.float32)])
    x = x[~np.isnan(x)]
    bits = to_bf16_bits(x)
    # the halfway cases by hand: 1 + 2^-8 ties to 1 (even), 1 + 3*2^-8 ties to 1 + 2^-6... (even mantissa)
    assert bf16_bits_to_f32(to_bf16_bits(np.float32(1.0 + 2 ** -8)))[()] == 1.0
    assert bf16_bits_to_f32(to_bf16_bits(np.float32(1.0 + 3 * 2 ** -8)))[()] == 1.0 + 2 ** -6
    try:
        import torch
        tb = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
        assert np.array_equal(tb, bits), "bf16 rounding differs from torch"
        print("bf16: rounding equals torch's on", len(x), "values")
    except ImportError:
        print("bf16: torch missing, rounding checked by hand only")
    assert np.isnan(bf16_bits_to_f32(to_bf16_bits(np.array([np.nan], np.float32))))[0]
    # round trip, header layout
    with tempfile.TemporaryDirectory() as d:
        ts = {"b": rng.randn(3, 5).astype(np.float32), "a": rng.randn(7).astype(np.float16),
              "c": Tensor.bf16(rng.randn(2, 2, 2)), "s": np.array(2.5, np.float32),
              "m": np.tril(np.ones((4, 4), bool))}
        p = os.path.join(d, "x.safetensors")
        save_file(ts, p)
        raw = open(p, "rb").read()
        (n,) = struct.unpack("<Q", raw[:8])
        assert n % 8 == 0 and raw[8:8 + n].rstrip(b" ").endswith(b"}")
        hdr = json.loads(raw[8:8 + n])
        assert list(hdr) == ["__metadata__", "b", "s", "c", "a", "m"], list(hdr)
        assert hdr["__metadata__"] == {"format": "pt"}
        back = load_file(p)
        assert np.array_equal(back["b"].numpy(), ts["b"]) and np.array_equal(back["a"].numpy(), ts["a"])
        assert back["s"].shape == [] and back["s"].numpy()[()] == 2.5
        assert np.array_equal(back["m"].numpy(), ts["m"])
        assert back["c"].dtype == "BF16" and np.array_equal(back["c"].numpy(), ts["c"].numpy())
        big = {f"t{i}": rng.randn(10, 10).astype(np.float32) for i in range(5)}
        idx = save_sharded(big, d, shards=2)
        assert sorted(set(idx["weight_map"].values())) == [shard_name(1, 2), shard_name(2, 2)]
        assert idx["metadata"]["total_size"] == 5 * 400
        text = open(os.path.join(d, "model.safetensors.index.json")).read()
        assert text == json.dumps(idx, indent=2, sort_keys=True) + "\n"
        got = load_f32(os.path.join(d, "model.safetensors.index.json"))
        assert all(np.array_equal(got[k], v) for k, v in big.items())
        # refusals
        for bad, why in [(raw[:len(raw) - 3], "outside"), (raw[:6], "too short"),
                         (struct.pack("<Q", 1 << 40) + raw[8:], "past the end")]:
            try:
                parse(bad, "bad")
                raise AssertionError("accepted " + why)
            except SafetensorsError as e:
                assert why in str(e), str(e)
    print("safetensors_io: self-test passed")


if __name__ == "__main__":
    _self_test()
