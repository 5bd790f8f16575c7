"""Type stubs of the public API (the options every analysis takes, spelled out)."""

import os
from typing import Any, Dict, List, Optional, Sequence, Union

import pyarrow

from . import rules as rules
from ._native import InputError as InputError, RulesError as RulesError

__version__: str
__all__ = [
    "InputError",
    "Report",
    "RulesError",
    "activities",
    "analyze",
    "diff",
    "explain",
    "report",
    "rules",
    "schema",
]

PathLike = Union[str, os.PathLike[str]]
Paths = Union[PathLike, Sequence[PathLike]]
Steps = Union[int, str, range, None]

class Report:
    def __init__(self, native: Any) -> None: ...
    @property
    def feed(self) -> Dict[str, Any]: ...
    @property
    def findings(self) -> List[Dict[str, Any]]: ...
    @property
    def recommendations(self) -> List[Dict[str, Any]]: ...
    @property
    def headline(self) -> str: ...
    def markdown(self) -> str: ...
    def html(self) -> str: ...
    def table(self, width: int = 120) -> str: ...
    def activities(self) -> pyarrow.Table: ...
    def _repr_html_(self) -> str: ...

class Diff(Dict[str, Any]):
    def __init__(self, data: Dict[str, Any], markdown: str, html: str) -> None: ...
    def markdown(self) -> str: ...
    def html(self) -> str: ...
    def _repr_html_(self) -> str: ...

def report(
    paths: Paths,
    *,
    rules: Optional[Paths] = None,
    torch_logs: Optional[Paths] = None,
    steps: Steps = None,
    skip_warmup: bool = False,
    threads: Optional[int] = None,
    top: int = 20,
    strict: bool = False,
    input_format: Optional[str] = None,
    attribution: bool = True,
    env: Optional[PathLike] = None,
    dispatch_threshold_us: float = 50.0,
    max_gunzip_ratio: Optional[int] = None,
) -> Report: ...
def analyze(
    paths: Paths,
    *,
    rules: Optional[Paths] = None,
    torch_logs: Optional[Paths] = None,
    steps: Steps = None,
    skip_warmup: bool = False,
    threads: Optional[int] = None,
    top: int = 20,
    strict: bool = False,
    input_format: Optional[str] = None,
    attribution: bool = True,
    env: Optional[PathLike] = None,
    dispatch_threshold_us: float = 50.0,
    max_gunzip_ratio: Optional[int] = None,
) -> Dict[str, Any]: ...
def activities(
    paths: Paths,
    *,
    rules: Optional[Paths] = None,
    torch_logs: Optional[Paths] = None,
    steps: Steps = None,
    skip_warmup: bool = False,
    threads: Optional[int] = None,
    top: int = 20,
    strict: bool = False,
    input_format: Optional[str] = None,
    attribution: bool = True,
    env: Optional[PathLike] = None,
    dispatch_threshold_us: float = 50.0,
    max_gunzip_ratio: Optional[int] = None,
) -> pyarrow.Table: ...
def diff(
    base: PathLike,
    new: PathLike,
    *,
    rules: Optional[Paths] = None,
    torch_logs: Optional[Paths] = None,
    steps: Steps = None,
    skip_warmup: bool = False,
    threads: Optional[int] = None,
    top: int = 20,
    strict: bool = False,
    input_format: Optional[str] = None,
    attribution: bool = True,
    env: Optional[PathLike] = None,
    dispatch_threshold_us: float = 50.0,
    max_gunzip_ratio: Optional[int] = None,
) -> Diff: ...
def explain(id: str, *, rules: Optional[Paths] = None) -> str: ...
def schema() -> Dict[str, Any]: ...
