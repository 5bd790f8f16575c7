"""A job's rank files analyzed on a Ray cluster: one task per rank file writes that rank's
partial where the file is read, and the driver merges the partials into the job's reports,
the same bytes as `rocprof-classify DIR` on one machine.

    python ray_ranks.py /shared/job/traces --json feed.json --html report.html
    python ray_ranks.py '/shared/job/traces/rank*.json.gz' --address ray://head:10001
    python ray_ranks.py s3://bucket/job/ --address auto --dataset /shared/job/activities

Files must be readable by the workers: a path on shared storage, or an object-store URI
(`s3://`, `gs://`, … through pyarrow's filesystems; the task copies the object to its local
disk before reading it). Each task asks Ray for one CPU (`--cpus-per-task`) and, with
`--memory-per-task`, for memory: about 170 MB per GB of trace was measured (docs/guide/several-ranks.md, "Thousands
of ranks"). The partials are small (0.1-1 MB per rank, bounded by steps, collectives and
distinct names): the driver holds them all while it merges.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import ray

import rocprof_classify as rc

TRACE_SUFFIXES = (".json", ".json.gz", ".db", ".csv")


def _is_uri(path: str) -> bool:
    return "://" in path and not path.startswith("file://")


def rank_files(spec: str) -> List[str]:
    """The rank files a directory, glob or object-store prefix names, sorted."""
    if _is_uri(spec):
        import pyarrow.fs as pafs

        fs, root = pafs.FileSystem.from_uri(spec)
        infos = fs.get_file_info(pafs.FileSelector(root, recursive=False))
        scheme = spec.split("://", 1)[0]
        return sorted(
            f"{scheme}://{i.path}"
            for i in infos
            if i.type == pafs.FileType.File and i.path.endswith(TRACE_SUFFIXES)
        )
    if os.path.isdir(spec):
        return sorted(
            os.path.join(spec, n) for n in os.listdir(spec) if n.endswith(TRACE_SUFFIXES)
        )
    return sorted(glob.glob(spec))


def _local_copy(uri: str, into: str) -> str:
    import pyarrow.fs as pafs

    fs, path = pafs.FileSystem.from_uri(uri)
    local = os.path.join(into, os.path.basename(path))
    with fs.open_input_stream(path) as src, open(local, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 22)
    return local


def rank_partial(
    path: str, options: Dict[str, Any], dataset: Optional[str] = None
) -> Tuple[str, bytes, float]:
    """One rank's partial (and, with `dataset`, its part of the Parquet dataset); runs in a task.
    Returns the file, the partial and the seconds it took."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        local = _local_copy(path, tmp) if _is_uri(path) else path
        partial = rc.partial(local, **options)
        if dataset is not None:
            rc.report(local, **options).write_dataset(dataset)
    return path, partial, time.perf_counter() - started


def analyze_ranks(
    files: Sequence[str],
    options: Optional[Dict[str, Any]] = None,
    cpus_per_task: float = 1,
    memory_per_task: Optional[int] = None,
    dataset: Optional[str] = None,
) -> Tuple[rc.Report, List[Tuple[str, float, int]]]:
    """Runs one Ray task per rank file and merges their partials in the driver: the job's
    Report, and per file the seconds its task took and its partial's size. `ray.init` must have
    been called."""
    options = dict(options or {})
    if __name__ != "__main__":
        # Imported (not run as a script): ship this module's code with the tasks, so workers
        # need only rocprof_classify installed, not this file.
        from ray import cloudpickle

        cloudpickle.register_pickle_by_value(sys.modules[__name__])
    resources: Dict[str, Any] = {"num_cpus": cpus_per_task}
    if memory_per_task:
        resources["memory"] = memory_per_task
    task = ray.remote(**resources)(rank_partial)
    done = ray.get([task.remote(f, options, dataset) for f in files])
    merge_options = {k: v for k, v in options.items() if k in ("rules", "top", "env")}
    report = rc.merge_report([p for _, p, _ in done], **merge_options)
    return report, [(f, seconds, len(p)) for f, p, seconds in done]


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ranks", help="a directory, a glob, or an object-store prefix of rank files")
    ap.add_argument("--address", help="the Ray cluster (default: a local one)")
    ap.add_argument("--cpus-per-task", type=float, default=1)
    ap.add_argument("--memory-per-task", type=int, help="bytes of memory per task")
    ap.add_argument("--steps", help="analyze only these ProfilerStep numbers (A..B)")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--json", help="write the JSON feed here (- for stdout)")
    ap.add_argument("--markdown", help="write the Markdown summary here")
    ap.add_argument("--html", help="write the HTML report here")
    ap.add_argument("--dataset", help="also write the activity table, partitioned by rank, here")
    args = ap.parse_args(argv)

    files = rank_files(args.ranks)
    if not files:
        print(f"error: no rank files in {args.ranks}", file=sys.stderr)
        return 2
    ray.init(address=args.address, ignore_reinit_error=True)
    started = time.perf_counter()
    options: Dict[str, Any] = {"top": args.top}
    if args.steps:
        options["steps"] = args.steps
    report, tasks = analyze_ranks(
        files, options, args.cpus_per_task, args.memory_per_task, args.dataset
    )
    wall = time.perf_counter() - started
    slowest = max(tasks, key=lambda t: t[1])
    print(
        f"{len(files)} ranks in {wall:.1f} s; slowest task {slowest[1]:.1f} s ({slowest[0]}); "
        f"partials {sum(t[2] for t in tasks) / 1e6:.1f} MB",
        file=sys.stderr,
    )
    wrote = False
    for path, render in (
        (args.json, report.json),
        (args.markdown, report.markdown),
        (args.html, report.html),
    ):
        if path == "-":
            sys.stdout.write(render())
            wrote = True
        elif path:
            with open(path, "w") as f:
                f.write(render())
    if not wrote:
        print(report.table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
