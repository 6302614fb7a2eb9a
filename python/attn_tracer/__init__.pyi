# Type stubs of attn_tracer (the package is python/attn_tracer/__init__.py over the C++ _core).
from os import PathLike
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

Spec = Union[str, PathLike, Mapping[str, Any]]
Memory = Union[int, str]  # bytes, or a size such as "8G" (as attn's --max-memory)
Arrays = Mapping[str, npt.ArrayLike]

class InputError(ValueError):
    """Bad input: the message names the JSON path (or file and tensor, or keyword) and what was expected, as attn's exit 2.
    (A keyword of the wrong type, or an unknown one, raises TypeError.)"""

class Error(RuntimeError):
    """An internal error of the library (attn's exit 3)."""

class Step:
    id: str
    title: str
    formula: str
    note: str
    code: str
    dims: list[str]
    shape: tuple[int, ...]
    kind: str  # "real", "mask" or "index"
    array: npt.NDArray[np.float32]
    def text(self, width: int = 80) -> str: ...
    def svg(self) -> str: ...
    def _repr_html_(self) -> str: ...

class Steps(dict[str, Step]):
    def __missing__(self, step_id: str) -> Step: ...

class Trace:
    steps: Steps
    flash_max_diff: Optional[float]
    @property
    def config(self) -> dict[str, Any]: ...
    def __getitem__(self, step_id: str) -> Step: ...
    def __str__(self) -> str: ...
    def text(self, width: int = 80) -> str: ...
    def json(self) -> str: ...
    def markdown(self) -> str: ...
    def svg(self, step: str = "weights") -> str: ...
    def html(self) -> str: ...
    def _repr_html_(self) -> str: ...

class CheckResult:
    ok: bool
    title: str
    checked: int
    matches: int
    differences: int
    steps: list[dict[str, Any]]
    differing: list[dict[str, Any]]

class DiffResult:
    ok: bool
    shared: int
    first_diverging: Optional[str]
    steps: list[dict[str, Any]]

class Diagnosis:
    correct: bool
    mistake: Optional[str]
    mistakes: list[str]
    first: Optional[dict[str, Any]]
    compared: list[str]
    matching: list[str]
    unknown: list[str]
    hints: list[str]

class Heads:
    model: str
    layers: int
    heads: int
    tokens: list[str]
    weights: list[Any]
    summaries: list[list[dict[str, Any]]]

def run(spec: Spec, *, steps: Union[str, Sequence[str], None] = ..., head: Optional[int] = ..., batch: Optional[int] = ...,
        mistake: Optional[str] = ..., fused: bool = ..., explain: bool = ..., code: bool = ..., precision: int = ...,
        backend: str = ..., flash: Optional[str] = ..., max_memory: Optional[Memory] = ...,
        summary_threshold: int = ..., predict: bool = ...) -> Trace: ...
def backward(spec: Spec, *, steps: Union[str, Sequence[str], None] = ..., head: Optional[int] = ..., batch: Optional[int] = ...,
             mistake: Optional[str] = ..., explain: bool = ..., code: bool = ..., precision: int = ...,
             max_memory: Optional[Memory] = ...,
             summary_threshold: int = ...) -> Trace: ...
def check(spec: Spec, *, max_memory: Optional[Memory] = ...) -> CheckResult: ...
def diff(a: Union[Trace, Arrays, str, PathLike], b: Union[Trace, Arrays, str, PathLike], *, atol: float = ..., rtol: float = ...) -> DiffResult: ...
def diagnose(spec: Spec, student: Union[Trace, Arrays, str, PathLike], *, atol: float = ..., rtol: float = ...,
             max_memory: Optional[Memory] = ...) -> Diagnosis: ...
def heads(spec: Spec, *, max_memory: Optional[Memory] = ...) -> Heads: ...

class Decoding:
    agrees: bool

def decode(spec: Spec, *, tokens: Optional[int] = ..., top: Optional[int] = ..., prefill: Optional[int] = ...,
           max_memory: Optional[Memory] = ...) -> Decoding: ...
