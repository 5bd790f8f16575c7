"""Partials and merge from Python: one partial per rank file, merged, is the feed of analyzing the
rank files together, whatever form the partials travel in (bytes, files, parsed dicts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rocprof_classify as rc
from conftest import FIXTURES, cli

FSDP2 = FIXTURES / "kineto" / "h100x2" / "fsdp2"


def _rank_files(d: Path) -> list:
    return sorted(str(p) for p in d.glob("*.json.gz"))


def test_merged_partials_are_the_job(tmp_path: Path) -> None:
    files = _rank_files(FSDP2)
    partials = [rc.partial(f) for f in files]
    assert all(isinstance(p, bytes) for p in partials)
    job = rc.analyze(str(FSDP2))
    # In any order, as bytes, files or dicts.
    assert rc.merge(list(reversed(partials))) == job
    paths = []
    for i, p in enumerate(partials):
        path = tmp_path / f"rank{i}.partial.json"
        path.write_bytes(p)
        paths.append(path)
    assert rc.merge(paths) == job
    assert rc.merge([json.loads(p) for p in partials]) == job
    # The report renders as the command line's merge does.
    cli_md = cli(["merge", *map(str, paths), "--markdown", "-"]).stdout.decode()
    assert rc.merge_report(paths).markdown() == cli_md
    assert len(job["ranks"]) == 2


def test_a_partial_is_the_command_lines(tmp_path: Path) -> None:
    f = _rank_files(FSDP2)[1]
    out = tmp_path / "p.json"
    cli(["partial", f, "-o", str(out)])
    assert rc.partial(f) == out.read_bytes()
    assert json.loads(rc.partial(f))["rank"] == 1


def test_refusals_name_the_partial(tmp_path: Path) -> None:
    p = rc.partial(_rank_files(FSDP2)[0])
    with pytest.raises(rc.InputError, match="rank 0 is given twice") as e:
        rc.merge([p, p])
    assert e.value.path == "partial 1"
    other = json.loads(p)
    other["rank"] = 1
    other["run"]["world_size"] = 4
    with pytest.raises(rc.InputError, match="another run"):
        rc.merge([p, other])
    with pytest.raises(rc.InputError, match="holds 2 ranks"):
        rc.partial(str(FSDP2))
