"""Type stubs of the public API (the options every analysis takes, spelled out)."""

import os
from typing import Any, Dict, List, Optional, Sequence, TypedDict, Union

from typing_extensions import Unpack

import pyarrow

from . import rules as rules
from ._native import (
    EXIT_ERROR as EXIT_ERROR,
    EXIT_GATE as EXIT_GATE,
    EXIT_NOTHING as EXIT_NOTHING,
    EXIT_OK as EXIT_OK,
    InputError as InputError,
    NothingToAnalyze as NothingToAnalyze,
    RulesError as RulesError,
)

__version__: str
__all__ = [
    "EXIT_ERROR",
    "EXIT_GATE",
    "EXIT_NOTHING",
    "EXIT_OK",
    "InputError",
    "NothingToAnalyze",
    "Report",
    "RulesError",
    "activities",
    "analyze",
    "diff",
    "explain",
    "merge",
    "merge_report",
    "partial",
    "report",
    "rules",
    "schema",
]

PathLike = Union[str, os.PathLike[str]]
Paths = Union[PathLike, Sequence[PathLike]]
Steps = Union[int, str, range, None]

class _Options(TypedDict, total=False):
    """The keyword options every analysis takes (the CLI's flags); defaults in the docstrings."""

    rules: Optional[Paths]
    torch_logs: Optional[Paths]
    steps: Steps
    skip_warmup: bool
    threads: Optional[int]
    top: int
    strict: bool
    input_format: Optional[str]
    attribution: bool
    env: Optional[PathLike]
    dispatch_threshold_us: float
    max_gunzip_ratio: Optional[int]
    iteration_marker: Optional[str]
    phase: Optional[str]
    what_if: Union[str, Sequence[str], None]
    flex_density: Optional[float]
    force: bool
    allow_empty: bool

class Report:
    def __init__(self, native: Any) -> None: ...
    @property
    def feed(self) -> Dict[str, Any]: ...
    def json(self) -> str: ...
    @property
    def findings(self) -> List[Dict[str, Any]]: ...
    @property
    def recommendations(self) -> List[Dict[str, Any]]: ...
    @property
    def critical_path(self) -> Dict[str, Any]: ...
    @property
    def what_if(self) -> Optional[Dict[str, Any]]: ...
    @property
    def headline(self) -> str: ...
    def markdown(self) -> str: ...
    def html(self) -> str: ...
    def table(self, width: int = 120) -> str: ...
    def activities(self) -> pyarrow.Table: ...
    def write_dataset(self, dir: PathLike) -> List[str]: ...
    def _repr_html_(self) -> str: ...

class Diff(Dict[str, Any]):
    def __init__(self, data: Dict[str, Any], markdown: str, html: str) -> None: ...
    def markdown(self) -> str: ...
    def html(self) -> str: ...
    def _repr_html_(self) -> str: ...

def report(
    paths: Paths,
    **options: Unpack[_Options],
) -> Report: ...
def analyze(
    paths: Paths,
    **options: Unpack[_Options],
) -> Dict[str, Any]: ...
def activities(
    paths: Paths,
    **options: Unpack[_Options],
) -> pyarrow.Table: ...
def diff(
    base: PathLike,
    new: PathLike,
    *,
    base_steps: Optional[str] = None,
    new_steps: Optional[str] = None,
    applied: Union[str, Sequence[str], None] = None,
    **options: Unpack[_Options],
) -> Diff: ...
def partial(
    paths: Paths,
    *,
    rank: Optional[int] = None,
    **options: Unpack[_Options],
) -> bytes: ...

Partials = Sequence[Union[bytes, PathLike, Dict[str, Any]]]

def merge_report(
    partials: Partials,
    **options: Unpack[_Options],
) -> Report: ...
def merge(
    partials: Partials,
    **options: Unpack[_Options],
) -> Dict[str, Any]: ...
def explain(id: str, *, rules: Optional[Paths] = None) -> str: ...
def schema() -> Dict[str, Any]: ...
