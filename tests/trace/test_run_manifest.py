"""A run directory loads the traces its run.json names, inside the directory only: entries that
are absolute, climb out with '..' or link outside are refused (nothing outside is opened); a run
killed before its manifest listed a trace loads its stream; leftovers are ignored; a damaged
run.json warns and falls back to the traces found in traces/."""

from __future__ import annotations

import json
import shutil
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

import hpuprof
from hpuprof.errors import TraceFormatError

SAMPLE_RUN = Path(__file__).parents[2] / "sample_traces" / "emulated_two_ranks"
GAUDI = Path(__file__).parent / "data" / "gaudi_merged.json"


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    if not SAMPLE_RUN.is_dir():
        pytest.skip("sample_traces/emulated_two_ranks is not present")
    target = tmp_path / "run"
    shutil.copytree(SAMPLE_RUN, target)
    return target


def _manifest(run_dir: Path, **changes: Any) -> Path:
    path = run_dir / "run.json"
    doc = json.loads(path.read_text())
    doc.update(changes)
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture
def opened() -> list[str]:
    """Every file name Python opens while the test runs (an audit hook; stays installed)."""
    names: list[str] = []
    active = [True]

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if active[0] and event == "open" and args and isinstance(args[0], str | bytes):
            names.append(str(args[0]))

    sys.addaudithook(hook)
    yield names
    active[0] = False


def test_the_sample_run_loads_both_ranks(run_dir: Path) -> None:
    trace = hpuprof.load(run_dir, cache=False)
    assert trace.ranks == [0, 1]
    assert all(Path(s).parent == run_dir / "traces" for s in trace.sources)


@pytest.mark.parametrize(
    "entry", ["/etc/passwd", "/proc/self/environ", "../outside.json", "traces/../../outside.json"]
)
def test_entries_outside_the_run_are_refused_unopened(
    run_dir: Path, entry: str, opened: list[str]
) -> None:
    shutil.copyfile(GAUDI, run_dir.parent / "outside.json")  # a valid trace: still refused
    manifest = _manifest(run_dir, traces=["traces/ddp_train-rank0.pt.trace.json", entry])
    opened.clear()
    with pytest.raises(TraceFormatError) as caught:
        hpuprof.load(run_dir, cache=False)
    assert caught.value.path == str(manifest)
    assert caught.value.position == "key 'traces', entry 1"
    assert "inside the run directory" in caught.value.expected
    assert not [n for n in opened if n.endswith(("passwd", "environ", "outside.json"))]
    assert any(n.endswith("run.json") for n in opened)  # (the hook does see the loader)


def test_a_link_out_of_the_run_is_refused(run_dir: Path) -> None:
    shutil.copyfile(GAUDI, run_dir.parent / "outside.json")
    (run_dir / "traces" / "linked.json").symlink_to(run_dir.parent / "outside.json")
    _manifest(run_dir, traces=["traces/linked.json"])
    with pytest.raises(TraceFormatError, match="links to a file outside"):
        hpuprof.load(run_dir, cache=False)


def test_run_json_is_never_read_as_a_trace(run_dir: Path) -> None:
    _manifest(run_dir, traces=["run.json"])
    with pytest.raises(TraceFormatError, match=r"run\.json itself"):
        hpuprof.load(run_dir, cache=False)


def test_a_killed_run_loads_its_stream_and_ignores_leftovers(run_dir: Path) -> None:
    """As after kill -9: traces: [] in run.json, the stream file, scratch and tmp leftovers."""
    traces = run_dir / "traces"
    stream = traces / "ddp_train-rank0.pt.trace.incomplete.json"
    (traces / "ddp_train-rank0.pt.trace.json").rename(stream)
    (traces / "ddp_train-rank1.pt.trace.json").unlink()
    stream.write_bytes(stream.read_bytes()[:-5000])  # cut mid-event, as a killed writer leaves it
    (run_dir / ".scratch-x1y2").mkdir()
    (run_dir / ".scratch-x1y2" / "part.json").write_text('{"traceEvents": [')
    (traces / ".ddp_train-rank0.pt.trace.json.123.tmp").write_text("{")
    for listed in (
        {"traces": [], "incomplete": []},
        {"traces": [], "incomplete": [str(stream.relative_to(run_dir))]},
    ):
        _manifest(run_dir, **listed)
        with pytest.warns(UserWarning, match="truncated"):
            trace = hpuprof.load(run_dir, cache=False)
        assert trace.sources == (str(stream),)
        assert len(trace.events) > 100


def test_a_final_trace_supersedes_its_stream(run_dir: Path) -> None:
    traces = run_dir / "traces"
    shutil.copyfile(
        traces / "ddp_train-rank0.pt.trace.json",
        traces / "ddp_train-rank0.pt.trace.incomplete.json",
    )
    _manifest(run_dir, incomplete=["traces/ddp_train-rank0.pt.trace.incomplete.json"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trace = hpuprof.load(run_dir, cache=False)
    assert len(trace.sources) == 2 and not any("incomplete" in s for s in trace.sources)


@pytest.mark.parametrize("text", [b"", b"{", b"[1, 2]", b'{"traces": "x.json"}', b"\xff\xfe"])
def test_a_damaged_manifest_warns_and_loads_the_traces_dir(run_dir: Path, text: bytes) -> None:
    (run_dir / "run.json").write_bytes(text)
    with pytest.warns(UserWarning, match="run.json"):
        trace = hpuprof.load(run_dir, cache=False)
    assert trace.ranks == [0, 1]


def test_a_damaged_manifest_with_no_traces_is_one_clean_error(run_dir: Path) -> None:
    (run_dir / "run.json").write_bytes(b'{"traces": ')
    shutil.rmtree(run_dir / "traces")
    with pytest.raises(TraceFormatError) as caught:
        hpuprof.load(run_dir, cache=False)
    assert caught.value.path == str(run_dir / "run.json")
    assert "byte" in str(caught.value.position)


@pytest.mark.parametrize("entry", [5, None, "", ["a"], "traces/a\x00b.json"])
def test_entries_that_are_no_file_name_are_refused(run_dir: Path, entry: Any) -> None:
    _manifest(run_dir, traces=[entry])
    with pytest.raises(TraceFormatError, match="file name"):
        hpuprof.load(run_dir, cache=False)


def test_a_missing_listed_file_warns(run_dir: Path) -> None:
    _manifest(run_dir, traces=["traces/ddp_train-rank0.pt.trace.json", "traces/gone.json"])
    with pytest.warns(UserWarning, match="missing"):
        trace = hpuprof.load(run_dir, cache=False)
    assert trace.ranks == [0]
