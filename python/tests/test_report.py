"""`Report`, the Arrow activity table, the rules and explanations."""

from __future__ import annotations

import html
from collections import defaultdict
from pathlib import Path

import pytest

import rocprof_classify as rc
from conftest import canonical, cli, cli_feed, corpus

pa = pytest.importorskip("pyarrow")

TRACE = "fixtures/kineto/h100/eager_manual_attn.json.gz"


@pytest.fixture(scope="module")
def report() -> rc.Report:
    return rc.report(TRACE)


def test_report_properties_are_the_feed(report: rc.Report) -> None:
    assert canonical(report.feed) == canonical(cli_feed([TRACE]))
    assert report.findings == report.feed["findings"]
    assert report.recommendations == report.feed["recommendations"]
    # The eager model with hand-written attention: compile first, then sdpa.
    ids = [r["id"] for r in report.recommendations]
    assert ids[0].startswith("compile."), ids
    assert "manual_attention" in {f["id"] for f in report.findings}


def test_critical_path_blames_the_data_loader() -> None:
    # A ResNet-18 loop whose DataLoader (no workers, heavy CPU transforms) takes most of the step.
    r = rc.report("fixtures/kineto/h200_deps/resnet18_loader.json.gz")
    path = r.critical_path
    assert path == r.feed["critical_path"]
    first = path["labels"][0]
    assert first["label"] == "data_loading" and first["pct_of_path"] > 80, first
    assert sum(s["ns"] for s in path["per_step"]) == path["ns"]
    assert r.recommendations[0]["id"] == "env.host-pipeline"


def test_what_if_replays_workers_for_the_data_loader() -> None:
    # The loader-bound loop: eight DataLoader workers hide most of the loading, and the
    # replayed step's path is no longer data loading.
    path = "fixtures/kineto/h200_deps/resnet18_loader.json.gz"
    r = rc.report(path, what_if="env.host-pipeline")
    w = r.what_if
    assert w == r.feed["what_if"] == cli_feed([path, "--what-if", "env.host-pipeline"])["what_if"]
    assert w["recommendations"] == ["env.host-pipeline"] and w["transforms"] == ["loader_workers"]
    for s in w["steps"]:
        assert s["replay_ns"] < 0.5 * s["base_ns"], s
        assert abs(sum(l["ns"] for l in s["labels"]) - s["replay_ns"]) <= 0.01 * s["replay_ns"]
        top = max(s["labels"], key=lambda l: l["ns"])
        assert top["label"] != "data_loading", top
    assert rc.report(path).what_if is None
    with pytest.raises(Exception, match="no recommendation has this id"):
        rc.report(path, what_if=["no.such-rung"])


def test_report_renders_what_the_cli_writes(report: rc.Report) -> None:
    assert report.markdown() == cli([TRACE, "--markdown", "-", "--quiet"]).stdout.decode()
    assert report.html() == cli([TRACE, "--html", "-", "--quiet"]).stdout.decode()
    assert report.table() == cli([TRACE, "--quiet"]).stdout.decode()


def test_repr_html_shows_the_report(report: rc.Report) -> None:
    shown = report._repr_html_()
    assert report.headline
    assert html.escape(report.headline) in shown
    # The whole report, isolated in an iframe so its styles stay off the notebook's page.
    srcdoc = shown.split('srcdoc="', 1)[1].split('"', 1)[0]
    assert html.unescape(srcdoc) == report.html()
    # The HTML report opens with the same headline.
    headline = html.escape(report.headline, quote=False)
    assert f'<p class="headline">{headline}</p>' in report.html()
    assert report.headline in repr(report)


def _bucket_sums(table: "pa.Table") -> dict:
    sums: dict = defaultdict(int)
    counts: dict = defaultdict(int)
    for bucket, dur, in_window in zip(
        table.column("bucket").to_pylist(),
        table.column("dur_ns").to_pylist(),
        table.column("in_window").to_pylist(),
    ):
        if in_window:
            sums[bucket] += dur
            counts[bucket] += 1
    return {b: (sums[b], counts[b]) for b in sums}


@pytest.mark.parametrize(
    "paths",
    [
        TRACE,
        "fixtures/kineto/h100/compiled_cudagraphs.json.gz",
        "fixtures/kineto/h100x2/gpu_straggler",
    ],
)
def test_activities_add_up_to_the_feed(paths: str) -> None:
    rep = rc.report(paths)
    table = rep.activities()
    assert isinstance(table, pa.Table)
    feed_buckets = {
        b["bucket"]: (b["kernel_ns"], b["launches"]) for b in rep.feed["buckets"] if b["launches"]
    }
    assert _bucket_sums(table) == feed_buckets
    assert table.num_rows >= sum(b["launches"] for b in rep.feed["buckets"])
    assert table.column_names == [
        "rank", "input", "device", "stream", "kind", "start_ns", "dur_ns", "name", "bucket",
        "family", "library", "step", "rule", "op", "module", "source", "in_window",
    ]


def test_activities_of_a_run_without_gpu_activity() -> None:
    # A torch.compile log alone: the table is empty but has the columns.
    table = rc.activities("fixtures/kineto/h100/torch_logs_extra.txt")
    assert table.num_rows == 0
    assert table.column_names == rc.activities(TRACE).column_names
    assert table.schema.field("dur_ns").type == pa.int64()


def test_activities_equal_the_csv_export(tmp_path: Path) -> None:
    out = tmp_path / "a.csv"
    cli([TRACE, "--export-csv", str(out), "--quiet"])
    from pyarrow import csv

    exported = csv.read_csv(out)
    table = rc.activities(TRACE)
    assert table.num_rows == exported.num_rows > 0
    for column in ["name", "bucket", "dur_ns", "start_ns", "kind", "op"]:
        assert table.column(column).to_pylist() == exported.column(column).to_pylist(), column


def test_polars_and_pandas_read_the_table() -> None:
    pl = pytest.importorskip("polars")
    pytest.importorskip("pandas")
    table = rc.activities(TRACE)
    frame = pl.from_arrow(table)
    assert frame.height == table.num_rows
    by_bucket = (
        frame.filter(pl.col("in_window")).group_by("bucket").agg(pl.col("dur_ns").sum()).rows()
    )
    feed = rc.analyze(TRACE)
    assert dict(by_bucket) == {b["bucket"]: b["kernel_ns"] for b in feed["buckets"] if b["launches"]}
    pandas = table.to_pandas()
    assert len(pandas) == table.num_rows
    assert pandas["dur_ns"].sum() == sum(table.column("dur_ns").to_pylist())


def test_activities_of_an_amd_trace() -> None:
    path = str(corpus("rocpd/28_results.db"))
    rep = rc.report(path)
    table = rep.activities()
    assert table.num_rows > 0
    assert _bucket_sums(table) == {
        b["bucket"]: (b["kernel_ns"], b["launches"]) for b in rep.feed["buckets"] if b["launches"]
    }


def test_rules_explain_matches_the_cli() -> None:
    name = "Cijk_Alik_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0"
    explained = rc.rules.explain(name)
    assert explained["bucket"] == "gemm"
    assert explained["rule"]["id"] == explained["matches"][0]["id"]
    assert explained["library"] == explained["rule"]["library"] or explained["rule"]["library"] is None
    assert explained["text"] == cli(["rules", "explain", name]).stdout.decode()
    unknown = rc.rules.explain("my_custom_kernel_xyz")
    assert unknown["rule"] is None and unknown["matches"] == []


def test_rules_classify_and_list_match_the_cli(tmp_path: Path) -> None:
    names = [
        "Cijk_Alik_Bljk_HHS_BH_MT128x128x32",
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
        "my_custom_kernel_xyz",
    ]
    classes = rc.rules.classify(names)
    (tmp_path / "names.txt").write_text("\n".join(names) + "\n")
    printed = cli(["rules", "classify", str(tmp_path / "names.txt")]).stdout.decode()
    rows = [line.split("\t") for line in printed.splitlines()]
    assert [(b, f, lib, None if r == "-" else r) for b, f, lib, r, _ in rows] == classes
    assert [c[0] for c in classes] == ["gemm", "communication", "other"]
    listed = rc.rules.list()
    assert len(listed) == len(cli(["rules", "list"]).stdout.decode().strip().splitlines()) - 1
    assert {r["bucket"] for r in listed} >= {"gemm", "attention", "communication"}


def test_user_rules_take_effect(tmp_path: Path) -> None:
    (tmp_path / "mine.toml").write_text(
        'schema = 1\n[[rule]]\nid = "my.kernel"\nbucket = "gemm"\nfamily = "mine"\npriority = 900\n'
        'pattern = "^my_custom_kernel"\nmatch = ["my_custom_kernel_xyz"]\n'
    )
    explained = rc.rules.explain("my_custom_kernel_xyz", rules=tmp_path)
    assert explained["rule"]["id"] == "my.kernel"
    assert explained["bucket"] == "gemm"


def test_explain_ids() -> None:
    assert "fires when" in rc.explain("graph_breaks")
    assert rc.explain("compile.enable") == cli(["explain", "compile.enable"]).stdout.decode()
    with pytest.raises(ValueError, match="unknown id"):
        rc.explain("no_such_id")
