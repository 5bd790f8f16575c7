"""Bad input raises InputError naming the file and the offset; Ctrl-C stops a long read; the
GIL is free while Rust works."""

from __future__ import annotations

import re
import signal
import threading
import time
import zlib
from pathlib import Path
from typing import Iterator

import pytest

import rocprof_classify as rc
from conftest import FIXTURES, cli

BAD = sorted(str(p.relative_to(FIXTURES.parent)) for p in (FIXTURES / "bad").iterdir())


def test_bad_fixtures_are_there() -> None:
    assert len(BAD) >= 5, BAD


@pytest.mark.parametrize("path", BAD, ids=lambda p: Path(p).name)
def test_bad_input_raises_input_error(path: str) -> None:
    with pytest.raises(rc.InputError) as raised:
        rc.analyze(path)
    error = raised.value
    assert isinstance(error, ValueError)
    assert error.path == path
    # The same message the command line prints (exit 2), with the same byte offset.
    done = cli([path, "--quiet"], check=False)
    assert done.returncode == 2
    stderr = done.stderr.decode()
    assert str(error) in stderr, (str(error), stderr)
    at = re.search(r"byte (\d+)", str(error))
    assert error.offset == (int(at.group(1)) if at else None)


def test_truncated_trace_is_analyzed_or_refused_when_strict(tmp_path: Path) -> None:
    whole = (FIXTURES / "kineto" / "h100" / "eager_sdpa_fused.json.gz").read_bytes()
    text = zlib.decompress(whole, 47)
    cut = tmp_path / "cut.json"
    cut.write_bytes(text[: len(text) * 9 // 10])
    feed = rc.analyze(str(cut))
    assert feed["inputs"][0]["truncated"] is True
    assert feed["summary"]["kernel_ns"] > 0
    with pytest.raises(rc.InputError) as raised:
        rc.analyze(str(cut), strict=True)
    assert raised.value.path == str(cut)
    assert raised.value.offset is not None and 0 < raised.value.offset <= len(text) * 9 // 10


def test_missing_file_and_bad_options() -> None:
    with pytest.raises(rc.InputError) as raised:
        rc.analyze("no/such/trace.json")
    assert raised.value.path == "no/such/trace.json"
    assert raised.value.offset is None
    with pytest.raises(ValueError, match="steps"):
        rc.analyze("fixtures/kineto/h100/eager_sdpa_fused.json.gz", steps="x..y")
    with pytest.raises(ValueError, match="input_format"):
        rc.analyze("fixtures/kineto/h100/eager_sdpa_fused.json.gz", input_format="nsys")
    with pytest.raises(ValueError, match="threads"):
        rc.analyze("fixtures/kineto/h100/eager_sdpa_fused.json.gz", threads=0)


def test_broken_rules_raise_rules_error(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text("schema = 1\n[[rule]]\nid = 'x'\npattern = '('\n")
    with pytest.raises(rc.RulesError):
        rc.analyze("fixtures/kineto/h100/eager_sdpa_fused.json.gz", rules=tmp_path)


EVENT = (
    b'{"ph":"X","cat":"kernel","name":"void at::native::vectorized_elementwise_kernel<4>",'
    b'"pid":0,"tid":7,"ts":1000.5,"dur":2.25,'
    b'"args":{"device":0,"stream":7,"correlation":11,"grid":[1,1,1],"block":[128,1,1]}},\n'
)


@pytest.fixture(scope="module")
def big_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A gzipped Kineto trace of ~1.5 GB of events (a few MB on disk): seconds to read."""
    path = tmp_path_factory.mktemp("big") / "big.json.gz"
    block = EVENT * ((4 << 20) // len(EVENT))
    gz = zlib.compressobj(1, zlib.DEFLATED, 31)
    with open(path, "wb") as out:
        out.write(gz.compress(b'{"traceEvents":[\n'))
        for _ in range(1500 * (1 << 20) // len(block)):
            out.write(gz.compress(block))
        out.write(gz.compress(EVENT[:-2] + b"]}\n"))
        out.write(gz.flush())
    return path


@pytest.fixture(autouse=True)
def _ctrl_c_raises() -> Iterator[None]:
    # Python leaves SIGINT ignored when it started ignored (a background job of a
    # non-interactive shell, as CI may run it): Ctrl-C raises KeyboardInterrupt here regardless.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _interrupt_main_after(seconds: float) -> threading.Timer:
    main = threading.main_thread().ident
    assert main is not None
    timer = threading.Timer(seconds, lambda: signal.pthread_kill(main, signal.SIGINT))
    timer.start()
    return timer


def test_keyboard_interrupt_stops_a_long_read(big_trace: Path) -> None:
    assert threading.current_thread() is threading.main_thread()
    started = time.monotonic()
    timer = _interrupt_main_after(0.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            rc.analyze(str(big_trace), max_gunzip_ratio=1_000_000)
    finally:
        timer.cancel()
    stopped = time.monotonic() - started
    # Reading the whole trace takes many seconds; cancelled, the call returns at the next block.
    assert stopped < 3.0, f"took {stopped:.1f} s to stop"
    # And the next call works.
    assert rc.analyze("fixtures/kineto/h100/eager_sdpa_fused.json.gz")["summary"]["kernel_ns"] > 0


def test_the_gil_is_free_while_rust_works(big_trace: Path) -> None:
    ticks: list = []
    stop = threading.Event()

    def tick() -> None:
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.01)

    ticker = threading.Thread(target=tick)
    ticker.start()
    timer = _interrupt_main_after(1.5)
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            rc.analyze(str(big_trace), max_gunzip_ratio=1_000_000)
    finally:
        timer.cancel()
        stop.set()
        ticker.join()
    # The other thread ran Python all along the call: no gap near its length.
    during = [t for t in ticks if t > started + 0.1]
    gaps = [b - a for a, b in zip(during, during[1:])]
    assert len(during) > 50 and max(gaps) < 0.5, (len(during), max(gaps, default=None))


def _cut_before_kernels(tmp_path: Path) -> str:
    """A Kineto trace cut before its first kernel: host events only, no GPU activity."""
    import gzip

    raw = gzip.open(FIXTURES / "kineto/h100/eager_manual_attn.json.gz").read()
    at = raw.find(b'"cat": "kernel"')
    if at < 0:
        at = raw.find(b'"cat":"kernel"')
    path = tmp_path / "cut_before_kernels.json"
    path.write_bytes(raw[: raw.rfind(b"{", 0, at)])
    return str(path)


def test_no_gpu_activity_raises_nothing_to_analyze_with_the_clis_exit_code(tmp_path: Path) -> None:
    path = _cut_before_kernels(tmp_path)
    with pytest.raises(rc.NothingToAnalyze) as raised:
        rc.analyze(path)
    error = raised.value
    assert isinstance(error, rc.InputError)
    assert error.exit_code == rc.EXIT_NOTHING == 3
    assert path in str(error)
    done = cli([path, "--quiet"], check=False)
    assert done.returncode == error.exit_code
    assert str(error) in done.stderr.decode()
    feed = rc.analyze(path, allow_empty=True)
    assert feed["summary"]["kernel_ns"] == 0


def test_exit_codes_are_the_clis() -> None:
    assert (rc.EXIT_OK, rc.EXIT_GATE, rc.EXIT_ERROR, rc.EXIT_NOTHING) == (0, 1, 2, 3)
    assert rc.InputError.exit_code == rc.RulesError.exit_code == rc.EXIT_ERROR
    done = cli([BAD[0], "--quiet"], check=False)
    assert done.returncode == rc.InputError.exit_code


def test_ranks_of_two_jobs_raise_unless_forced(tmp_path: Path) -> None:
    import shutil

    shutil.copy(FIXTURES / "kineto/parallel/cp/rank0.json.gz", tmp_path / "rank0.json.gz")
    shutil.copy(FIXTURES / "kineto/parallel/fsdp1/rank1.json.gz", tmp_path / "rank1.json.gz")
    with pytest.raises(rc.InputError, match="not one job") as raised:
        rc.analyze(str(tmp_path))
    assert raised.value.exit_code == 2
    assert cli([str(tmp_path), "--quiet"], check=False).returncode == 2
    feed = rc.analyze(str(tmp_path), force=True)
    assert len(feed["ranks"]) == 2


def test_a_step_selection_that_keeps_nothing_raises() -> None:
    path = str(FIXTURES / "kineto/h100/eager_manual_attn.json.gz")
    with pytest.raises(rc.InputError, match="selects no step"):
        rc.analyze(path, steps="100..200")
