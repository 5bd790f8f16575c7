"""`analyze()` gives the feed the command line writes, for every input format and option."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rocprof_classify as rc
from conftest import FIXTURES, canonical, cli, cli_feed, corpus

# The H100 captures and the zoo of real models (transformers, timm, torchvision).
KINETO = sorted(
    str(p.relative_to(FIXTURES.parent))
    for folder in ("h100", "zoo")
    for p in (FIXTURES / "kineto" / folder).glob("*.json.gz")
)


def test_fixtures_are_there() -> None:
    assert len(KINETO) >= 25, KINETO


@pytest.mark.parametrize("trace", KINETO, ids=lambda p: Path(p).name)
def test_kineto_feed_equals_cli(trace: str) -> None:
    feed = rc.analyze(trace)
    assert canonical(feed) == canonical(cli_feed([trace]))
    # A real analysis, not an empty shell: time was classified into buckets.
    assert feed["summary"]["kernel_ns"] > 0
    assert sum(b["kernel_ns"] for b in feed["buckets"]) == feed["summary"]["kernel_ns"]


@pytest.mark.parametrize(
    "options, flags",
    [
        ({"steps": "2..4"}, ["--steps", "2..4"]),
        ({"steps": range(2, 4)}, ["--steps", "2..4"]),
        ({"steps": 3}, ["--steps", "3"]),
        ({"skip_warmup": True, "top": 5}, ["--skip-warmup", "--top", "5"]),
        ({"attribution": False}, ["--no-attribution"]),
        ({"dispatch_threshold_us": 10.0}, ["--dispatch-threshold-us", "10"]),
        ({"env": "fixtures/kineto/h100/env.json"}, ["--env", "fixtures/kineto/h100/env.json"]),
        ({"input_format": "kineto", "threads": 1}, ["--input-format", "kineto", "--threads", "1"]),
    ],
    ids=lambda v: str(v),
)
def test_options_match_flags(options: dict, flags: list) -> None:
    trace = "fixtures/kineto/h100/compiled_graph_breaks.json.gz"
    assert canonical(rc.analyze(trace, **options)) == canonical(cli_feed([*flags, trace]))


def test_options_change_the_feed() -> None:
    # The options reach the pipeline: a step selection analyzes fewer steps.
    trace = "fixtures/kineto/h100/eager_manual_attn.json.gz"
    assert rc.analyze(trace, steps="2..4")["summary"]["steps"] == 2
    assert rc.analyze(trace)["summary"]["steps"] > 2


def test_thread_count_does_not_change_the_feed() -> None:
    trace = "fixtures/kineto/h100/compiled_manual_attn.json.gz"
    assert canonical(rc.analyze(trace, threads=1)) == canonical(rc.analyze(trace, threads=2))


def test_torch_logs_join_the_trace() -> None:
    trace = "fixtures/kineto/h100/compiled_graph_breaks.json.gz"
    log = "fixtures/kineto/h100/torch_logs_extra.txt"
    feed = rc.analyze(trace, torch_logs=log)
    assert canonical(feed) == canonical(cli_feed(["--torch-logs", log, trace]))
    assert [i["format"] for i in feed["inputs"]][-1] == "torch-logs"


def test_directory_of_ranks() -> None:
    ranks = "fixtures/kineto/h100x2/gpu_straggler"
    feed = rc.analyze(ranks)
    assert canonical(feed) == canonical(cli_feed([ranks]))
    assert len(feed["ranks"]) == 2
    assert "straggler_rank" in {f["id"] for f in feed["findings"]}


def test_paths_as_pathlike_and_lists() -> None:
    trace = "fixtures/kineto/h100/eager_sdpa_fused.json.gz"
    assert canonical(rc.analyze(Path(trace))) == canonical(rc.analyze([trace]))


# Every other format, from the shared corpus of real profiler outputs.
CORPUS_INPUTS = [
    ("rocprof-v1 json", ["rocprof1_batched_gemm/results.json"]),
    ("rocprof-v1 csv", ["rocprof1_hip_programming/output_vec_add_gpu.csv"]),
    ("rocprofv2 csv", ["rocprof_compute/vcopy/MI300X_A1/timestamps.csv"]),
    ("rocprofv3 csv", ["rocprofv3_sdk_docs_2025/kernel_trace.csv"]),
    ("rocprofv3 json", ["tracelens_rocprof/908_results.json.gz"]),
    ("rocpd", ["rocpd/28_results.db"]),
    ("rocprof-compute", ["rocprof_compute/vcopy/MI300X_A1"]),
    ("kineto amd", ["hpctraining/replay_trace.json"]),
    ("torch logs", ["torch_logs/recompiles_2024_pytorch_pr130043.txt"]),
    ("torch trace", ["tlparse/simple.log"]),
]


@pytest.mark.parametrize("name, relative", CORPUS_INPUTS, ids=[c[0] for c in CORPUS_INPUTS])
def test_corpus_feed_equals_cli(name: str, relative: list) -> None:
    paths = [str(corpus(r)) for r in relative]
    feed = rc.analyze(paths)
    assert canonical(feed) == canonical(cli_feed(paths))
    formats = {i["format"] for i in feed["inputs"]}
    expected = {
        "rocprof-v1 json": "rocprof-v1",
        "rocprof-v1 csv": "rocprof-v1",
        "rocprofv2 csv": "rocprofv2-csv",
        "rocprofv3 csv": "rocprofv3-csv",
        "rocprofv3 json": "rocprofv3-json",
        "rocpd": "rocpd",
        "rocprof-compute": "rocprof-compute",
        "kineto amd": "kineto",
        "torch logs": "torch-logs",
        "torch trace": "torch-trace",
    }[name]
    assert expected in formats, formats


def test_diff_equals_cli() -> None:
    base = "fixtures/kineto/h100/eager_sdpa_fused.json.gz"
    new = "fixtures/kineto/h100/compiled_clean.json.gz"
    d = rc.diff(base, new)
    expected = cli(["diff", base, new, "--json", "-", "--quiet"]).stdout
    import json

    assert canonical(dict(d)) == canonical(json.loads(expected))
    assert d.markdown() == cli(["diff", base, new, "--markdown", "-", "--quiet"]).stdout.decode()
    assert "<html" in d.html()


def test_schema_is_the_cli_schema() -> None:
    import json

    assert rc.schema() == json.loads(cli(["schema"]).stdout)


def test_feed_validates_against_its_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    feed = rc.analyze("fixtures/kineto/h100/compiled_graph_breaks.json.gz")
    jsonschema.validate(feed, rc.schema())


def test_version_is_the_cli_version() -> None:
    assert cli(["--version"]).stdout.decode().split() == ["rocprof-classify", rc.__version__]


def test_regions_and_mfu_reach_python() -> None:
    # GPT-2 training on an H100 with per-layer record_function ranges.
    feed = rc.analyze(str(FIXTURES / "kineto" / "h100" / "train_layers.json.gz"))
    paths = [r["path"] for r in feed["regions"]]
    assert paths[:2] == ["forward", "forward / layer_0"]
    forward = feed["regions"][0]
    assert forward["count"] == 3 and forward["gpu_span_ns"] <= forward["gpu_elapsed_ns"]
    summary = feed["summary"]
    # FlopCounterMode's count of one step (regions_truth.json).
    assert summary["model_flops_per_step"] == 1782948298752
    seconds = summary["step_ns"]["mean"] / 1e9
    expect = summary["model_flops_per_step"] / (seconds * summary["peak_flops"]) * 100
    assert abs(summary["mfu_pct"] - expect) < 1e-3


def test_flex_density_reaches_the_flop_count() -> None:
    # Compiled flex_attention with a causal BlockMask (H200): the trace has no density, so flex
    # counts dense and MFU is an upper bound until the mask's density is given.
    trace = "fixtures/kineto/h200_kernels/flex_train.json.gz"
    truth = json.loads((FIXTURES / "kineto" / "h200_kernels" / "truth.json").read_text())
    t = truth["flex_train"]
    dense = rc.analyze(trace)["summary"]
    assert dense["mfu_upper_bound"] is True
    assert dense["model_flops_per_step"] == t["hand_flops_per_step_dense"]
    density = t["block_mask_density"]
    masked = rc.analyze(trace, flex_density=density)
    assert canonical(masked) == canonical(cli_feed(["--flex-density", str(density), trace]))
    assert masked["summary"]["mfu_upper_bound"] is False
    assert abs(masked["summary"]["model_flops_per_step"] - t["hand_flops_per_step_masked"]) < 1
    with pytest.raises(ValueError, match="flex_density"):
        rc.analyze(trace, flex_density=0)


def test_diff_applied_equals_the_cli() -> None:
    # The ladder driver's check after a rung: GPT-2 training compiled, 4 profiled steps a side.
    base = "fixtures/kineto/pairs/set1/gpt2_train/base.json.gz"
    new = "fixtures/kineto/pairs/set1/gpt2_train/compile.json.gz"
    import json

    d = rc.diff(base, new, applied="compile.enable")
    out = cli(["diff", base, new, "--applied", "compile.enable", "--json", "-", "--quiet"])
    assert canonical(dict(d)) == canonical(json.loads(out.stdout))
    a = d["diff"]["applied"][0]
    assert d["diff"]["verdict"] == "faster" and a["id"] == "compile.enable" and a["within_range"]
    assert "applied" not in rc.diff(base, new)["diff"]


def test_diff_step_windows_equal_the_cli() -> None:
    base = "fixtures/kineto/h200/diff/base_a.json.gz"
    new = "fixtures/kineto/h200/diff/planted.json.gz"
    d = rc.diff(base, new, base_steps="3..15", new_steps="15..27")
    expected = cli(
        ["diff", base, new, "--base-steps", "3..15", "--new-steps", "15..27", "--json", "-", "--quiet"]
    ).stdout
    import json

    assert canonical(dict(d)) == canonical(json.loads(expected))
    diff = d["diff"]
    assert diff["base"]["compared_step_numbers"] == [3, 14]
    assert diff["new"]["compared_step_numbers"] == [15, 26]
    # The planted matmuls: their op row is the largest change, and slower.
    top = diff["ops"][0]
    assert (top["op"], top["shapes"], top["verdict"]) == (
        "aten::mm",
        "[[4096,1024],[1024,1024]]",
        "slower",
    )
    with pytest.raises(ValueError, match="steps"):
        rc.diff(base, new, base_steps="x..y")
