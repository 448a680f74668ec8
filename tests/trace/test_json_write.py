"""Chrome-trace JSON writer: Kineto shape, exact times, verbatim args, ranks, atomic output."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from hpuprof.errors import OutputError, UsageError
from hpuprof.trace.combine import combine
from hpuprof.trace.json_write import write_chrome_json
from hpuprof.trace.kineto_json import read_kineto_json, trace_from_events
from hpuprof.trace.model import Trace
from hpuprof.trace.schema import SCHEMA_VERSION
from tests.tracebuild import SMALL_SHARED, assert_same_trace, kineto_or_skip

EVENTS: list[dict[str, Any]] = [
    {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "/device:HPU:0"}},
    {"ph": "M", "name": "process_sort_index", "pid": 0, "tid": 0, "args": {"sort_index": 16777216}},
    {"ph": "M", "name": "thread_name", "pid": 0, "tid": 2000, "args": {"name": "TPC 0"}},
    {"ph": "X", "name": "ProfilerStep#4", "cat": "user_annotation", "pid": 9, "tid": 9,
     "ts": 10.5, "dur": 100.001},
    {"ph": "X", "name": "aten::add", "cat": "cpu_op", "pid": 9, "tid": 9, "ts": 11.0,
     "dur": 3.0, "args": {"Input Dims": [[4], [4]], "Comms Id": 10159970886766084423}},
    {"ph": "X", "name": "add_fwd_bf16", "cat": "kernel", "pid": 0, "tid": 2000, "ts": 20.0,
     "dur": 1.5, "args": {"recipeId": 12, "hpuprof.modeled": True}},
    {"ph": "i", "name": "[memory]", "cat": "cpu_instant_event", "pid": 9, "tid": 9,
     "ts": 12.0, "s": "t", "args": {"Bytes": 64}},
    {"ph": "s", "id": 18446744073709551615, "cat": "ac2g", "name": "ac2g", "pid": 9,
     "tid": 9, "ts": 11.0},
    {"ph": "f", "id": 18446744073709551615, "cat": "ac2g", "name": "ac2g", "pid": 0,
     "tid": 2000, "ts": 20.0, "bp": "e"},
    {"ph": "C", "name": "Memcpy BW", "pid": 9, "tid": 9, "ts": 30.0,
     "args": {"read": 1.5, "write": 2}},
]  # fmt: skip
META = {"schemaVersion": 1, "deviceProperties": [{"name": "GAUDI2"}],
        "baseTimeNanoseconds": 1_790_857_026_000_000_000,
        "distributedInfo": {"rank": 0, "world_size": 1, "backend": "hccl"}}  # fmt: skip


def built(events: list[dict[str, Any]] = EVENTS, meta: dict[str, Any] = META) -> Trace:
    return trace_from_events(events, meta, source="made.json")


def read_json(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    result: dict[str, Any] = json.loads(gzip.decompress(data) if path.suffix == ".gz" else data)
    return result


@pytest.mark.parametrize("name", ["out.json", "out.json.gz"])
def test_round_trip_keeps_every_field(tmp_path: Path, name: str) -> None:
    trace = built()
    [path] = write_chrome_json(trace, tmp_path / name)
    assert_same_trace(trace, read_kineto_json(path))


def test_output_has_the_kineto_shape(tmp_path: Path) -> None:
    [path] = write_chrome_json(built(), tmp_path / "out.json")
    doc = read_json(path)
    keys = list(doc)
    assert keys[:2] == ["schemaVersion", "deviceProperties"]
    assert keys.index("baseTimeNanoseconds") < keys.index("traceEvents")
    assert doc["baseTimeNanoseconds"] == META["baseTimeNanoseconds"]
    assert doc["distributedInfo"] == META["distributedInfo"]
    assert doc["hpuprof"]["schema"] == SCHEMA_VERSION and doc["hpuprof"]["rank"] == 0
    phases = [e["ph"] for e in doc["traceEvents"]]
    assert phases.count("M") == 3 and phases.count("X") == 3 and phases.count("C") == 1
    assert phases.index("M") == 0
    kernel = next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")
    assert kernel["ts"] == 20.0 and kernel["dur"] == 1.5 and kernel["pid"] == 0
    step = next(e for e in doc["traceEvents"] if e["name"] == "ProfilerStep#4")
    assert step["dur"] == 100.001
    flow = next(e for e in doc["traceEvents"] if e["ph"] == "f")
    assert flow["id"] == 18446744073709551615 and flow["bp"] == "e"
    counter = next(e for e in doc["traceEvents"] if e["ph"] == "C")
    assert counter["args"] == {"read": 1.5, "write": 2.0}


def test_args_bytes_are_spliced_verbatim(tmp_path: Path) -> None:
    source = tmp_path / "spaced.json"
    raw_args = b'{ "Comms Id" : 10159970886766084423,\n  "x": 1.50 }'
    source.write_bytes(
        b'{"traceEvents": [{"ph": "X", "name": "a", "cat": "cpu_op", "pid": 1, "tid": 1,'
        b' "ts": 5, "dur": 2, "args": ' + raw_args + b"}]}"
    )
    trace = read_kineto_json(source)
    [path] = write_chrome_json(trace, tmp_path / "out.json")
    assert raw_args in path.read_bytes()


def test_integer_microsecond_era_stays_integer(tmp_path: Path) -> None:
    events = [{"ph": "X", "name": "a", "cat": "cpu_op", "pid": 1, "tid": 1,
               "ts": 1682725898236567, "dur": 12}]  # fmt: skip
    trace = built(events, {})
    [path] = write_chrome_json(trace, tmp_path / "old.json")
    doc = read_json(path)
    assert "baseTimeNanoseconds" not in doc
    assert doc["traceEvents"][0]["ts"] == 1682725898236567
    assert_same_trace(trace, read_kineto_json(path))


def test_sub_microsecond_epoch_times_get_a_base(tmp_path: Path) -> None:
    events = [{"ph": "X", "name": "a", "cat": "cpu_op", "pid": 1, "tid": 1,
               "ts": 1682725898236567, "dur": 12}]  # fmt: skip
    trace = built(events, {})
    shifted = trace.events.assign(ts_ns=trace.events["ts_ns"] + 7)
    trace = Trace(events=shifted, counters=trace.counters, flows=trace.flows,
                  metadata=trace.metadata, processes=trace.processes, threads=trace.threads)  # fmt: skip
    [path] = write_chrome_json(trace, tmp_path / "ns.json")
    doc = read_json(path)
    assert doc["baseTimeNanoseconds"] == 1682725898000000000
    assert read_kineto_json(path).events["ts_ns"].tolist() == shifted["ts_ns"].tolist()


def two_ranks() -> Trace:
    ranks = []
    for rank in (0, 1):
        meta = {**META, "distributedInfo": {"rank": rank, "world_size": 2}}
        ranks.append(trace_from_events(EVENTS, meta, source=f"rank-{rank}.json"))
    return combine(ranks)


def test_multi_rank_needs_a_directory(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="2 ranks"):
        write_chrome_json(two_ranks(), tmp_path / "one.json")
    assert not (tmp_path / "one.json").exists()


def test_multi_rank_directory_has_one_file_per_rank(tmp_path: Path) -> None:
    trace = two_ranks()
    written = write_chrome_json(trace, f"{tmp_path / 'ranks'}/")
    assert [p.name for p in written] == ["rank-0.json.gz", "rank-1.json.gz"]
    for rank, path in enumerate(written):
        back = read_kineto_json(path)
        assert set(back.events["rank"]) == {rank}
        mine = trace.events[trace.events["rank"] == rank].reset_index(drop=True)
        assert back.events["name"].astype(str).tolist() == mine["name"].astype(str).tolist()


def test_unwritable_target_is_an_output_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OutputError):
        write_chrome_json(built(), blocker / "out.json")


def test_failed_write_leaves_no_partial_file(tmp_path: Path) -> None:
    trace = built()
    broken = Trace(events=trace.events.drop(columns=["dur_ns"]), counters=trace.counters,
                   flows=trace.flows, metadata=trace.metadata)  # fmt: skip
    with pytest.raises(KeyError):
        write_chrome_json(broken, tmp_path / "out.json")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("source", SMALL_SHARED, ids=lambda p: p.name)
def test_real_trace_round_trips_through_json(source: Path, tmp_path: Path) -> None:
    trace = kineto_or_skip(source)
    [path] = write_chrome_json(trace, tmp_path / "real.json.gz")
    back = read_kineto_json(path)
    assert_same_trace(trace, back)
    rank = next(iter(trace.metadata))
    for key, value in trace.metadata[rank].items():
        if key != "hpuprof":
            assert back.metadata[rank].get(key) == value, key
