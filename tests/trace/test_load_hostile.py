"""The reproducers of issue 13's fuzzing: each hostile input loads correctly or gives one
TraceFormatError naming the file, a position and what was expected, on both scan paths
(compiled scanner and pure Python); never another exception, never a value silently zeroed."""

from __future__ import annotations

import gzip
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

import hpuprof
from hpuprof.errors import TraceFormatError
from hpuprof.trace import fastscan
from hpuprof.trace.parquet import save_parquet

OK_EVENT = b'{"ph": "X", "name": "a", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 1, "dur": 2}'


@pytest.fixture(params=["compiled", "pure"])
def scan_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "compiled" and not fastscan.available():
        pytest.skip("_kineto_scan is not built")
    monkeypatch.setenv("HPUPROF_PURE_PYTHON", "1" if request.param == "pure" else "0")
    fastscan._module.cache_clear()
    yield request.param
    fastscan._module.cache_clear()


def _file(tmp_path: Path, events: list[bytes], name: str = "t.json", head: bytes = b"") -> Path:
    path = tmp_path / name
    path.write_bytes(b"{" + head + b'"traceEvents": [' + b",\n".join(events) + b"]}")
    return path


def _refused(path: Path, position: str, expected: str) -> TraceFormatError:
    with pytest.raises(TraceFormatError) as caught:
        hpuprof.load(path, cache=False)
    error = caught.value
    assert error.path == str(path)
    assert position in str(error.position), error
    assert expected in error.expected, error
    assert "\n" not in str(error) and len(str(error)) < 600
    return error


# --- JSON, both scan paths ------------------------------------------------------------------

HOSTILE_EVENTS = {
    "flow id object (the 48-byte reproducer)": (
        b'{"ph":"s","id":{},"ts":1,"pid":1,"tid":1}',
        "flow 'id'",
    ),
    "flow id array": (
        b'{"ph": "f", "id": [1], "ts": 1, "pid": 1, "tid": 1, "bp": "e"}',
        "flow 'id'",
    ),
    "hpuprof key holding a list": (
        b'{"ph": "X", "ts": 1, "dur": 1, "args": {"hpuprof.mode": ["lazy"]}}',
        "hpuprof.mode",
    ),
    "hpuprof flag not a bool": (
        b'{"ph": "X", "ts": 1, "dur": 1, "args": {"hpuprof.fallback": "yes"}}',
        "true, false or null",
    ),
    "correlation past 64 bits": (
        b'{"ph": "X", "ts": 1, "dur": 1, "args": {"correlation": 100000000000000000000}}',
        "within 64 bits",
    ),
    "correlation a fraction": (
        b'{"ph": "X", "ts": 1, "dur": 1, "args": {"correlation": 1.5}}',
        "an integer id",
    ),
    "Input Dims a number": (
        b'{"ph": "X", "ts": 1, "dur": 1, "args": {"Input Dims": 1.5}}',
        "an array as args 'Input Dims'",
    ),
    "ts past int64 ns": (b'{"ph": "X", "ts": 1e308, "dur": 1}', "'ts' within int64"),
    "dur past int64 ns": (
        b'{"ph": "X", "ts": 1, "dur": 9223372036854775807}',
        "'dur' within int64",
    ),
    "step number past int32": (
        b'{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#99999999999999999999999",'
        b' "ts": 1, "dur": 5, "pid": 1, "tid": 1}',
        "step number within int32",
    ),
    "counter past float64": (
        b'{"ph": "C", "name": "mem", "ts": 1, "pid": 1, "args": {"bytes": 1' + b"0" * 400 + b"}}",
        "counter value within float64",
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE_EVENTS), ids=list(HOSTILE_EVENTS))
def test_hostile_event_is_one_clean_error(tmp_path: Path, scan_path: str, case: str) -> None:
    event, expected = HOSTILE_EVENTS[case]
    path = _file(tmp_path, [OK_EVENT, event])
    error = _refused(path, "event 1", expected)
    if "(at byte" in str(error.position):  # a value read by the chunk decoder: where it begins
        assert str(error.position) == f"event 1 (at byte {path.read_bytes().index(event)})"


@pytest.mark.parametrize("case", ["flow id array", "hpuprof key holding a list"])
def test_hostile_event_far_in_names_its_own_byte(tmp_path: Path, scan_path: str, case: str) -> None:
    """Fuzz seed 13 (#234, #293): past the first chunks the compiled scanner cuts the events
    elsewhere than the pure-Python path, and the error named the byte where the chunk began:
    both paths must name the same place, the byte where the bad event begins."""
    event, expected = HOSTILE_EVENTS[case]
    path = _file(tmp_path, [OK_EVENT] * 6000 + [event, OK_EVENT])
    error = _refused(path, "event 6000", expected)
    assert str(error.position) == f"event 6000 (at byte {path.read_bytes().index(event)})"


@pytest.mark.parametrize(
    ("head", "position", "expected"),
    [
        (b'"baseTimeNanoseconds": 9223372036854775808,', "baseTimeNanoseconds", "within int64"),
        (b'"baseTimeNanoseconds": "soon",', "baseTimeNanoseconds", "integer number"),
        (b'"distributedInfo": {"rank": 100000000000000000000},', "metadata", "rank within int32"),
        (b'"deviceProperties": [{"mem": 1e400}],', "deviceProperties", "JSON value"),
    ],
)
def test_out_of_range_metadata(
    tmp_path: Path, scan_path: str, head: bytes, position: str, expected: str
) -> None:
    _refused(_file(tmp_path, [OK_EVENT], head=head), position, expected)


@pytest.mark.parametrize("where", ["args", "event", "metadata"])
def test_deep_nesting_is_refused_where_it_is(tmp_path: Path, scan_path: str, where: str) -> None:
    deep = b"[" * 5000 + b"]" * 5000
    if where == "args":
        path = _file(tmp_path, [OK_EVENT, b'{"ph": "X", "ts": 1, "args": {"d": ' + deep + b"}}"])
    elif where == "event":
        path = _file(tmp_path, [OK_EVENT, deep])
    else:
        path = _file(tmp_path, [OK_EVENT], head=b'"deep": ' + deep + b",")
    error = _refused(path, "byte", "nested at most")
    start = path.read_bytes().index(b"[[[")
    assert start <= int(str(error.position).split()[-1]) < start + 1000


def test_invalid_utf8_in_args_is_refused_at_its_byte(tmp_path: Path, scan_path: str) -> None:
    path = _file(tmp_path, [OK_EVENT, b'{"ph": "X", "ts": 1, "args": {"note": "a\xff"}}'])
    error = _refused(path, "byte", "UTF-8")
    bad = path.read_bytes().index(b"\xff")
    assert str(error.position) == f"byte {bad}"


def test_tid_past_int64_keeps_its_text(tmp_path: Path, scan_path: str) -> None:
    path = _file(
        tmp_path, [b'{"ph": "X", "ts": 1, "dur": 1, "pid": 1, "tid": -9223372036854775809}']
    )
    events = hpuprof.load(path, cache=False).events
    assert events["tid"].astype(str).tolist() == ["-9223372036854775809"]


def test_null_input_dims_are_absent(tmp_path: Path, scan_path: str) -> None:
    path = _file(tmp_path, [b'{"ph": "X", "ts": 1, "dur": 1, "args": {"Input Dims": null}}'])
    assert hpuprof.load(path, cache=False).events["input_dims"].astype(str).tolist() == [""]


def test_negative_duration_warns_and_counts_zero(tmp_path: Path, scan_path: str) -> None:
    path = _file(tmp_path, [OK_EVENT, b'{"ph": "X", "name": "b", "ts": 5, "dur": -3}'])
    with pytest.warns(UserWarning, match="negative duration"):
        events = hpuprof.load(path, cache=False).events
    assert events.set_index("name").loc["b", "dur_ns"] == 0


def test_utf8_bom_is_skipped_and_utf16_refused(tmp_path: Path, scan_path: str) -> None:
    body = b'{"traceEvents": [' + OK_EVENT + b"]}"
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + body)
    assert len(hpuprof.load(tmp_path / "bom.json", cache=False).events) == 1
    (tmp_path / "utf16.json").write_bytes(b"\xff\xfe" + body.decode().encode("utf-16-le"))
    _refused(tmp_path / "utf16.json", "byte 0", "UTF-16")


# --- gzip: bounded time and memory --------------------------------------------------------


def test_gzip_bomb_fails_fast(tmp_path: Path) -> None:
    member = gzip.compress(b" " * (1 << 20), compresslevel=9)
    path = tmp_path / "bomb.json.gz"
    path.write_bytes(gzip.compress(b"[") + member * 800 + gzip.compress(b"]"))  # 800 MB of spaces
    start = time.perf_counter()
    _refused(path, "compressed byte", "gzip bomb")
    assert time.perf_counter() - start < 20


def test_long_whitespace_is_skipped_in_bounded_time(tmp_path: Path) -> None:
    path = tmp_path / "spaces.json"
    path.write_bytes(b"[" + b" " * (64 << 20) + OK_EVENT + b" " * (64 << 20) + b"]")
    start = time.perf_counter()
    assert len(hpuprof.load(path, cache=False).events) == 1
    assert time.perf_counter() - start < 20


def test_garbage_early_in_a_large_file_fails_fast(
    tmp_path: Path, scan_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A corrupt byte is no truncation: the loader names it after a few decodes, not one per
    candidate cut (256 decodes of the file: a minute for 50 MB)."""
    import hpuprof.trace.kineto_json as kineto_json

    decodes = []
    real = kineto_json._Reader._try_decode

    def counting(self: object, pos: int, end: int, *, final: bool = False) -> bool:
        decodes.append(end - pos)
        return real(self, pos, end, final=final)  # type: ignore[arg-type]

    monkeypatch.setattr(kineto_json._Reader, "_try_decode", counting)
    body = b",\n".join([OK_EVENT] * 20_000)
    at = len(body) // 10
    path = tmp_path / "garbage.json"
    path.write_bytes(b'{"traceEvents": [' + body[:at] + b"@@" + body[at:] + b"]}")
    error = _refused(path, "byte", "valid JSON")
    assert str(error.position) == f"byte {path.read_bytes().index(b'@@')}"
    assert "(byte" not in error.expected
    assert len(decodes) <= 3, decodes


def test_identical_nested_slices_load_in_bounded_time(tmp_path: Path) -> None:
    path = tmp_path / "same.json"
    path.write_bytes(b"[" + b",".join([OK_EVENT] * 100_000) + b"]")
    start = time.perf_counter()
    events = hpuprof.load(path, cache=False).events
    assert time.perf_counter() - start < 30
    assert int(events["parent"].iloc[-1]) == len(events) - 2


# --- Perfetto and Parquet ---------------------------------------------------------------------


def _perfetto(tmp_path: Path) -> Path:
    from hpuprof.trace.perfetto_write import write_perfetto

    trace = hpuprof.load(Path(__file__).parent / "data" / "gaudi_merged.json", cache=False)
    return write_perfetto(trace, tmp_path / "t.perfetto-trace")


def _packets(path: Path) -> object:
    from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace as TraceProto

    proto = TraceProto()
    proto.ParseFromString(path.read_bytes())
    return proto


def test_perfetto_timestamp_past_int64(tmp_path: Path) -> None:
    path = _perfetto(tmp_path)
    proto = _packets(path)
    event = next(p for p in proto.packet if p.HasField("track_event"))  # type: ignore[attr-defined]
    event.timestamp = 2**64 - 1
    path.write_bytes(proto.SerializeToString())  # type: ignore[attr-defined]
    whole = len(hpuprof.load(_perfetto(tmp_path / "whole"), cache=False).events)
    with pytest.warns(UserWarning, match=r"dropped 1 damaged Perfetto packets.*within int64"):
        kept = hpuprof.load(path, cache=False)  # salvage: that packet goes, the rest stays
    assert len(kept.events) == whole - 1


def _last_packet_body(data: bytes) -> int:
    """Where the last top-level packet's bytes begin (its tag and length skipped)."""
    from hpuprof.trace.perfetto_read import _varint

    at = body = 0
    while at < len(data):
        _, at = _varint(data, at)
        size, body = _varint(data, at)
        at = body + size
    return body


def _salvaged(path: Path, said: str) -> int:
    with pytest.warns(UserWarning, match=said):
        return len(hpuprof.load(path, cache=False).events)


def test_perfetto_salvage_keeps_the_whole_packets(tmp_path: Path) -> None:
    """Issue 27: a truncated file, a damaged packet or one bad byte keeps every packet that
    is still whole, and says where the rest was dropped."""
    path = _perfetto(tmp_path)
    data = path.read_bytes()
    whole = len(hpuprof.load(path, cache=False).events)
    path.write_bytes(data[: len(data) - 50])
    cut = _salvaged(path, rf"kept the \d+ complete packets; dropped bytes \d+ to {len(data) - 50}")
    assert 0 < cut < whole
    damaged = bytearray(data)
    damaged[_last_packet_body(data)] = 0  # field number 0: that packet does not parse
    path.write_bytes(bytes(damaged))
    assert whole - 5 <= _salvaged(path, r"dropped 1 damaged packets \(at bytes \d+\)") <= whole
    path.write_bytes(data[:40])  # no whole packet with an event left: refused
    with pytest.raises(TraceFormatError):
        hpuprof.load(path, cache=False)


def test_perfetto_stream_is_taken_up_again_after_garbage(tmp_path: Path) -> None:
    """Issue 27: bytes inserted inside a packet break the framing of everything after it; the
    reader drops that packet, takes the stream up again at the next run of whole packets and
    keeps every other packet."""
    path = _perfetto(tmp_path)
    data = path.read_bytes()
    whole = hpuprof.load(path, cache=False)
    frames = _top_level_packets(data)
    start, end = frames[len(frames) // 2]  # a packet in the middle
    garbage = b"\xff\x01\x07garbage"
    path.write_bytes(data[: end - 2] + garbage + data[end - 2 :])
    said = (
        rf"kept the {len(frames) - 1} complete packets; dropped 1 damaged packets \(at bytes "
        rf"{start}\); dropped bytes \d+ to {end + len(garbage)}: expected"
    )
    with pytest.warns(UserWarning, match=said):
        salvaged = hpuprof.load(path, cache=False)
    assert len(whole.events) - 1 <= len(salvaged.events) <= len(whole.events)


def _top_level_packets(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each top-level packet field of a Perfetto file."""
    out, at = [], 0
    while at < len(data):
        start = at
        at += 1  # the tag (field 1, length-delimited: one byte)
        size, shift = 0, 0
        while data[at] & 0x80:
            size |= (data[at] & 0x7F) << shift
            at, shift = at + 1, shift + 7
        size |= data[at] << shift
        at += 1 + size
        out.append((start, at))
    return out


def test_perfetto_foreign_event_with_bad_args_is_dropped_alone(tmp_path: Path) -> None:
    """Issue 27: one `"Input Dims": 1.5` in a Perfetto trace not written by hpuprof (its
    slices go through the Chrome-trace normalizer) drops that event, not the trace."""
    path = _perfetto(tmp_path)
    proto: Any = _packets(path)
    for packet in proto.packet:  # no hpuprof tables: read like any other Perfetto trace
        if packet.HasField("chrome_events"):
            kept = [m for m in packet.chrome_events.metadata if m.name != "hpuprof.trace"]
            del packet.chrome_events.metadata[:]
            packet.chrome_events.metadata.extend(kept)
    path.write_bytes(proto.SerializeToString())
    whole = len(hpuprof.load(path, cache=False).events)
    annotations = (
        a
        for p in proto.packet
        if p.HasField("track_event")
        for a in p.track_event.debug_annotations
        if a.HasField("legacy_json_value") and a.legacy_json_value.startswith("{")
    )
    annotation = next(annotations)
    annotation.legacy_json_value = orjson.dumps(
        {**orjson.loads(annotation.legacy_json_value), "Input Dims": 1.5}
    ).decode()
    path.write_bytes(proto.SerializeToString())
    said = r"dropped 1 Perfetto events .* us: an array as args 'Input Dims' \(found 1.5\)"
    assert _salvaged(path, said) == whole - 1


def _edit_blob(path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    """Rewrite the hpuprof tables' metadata entry of the Perfetto file at `path` by `edit`."""
    proto: Any = _packets(path)
    for packet in proto.packet:
        for entry in packet.chrome_events.metadata:
            if entry.name == "hpuprof.trace":
                blob = orjson.loads(entry.json_value)
                edit(blob)
                entry.json_value = orjson.dumps(blob).decode()
    path.write_bytes(proto.SerializeToString())


def test_perfetto_damaged_metadata_blob(tmp_path: Path) -> None:
    path = _perfetto(tmp_path)
    _edit_blob(path, lambda blob: blob.pop("counter_tracks"))
    # issue 27: the packets are sound, so they are read as any Perfetto trace's
    said = r"hpuprof's tables in metadata entry hpuprof.trace are damaged \(KeyError: 'counter_tracks'\); read as a plain Perfetto trace"
    (tmp_path / "whole").mkdir()
    whole = hpuprof.load(_perfetto(tmp_path / "whole"), cache=False)
    with pytest.warns(UserWarning, match=said):
        plain = hpuprof.load(path, cache=False)
    assert len(plain.events) == len(whole.events)
    assert sorted(plain.events["name"]) == sorted(whole.events["name"])


def test_perfetto_future_schema_is_refused(tmp_path: Path) -> None:
    path = _perfetto(tmp_path)
    _edit_blob(path, lambda blob: blob.update(schema_version=99))
    _refused(path, "hpuprof.trace", "schema version")


def _damage_one_event(path: Path, damage: Callable[[Any], None]) -> None:
    proto: Any = _packets(path)
    begins = [p for p in proto.packet if p.HasField("track_event") and p.track_event.type == 1]
    damage(begins[len(begins) // 2])  # a slice's TYPE_SLICE_BEGIN
    path.write_bytes(proto.SerializeToString())


def test_perfetto_slice_on_an_undescribed_track_is_dropped_alone(tmp_path: Path) -> None:
    path = _perfetto(tmp_path)
    whole = len(hpuprof.load(path, cache=False).events)

    def move(packet: Any) -> None:
        packet.track_event.track_uuid = 12345

    _damage_one_event(path, move)
    said = r"dropped slices: 1 on tracks hpuprof's tables do not describe \(tracks 12345\)"
    assert _salvaged(path, said) == whole - 1


def test_perfetto_counter_on_an_undescribed_track_is_dropped_alone(tmp_path: Path) -> None:
    path = _perfetto(tmp_path)
    whole = hpuprof.load(path, cache=False)

    def to_counter(packet: Any) -> None:
        packet.track_event.type = 4  # TYPE_COUNTER, on a slice track
        packet.track_event.double_counter_value = 1.0

    _damage_one_event(path, to_counter)
    with pytest.warns(UserWarning, match="dropped 1 counter samples on tracks hpuprof's"):
        salvaged = hpuprof.load(path, cache=False)
    assert len(salvaged.counters) == len(whole.counters)
    assert len(salvaged.events) == len(whole.events) - 1


@pytest.mark.parametrize(
    "damage", ["key", "sources", "truncated", "column", "parent", "cycle", "op_row"]
)
def test_damaged_parquet(tmp_path: Path, damage: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    save_parquet(
        hpuprof.load(Path(__file__).parent / "data" / "gaudi_merged.json", cache=False), path
    )
    table = pq.read_table(path)
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:-100])
        _refused(path, "file structure", "Parquet file written by hpuprof")
        return
    if damage == "key":
        meta = dict(table.schema.metadata)
        del meta[b"hpuprof.sources"]
        table = table.replace_schema_metadata(meta)
        where, expected = "hpuprof.sources", "metadata"
    elif damage == "sources":  # the fuzz's #116: a file name that is a number
        meta = dict(table.schema.metadata)
        meta[b"hpuprof.sources"] = b"[7]"
        table = table.replace_schema_metadata(meta)
        where, expected = "hpuprof.sources", "list of file names"
    elif damage == "column":
        index = table.column_names.index("step")
        table = table.set_column(index, "step", pa.array(["x"] * len(table)))
        where, expected = "column step", "int32"
    elif damage == "parent":
        index = table.column_names.index("parent")
        table = table.set_column(index, "parent", pa.array([10**9] * len(table), pa.int64()))
        where, expected = "events row 0", "earlier row as parent"
    elif damage == "op_row":  # analyses index the events by it
        index = table.column_names.index("op_row")
        table = table.set_column(index, "op_row", pa.array([len(table)] * len(table), pa.int64()))
        where, expected = "events row 0", "op_row"
    else:  # two slices each the other's parent: analyses walking parents would never end
        index = table.column_names.index("parent")
        parents = [1, 0] + [-1] * (len(table) - 2)
        table = table.set_column(index, "parent", pa.array(parents, pa.int64()))
        where, expected = "events row 0", "earlier row as parent"
    pq.write_table(table, path)
    _refused(path, where, expected)


V1_PARQUET = Path(__file__).parents[1] / "analysis" / "data" / "schema_v1" / "v1_hpu_graph.parquet"


@pytest.mark.parametrize("damage", ["cycle", "version", "derived"])
def test_damaged_parquet_of_schema_1(tmp_path: Path, damage: str) -> None:
    """A schema-1 file is checked as schema 1 before its derived columns are computed: a cycle
    of parents is refused where it is (op_row is never derived from it); a version past ours,
    or schema 1's columns with one of schema 2's, is refused."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(V1_PARQUET)
    path = tmp_path / "v1.parquet"
    if damage == "cycle":
        index = table.column_names.index("parent")
        parents = [1, 0] + [-1] * (len(table) - 2)
        table = table.set_column(index, "parent", pa.array(parents, pa.int64()))
        where, expected = "events row 0", "earlier row as parent"
    elif damage == "version":
        meta = dict(table.schema.metadata)
        meta[b"hpuprof.schema_version"] = b"99999999999999999999999"
        table = table.replace_schema_metadata(meta)
        where, expected = "file metadata", "schema version 1 to"
    else:  # schema 1 with a column of schema 2: neither version's columns
        table = table.append_column("op_row", pa.array([-1] * len(table), pa.int64()))
        where, expected = "columns", "event columns"
    pq.write_table(table, path)
    _refused(path, where, expected)
    pq.write_table(pq.read_table(V1_PARQUET), path)  # the undamaged file loads, derived
    assert "op_row" in hpuprof.load(path, cache=False).events.columns


def test_loaded_traces_never_warn_silently(tmp_path: Path, scan_path: str) -> None:
    """A plain valid file loads without a warning (warnings keep a load out of the cache)."""
    path = _file(tmp_path, [OK_EVENT])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(hpuprof.load(path, cache=False).events) == 1
