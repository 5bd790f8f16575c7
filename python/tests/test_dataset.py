"""`--export-parquet-dir`: the activity table as a Parquet dataset partitioned by rank, which
DuckDB (and Spark, polars) read as one table whose sums are the feed's."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Dict

import duckdb

from conftest import FIXTURES, cli_feed

DDP = FIXTURES / "kineto" / "h100x2" / "ddp"


def _buckets(out: Path, where: str = "in_window") -> Dict[str, int]:
    rows = duckdb.connect().execute(
        "SELECT bucket, sum(dur_ns) FROM read_parquet(?, hive_partitioning=true) "
        f"WHERE {where} GROUP BY 1",
        [f"{out}/*/*.parquet"],
    )
    return {bucket: int(ns) for bucket, ns in rows.fetchall()}


def _feed_buckets(buckets: list) -> Dict[str, int]:
    return {b["bucket"]: b["kernel_ns"] for b in buckets if b["kernel_ns"] > 0}


def test_a_job_reads_as_one_table(tmp_path: Path) -> None:
    out = tmp_path / "activities"
    feed = cli_feed([str(DDP), "--export-parquet-dir", str(out)])
    parts = sorted(p.relative_to(out).as_posix() for p in out.glob("*/*.parquet"))
    assert parts == ["rank=0/part-0.parquet", "rank=1/part-0.parquet"]
    # The query: the job's buckets, summed over every rank's file.
    assert _buckets(out) == _feed_buckets(feed["buckets"])
    # Each rank's partition holds that rank's view.
    for view in feed["ranks"]:
        assert _buckets(out, f"in_window AND rank = {view['rank']}") == _feed_buckets(
            view["buckets"]
        )
    # Every activity is there once, the rank from the directory name.
    count = duckdb.connect().execute(
        "SELECT count(*), count(DISTINCT rank) FROM read_parquet(?, hive_partitioning=true)",
        [f"{out}/*/*.parquet"],
    )
    total, ranks = count.fetchone()
    assert ranks == 2
    assert total == sum(len(_kernel_events(p)) for p in sorted(DDP.glob("rank*.json.gz")))


def _kernel_events(path: Path) -> list:
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    return [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]


def test_a_trace_without_a_rank_is_hives_null_partition(tmp_path: Path) -> None:
    out = tmp_path / "activities"
    trace = FIXTURES / "kineto" / "h100" / "train_regions.json.gz"
    feed = cli_feed([str(trace), "--export-parquet-dir", str(out)])
    assert [p.parent.name for p in out.glob("*/*.parquet")] == ["rank=__HIVE_DEFAULT_PARTITION__"]
    assert _buckets(out) == _feed_buckets(feed["buckets"])
    nulls = duckdb.connect().execute(
        "SELECT count(*) FROM read_parquet(?, hive_partitioning=true) WHERE rank IS NULL",
        [f"{out}/*/*.parquet"],
    )
    assert nulls.fetchone()[0] > 0


def test_each_rank_writes_its_own_partition(tmp_path: Path) -> None:
    # As a distributed run does it: one task per rank file, all into one directory.
    import rocprof_classify as rc

    out = tmp_path / "activities"
    written = []
    for rank_file in sorted(DDP.glob("rank*.json.gz")):
        written += rc.report(str(rank_file)).write_dataset(out)
    assert [Path(p).parent.name for p in written] == ["rank=0", "rank=1"]
    whole = cli_feed([str(DDP)])
    assert _buckets(out) == _feed_buckets(whole["buckets"])
