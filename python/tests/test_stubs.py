"""The type stubs (`.pyi`) agree with the installed package: every public name, signature and
default (mypy's stubtest)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def test_stubs_match_the_package(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    done = subprocess.run(
        [
            sys.executable, "-m", "mypy.stubtest", "rocprof_classify",
            "--mypy-config-file", str(HERE / "stubtest.ini"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # the installed package, not the source tree
    )
    assert done.returncode == 0, done.stdout + done.stderr
