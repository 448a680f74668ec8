"""Hypothesis: generated traces survive every writer/reader pair with every field intact.

Generated events have nested and partly overlapping slices on shared lanes, unsorted input,
unicode names, instants, counters, flows with ids beyond int64 and args with huge integers.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpuprof.trace.json_write import write_chrome_json
from hpuprof.trace.kineto_json import read_kineto_json, trace_from_events
from hpuprof.trace.model import Trace
from hpuprof.trace.parquet import load_parquet, save_parquet
from hpuprof.trace.perfetto_read import load_perfetto
from hpuprof.trace.perfetto_write import write_perfetto
from tests.tracebuild import assert_same_trace

BASE = 1_790_857_026_000_000_000
LANES = [(1, 1), (1, 2), (0, 1000), ("", ""), ("Spans", "PyTorch Profiler")]
CATS = ["cpu_op", "user_annotation", "kernel", "gpu_memcpy", "hpuprof", "Runtime", ""]
names = st.text(min_size=1, max_size=12)
huge = st.integers(min_value=-(2**63), max_value=2**64 - 1)
args = st.fixed_dictionaries(
    {}, optional={"Comms Id": huge, "v": st.integers(-(2**63), 2**63 - 1), "s": names,
                  "External id": st.integers(0, 50), "Input Dims": st.just([[2, 3], []])},
)  # fmt: skip


def us(ns: int) -> float:
    return ns / 1000


@st.composite
def slices(draw: Any) -> list[dict[str, Any]]:
    """A top-level slice with a few nested children (grandchildren too) on one lane."""
    pid, tid = draw(st.sampled_from(LANES))
    start = draw(st.integers(0, 10**9))
    dur = draw(st.integers(0, 10**6))
    out = [{"ph": "X", "name": draw(names), "cat": draw(st.sampled_from(CATS)), "pid": pid,
            "tid": tid, "ts": us(start), "dur": us(dur), "args": draw(args)}]  # fmt: skip
    for _ in range(draw(st.integers(0, 3))):
        offset = draw(st.integers(0, dur))
        length = draw(st.integers(0, dur - offset))
        out.append({**out[0], "name": draw(names), "ts": us(start + offset), "dur": us(length)})
    return out


@st.composite
def traces(draw: Any) -> Trace:
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "/device:HPU:0"}},
        {"ph": "M", "name": "thread_name", "pid": 0, "tid": 1000, "args": {"name": "MME 0"}},
    ]
    for group in draw(st.lists(slices(), min_size=1, max_size=8)):
        events.extend(group)
    xs = [e for e in events if e["ph"] == "X"]
    for _ in range(draw(st.integers(0, 3))):
        pid, tid = draw(st.sampled_from(LANES))
        events.append({"ph": "i", "name": draw(names), "cat": "cpu_instant_event", "pid": pid,
                       "tid": tid, "ts": us(draw(st.integers(0, 10**9))), "args": draw(args)})  # fmt: skip
    for _ in range(draw(st.integers(0, 3))):
        start, end = draw(st.sampled_from(xs)), draw(st.sampled_from(xs))
        flow_id = draw(st.integers(0, 2**64 - 1))
        cat = draw(st.sampled_from(["ac2g", "fwdbwd"]))
        common = {"id": flow_id, "cat": cat, "name": cat}
        events.append({**common, "ph": "s", "pid": start["pid"], "tid": start["tid"], "ts": start["ts"]})  # fmt: skip
        events.append({**common, "ph": "f", "bp": "e", "pid": end["pid"], "tid": end["tid"], "ts": end["ts"]})  # fmt: skip
    for _ in range(draw(st.integers(0, 3))):
        value = draw(st.floats(allow_nan=False, allow_infinity=False, width=64))
        events.append({"ph": "C", "name": draw(names), "pid": 1, "tid": 1,
                       "ts": us(draw(st.integers(0, 10**9))), "args": {"value": value}})  # fmt: skip
    order = draw(st.permutations(range(len(events))))
    meta = {"schemaVersion": 1, "deviceProperties": [], "baseTimeNanoseconds": BASE,
            "distributedInfo": {"rank": draw(st.integers(0, 3)), "world_size": 4}}  # fmt: skip
    return trace_from_events([events[i] for i in order], meta, source="generated.json")


SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(traces())
def test_perfetto_round_trip(trace: Trace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        back = load_perfetto(write_perfetto(trace, Path(tmp) / "t.perfetto-trace"))
    assert_same_trace(trace, back)
    assert dict(back.metadata) == dict(trace.metadata)


@SETTINGS
@given(traces())
def test_json_round_trip(trace: Trace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        [path] = write_chrome_json(trace, Path(tmp) / "t.json.gz")
        back = read_kineto_json(path)
    assert_same_trace(trace, back)


@SETTINGS
@given(traces())
def test_parquet_round_trip(trace: Trace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.parquet"
        save_parquet(trace, path)
        back = load_parquet(path)
    assert_same_trace(trace, back)


@SETTINGS
@given(traces())
def test_json_to_perfetto_to_json_is_stable(trace: Trace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        first = write_chrome_json(trace, Path(tmp) / "a.json")[0].read_bytes()
        via = load_perfetto(write_perfetto(trace, Path(tmp) / "t.pftrace"))
        second = write_chrome_json(via, Path(tmp) / "b.json")[0].read_bytes()
    assert first == second
