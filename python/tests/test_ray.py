"""The Ray example on a local cluster: one task per rank file writes its partial, the driver
merges them, and the job's feed is the one-process analysis' byte for byte."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import ray

import rocprof_classify as rc
from conftest import FIXTURES, ROOT, cli

sys.path.insert(0, str(ROOT / "python" / "examples"))
import ray_ranks  # noqa: E402

JOBS = [FIXTURES / "kineto" / "h100x2" / name for name in ("ddp", "host_straggler", "fsdp2")]


@pytest.fixture(scope="module")
def cluster():
    # Two CPUs, as the CI machine has: the tasks queue for them.
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_merged_tasks_are_the_one_process_analysis(cluster: None) -> None:
    for job in JOBS:
        files = ray_ranks.rank_files(str(job))
        assert len(files) == 2
        report, tasks = ray_ranks.analyze_ranks(files)
        assert [t[0] for t in tasks] == files
        assert all(t[2] > 0 for t in tasks)
        one_process = cli([str(job), "--json", "-"]).stdout.decode()
        assert report.json() == one_process, job
        assert report.feed == rc.analyze(str(job))


def test_the_script_writes_the_reports_and_the_dataset(cluster: None, tmp_path: Path) -> None:
    job = JOBS[0]
    feed, md, dataset = tmp_path / "feed.json", tmp_path / "job.md", tmp_path / "activities"
    # The cluster is running: the script attaches to it.
    code = ray_ranks.main(
        [
            str(job / "rank*.json.gz"),
            "--address",
            "auto",
            "--json",
            str(feed),
            "--markdown",
            str(md),
            "--dataset",
            str(dataset),
        ]
    )
    assert code == 0
    assert feed.read_text() == cli([str(job), "--json", "-"]).stdout.decode()
    assert md.read_text() == cli([str(job), "--markdown", "-"]).stdout.decode()
    parts = sorted(p.relative_to(dataset).as_posix() for p in dataset.glob("*/*.parquet"))
    assert parts == ["rank=0/part-0.parquet", "rank=1/part-0.parquet"]
