"""`quick_part` (a file's summary part from its raw columns) equals `trace_part` of the fully
loaded file, on the samples, the shared real traces and generated traces; where the full load
warns or raises, it answers None (the full load then says so)."""

from __future__ import annotations

import json
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpuprof.errors import HpuprofError
from hpuprof.trace.quick_part import QUICK_MAX_BYTES, quick_part
from hpuprof.trace.summary import TracePart, trace_part
from hpuprof.trace.trace_file import load_file
from tests.conftest import SAMPLE_TRACES, shared_trace_files


def _full_part(path: Path) -> tuple[TracePart | None, bool]:
    """`trace_part` of the full load of `path` (None when it raises), and whether it warned."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            part: TracePart | None = trace_part(load_file(path, cache=False))
        except HpuprofError:
            part = None
    return part, bool(caught)


def _check(path: Path) -> TracePart | None:
    quick = quick_part(path)
    full, warned = _full_part(path)
    if full is None or warned:
        assert quick is None
    else:
        assert quick == full
    return quick


SAMPLE_FILES = sorted(SAMPLE_TRACES.glob("*/traces/*.json"))


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.parent.parent.name + "/" + p.name)
def test_samples_are_summarized_quickly_and_alike(path: Path) -> None:
    assert _check(path) is not None  # (the emulated Gaudi samples: device processes, steps)


SHARED_SMALL = [p for p in shared_trace_files() if p.stat().st_size <= QUICK_MAX_BYTES]


@pytest.mark.parametrize("path", SHARED_SMALL, ids=lambda p: p.name)
def test_shared_real_traces_are_summarized_alike(path: Path) -> None:
    _check(path)


def test_most_shared_real_traces_take_the_quick_path() -> None:
    if not SHARED_SMALL:
        pytest.skip("../shared/traces/kineto is not present")
    taken = [p for p in SHARED_SMALL if quick_part(p) is not None]
    assert len(taken) >= 0.8 * len(SHARED_SMALL)


def test_large_files_and_other_formats_are_left_to_the_full_load(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    event = {"ph": "X", "cat": "cpu_op", "name": "x" * 200, "pid": 1, "tid": 1, "ts": 1, "dur": 1}
    big.write_text(json.dumps({"traceEvents": [event] * (QUICK_MAX_BYTES // 200)}))
    assert big.stat().st_size > QUICK_MAX_BYTES
    assert quick_part(big) is None
    csv = tmp_path / "t.csv"
    csv.write_text("not a trace\n")
    assert quick_part(csv) is None
    assert quick_part(tmp_path / "missing.json") is None


def test_a_truncated_or_empty_file_is_left_to_the_full_load(tmp_path: Path) -> None:
    events = [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": i, "dur": 1}
              for i in range(20)]  # fmt: skip
    text = json.dumps({"traceEvents": events})
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    for path in (cut, empty):
        assert _check(path) is None


# --- generated traces -------------------------------------------------------------------------

_CATS = ["cpu_op", "user_annotation", "kernel", "gpu_memcpy", "cuda_runtime", "hpu_op",
         "Kernel", "Runtime", "cuda_sync", "python_function", "", "gpu_user_annotation"]  # fmt: skip
_NAMES = ["aten::mm", "ProfilerStep#1", "ProfilerStep#2", "Step#3", "ProfilerStep#x", "k"]
_PIDS = [1, 2, "/device:HPU:0", 7]
_PROCESS_NAMES = ["python", "/device:HPU:0", "/device:HPU:1 (Gaudi)", "Bridge Logs", "x"]


@st.composite
def _event(draw: st.DrawFn) -> dict[str, Any]:
    ph = draw(st.sampled_from(["X", "X", "X", "B", "E", "i", "C", "M", "s", "f"]))
    pid = draw(st.sampled_from(_PIDS))
    event: dict[str, Any] = {"ph": ph, "pid": pid, "tid": draw(st.integers(1, 3))}
    if ph == "M":
        kind = draw(st.sampled_from(["process_name", "thread_name", "process_sort_index"]))
        value: Any = draw(st.sampled_from(_PROCESS_NAMES))
        if kind.endswith("sort_index"):
            value = draw(st.sampled_from([1, 2**64, "a"]))
        return {**event, "name": kind, "args": {kind.split("_", 1)[1]: value}}
    event["ts"] = draw(st.integers(0, 400)) + draw(st.sampled_from([0.0, 0.5]))
    event["cat"] = draw(st.sampled_from(_CATS))
    event["name"] = draw(st.sampled_from(_NAMES))
    if ph == "X":
        event["dur"] = draw(st.integers(-1, 300))
    if ph == "C":
        event["args"] = {"bytes": draw(st.integers(0, 9)), "label": "x"}
    elif ph in "sf":
        event.update(cat=draw(st.sampled_from(["ac2g", "fwdbwd"])), id=draw(st.integers(1, 4)))
        if ph == "f":
            event["bp"] = "e"
    else:
        args = {}
        for key in ("correlation", "device", "stream", "External id"):
            if draw(st.booleans()):
                args[key] = draw(st.integers(0, 4))
        event["args"] = args
    return event


@st.composite
def _trace(draw: st.DrawFn) -> dict[str, Any]:
    steps = [
        {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": 1, "tid": 1,
         "ts": 100 * i, "dur": draw(st.integers(50, 120))}
        for i, n in enumerate(draw(st.lists(st.integers(0, 9), max_size=3)))
    ]  # fmt: skip
    events = draw(st.lists(_event(), max_size=25))
    trace: dict[str, Any] = {"traceEvents": draw(st.permutations(steps + events))}
    if draw(st.booleans()):
        trace["distributedInfo"] = {"rank": draw(st.integers(0, 3))}
    if draw(st.booleans()):
        trace["baseTimeNanoseconds"] = draw(st.sampled_from([0, 1_700_000_000_000_000_000]))
    if draw(st.booleans()):
        trace["deviceProperties"] = [{"id": 0, "name": "A100"}]
    return trace


@settings(max_examples=150, deadline=None)
@given(_trace())
def test_generated_traces_are_summarized_alike(trace: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rank-2.pt.trace.json"
        path.write_text(json.dumps(trace))
        _check(path)
