"""The classification rules: why a kernel name lands in its bucket, and the rule table."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _native

PathLike = Union[str, "os.PathLike[str]"]


def _dirs(rules: Union[PathLike, Sequence[PathLike], None]) -> List[str]:
    if rules is None:
        return []
    if isinstance(rules, (str, bytes, os.PathLike)):
        rules = [rules]
    return [os.fsdecode(r) for r in rules]


def explain(name: str, *, rules: Union[PathLike, Sequence[PathLike], None] = None) -> Dict[str, Any]:
    """Why ``name`` (a kernel name as it appears in a trace; mangled names are demangled first)
    gets its class: ``bucket``, ``family``, ``library``, the winning ``rule`` and every rule
    that ``matches`` it, best first (each with id, bucket, family, library, priority, file),
    and ``text``, what ``rocprof-classify rules explain`` prints."""
    return _native.explain_rule(name, _dirs(rules))


def classify(
    names: Sequence[str], *, rules: Union[PathLike, Sequence[PathLike], None] = None
) -> List[Tuple[str, str, str, Optional[str]]]:
    """(bucket, family, library, rule id or None) for each kernel name."""
    return _native.classify_names([str(n) for n in names], _dirs(rules))


def list(rules: Union[PathLike, Sequence[PathLike], None] = None) -> List[Dict[str, Any]]:  # noqa: A001
    """Every rule, in the order they are tried: id, bucket, family, library, priority, file."""
    return _native.list_rules(_dirs(rules))
