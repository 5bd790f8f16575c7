"""rocprof-classify: where a PyTorch model's GPU time goes, and what to do next.

Reads torch.profiler (Kineto) traces of AMD ROCm and NVIDIA CUDA runs, rocprof outputs (v1, v2,
v3 CSV/JSON, rocpd), rocprof-compute workloads and torch.compile logs; classifies GPU time,
detects what holds the model back and ranks the optimization ladder's next steps.

    >>> import rocprof_classify as rc
    >>> feed = rc.analyze("trace.json.gz")          # the JSON feed (FEED.md) as a dict
    >>> feed["buckets"][0]["bucket"], feed["buckets"][0]["pct"]
    >>> table = rc.activities("trace.json.gz")      # one row per GPU activity, a pyarrow.Table
    >>> report = rc.report("trace.json.gz")         # shows as the HTML report in a notebook
    >>> report.recommendations[0]["title"]

Every function releases the GIL while it works; Ctrl-C stops a long read. A file that cannot
be read raises :class:`InputError` (a ``ValueError``) naming the file and the byte offset;
inputs without GPU activity raise :class:`NothingToAnalyze` (an ``InputError``). Each
exception's ``exit_code`` is what the command line exits with for it (``EXIT_ERROR`` 2,
``EXIT_NOTHING`` 3; a tripped gate is ``EXIT_GATE`` 1).
"""

from __future__ import annotations

import html as _html
import json as _json
import os
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Union

from . import _native
from . import rules
from ._native import (
    EXIT_ERROR,
    EXIT_GATE,
    EXIT_NOTHING,
    EXIT_OK,
    InputError,
    NothingToAnalyze,
    RulesError,
)

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow

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

__version__: str = _native.__version__

PathLike = Union[str, "os.PathLike[str]"]
Paths = Union[PathLike, Sequence[PathLike]]
Steps = Union[int, str, range, None]


def _paths(paths: Paths) -> List[str]:
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    out = [os.fsdecode(p) for p in paths]
    if not out:
        raise ValueError("no input paths given")
    return out


def _dirs(dirs: Optional[Paths]) -> List[str]:
    return [] if dirs is None else _paths(dirs)


def _steps(steps: Steps) -> Optional[str]:
    """An int N, "A..B" / "A..=B" / "A.." / "..B", or a range (step 1) of step numbers."""
    if steps is None or isinstance(steps, str):
        return steps
    if isinstance(steps, bool):
        raise TypeError("steps must be an int, a str like '3..7', or a range")
    if isinstance(steps, int):
        return str(steps)
    if isinstance(steps, range):
        if steps.step != 1:
            raise ValueError("steps: a range of consecutive steps (step 1)")
        return f"{steps.start}..{steps.stop}"
    raise TypeError("steps must be an int, a str like '3..7', or a range")


def _options(
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
    iteration_marker: Optional[str] = None,
    phase: Optional[str] = None,
    what_if: Union[str, Sequence[str], None] = None,
    flex_density: Optional[float] = None,
    force: bool = False,
    allow_empty: bool = False,
) -> Dict[str, Any]:
    if what_if is None:
        what_if = []
    elif isinstance(what_if, str):
        what_if = [w for w in what_if.split(",") if w]
    return {
        "rules": _dirs(rules),
        "torch_logs": _dirs(torch_logs),
        "steps": _steps(steps),
        "skip_warmup": bool(skip_warmup),
        "threads": threads,
        "top": int(top),
        "strict": bool(strict),
        "input_format": None if input_format in (None, "auto") else input_format,
        "attribution": bool(attribution),
        "env": None if env is None else os.fsdecode(env),
        "dispatch_threshold_us": float(dispatch_threshold_us),
        "max_gunzip_ratio": None if max_gunzip_ratio is None else int(max_gunzip_ratio),
        "iteration_marker": None if iteration_marker is None else str(iteration_marker),
        "phase": None if phase is None else str(phase),
        "what_if": [str(w) for w in what_if],
        "flex_density": None if flex_density is None else float(flex_density),
        "force": bool(force),
        "allow_empty": bool(allow_empty),
    }


_OPTIONS_DOC = """
    paths: a trace file (``.json``, ``.json.gz``, rocprof CSV/JSON, rocpd ``.db``), a directory
        (one file per rank, or a rocprof output directory), a torch.compile log, or a list of
        these.
    rules: directories of extra rule files (``--rules``); a rule with a built-in id replaces it.
    torch_logs: torch.compile logs of the same run (``--torch-logs``).
    steps: the ProfilerStep numbers to analyze: ``3``, ``"2..5"``, ``"2..=5"``, ``"2.."``,
        ``"..5"`` or ``range(2, 5)`` (``--steps``); iteration indices (from 0) in traces
        without ProfilerStep.
    skip_warmup: leave the first step out (``--skip-warmup``); on iterations, every one that
        is not steady state (graph capture, compile, warm-up).
    iteration_marker: take iterations from this annotation (or its prefix, or a Python
        function) instead of ProfilerStep or the marker found (``--iteration-marker``).
    phase: analyze only iterations of this phase: ``prefill``, ``decode``, ``mixed`` or
        ``step`` (``--phase``).
    threads: worker threads (default: all cores); the result never depends on it.
    top: kernels in the feed's top-kernel list (``--top``).
    strict: a truncated trace is an error instead of analyzed as far as it goes.
    input_format: read every input as this format (``kineto``, ``rocprof-v1``,
        ``rocprofv2-csv``, ``rocprofv3-csv``, ``rocprofv3-json``, ``rocpd``).
    attribution: attribute GPU time to ops, modules and source lines (``--no-attribution``
        turns it off).
    env: the output of ``env`` on the machine that ran the trace (the ladder's level-1 audit).
    dispatch_threshold_us: host gaps shorter than this count as launch overhead.
    max_gunzip_ratio: refuse a ``.gz`` that expands more than this many times its size (and
        256 MiB) as a decompression bomb (default: the command line's).
    what_if: recommendation ids (a list, or one comma-separated string) whose changes are
        replayed together on the step model (``--what-if``): ``Report.what_if`` has the
        replayed steps and their critical path.
    flex_density: the share (0 to 1] of query-key blocks flex attention's block masks keep
        (``--flex-density``; ``1 - BlockMask.sparsity() / 100``). The trace does not record it:
        without it flex attention counts dense and ``summary.mfu_upper_bound`` is true.
    force: analyze ranks together although they look like different jobs (``--force``);
        otherwise that raises InputError naming both files and what differs.
    allow_empty: report inputs without GPU activity (``--allow-empty``); otherwise they raise
        NothingToAnalyze (``exit_code`` 3, as the command line exits).
"""


class Report:
    """One analysis: the feed, the findings, the ranked recommendations, the Markdown and HTML
    reports and the classified activity table. In a notebook it shows as the HTML report."""

    def __init__(self, native: Any) -> None:
        self._native = native
        self._feed: Optional[Dict[str, Any]] = None

    @property
    def feed(self) -> Dict[str, Any]:
        """The JSON feed (FEED.md) as a dict: equal to ``rocprof-classify --json -``."""
        if self._feed is None:
            self._feed = _json.loads(self._native.feed_json())
        return self._feed

    def json(self) -> str:
        """The JSON feed as text, byte for byte what ``rocprof-classify --json -`` writes."""
        return self._native.feed_json().decode()

    @property
    def findings(self) -> List[Dict[str, Any]]:
        """What the detectors found (the feed's ``findings``), most severe first."""
        return self.feed["findings"]

    @property
    def recommendations(self) -> List[Dict[str, Any]]:
        """The ranked actions on the optimization ladder (the feed's ``recommendations``)."""
        return self.feed["recommendations"]

    @property
    def critical_path(self) -> Dict[str, Any]:
        """What bounds each step (the feed's ``critical_path``): the path's time by label
        (``gpu_compute`` by bucket, ``communication``, ``launch``, ``host``, ``data_loading``,
        ``sync``, …), per step, and the ops and kernels on it."""
        return self.feed["critical_path"]

    @property
    def what_if(self) -> Optional[Dict[str, Any]]:
        """The step replayed with the ``what_if=`` recommendations' changes (the feed's
        ``what_if``): per rank and step, its time as is and replayed, and the replayed step's
        critical path by label; None when not asked."""
        return self.feed.get("what_if")

    @property
    def headline(self) -> str:
        """The report's one-line verdict."""
        return self._native.headline()

    def markdown(self) -> str:
        """The GitHub-flavoured Markdown summary (``--markdown``), for a PR comment."""
        return self._native.markdown()

    def html(self) -> str:
        """The self-contained HTML report (``--html``): inline SVG charts, no network."""
        return self._native.html()

    def table(self, width: int = 120) -> str:
        """The terminal table the command line prints, without color."""
        return self._native.table(width)

    def activities(self) -> "pyarrow.Table":
        """The classified activity table (see :func:`activities`)."""
        import pyarrow

        return pyarrow.table(self._native.activities())

    def write_dataset(self, dir: PathLike) -> List[str]:
        """Writes the classified activity table as a Parquet dataset partitioned by rank, Hive
        style (``dir/rank=N/part-0.parquet``; ``--export-parquet-dir``): DuckDB, Spark or polars
        read a whole job as one table. Each rank's run may write its own partition into the same
        ``dir``. Returns the files written."""
        return [str(path) for path, _rows in self._native.write_dataset(str(dir))]

    def _repr_html_(self) -> str:
        # The report is a whole HTML document with its own styles: an iframe keeps them off
        # the notebook's page.
        doc = self.html()
        return (
            f'<p>{_html.escape(self.headline)}</p>'
            f'<iframe srcdoc="{_html.escape(doc, quote=True)}" '
            'style="width:100%;height:720px;border:1px solid #ddd"></iframe>'
        )

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return f"<rocprof_classify.Report: {self.headline}>"


def report(paths: Paths, **options: Any) -> Report:
    return Report(_native.run(_paths(paths), _options(**options)))


report.__doc__ = f"""Reads and analyzes ``paths``; the :class:`Report` renders every output.
{_OPTIONS_DOC}
    Raises InputError (a ValueError with ``.path`` and ``.offset``) for an input that cannot
    be read, RulesError for rules that do not load, KeyboardInterrupt on Ctrl-C."""


def analyze(paths: Paths, **options: Any) -> Dict[str, Any]:
    return report(paths, **options).feed


analyze.__doc__ = f"""The JSON feed (FEED.md) of ``paths`` as a dict: equal to
``rocprof-classify --json -`` with the same inputs and options.
{_OPTIONS_DOC}"""


def activities(paths: Paths, **options: Any) -> "pyarrow.Table":
    return report(paths, **options).activities()


activities.__doc__ = f"""The classified activity table of ``paths``: one row per GPU activity
(rank, input, device, stream, kind, start_ns, dur_ns, name, bucket, family, library, step, rule,
op, module, source, in_window), as a ``pyarrow.Table`` through the Arrow C stream interface.
``polars.from_arrow(t)`` and ``t.to_pandas()`` read it; the ``in_window`` rows' ``dur_ns`` add
up, per bucket, to the feed's ``buckets``. Needs pyarrow.
{_OPTIONS_DOC}"""


class Diff(dict):  # type: ignore[type-arg]
    """The before/after comparison (``rocprof-classify diff --json -``) as a dict, with its
    Markdown and HTML renderings."""

    def __init__(self, data: Dict[str, Any], markdown: str, html: str) -> None:
        super().__init__(data)
        self._markdown = markdown
        self._html = html

    def markdown(self) -> str:
        return self._markdown

    def html(self) -> str:
        return self._html

    def _repr_html_(self) -> str:
        return (
            f'<iframe srcdoc="{_html.escape(self._html, quote=True)}" '
            'style="width:100%;height:720px;border:1px solid #ddd"></iframe>'
        )


def diff(
    base: PathLike,
    new: PathLike,
    *,
    base_steps: Optional[str] = None,
    new_steps: Optional[str] = None,
    applied: Union[str, Sequence[str], None] = None,
    **options: Any,
) -> Diff:
    if applied is None:
        applied = []
    elif isinstance(applied, str):
        applied = [a for a in applied.split(",") if a]
    data, markdown, html = _native.diff(
        os.fsdecode(base),
        os.fsdecode(new),
        _options(**options),
        base_steps,
        new_steps,
        [str(a) for a in applied],
    )
    return Diff(_json.loads(data), markdown, html)


diff.__doc__ = f"""Compares two runs (files or directories, any format or vendor): the step
time's verdict (``faster``, ``slower``, ``within_noise`` or ``too_few_steps``, by Welch's t-test
over the steps) and its cause, op rows matched by op and shape, buckets, time partition,
kernels, findings and the ladder, before and after. Returns the dict of
``rocprof-classify diff BASE NEW --json -`` (with ``.markdown()`` and ``.html()``).
``base_steps``/``new_steps`` (``"A..B"``) pick each side's steps (``--base-steps``/``--new-steps``).
``applied``: the recommendation ids applied between the runs (``--applied``): ``applied[]`` puts
the saving the base run predicted beside the one measured.
{_OPTIONS_DOC.replace("paths:", "base, new:", 1)}"""


def partial(paths: Paths, *, rank: Optional[int] = None, **options: Any) -> bytes:
    return _native.partial(_paths(paths), _options(**options), rank)


partial.__doc__ = f"""One rank's partial result (``rocprof-classify partial``): the JSON bytes that
:func:`merge` reads, with the other ranks' partials, into the job's feed. Write one per rank
file wherever the file is (a Ray or Dask task per rank) and send only the partials on.
``rank`` is, of a file holding several ranks, the one to take; of a trace that does not say its
rank, the one it is. Options that change what a rank computes (``steps``, ``skip_warmup``,
``attribution``, ``dispatch_threshold_us``, ``rules``) must be the same for every rank.
{_OPTIONS_DOC}"""

Partials = Sequence[Union[bytes, PathLike, Dict[str, Any]]]


def _partials(partials: Partials) -> List[Any]:
    out = []
    for i, p in enumerate(partials):
        if isinstance(p, (bytes, bytearray)):
            out.append((f"partial {i}", bytes(p)))
        elif isinstance(p, dict):
            out.append((f"partial {i}", _json.dumps(p).encode()))
        else:
            with open(p, "rb") as f:
                out.append((os.fsdecode(p), f.read()))
    if not out:
        raise ValueError("no partials given")
    return out


def merge_report(partials: Partials, **options: Any) -> Report:
    """The job's :class:`Report` from its ranks' partials (bytes from :func:`partial`, their
    files, or their parsed dicts), as analyzing the rank files together gives it
    (``rocprof-classify merge``). Options: ``top``, ``env``, ``rules`` (the rules the partials
    were written with). Raises InputError naming the partial for one of another version, run or
    settings, or a rank given twice."""
    return Report(_native.merge(_partials(partials), _options(**options)))


def merge(partials: Partials, **options: Any) -> Dict[str, Any]:
    """The job's JSON feed from its ranks' partials: equal to :func:`analyze` of the rank files
    together (see :func:`merge_report`)."""
    return merge_report(partials, **options).feed


def explain(id: str, *, rules: Optional[Paths] = None) -> str:
    """What a finding id (``graph_breaks`` …) or recommendation id (``compile.enable`` …)
    means: when it fires, its savings model, actions and source (``rocprof-classify explain``)."""
    return _native.explain_id(id, _dirs(rules))


def schema() -> Dict[str, Any]:
    """The JSON Schema of the feed (``rocprof-classify schema``)."""
    return _json.loads(_native.FEED_SCHEMA)
