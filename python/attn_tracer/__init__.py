"""Attention Tracer from Python: the engine of the ``attn`` command, NumPy arrays in and out.

    import attn_tracer
    trace = attn_tracer.run("examples/cat_sat.json")      # a path, a JSON string, or a dict
    trace.steps["weights"].array                           # a NumPy float32 array of the step's shape
    print(trace.text())                                    # what `attn run` prints
    trace                                                  # in a notebook: the walkthrough, rendered

Every function calls the C++ library directly (no subprocess, no temporary files). Bad input raises
InputError (a ValueError) with the message `attn` prints before exiting with 2, naming the JSON path;
nothing is printed to stderr. Any other failure raises Error with attn's exit-3 message.
"""
import html as _html
import itertools as _itertools
import json as _json
import math as _math
import os as _os

import numpy as _np

from . import _core

__all__ = ["run", "backward", "check", "diff", "diagnose", "heads", "decode", "Trace", "Step", "CheckResult", "DiffResult", "Diagnosis", "Heads", "Decoding",
           "InputError", "Error"]

InputError = _core.InputError
InputError.__doc__ = "Bad input: the message names the JSON path (or file and tensor) and what was expected, as attn's exit 2."


class Error(RuntimeError):
    """An internal error of the library (attn's exit 3): a bug in attn."""


# ---- the input ------------------------------------------------------------------------------------

def _plain(value, path):
    """value with NumPy arrays and scalars as nested lists of numbers; non-finite numbers as attn's
    strings ("inf", "-inf", "nan"), which the reader accepts or refuses by their JSON path."""
    if isinstance(value, _np.ndarray):
        if value.dtype.kind == "c":
            raise InputError(f"{path}: expected real numbers, got a complex array ({value.dtype})")
        if value.dtype.kind not in "biuf":
            raise InputError(f"{path}: expected numbers, got an array of {value.dtype}")
        return _plain(value.tolist(), path)
    if isinstance(value, (_np.floating, _np.integer, _np.bool_)):
        return _plain(value.item(), path)
    if isinstance(value, complex):
        raise InputError(f"{path}: expected a real number, got {value!r}")
    if isinstance(value, float) and not _math.isfinite(value):
        return "nan" if _math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): _plain(v, f"{path}.{k}" if path else str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{path}[{i}]") for i, v in enumerate(value)]
    return value


def _input(spec):
    """(JSON text, origin for messages, base directory for relative paths) of a path, a JSON string or a dict."""
    if isinstance(spec, dict):
        return _json.dumps(_plain(spec, "")), "<dict>", _os.getcwd()
    if isinstance(spec, (str, _os.PathLike)):
        text = _os.fspath(spec)
        if text.lstrip().startswith("{"):
            return text, "<string>", _os.getcwd()
        try:
            with open(text, encoding="utf-8") as f:
                return f.read(), text, _os.path.dirname(_os.path.abspath(text))
        except FileNotFoundError:
            raise InputError(f"{text}: no such file") from None
        except IsADirectoryError:
            raise InputError(f"{text}: is a directory, not an input JSON file") from None
    raise InputError(f"spec: expected a path, a JSON string or a dict, got {type(spec).__name__}")


def _call(fn, *args):
    try:
        return fn(*args)
    except InputError:
        raise
    except RuntimeError as e:
        raise Error(str(e)) from None


# ---- traces ------------------------------------------------------------------------------------------

_ids = _itertools.count()


class Step:
    """One step of a trace: its values as a NumPy array and what the text shows about it."""

    __slots__ = ("id", "title", "formula", "note", "code", "dims", "shape", "kind", "array", "_trace")

    def __init__(self, row, trace):
        self.id, self.title, self.formula, self.note, self.code, self.dims, shape, self.kind, self.array = row
        self.shape = tuple(shape)
        self._trace = trace

    def __repr__(self):
        return f"<Step {self.id}: {self.title} {list(self.dims)} = {list(self.shape)}>"

    def text(self, width=80):
        """What `attn run --steps ID` prints for this step."""
        return self._trace._handle.render("text", width, self.id)

    def svg(self):
        """The step's heatmap(s) as one SVG document (`attn run --format svg --steps ID`)."""
        return self._trace.svg(self.id)

    def _repr_html_(self):
        return self._trace._fragment(self.id)


class Trace:
    """A run's every step, in order: `trace.steps[id]` is a Step; `trace.config` is the trace JSON's config."""

    def __init__(self, handle):
        self._handle = handle
        self.steps = {row[0]: Step(row, self) for row in handle.steps()}
        self._json = None
        self.flash_max_diff = handle.flash_max_diff()  # run(flash="BQxBK"): the tiled pass against the context

    @property
    def config(self):
        return _json.loads(self.json())["config"]

    def __repr__(self):
        c = self.config
        return f"<Trace {c.get('title') or ''!s}: {len(self.steps)} steps, mode {c.get('mode')}>"

    def __getitem__(self, step_id):
        return self.steps[step_id]

    def text(self, width=80):
        """What `attn run` prints, at `width` columns."""
        return self._handle.render("text", width, "")

    def json(self):
        """The trace as `attn run --format json` writes it."""
        if self._json is None:
            self._json = self._handle.render("json", 80, "")
        return self._json

    def markdown(self):
        return self._handle.render("markdown", 80, "")

    def svg(self, step="weights"):
        """One step's heatmap(s) as an SVG document."""
        return self._handle.render("svg", 80, step)

    def html(self):
        """The self-contained page of `attn run --format html`."""
        return self._handle.render("html", 80, "")

    def _fragment(self, step=""):
        # the page in a sandboxed frame of its own: its styles and scripts cannot reach the notebook's
        # or another trace's (nothing is fetched: the page is self-contained); one step needs less room
        page = self._handle.render("html", 80, step)
        n = next(_ids)
        return (f'<iframe id="attn-trace-{n}" title="attn trace" sandbox="allow-scripts" style="width:100%;height:{480 if step else 720}px;'
                f'border:1px solid #ddd" srcdoc="{_html.escape(page, quote=True)}"></iframe>')

    def _repr_html_(self):
        return self._fragment()


def run(spec, *, steps=None, head=None, batch=None, mistake=None, fused=False, explain=False, code=False, precision=4, backend="cpu",
        flash=None):
    """Runs attention step by step on `spec` (a path, a JSON string, or a dict in attn's input format,
    whose tensors may be NumPy arrays or nested lists; a checkpoint spec too) and returns its Trace.
    The options are `attn run`'s: steps (ids shown by text()), head, batch, mistake (simulate one),
    fused (FlashAttention's one pass), explain, code, precision, backend ("cpu" or "cuda"), flash ("BQxBK":
    FlashAttention's tiled pass tile by tile after the trace, in text(); trace.flash_max_diff is its
    largest difference from the context)."""
    text, origin, base = _input(spec)
    return Trace(_call(_core.run, text, origin, base, list(steps or []), -1 if head is None else int(head),
                       -1 if batch is None else int(batch), mistake or "", bool(fused), bool(explain), bool(code), int(precision),
                       backend, flash or ""))


def backward(spec, *, steps=None, head=None, batch=None, mistake=None, explain=False, code=False, precision=4):
    """Runs attention on `spec`, then its backward pass (`attn backward`), and returns the Trace: the
    forward steps, then every gradient (grad.output back to grad.x and the parameters' grad.W_*). The
    spec's "backward" block says of which loss (grad_output, seed, or target); without it, of
    sum(output). mistake simulates a backward-pass mistake (softmax-backward-elementwise, ...)."""
    text, origin, base = _input(spec)
    return Trace(_call(_core.backward, text, origin, base, list(steps or []), -1 if head is None else int(head),
                       -1 if batch is None else int(batch), mistake or "", bool(explain), bool(code), int(precision)))


# ---- check, diff, diagnose, heads -----------------------------------------------------------------------

class _Result:
    def __init__(self, fields, text):
        self.__dict__.update(fields)
        self._text = text

    def __str__(self):
        return self._text

    def _repr_html_(self):
        return f"<pre>{_html.escape(self._text)}</pre>"


class CheckResult(_Result):
    """`attn check --format json`'s fields (ok, the steps' entries, the summary), and its text as str()."""

    def __repr__(self):
        return f"<CheckResult ok={self.ok}: {self.checked} printed values checked, {self.matches} match, {self.differences} differ>"


class DiffResult(_Result):
    """ok, shared, first_diverging (a step id or None) and each shared step's comparison; str() is `attn diff`'s text."""

    def __repr__(self):
        return f"<DiffResult ok={self.ok}, first diverging step {self.first_diverging}>"


class Diagnosis(_Result):
    """correct, mistake (the named mistake that explains the student's tensors, or None), mistakes,
    first (the first differing step), hints; str() is `attn diagnose`'s text."""

    def __repr__(self):
        return f"<Diagnosis correct={self.correct}, mistake={self.mistake}>"


class Heads(_Result):
    """`attn heads --format json`'s fields; str() is its text."""

    def __repr__(self):
        return f"<Heads {self.model}>"


def check(spec):
    """Checks the numbers a document printed (the input's "expect" block) against the trace."""
    text, origin, base = _input(spec)
    doc, shown = _call(_core.check, text, origin, base)
    fields = _json.loads(doc)
    fields.setdefault("ok", fields.get("differences", 0) == 0)
    return CheckResult(fields, shown)


def _trace_arg(t):
    if isinstance(t, Trace):
        return t._handle
    if isinstance(t, (str, _os.PathLike)):
        return _os.fspath(t)
    if isinstance(t, dict):
        return {str(k): _np.asarray(v.array if isinstance(v, Step) else v, dtype=_np.float32) for k, v in t.items()}
    raise InputError(f"expected a Trace, a dict of step id -> array, or a path (a JSON trace or a directory of .npy files), got {type(t).__name__}")


def diff(a, b, *, atol=1e-5, rtol=1e-4):
    """Compares two traces step by step (Traces, dicts of step id -> array, or paths)."""
    fields = _call(_core.diff, _trace_arg(a), _trace_arg(b), float(atol), float(rtol))
    return DiffResult(fields, fields.pop("text"))


def diagnose(spec, student, *, atol=1e-5, rtol=1e-4):
    """Which common mistake explains a student's tensors? `student`: dict of step id -> array, a Trace, or a path."""
    text, origin, base = _input(spec)
    fields = _call(_core.diagnose, text, origin, base, _trace_arg(student), float(atol), float(rtol))
    return Diagnosis(fields, fields.pop("text"))


class Decoding(_Result):
    """With tokens: `attn decode --tokens N --format json`'s fields (prompt_ids, generated, steps with
    each one's top candidates); without: prefill and each row's difference from the full causal pass.
    agrees: the cache reproduces the full pass; str() is `attn decode`'s text."""

    def __repr__(self):
        return f"<Decoding agrees={self.agrees}>"


def decode(spec, *, tokens=None, top=5, prefill=None):
    """Generation with a KV cache. tokens=N: on a causal checkpoint, the whole model writes N tokens
    (greedy), each with its attention over the cache and the top next-token probabilities; without:
    the input's tokens decoded one by one after a prefill of `prefill` tokens (default 1)."""
    text, origin, base = _input(spec)
    doc, shown, agrees = _call(_core.decode, text, origin, base, int(tokens or 0), int(top), -1 if prefill is None else int(prefill))
    fields = _json.loads(doc)
    fields["agrees"] = agrees
    return Decoding(fields, shown)


def heads(spec, *, max_memory=None):
    """Every layer's and head's attention of a checkpoint on a sentence, with a summary per head."""
    text, origin, base = _input(spec)
    limit = int(max_memory) if max_memory is not None else 1 << 34
    doc, shown = _call(_core.heads, text, origin, base, limit)
    return Heads(_json.loads(doc), shown)
