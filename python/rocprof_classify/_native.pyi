"""Type stubs of the compiled module (the Rust library pipeline behind the package)."""

from typing import Any, Dict, List, Optional, Tuple, final

__all__ = [
    "EXIT_OK",
    "EXIT_GATE",
    "EXIT_ERROR",
    "EXIT_NOTHING",
    "InputError",
    "NothingToAnalyze",
    "RulesError",
    "__version__",
    "FEED_SCHEMA",
    "NativeRun",
    "ArrowStream",
    "run",
    "diff",
    "partial",
    "merge",
    "explain_rule",
    "list_rules",
    "classify_names",
    "explain_id",
]
__version__: str
FEED_SCHEMA: str

EXIT_OK: int
EXIT_GATE: int
EXIT_ERROR: int
EXIT_NOTHING: int

class InputError(ValueError):
    """An input could not be read."""

    exit_code: int
    """What the command line exits with for this error (2)."""
    path: Optional[str]
    """The file (or directory) the error is about."""
    offset: Optional[int]
    """Byte offset of the problem in the (decompressed) input, when there is one."""
    line: Optional[int]
    """Line (from 1) of the problem in a CSV input, when there is one."""

class NothingToAnalyze(InputError):
    """The inputs hold no GPU activity; ``exit_code`` is 3."""

class RulesError(ValueError):
    """A rule directory could not be loaded, or its rules failed their own examples."""

    exit_code: int
    """What the command line exits with for this error (2)."""

@final
class ArrowStream:
    """An Arrow C stream of record batches, handed out once (Arrow PyCapsule protocol)."""

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object: ...

@final
class NativeRun:
    """One analysis, kept for rendering."""

    def feed_json(self) -> bytes: ...
    def markdown(self) -> str: ...
    def html(self) -> str: ...
    def table(self, width: int) -> str: ...
    def headline(self) -> str: ...
    def activities(self) -> ArrowStream: ...
    def write_dataset(self, dir: str) -> List[Tuple[str, int]]: ...

def run(paths: List[str], options: Dict[str, Any]) -> NativeRun: ...
def diff(
    base: str,
    new: str,
    options: Dict[str, Any],
    base_steps: Optional[str] = None,
    new_steps: Optional[str] = None,
    applied: List[str] = ...,
) -> Tuple[bytes, str, str]: ...
def partial(paths: List[str], options: Dict[str, Any], rank: Optional[int] = None) -> bytes: ...
def merge(partials: List[Tuple[str, bytes]], options: Dict[str, Any]) -> NativeRun: ...
def explain_rule(name: str, rules: List[str] = ...) -> Dict[str, Any]: ...
def list_rules(rules: List[str] = ...) -> List[Dict[str, Any]]: ...
def classify_names(
    names: List[str], rules: List[str] = ...
) -> List[Tuple[str, str, str, Optional[str]]]: ...
def explain_id(id: str, rules: List[str] = ...) -> str: ...
