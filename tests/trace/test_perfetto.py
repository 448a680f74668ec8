"""Perfetto protobuf writer and reader: exact round trips, a valid TrackEvent file, bad input."""

from __future__ import annotations

import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
from perfetto.trace_builder.proto_builder import TraceProtoBuilder

from hpuprof.errors import TraceFormatError
from hpuprof.trace.model import Trace
from hpuprof.trace.perfetto_read import load_perfetto
from hpuprof.trace.perfetto_write import write_perfetto
from tests.tracebuild import SMALL_SHARED, assert_same_trace, kineto_or_skip, make_trace

BEGIN, END, INSTANT, COUNTER = 1, 2, 3, 4


def assert_same_record(left: Trace, right: Trace) -> None:
    assert_same_trace(left, right)
    assert dict(left.metadata) == dict(right.metadata)
    assert (left.sources, left.format, left.schema_version) == (
        right.sources,
        right.format,
        right.schema_version,
    )


def gaudi_like_trace() -> Trace:
    """Host ops with a step, a launch flow, two partly overlapping device ops on one engine."""
    host = {"pid": "4242", "tid": "4242"}
    mme = {"pid": "0", "tid": "1000", "is_device": True, "device": 0, "engine": "MME"}
    events = [
        {**host, "name": "ProfilerStep#3", "cat": "user_annotation", "ts_ns": 1_000,
         "dur_ns": 90_000, "kind": "user_annotation", "step": 3, "args": b'{"External id": 1}'},
        {**host, "name": "aten::matmul", "cat": "cpu_op", "ts_ns": 2_000, "dur_ns": 30_000,
         "kind": "cpu_op", "depth": 1, "parent": 0, "step": 3, "input_dims": "[[8, 128]]",
         "args": b'{"Input Dims": [[8, 128]],  "Comms Id": 10159970886766084423}'},
        {**host, "name": "launch", "cat": "hpuprof", "ts_ns": 3_000, "dur_ns": 5_000,
         "kind": "hpu_runtime", "depth": 2, "parent": 1, "step": 3, "hpu_event": "launch",
         "mode": "lazy", "graph_id": "17", "correlation": 9},
        {**mme, "name": "gemm ☃ ünï", "cat": "kernel", "ts_ns": 10_000, "dur_ns": 20_000,
         "kind": "kernel", "correlation": 9, "step": 3, "stream": 1000, "args": b'{"grid": [1, 1, 1]}'},
        {**mme, "name": "gemm2", "cat": "kernel", "ts_ns": 25_000, "dur_ns": 20_000,
         "kind": "kernel", "step": 3, "stream": 1000, "fallback": True, "phase": "bwd"},
        {**host, "name": "[memory]", "cat": "cpu_instant_event", "ph": "i", "ts_ns": 4_000,
         "kind": "instant", "args": b'{"Bytes": -4096}'},
        {"name": "Record Window End", "cat": "", "ph": "i", "pid": "", "tid": "",
         "ts_ns": -7, "kind": "instant"},
        {**host, "name": "empty", "cat": "cpu_op", "ts_ns": 50_000, "dur_ns": 0,
         "kind": "cpu_op", "depth": 1, "parent": 0, "step": 3, "module": "encoder.layers.0"},
    ]  # fmt: skip
    flows = [
        {"id": "9", "cat": "ac2g", "name": "ac2g", "ph": "s", "ts_ns": 3_000, **host},
        {"id": "9", "cat": "ac2g", "name": "ac2g", "ph": "f", "ts_ns": 10_000, "binding": "e",
         "pid": "0", "tid": "1000"},
        {"id": "18446744073709551615", "cat": "fwdbwd", "name": "fwdbwd", "ph": "s",
         "ts_ns": 2_500, **host},
    ]  # fmt: skip
    counters = [
        {"name": "hpu.memory_in_use_bytes", "series": "bytes", "pid": "4242", "ts_ns": t,
         "value": v}
        for t, v in ((1_000, 0.0), (20_000, 4096.5), (60_000, 1e18))
    ]  # fmt: skip
    processes = pd.DataFrame(
        {"rank": [0, 0], "pid": ["4242", "0"], "name": ["python", "/device:HPU:0"]}
    )
    threads = pd.DataFrame({"rank": [0], "pid": ["0"], "tid": ["1000"], "name": ["MME 0"]})
    meta = {0: {"baseTimeNanoseconds": 1_700_000_000_000_000_000, "big": 2**70, "u": "ü"}}
    return make_trace(
        events, counters, flows, derive=False, metadata=meta, processes=processes,
        threads=threads, sources=("made.json",), format="test",
    )  # fmt: skip


def packets(path: Path) -> list[Any]:
    proto = pb.Trace()
    proto.ParseFromString(path.read_bytes())
    return list(proto.packet)


def test_round_trip_keeps_every_field(tmp_path: Path) -> None:
    trace = gaudi_like_trace()
    path = write_perfetto(trace, tmp_path / "t.perfetto-trace")
    assert_same_record(trace, load_perfetto(path))


def test_multi_rank_round_trip_and_process_names(tmp_path: Path) -> None:
    one = gaudi_like_trace()
    events = pd.concat([one.events, one.events.assign(rank=1)], ignore_index=True)
    events["rank"] = events["rank"].astype("int32")
    for column in events.columns:
        if isinstance(one.events[column].dtype, pd.CategoricalDtype):
            events[column] = events[column].astype("category")
    parent = events["parent"].to_numpy().copy()
    parent[len(one.events) :][parent[len(one.events) :] >= 0] += len(one.events)
    events["parent"] = parent
    trace = Trace(events=events, counters=one.counters, flows=one.flows, metadata=one.metadata)
    path = write_perfetto(trace, tmp_path / "two.pftrace")
    assert_same_record(trace, load_perfetto(path))
    processes = [
        p.track_descriptor.process for p in packets(path) if p.track_descriptor.HasField("process")
    ]
    names = {p.process_name for p in processes}
    assert {"[rank 0] 4242", "[rank 1] (no pid)"} <= names
    assert len({p.pid for p in processes}) == len(processes) == 6, "one pid per (rank, pid)"


def test_file_is_standard_track_event_data(tmp_path: Path) -> None:
    trace = gaudi_like_trace()
    path = write_perfetto(trace, tmp_path / "t.pftrace")
    got = packets(path)
    assert all(p.trusted_packet_sequence_id == 1 for p in got)
    assert got[0].sequence_flags == pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    assert got[0].first_packet_on_sequence
    interned_users = [p for p in got if p.HasField("track_event") and p.track_event.name_iid]
    assert interned_users and all(
        p.sequence_flags == pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE for p in interned_users
    )
    kinds = Counter(p.track_event.type for p in got if p.HasField("track_event"))
    slices = int((trace.events["ph"] == "X").sum())
    assert kinds[BEGIN] == kinds[END] == slices == 6
    assert kinds[INSTANT] == 2 and kinds[COUNTER] == 3
    tracks = {
        p.track_descriptor.uuid: p.track_descriptor for p in got if p.HasField("track_descriptor")
    }
    threads = {t.thread.thread_name for t in tracks.values() if t.HasField("thread")}
    assert threads == {"4242", "MME 0", "(no tid)"}
    processes = {t.process.process_name for t in tracks.values() if t.HasField("process")}
    assert processes == {"python", "/device:HPU:0", "(no pid)"}
    overlap = [t for t in tracks.values() if t.name == "MME 0 #1"]
    assert len(overlap) == 1, "the partly overlapping device op goes to its own track"
    counter_tracks = [t for t in tracks.values() if t.HasField("counter")]
    assert [t.name for t in counter_tracks] == ["hpu.memory_in_use_bytes.bytes"]
    names = {n.name for p in got for n in p.interned_data.event_names}
    assert "gemm ☃ ünï" in names and "ProfilerStep#3" in names
    assert {"hpuprof.schema", "hpuprof.trace"} == {m.name for m in got[0].chrome_events.metadata}


def test_slices_nest_properly_on_every_track(tmp_path: Path) -> None:
    path = write_perfetto(gaudi_like_trace(), tmp_path / "t.pftrace")
    stacks: dict[int, list[int]] = {}
    last: dict[int, int] = {}
    for packet in packets(path):
        event = packet.track_event
        if event.type not in (BEGIN, END):
            continue
        track = event.track_uuid
        assert packet.timestamp >= last.get(track, 0), "per-track times never go back"
        last[track] = packet.timestamp
        if event.type == BEGIN:
            stacks.setdefault(track, []).append(packet.timestamp)
        else:
            assert stacks[track], "END without BEGIN"
            stacks[track].pop()
    assert all(not stack for stack in stacks.values())


def test_flows_link_launch_to_device_op(tmp_path: Path) -> None:
    path = write_perfetto(gaudi_like_trace(), tmp_path / "t.pftrace")
    names: dict[int, str] = {}
    outgoing: dict[str, list[int]] = {}
    terminating: dict[str, list[int]] = {}
    for packet in packets(path):
        for entry in packet.interned_data.event_names:
            names[entry.iid] = entry.name
        event = packet.track_event
        if event.flow_ids:
            outgoing[names[event.name_iid]] = list(event.flow_ids)
        if event.terminating_flow_ids:
            terminating[names[event.name_iid]] = list(event.terminating_flow_ids)
    assert outgoing["launch"] == terminating["gemm ☃ ünï"]
    assert "aten::matmul" in outgoing  # the fwdbwd flow starts inside matmul


def test_reads_a_generic_track_event_trace(tmp_path: Path) -> None:
    builder = TraceProtoBuilder()

    def packet(seq: int = 7) -> Any:
        p = builder.add_packet()
        p.trusted_packet_sequence_id = seq
        return p

    first = packet()
    first.sequence_flags = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    first.track_descriptor.uuid = 10
    first.track_descriptor.process.pid = 77
    first.track_descriptor.process.process_name = "app"
    thread = packet().track_descriptor
    thread.uuid, thread.parent_uuid = 11, 10
    thread.thread.pid, thread.thread.tid, thread.thread.thread_name = 77, 78, "main"
    counter = packet().track_descriptor
    counter.uuid, counter.parent_uuid, counter.name = 12, 10, "queue"
    counter.counter.SetInParent()
    async_track = packet().track_descriptor
    async_track.uuid, async_track.parent_uuid, async_track.name = 13, 10, "gpu lane"

    def event(ts: int, kind: int, track: int, name_iid: int = 0, name: str = "") -> Any:
        p = packet()
        p.timestamp = ts
        p.track_event.type = kind
        p.track_event.track_uuid = track
        if name_iid:
            p.sequence_flags = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
            p.track_event.name_iid = name_iid
        elif name:
            p.track_event.name = name
        return p

    outer = event(1_000, BEGIN, 11, name_iid=1)
    outer.interned_data.event_names.add(iid=1, name="outer")
    outer.interned_data.event_categories.add(iid=1, name="cpu_op")
    outer.interned_data.debug_annotation_names.add(iid=1, name="size")
    outer.track_event.category_iids.append(1)
    outer.track_event.debug_annotations.add(name_iid=1, int_value=64)
    inner = event(2_000, BEGIN, 11, name="inner")
    inner.track_event.flow_ids.append(555)
    event(3_000, END, 11)
    mark = event(3_500, INSTANT, 11, name="mark")
    mark.track_event.debug_annotations.add(name="note", string_value="hi")
    event(9_000, END, 11)
    device = event(2_500, BEGIN, 13, name="kernel")
    device.track_event.terminating_flow_ids.append(555)
    event(4_500, END, 13)
    for ts, value in ((1_000, 1.0), (5_000, 3.0)):
        event(ts, COUNTER, 12).track_event.double_counter_value = value
    legacy = event(6_000, 0, 11, name_iid=2)
    legacy.interned_data.event_names.add(iid=2, name="legacy complete")
    legacy.track_event.legacy_event.phase = ord("X")
    legacy.track_event.legacy_event.duration_us = 2
    path = tmp_path / "other.pftrace"
    path.write_bytes(builder.serialize())

    trace = load_perfetto(path)
    ev = {str(r["name"]): r for r in trace.events.to_dict("records")}
    assert ev["outer"]["dur_ns"] == 8_000 and ev["outer"]["cat"] == "cpu_op"
    assert ev["inner"]["dur_ns"] == 1_000 and ev["inner"]["depth"] == 1
    assert ev["kernel"]["dur_ns"] == 2_000 and ev["kernel"]["tid"] == "gpu lane"
    assert ev["mark"]["ph"] == "i"
    assert trace.args(int(trace.events.index[trace.events["name"] == "outer"][0])) == {"size": 64}
    legacy_rows = trace.events[trace.events["ts_ns"] == 6_000]
    assert legacy_rows["dur_ns"].tolist() == [2_000]
    assert legacy_rows["name"].tolist() == ["legacy complete"]
    assert trace.counters["value"].tolist() == [1.0, 3.0]
    assert sorted(trace.flows["ph"].astype(str)) == ["f", "s"]
    assert set(trace.flows["id"].astype(str)) == {"555"}
    names = dict(zip(trace.threads["tid"].astype(str), trace.threads["name"], strict=True))
    assert names.get("78") == "main"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "empty"),
        (b'{"traceEvents": []}', "Perfetto"),
        (b"\x0a\xff\xff\xff\xff\x0f" + b"\x00" * 8, "Perfetto"),
        (bytes(range(256)) * 4, "Perfetto"),
    ],
)
def test_bad_input_is_a_format_error(tmp_path: Path, content: bytes, expected: str) -> None:
    path = tmp_path / "bad.pftrace"
    path.write_bytes(content)
    with pytest.raises(TraceFormatError) as error:
        load_perfetto(path)
    assert error.value.path == str(path) and expected in str(error.value)
    assert error.value.position is not None


def test_missing_file_is_a_format_error(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="readable"):
        load_perfetto(tmp_path / "nope.pftrace")


def test_truncated_file_keeps_complete_packets_and_warns(tmp_path: Path) -> None:
    source = write_perfetto(gaudi_like_trace(), tmp_path / "t.pftrace")
    data = source.read_bytes()
    cut = tmp_path / "cut.pftrace"
    cut.write_bytes(data[: len(data) - 5])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = load_perfetto(cut)
    assert any("truncated" in str(w.message) for w in caught)
    assert 0 < len(trace.events) <= 8


def test_write_is_atomic(tmp_path: Path) -> None:
    target = tmp_path / "t.pftrace"
    target.write_bytes(b"old")
    broken = gaudi_like_trace()
    object.__setattr__(broken, "events", broken.events.drop(columns=["ts_ns"]))
    with pytest.raises(KeyError):
        write_perfetto(broken, target)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["t.pftrace"]


@pytest.mark.parametrize("source", SMALL_SHARED, ids=lambda p: p.name)
def test_real_trace_round_trips_through_perfetto(source: Path, tmp_path: Path) -> None:
    trace = kineto_or_skip(source)
    path = write_perfetto(trace, tmp_path / "real.perfetto-trace")
    assert_same_record(trace, load_perfetto(path))
    kinds = Counter(p.track_event.type for p in packets(path) if p.HasField("track_event"))
    assert kinds[BEGIN] == kinds[END] == int((trace.events["ph"] == "X").sum())
