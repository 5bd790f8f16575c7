"""Shared paths and the command line the Python package is checked against."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import List, Optional

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
CORPUS = ROOT.parent / "shared" / "corpus"


def _binary() -> Optional[str]:
    explicit = os.environ.get("ROCPROF_CLASSIFY_BIN")
    if explicit:
        return explicit
    target = os.environ.get(
        "CARGO_TARGET_DIR", os.path.expanduser("~/.cache/rocprof-classify-target")
    )
    built = Path(target) / "debug" / "rocprof-classify"
    if built.exists():
        return str(built)
    return shutil.which("rocprof-classify")


BIN = _binary()


def cli(args: List[str], check: bool = True) -> subprocess.CompletedProcess:
    """Runs the command line (the test command builds it first)."""
    if BIN is None:
        pytest.skip("the rocprof-classify binary is not built (run `cargo build` first)")
    done = subprocess.run([BIN, *args, "--color", "never"], capture_output=True, cwd=ROOT)
    if check and done.returncode not in (0, 1):
        raise AssertionError(f"rocprof-classify {args}: {done.stderr.decode()}")
    return done


def cli_feed(args: List[str]) -> dict:
    """The feed `--json -` prints for these arguments."""
    return json.loads(cli(["--json", "-", "--quiet", *args]).stdout)


def canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True)


def corpus(relative: str) -> Path:
    """A file of ../shared/corpus, or a skip with a notice when the corpus is absent."""
    path = CORPUS / relative
    if not path.exists():
        pytest.skip(f"notice: {path} is absent (../shared/corpus is not checked out)")
    return path


@pytest.fixture(autouse=True)
def _run_from_root(monkeypatch: pytest.MonkeyPatch) -> None:
    # Inputs are named relative to the repository, as the CLI runs see them.
    monkeypatch.chdir(ROOT)
