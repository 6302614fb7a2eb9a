"""Attention Tracer from Python: the engine of the ``attn`` command, NumPy arrays in and out.

    import attn_tracer
    trace = attn_tracer.run("examples/cat_sat.json")      # a path, a JSON string, or a dict
    trace.steps["weights"].array                           # a NumPy float32 array of the step's shape
    print(trace.text())                                    # what `attn run` prints
    trace                                                  # in a notebook: the walkthrough, rendered

Every function calls the C++ library directly (no subprocess, no temporary files). Bad input raises
InputError (a ValueError) with the message `attn` prints before exiting with 2, naming the JSON path
or the keyword; an unknown keyword or a value of the wrong type raises TypeError naming it. Nothing is
printed to stderr. Any other failure raises Error with attn's exit-3 message.
"""
import difflib as _difflib
import functools as _functools
import html as _html
import inspect as _inspect
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


# ---- the keywords: their types here, their values in the library (the CLI's checks) ---------------

def _number_text(value):
    """An int as text; one too long for Python to write (4300 digits) by its size."""
    return str(value) if value.bit_length() <= 1000 else f"an integer of {value.bit_length()} bits"


def _shown(value):
    text = _number_text(value) if isinstance(value, int) else repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


def _int(name, value):
    if isinstance(value, (bool, _np.bool_)) or not isinstance(value, (int, _np.integer)):
        raise TypeError(f"{name}: expected an int, got {_shown(value)}")
    value = int(value)
    if not -2**63 <= value < 2**63:  # (the library's integers are 64-bit: one beyond is out of every range)
        raise InputError(f"{name}: {_number_text(value)} is beyond a 64-bit integer")
    return value


def _flag(name, value):
    if not isinstance(value, (bool, _np.bool_)):
        raise TypeError(f"{name}: expected True or False, got {_shown(value)}")
    return bool(value)


def _text(name, value):
    if not isinstance(value, str):
        raise TypeError(f"{name}: expected a str, got {_shown(value)}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:  # (a lone surrogate: no text the library can be given)
        raise InputError(f"{name}: not Unicode text ({e.reason} at character {e.start})") from None
    return value


def _number(name, value):
    if isinstance(value, (bool, _np.bool_)) or not isinstance(value, (int, float, _np.integer, _np.floating)):
        raise TypeError(f"{name}: expected a number, got {_shown(value)}")
    try:
        return float(value)
    except OverflowError:  # an int beyond a double: infinite, which the library refuses where it must be finite
        return _math.inf if value > 0 else -_math.inf


def _step_ids(name, value):
    """None, one step id, or a list or tuple of them."""
    ids = [value] if isinstance(value, str) else value
    if not isinstance(ids, (list, tuple)) or not all(isinstance(i, str) for i in ids):
        raise TypeError(f"{name}: expected a step id or a list of step ids (str), got {_shown(value)}")
    return [_text(name, i) for i in ids]


def _memory(name, value):
    """A byte count or a size such as "8G" (the library checks which)."""
    return _text(name, value) if isinstance(value, str) else _int(name, value)


def _optional(check):
    return lambda name, value: None if value is None else check(name, value)


def _keywords(**checks):
    """The function's keywords checked before it runs: an unknown one is a TypeError with the keyword it
    was probably meant to be, a value of the wrong type a TypeError naming the keyword; None passes
    where the default is None."""
    def wrap(fn):
        signature = _inspect.signature(fn)
        names = [n for n in signature.parameters if n != "self"]

        @_functools.wraps(fn)
        def call(*args, **kwargs):
            for key in kwargs:
                if key not in signature.parameters:
                    close = _difflib.get_close_matches(key, names, n=1, cutoff=0.6)
                    hint = f" (did you mean '{close[0]}'?)" if close else ""
                    raise TypeError(f"{fn.__qualname__}() got an unexpected keyword argument '{key}'{hint}; its keywords: {', '.join(names)}")
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            for key, check in checks.items():
                value = bound.arguments[key]
                default = signature.parameters[key].default
                bound.arguments[key] = None if value is None and default is None else check(key, value)
            return fn(*bound.args, **bound.kwargs)
        return call
    return wrap


# ---- the input ------------------------------------------------------------------------------------

_MAX_DEPTH = 32  # the JSON reader's limit


def _plain(value, path, depth=0):
    """value with NumPy arrays and scalars as nested lists of numbers; non-finite numbers as attn's
    strings ("inf", "-inf", "nan"), which the reader accepts or refuses by their JSON path, naming
    NaN and infinity as such."""
    where = path or "(root)"
    if depth > _MAX_DEPTH:
        raise InputError(f"{where}: nested deeper than {_MAX_DEPTH} levels; attn's inputs nest at most 5 deep")
    if isinstance(value, _np.ndarray):
        if value.dtype.kind == "c":
            raise InputError(f"{where}: expected real numbers, got a complex array ({value.dtype})")
        if value.dtype.kind not in "biuf":
            raise InputError(f"{where}: expected numbers, got an array of {value.dtype}")
        if depth + value.ndim > _MAX_DEPTH:
            raise InputError(f"{where}: a {value.ndim}-dimensional array nests deeper than {_MAX_DEPTH} levels")
        if value.dtype.kind != "f" or _np.isfinite(value).all():
            return value.tolist()  # (its numbers as they are: no entry to translate)
        return _plain(value.tolist(), path, depth)
    if isinstance(value, (_np.floating, _np.integer, _np.bool_)):
        return _plain(value.item(), path, depth)
    if isinstance(value, complex):
        raise InputError(f"{where}: expected a real number, got {value!r}")
    if isinstance(value, float) and not _math.isfinite(value):
        return "nan" if _math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, int) and value.bit_length() > 1024:  # (as the reader refuses 1e400)
        raise InputError(f"{where}: {_number_text(value)} is out of range (a JSON number is at most about 1.8e308)")
    if isinstance(value, dict):
        return {str(k): _plain(v, f"{path}.{k}" if path else str(k), depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise InputError(f"{where}: expected a number, a string, true/false, null, a list or a dict, got {_shown(value)}")


def _path(value, what):
    """A path given as str or os.PathLike, as str; None when value is no path."""
    if not isinstance(value, (str, _os.PathLike)):
        return None
    path = _os.fspath(value)
    if not isinstance(path, str):
        raise TypeError(f"{what}: expected a str path, got {_shown(path)}")
    _text(what, path)
    if "\0" in path:
        raise InputError(f"{what}: {path[:40]!r} is no file name (it holds a NUL character)")
    return path


def _input(spec):
    """(JSON text, origin for messages, base directory for relative paths) of a path, a JSON string or a dict."""
    if isinstance(spec, dict):
        return _json.dumps(_plain(spec, "")), "<dict>", _os.getcwd()
    if isinstance(spec, str) and spec.lstrip().startswith("{"):
        try:
            return spec.encode("utf-8"), "<string>", _os.getcwd()
        except UnicodeEncodeError as e:
            raise InputError(f"<string>: the JSON text is not Unicode text ({e.reason} at character {e.start})") from None
    path = _path(spec, "spec")
    if path is None:
        raise TypeError(f"spec: expected a path, a JSON string or a dict, got {_shown(spec)}")
    return _core.read_input(path), path, _os.path.dirname(_os.path.abspath(path))


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

    @_keywords(width=_int)
    def text(self, width=80):
        """What `attn run --steps ID` prints for this step, at `width` columns (20 .. 1000)."""
        return self._trace._handle.render("text", width, self.id)

    def svg(self):
        """The step's heatmap(s) as one SVG document (`attn run --format svg --steps ID`)."""
        return self._trace.svg(self.id)

    def _repr_html_(self):
        return self._trace._fragment(self.id)


class Steps(dict):
    """A trace's steps by id, in order; a missing id raises KeyError naming it, the nearest id and every id."""

    def __missing__(self, step_id):
        near = _difflib.get_close_matches(str(step_id), list(self), n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise KeyError(f"no step {step_id!r} in this trace{hint} (the steps: {', '.join(self)})")


class Trace:
    """A run's every step, in order: `trace.steps[id]` is a Step; `trace.config` is the trace JSON's config."""

    def __init__(self, handle):
        self._handle = handle
        self.steps = Steps((row[0], Step(row, self)) for row in handle.steps())
        self._json = None
        self.flash_max_diff = handle.flash_max_diff()  # run(flash="BQxBK"): the tiled pass against the context

    @property
    def config(self):
        return _json.loads(self.json())["config"]

    def __repr__(self):
        c = self.config
        return f"<Trace {c.get('title') or ''!s}: {len(self.steps)} steps, mode {c.get('mode')}>"

    def __str__(self):
        """The text walkthrough, as text() writes it (print(trace) shows it)."""
        return self.text()

    def __getitem__(self, step_id):
        return self.steps[step_id]

    @_keywords(width=_int)
    def text(self, width=80):
        """What `attn run` prints, at `width` columns (20 .. 1000)."""
        return self._handle.render("text", width, "")

    def json(self):
        """The trace as `attn run --format json` writes it."""
        if self._json is None:
            self._json = self._handle.render("json", 80, "")
        return self._json

    def markdown(self):
        return self._handle.render("markdown", 80, "")

    @_keywords(step=_text)
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


_TRACE_KEYWORDS = dict(steps=_step_ids, head=_int, batch=_int, mistake=_text, explain=_flag, code=_flag, precision=_int, max_memory=_memory,
                       summary_threshold=_int)


@_keywords(fused=_flag, backend=_text, flash=_text, predict=_flag, **_TRACE_KEYWORDS)
def run(spec, *, steps=None, head=None, batch=None, mistake=None, fused=False, explain=False, code=False, precision=4, backend="cpu",
        flash=None, max_memory=None, summary_threshold=1000, predict=False):
    """Runs attention step by step on `spec` (a path, a JSON string, or a dict in attn's input format,
    whose tensors may be NumPy arrays or nested lists; a checkpoint spec too) and returns its Trace.
    The options are `attn run`'s: steps (ids shown by text()), head, batch, mistake (simulate one),
    fused (FlashAttention's one pass), explain, code, precision (0 .. 12), backend ("cpu" or "cuda"), flash ("BQxBK":
    FlashAttention's tiled pass tile by tile after the trace, in text(); trace.flash_max_diff is its
    largest difference from the context), max_memory (bytes or "8G"; default half of physical memory),
    summary_threshold (text shows a tensor of more values by its edges, as --summary-threshold; default 1000),
    predict (the page, trace.html() and the notebook's view, asks before the steps of the spec's
    "exercise": {"predict": [...]}, the weights by default: their shape, the key a query attends to
    most, one value; the values stay hidden until answered or revealed, as --format html --predict)."""
    text, origin, base = _input(spec)
    return Trace(_call(_core.run, text, origin, base, steps or [], head, batch, mistake or "", fused, explain, code, precision,
                       backend, flash or "", max_memory, summary_threshold, predict))


@_keywords(**_TRACE_KEYWORDS)
def backward(spec, *, steps=None, head=None, batch=None, mistake=None, explain=False, code=False, precision=4, max_memory=None,
             summary_threshold=1000):
    """Runs attention on `spec`, then its backward pass (`attn backward`), and returns the Trace: the
    forward steps, then every gradient (grad.output back to grad.x and the parameters' grad.W_*). The
    spec's "backward" block says of which loss (grad_output, seed, or target); without it, of
    sum(output). mistake simulates a backward-pass mistake (softmax-backward-elementwise, ...)."""
    text, origin, base = _input(spec)
    return Trace(_call(_core.backward, text, origin, base, steps or [], head, batch, mistake or "", explain, code, precision, max_memory, summary_threshold))


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


@_keywords(max_memory=_memory)
def check(spec, *, max_memory=None):
    """Checks the numbers a document printed (the input's "expect" block) against the trace."""
    text, origin, base = _input(spec)
    doc, shown = _call(_core.check, text, origin, base, max_memory)
    fields = _json.loads(doc)
    fields.setdefault("ok", fields.get("differences", 0) == 0)
    return CheckResult(fields, shown)


def _student_array(value, where):
    """A student's tensor as float32: its shape and values are what diff and diagnose report on, so
    only what is no array of real numbers is refused."""
    try:
        a = _np.asarray(value.array if isinstance(value, Step) else value)
    except (ValueError, TypeError) as e:  # a ragged list, an object NumPy cannot make an array of
        raise InputError(f"{where}: expected an array of numbers ({e})") from None
    if a.dtype.kind == "c":
        raise InputError(f"{where}: expected real numbers, got a complex array ({a.dtype})")
    if a.dtype.kind not in "biuf":
        raise InputError(f"{where}: expected an array of numbers, got an array of {a.dtype}")
    with _np.errstate(over="ignore", invalid="ignore"):  # beyond float32's range: inf, as the student's float32 would hold
        return a.astype(_np.float32)


def _trace_arg(t, what):
    if isinstance(t, Trace):
        return t._handle
    if isinstance(t, dict):
        for k in t:
            if not isinstance(k, str):
                raise TypeError(f"{what}: expected step ids (str) as keys, got {_shown(k)}")
            _text(what, k)
        return {k: _student_array(v, f"{what}[{k!r}]") for k, v in t.items()}
    path = _path(t, what)
    if path is None:
        raise TypeError(f"{what}: expected a Trace, a dict of step id -> array, or a path (a JSON trace or a directory of .npy files), "
                        f"got {_shown(t)}")
    return path


@_keywords(atol=_number, rtol=_number)
def diff(a, b, *, atol=1e-5, rtol=1e-4):
    """Compares two traces step by step (Traces, dicts of step id -> array, or paths)."""
    fields = _call(_core.diff, _trace_arg(a, "a"), _trace_arg(b, "b"), atol, rtol)
    return DiffResult(fields, fields.pop("text"))


@_keywords(atol=_number, rtol=_number, max_memory=_memory)
def diagnose(spec, student, *, atol=1e-5, rtol=1e-4, max_memory=None):
    """Which common mistake explains a student's tensors? `student`: dict of step id -> array, a Trace, or a path."""
    text, origin, base = _input(spec)
    fields = _call(_core.diagnose, text, origin, base, _trace_arg(student, "student"), atol, rtol, max_memory)
    return Diagnosis(fields, fields.pop("text"))


class Decoding(_Result):
    """With tokens: `attn decode --tokens N --format json`'s fields (prompt_ids, generated, steps with
    each one's top candidates); without: prefill and each row's difference from the full causal pass.
    agrees: the cache reproduces the full pass; str() is `attn decode`'s text."""

    def __repr__(self):
        return f"<Decoding agrees={self.agrees}>"


@_keywords(tokens=_int, top=_int, prefill=_int, max_memory=_memory)
def decode(spec, *, tokens=None, top=None, prefill=None, max_memory=None):
    """Generation with a KV cache. tokens=N (1 .. 4096): on a causal checkpoint, the whole model writes
    N tokens (greedy), each with its attention over the cache and the top (1 .. 100, default 5) next-token
    probabilities; without: the input's tokens decoded one by one after a prefill of `prefill` tokens
    (default 1)."""
    text, origin, base = _input(spec)
    doc, shown, agrees = _call(_core.decode, text, origin, base, tokens, top, prefill, max_memory)
    fields = _json.loads(doc)
    fields["agrees"] = agrees
    return Decoding(fields, shown)


@_keywords(max_memory=_memory)
def heads(spec, *, max_memory=None):
    """Every layer's and head's attention of a checkpoint on a sentence, with a summary per head."""
    text, origin, base = _input(spec)
    doc, shown = _call(_core.heads, text, origin, base, max_memory)
    return Heads(_json.loads(doc), shown)
