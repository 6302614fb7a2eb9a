#!/usr/bin/env python3
"""A fuzz of attn_tracer's side door: random calls, each of which must return or raise InputError or
TypeError; anything else (attn_tracer.Error, another exception, a crash, a sanitizer report) is a bug.

    fuzz_module.py REPO [CALLS] [--seed N] [--only I] [--verbose]     (PYTHONPATH must reach build/python)

Call i is made from its own seeded generator (seed, i), so `--only I` makes call I again alone. The
calls: every public function and every Trace and Step method, with random keywords (extreme ints,
NaN and infinite floats, strings, bools, NumPy scalars, lists, objects, unknown keywords); specs that
are the examples, their JSON text mutated (NaN and Infinity, numbers out of range, bytes cut or
changed), random dicts of the input format's keys with NumPy arrays of random shapes, dtypes,
strides and byte orders (NaN, infinities, zero sizes, objects), paths that are no input; students and
traces for diff and diagnose made the same way. The sizes a valid call may reach are kept small
(max_memory of a few MB unless the call draws its own), so that every call takes milliseconds.
scripts/hardening.sh runs it in the module built under ASan and UBSan.
"""
import argparse
import faulthandler
import glob
import json
import math
import os
import random
import sys
import time

from checks import import_module

np, attn_tracer = import_module()

ALLOWED = (attn_tracer.InputError, TypeError)
SLOW = {"shape_flow_2x4x512.json"}  # seconds, not milliseconds: left out
STEP_IDS = ["x", "q", "k", "v", "scores", "scaled", "mask", "masked", "weights", "context", "output", "grad.x", "q.heads", "k.rope", "nope", ""]
MISTAKES = ["scale-missing", "mask-flipped", "softmax-wrong-axis", "backward-dx-one-path", "softmax-backward-elementwise", "typo", ""]
INTS = [-2**63 - 1, -2**63, -5, -1, 0, 1, 2, 3, 5, 7, 12, 13, 20, 80, 101, 1000, 1001, 4096, 4097, 2**31, 2**63 - 1, 2**63, 10**30, 10**400,
        -10**5000]
FLOATS = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1e-300, 0.5, 1.5, 1e5, 1e39, 1e308]
STRINGS = ["", " ", "1", "2x3", "1x1", "0x2", "x", "99999999999999999999x1", "-1x-1", "8G", "1K", "0.5", "8X", "weights", "cpu", "cuda",
           "gpu", "nan", "inf", "\0", "é", "\udc80", "{", "a" * 300]


class Case:
    """One call's random choices, from its own generator."""

    def __init__(self, seed, i, repo, examples):
        self.r = random.Random(seed * 1000003 + i)
        self.np = np.random.default_rng(seed * 1000003 + i)
        self.repo, self.examples = repo, examples
        self.clean = self.chance(0.5)  # a clean call: an input that runs and keywords of the right type, in range mostly

    def pick(self, seq):
        return seq[self.r.randrange(len(seq))]

    def chance(self, p):
        return self.r.random() < p

    # ---- values ----------------------------------------------------------------------------------
    def odd_value(self):
        """A value of any kind: what a keyword should refuse or take."""
        kind = self.r.randrange(10)
        if kind <= 2:
            return self.pick(INTS)
        if kind == 3:
            return self.pick(FLOATS)
        if kind == 4:
            return self.pick(STRINGS)
        if kind == 5:
            return self.pick([True, False, None])
        if kind == 6:
            return self.pick([np.int64(3), np.int32(-1), np.uint64(2**64 - 1), np.float32(np.nan), np.bool_(True), np.float64(2.0)])
        if kind == 7:
            return self.pick([[], ["weights"], [1], ("scores", "weights"), {"a": 1}, {1, 2}])
        if kind == 8:
            return self.pick([object(), b"bytes", 1j, bytearray(b"x"), range(3)])
        return self.array()

    def good_int(self, lo, hi):
        return self.r.randint(lo, hi)

    def array(self, max_rank=4):
        """A NumPy array of a random shape, dtype, stride and byte order, with NaN and infinities at times."""
        rank = self.r.randrange(max_rank + 1)
        shape = tuple(self.pick([0, 1, 1, 2, 2, 3, 4, 5]) for _ in range(rank))
        dtype = self.pick(["<f4", "<f8", ">f4", ">f8", "<f2", "<i8", ">i4", "u1", "?", "c8", "O", "<U3", "i1"])
        if dtype in ("O", "<U3"):
            a = np.empty(shape, dtype=dtype)
            a[...] = self.pick([1.5, "x", None]) if dtype == "O" else "ab"
            return a
        values = self.np.normal(size=shape) * self.pick([1, 1, 100, 1e30])
        if values.size and self.chance(0.3):
            values.flat[self.r.randrange(values.size)] = self.pick([np.nan, np.inf, -np.inf, 1e39, 5e-324])
        with np.errstate(all="ignore"):
            a = values.astype(dtype)
        if a.ndim >= 2 and self.chance(0.3):
            a = a.T  # not C-contiguous
        elif a.ndim >= 1 and a.shape[0] > 1 and self.chance(0.2):
            a = a[::2]  # strided
        elif a.ndim >= 1 and a.shape[0] >= 1 and self.chance(0.1):
            a = np.broadcast_to(a[:1], (3,) + a.shape[1:])  # zero stride, read-only
        return a

    def matrix(self, rows, cols):
        """Mostly a well-formed [rows, cols] input; now and then an odd one."""
        if self.chance(0.75):
            with np.errstate(all="ignore"):
                m = self.np.normal(size=(rows, cols)).astype(self.pick([np.float32, np.float64, np.float64]))
            return m.tolist() if self.chance(0.3) else m
        return self.pick([self.array(), self.odd_value(), [[1, 2], [3]], "identity", np.zeros((rows, cols + 1))])

    # ---- inputs ----------------------------------------------------------------------------------
    def dict_spec(self):
        """The input format's keys with random values: sizes small, shapes and values often wrong."""
        T, C = self.r.randint(1, 4), self.r.randint(1, 4)
        spec = {"mode": self.pick(["self", "causal", "cross", "multi-head", "self", "nope"])}
        if self.chance(0.8):
            spec["embeddings"] = self.matrix(T, C)
        if self.chance(0.8):
            spec["weights"] = {w: ("identity" if self.chance(0.4) else self.matrix(C, C)) for w in ("W_q", "W_k", "W_v") if self.chance(0.9)}
            if self.chance(0.2):
                spec["weights"]["W_o"] = self.matrix(C, C)
        optional = {
            "heads": lambda: self.pick([1, 2, 3, 0, -1, 2**63 - 1, "2", 1.5]),
            "sentence": lambda: " ".join(self.pick(["cat", "sat", "é", "", "on"]) for _ in range(T)),
            "tokens": lambda: [self.pick(["a", "b", "", "\0"]) for _ in range(self.pick([T, T + 1]))],
            "source": lambda: self.matrix(self.r.randint(1, 4), C),
            "attn_mask": lambda: {self.pick(["block", "keep", "add", "x"]): self.pick([self.np.integers(0, 2, (T, T)).astype(bool), self.array(3),
                                                                                      [[0, "-inf"], ["nan", 0]]])},
            "mask_fill": lambda: self.pick(["-inf", -1e9, math.nan, "nan", 1e39, None]),
            "masked_row": lambda: self.pick(["error", "zeros", "nan", "uniform", "x"]),
            "padding": lambda: {"lengths": self.pick([[1], [T, 1], [0], [-1], [10**9]])},
            "window": lambda: self.pick([1, 2, 0, -1, 10**12]),
            "alibi": lambda: self.pick([True, False, {"slopes": [math.nan]}, {"slopes": [0.5, 0.25]}]),
            "rope": lambda: self.pick([True, {"theta": 10000}, {"theta": -1}, {"style": "x"}]),
            "softcap": lambda: self.pick([30.0, 0, -1, math.inf]),
            "kv_heads": lambda: self.pick([1, 2, 0, 3]),
            "scale": lambda: self.pick(["sqrt_dk", "none", 0.5, math.nan, 0]),
            "layout": lambda: self.pick(["x@W", "torch", "x"]),
            "dv": lambda: self.pick([1, 2, 0, -3]),
            "positions": lambda: self.pick(["sinusoidal", {"learned": self.matrix(T, C)}, "x"]),
            "random": lambda: {"seed": self.pick([1, -1, 2**64]), "T": self.pick([2, 3, 0, -1, 10**6, 10**18]), "C": self.pick([2, 4, 0, 10**9]),
                               **({"B": self.pick([1, 2, 0, 10**9])} if self.chance(0.5) else {})},
            "expect": lambda: {self.pick(STEP_IDS): self.pick([self.matrix(T, T), [[None, "nan"]], [[0.5, "inf"]], 3])},
            "backward": lambda: self.pick([{"seed": 1}, {"target": self.matrix(T, C)}, {"grad_output": self.array()}, {}]),
            "scores": lambda: self.matrix(T, T),
            "q": lambda: self.matrix(T, C), "k": lambda: self.matrix(T, C), "v": lambda: self.matrix(T, C),
            "checkpoint": lambda: {"path": self.pick(["examples/checkpoints/tiny-gpt2", "/nonexistent", "", "/dev/null"]), "layer": self.pick([0, 1, 99, -1])},
            "title": lambda: self.pick(["t", 5, None]),
            "unknown_key": lambda: 1,
        }
        for key in self.r.sample(list(optional), self.r.randint(0, 5)):
            spec[key] = optional[key]()
        if self.chance(0.03):  # deep nesting
            deep = 0
            for _ in range(self.pick([30, 40, 200])):
                deep = [deep]
            spec["embeddings"] = deep
        if self.chance(0.02):
            spec["weights"] = spec  # a cycle
        return spec

    def json_text(self):
        """An example's text, mutated."""
        with open(self.pick(self.examples), encoding="utf-8") as f:
            text = f.read()
        for _ in range(self.r.randint(1, 3)):
            at = self.r.randrange(len(text) + 1)
            how = self.r.randrange(6)
            if how == 0:  # a number's place: a literal JSON has not
                digits = [i for i, c in enumerate(text) if c.isdigit()]
                if digits:
                    at = self.pick(digits)
                text = text[:at] + self.pick(["NaN", "Infinity", "-Infinity", "nan", "inf", "1e400", "1e-99999999999", "1e+99999999999", "-0", "0x10", "+1", "1.", ".5"]) + text[at + 1:]
            elif how == 1:
                text = text[:at]
            elif how == 2:
                text = text[:at] + text[at + 1:]
            elif how == 3:
                text = text[:at] + self.pick(['"', ",", "]", "[", "{", "}", ":", "\\u0000", "\x00", "\udc80", "é", "null"]) + text[at:]
            elif how == 4:
                text = text[:at] + text[at:at + 40] + text[at:]
            else:
                text = text.replace('"weights"', self.pick(['"weights", "weights"', '"weight"', '"weights": 1, "weights"']), 1)
        return text if text.lstrip().startswith("{") else "{" + text

    def good_dict_spec(self):
        """A well-formed input of random sizes: its keywords are what is tried."""
        B, T, C, H = self.r.randint(1, 3), self.r.randint(1, 5), self.pick([2, 4, 6]), self.pick([1, 2])
        x = self.np.normal(size=(B, T, C) if self.chance(0.4) else (T, C))
        spec = {"mode": self.pick(["self", "causal"]), "heads": H, "embeddings": x.astype(self.pick([np.float32, np.float64])),
                "weights": {w: ("identity" if self.chance(0.5) else self.np.normal(size=(C, C))) for w in ("W_q", "W_k", "W_v")}}
        if self.chance(0.3):
            spec["attn_mask"] = {"block": np.triu(np.ones((T, T), dtype=bool), 1) & self.np.integers(0, 2, (T, T)).astype(bool)}
        if self.chance(0.2):
            spec["expect"] = {"weights": np.full((H, T, T) if H > 1 else (T, T), self.pick([0.5, np.nan]))}
        if self.chance(0.2):
            spec["rope"] = {"theta": 10000}
        return spec

    def checkpoint(self):
        return self.pick([e for e in self.examples if "checkpoint" in open(e, encoding="utf-8").read()])

    def spec(self):
        if self.clean:
            return self.pick(self.examples) if self.chance(0.6) else self.good_dict_spec()
        kind = self.r.randrange(10)
        if kind <= 2:
            return self.pick(self.examples)
        if kind <= 5:
            return self.dict_spec()
        if kind <= 7:
            return self.json_text()
        if kind == 8:
            return self.pick(["no/such.json", ".", "/", "/dev/null", "/proc/self/status", "examples", "a\0b", "", "-", "examples/checkpoints/tiny-gpt2"])
        return self.odd_value()

    def student(self, trace):
        kind = self.r.randrange(6)
        if kind == 0 and trace is not None:
            return trace
        if kind <= 3:
            ids = self.r.sample(STEP_IDS, self.r.randint(0, 4))
            if trace is not None and self.chance(0.5):
                with np.errstate(all="ignore"):
                    return {sid: (s.array * self.pick([1, -1, 0, np.nan]) if self.chance(0.5) else self.array()) for sid, s in trace.steps.items()
                            if self.chance(0.5)}
            return {sid: self.pick([self.array(), self.array(), self.odd_value()]) for sid in ids}
        if kind == 4:
            return self.pick(["no/such/dir", "examples/cat_sat.json", ".", "/dev/null", "a\0b"])
        return self.odd_value()

    # ---- keywords --------------------------------------------------------------------------------
    def keywords(self, names, valid):
        """Random keywords among names: a valid value (valid[name]()) mostly, an odd one now and then;
        max_memory a few MB unless drawn; rarely an unknown keyword."""
        out, odd = {}, not self.clean and self.chance(0.5)
        for name in names:
            if self.chance(0.5):
                out[name] = self.odd_value() if (odd and self.chance(0.4)) or name not in valid else valid[name]()
        if "max_memory" in names:  # (a limit of GBs lets a drawn size run for minutes)
            m = out.get("max_memory", "4M")
            if isinstance(m, str) and m not in ("", "8X", "\0", "0.5", "é"):
                m = self.pick(["4M", "1K", "16M"])
            elif isinstance(m, (int, np.integer)) and not isinstance(m, bool) and m > 1 << 24:
                m = 1 << 24
            out["max_memory"] = m
        if not self.clean and self.chance(0.1):
            out[self.pick(["haed", "step", "token", "max_memroy", "widht", "x"])] = 1
        return out


def valid_values(c):
    """Each keyword's values: in range mostly for a clean call, the edges and beyond them for another."""
    edge = not c.clean
    return {
        "steps": lambda: c.pick([["weights"], ["scores", "weights"], "weights", [], ["x", "output"]] + ([["nope"]] if edge else [])),
        "head": lambda: c.good_int(-1, 3) if edge else c.good_int(0, 1), "batch": lambda: c.good_int(-1, 3) if edge else c.good_int(0, 1),
        "mistake": lambda: c.pick(MISTAKES if edge else ["scale-missing", "mask-flipped", "backward-dx-one-path"]),
        "fused": lambda: c.pick([True, False, False]), "explain": lambda: c.pick([True, False]), "code": lambda: c.pick([True, False]),
        "precision": lambda: c.good_int(-1, 13) if edge else c.good_int(0, 12), "backend": lambda: c.pick(["cpu", "cuda", "x"]) if edge else "cpu",
        "flash": lambda: c.pick(["2x3", "1x1", "3x2", "0x1", "2x", "100x100"] if edge else ["2x3", "1x1", "100x100"]),
        "max_memory": lambda: c.pick(["4M", 1 << 22, 0, "8X"] if edge else ["16M", 1 << 24]),
        "atol": lambda: c.pick([0, 1e-5, -1, math.nan, 1e300] if edge else [0, 1e-5, 1e-2]),
        "rtol": lambda: c.pick([0, 1e-4, math.inf] if edge else [0, 1e-4]),
        "tokens": lambda: c.good_int(-1, 3) if edge else c.good_int(1, 3), "top": lambda: c.good_int(0, 4) if edge else c.good_int(1, 4),
        "prefill": lambda: c.good_int(-1, 5) if edge else c.good_int(1, 3),
        "width": lambda: c.pick([19, 20, 40, 80, 1000, 1001] if edge else [20, 33, 80, 200, 1000]), "step": lambda: c.pick(STEP_IDS),
    }


TRACE_KEYWORDS = ["steps", "head", "batch", "mistake", "explain", "code", "precision", "max_memory"]


def exercise(c, result, valid):
    """What a returned value offers: its text, and a Trace's renderings and steps."""
    str(result), repr(result)
    if not isinstance(result, attn_tracer.Trace):
        return
    for _ in range(c.r.randint(1, 3)):
        what = c.r.randrange(7)
        if what == 0:
            result.text(**c.keywords(["width"], valid))
        elif what == 1:
            result.svg(**c.keywords(["step"], valid))
        elif what == 2:
            result.json(), result.config
        elif what == 3:
            result.markdown()
        elif what == 4:
            result.html()
        elif result.steps:
            s = result.steps[c.pick(list(result.steps))]
            s.text(**c.keywords(["width"], valid)) if what == 5 else s.svg()


def planned_call(c):
    """One random call: (its description, for a report; the call itself)."""
    valid = valid_values(c)
    fn = c.pick(["run", "run", "run", "backward", "check", "diff", "diagnose", "decode", "heads"])
    if fn in ("diff", "diagnose"):
        base = attn_tracer.run(c.pick(c.examples), max_memory="16M") if c.chance(0.5) else None
        kw = c.keywords(["atol", "rtol"] + (["max_memory"] if fn == "diagnose" else []), valid)
        args = (c.student(base), c.student(base)) if fn == "diff" else (c.spec(), c.student(base))
    else:
        names = {"run": TRACE_KEYWORDS + ["fused", "backend", "flash"], "backward": TRACE_KEYWORDS, "check": ["max_memory"],
                 "decode": ["tokens", "top", "prefill", "max_memory"], "heads": ["max_memory"]}[fn]
        kw = c.keywords(names, valid)
        args = (c.checkpoint() if fn in ("heads", "decode") and c.clean and c.chance(0.7) else c.spec(),)
    described = f"{fn}({', '.join(_short(a) for a in args)}, {', '.join(f'{k}={_short(v)}' for k, v in kw.items())})"
    return described, lambda: exercise(c, getattr(attn_tracer, fn)(*args, **kw), valid)


def _short(v):
    if isinstance(v, np.ndarray):
        text = f"array({v.dtype}, {v.shape}, strides {v.strides})"
    else:
        try:
            text = repr(v)
        except ValueError:  # an int of more than 4300 digits, which Python will not write
            text = f"<{type(v).__name__} holding an int too long to write>"
    return text if len(text) < 80 else text[:77] + "..."


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("repo")
    p.add_argument("calls", nargs="?", type=int, default=500)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--only", type=int, help="make call ONLY alone")
    p.add_argument("--verbose", action="store_true", help="print each call before it is made")
    a = p.parse_args(argv[1:])
    faulthandler.enable()  # a crash prints the Python stack: which call
    os.chdir(a.repo)  # the examples' relative paths (checkpoints) as from the repository root
    examples = sorted(f for f in glob.glob("examples/*.json") if os.path.basename(f) not in SLOW)
    calls = [a.only] if a.only is not None else range(a.calls)
    outcomes, bad = {"returned": 0}, []
    start = time.perf_counter()
    for i in calls:
        c = Case(a.seed, i, a.repo, examples)
        described, call = planned_call(c)
        if a.verbose:
            print(f"call {i}: {described}", flush=True)
        try:
            call()
            outcomes["returned"] += 1
        except ALLOWED as e:
            outcomes[type(e).__name__] = outcomes.get(type(e).__name__, 0) + 1
            if a.verbose:
                print(f"  {type(e).__name__}: {str(e)[:200]}")
        except BaseException as e:  # noqa: B902 — every other exception is a finding (KeyboardInterrupt aside)
            if isinstance(e, KeyboardInterrupt):
                raise
            bad.append(f"call {i}: {type(e).__name__}: {str(e)[:300]}")
            print(f"FAIL call {i} (--seed {a.seed} --only {i}): {described}\n  {type(e).__name__}: {str(e)[:300]}", flush=True)
    took = time.perf_counter() - start
    summary = ", ".join(f"{n} {k}" for k, n in sorted(outcomes.items()))
    print(f"{len(calls)} random calls in {took:.1f} s (seed {a.seed}): {summary}; {len(bad)} other outcome(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
