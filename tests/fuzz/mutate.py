"""Mutants of real traces: every mutation kind of issue 13, for every loader path.

A `Mutant` is made from a `Seed` (a shared torch.profiler trace, a sample trace, a Perfetto or
Parquet file made from one, or a sample run directory) by one mutation, chosen and applied with
a `random.Random` seeded by (run seed, mutant index): mutant N of a seed is always the same
bytes, so a failure is reproduced by its index alone.

Each mutation may state what a correct loader must do with the mutant (`Expect`): refuse it
(an out-of-range value that would otherwise load as something else), or keep exactly the
complete events before a truncation point (counted here independently of the loader, with the
stdlib's `json.JSONDecoder.raw_decode`).
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import random
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

LoaderPath = str
"""json | gzip | perfetto | parquet | rundir (JSON mutants load through both scan paths)."""


@dataclass(frozen=True)
class Seed:
    """A valid input the mutants start from."""

    name: str
    kind: LoaderPath
    path: Path
    data: bytes = b""  # the (decompressed) bytes of a file seed


@dataclass(frozen=True)
class Expect:
    """What a correct loader does with a mutant (None: anything clean goes)."""

    error: bool = False  # must be refused with a TraceFormatError
    complete_events: int | None = None  # truncated: exactly this many raw events kept
    why: str = ""


@dataclass(frozen=True)
class Mutant:
    index: int
    seed: str
    kind: LoaderPath
    mutation: str
    path: Path  # the file or run directory to load
    expect: Expect
    size: int  # bytes on disk (a directory: its files)


NONE = Expect()
TIMED_PHASES = ("X", "B", "E", "i", "I", "C", "s", "t", "f")
FLOW_PHASES = ("s", "t", "f")
OUT_OF_RANGE_US = (
    "1e308",
    "-1e308",
    "1e19",
    "-1e19",
    "9223372036854775807",
    "18446744073709551616",
)
HUGE_INTS = (
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "-9223372036854775809",
    "100000000000000000000",
    "1" + "0" * 400,
    "-" + "9" * 40,
)
SPECIAL_FLOATS = (
    "1e308",
    "-1e308",
    "1e400",
    "-1e400",
    "NaN",
    "Infinity",
    "-Infinity",
    "-0.0",
    "5e-324",
)
ARG_KEYS = (
    "External id",
    "correlation",
    "stream",
    "device",
    "Input Dims",
    "Input type",
    "recipeId",
    "hpuprof.mode",
    "hpuprof.module",
    "hpuprof.phase",
    "hpuprof.graph_id",
    "hpuprof.event",
    "hpuprof.flush_reason",
    "hpuprof.fallback",
)
EVENT_KEYS = ("ph", "name", "cat", "pid", "tid", "ts", "dur", "id", "bp", "args")
_RAW = "\x00raw{}\x00"  # a placeholder string replaced by raw JSON text after encoding


# --- JSON documents with raw values ----------------------------------------------------------


class _Doc:
    """A decoded JSON trace; values set with `raw(text)` are written verbatim on `encode`."""

    def __init__(self, data: bytes) -> None:
        self.top: Any = orjson.loads(data)
        self.raws: list[str] = []

    @property
    def events(self) -> list[Any]:
        if isinstance(self.top, dict):
            events = self.top.setdefault("traceEvents", [])
            return events if isinstance(events, list) else []
        return self.top if isinstance(self.top, list) else []

    @property
    def meta(self) -> dict[str, Any]:
        if not isinstance(self.top, dict):
            self.top = {"traceEvents": self.top}
        meta: dict[str, Any] = self.top
        return meta

    def raw(self, text: str) -> str:
        self.raws.append(text)
        return _RAW.format(len(self.raws) - 1)

    def pick(self, rng: random.Random, phases: tuple[str, ...] | None = None) -> dict[str, Any]:
        """A random event object (of one of `phases` when there is one), made if none is."""
        events = [e for e in self.events if isinstance(e, dict)]
        if phases is not None:
            events = [e for e in events if e.get("ph") in phases]
        if events:
            return rng.choice(events)
        event = {"ph": (phases or ("X",))[0], "name": "made", "pid": 1, "tid": 1, "ts": 1, "dur": 1}
        self.events.append(event)
        return event

    def encode(self) -> bytes:
        data = orjson.dumps(self.top)
        for k, text in enumerate(self.raws):
            data = data.replace(orjson.dumps(_RAW.format(k)), text.encode())
        return data


def _args(event: dict[str, Any]) -> dict[str, Any]:
    args = event.get("args")
    if not isinstance(args, dict):
        args = event["args"] = {}
    return args


def _value_of_type(rng: random.Random, doc: _Doc) -> Any:
    return rng.choice(
        [
            "text",
            "",
            "12",
            "0x1f",
            0,
            -1,
            3,
            1.5,
            -2.25,
            True,
            False,
            None,
            [],
            [1, "a"],
            [[1, 2], [3]],
            {},
            {"a": 1},
            {"a": [1, {"b": None}]},
            doc.raw(rng.choice(HUGE_INTS)),
        ]
    )


# --- mutations of a JSON trace ---------------------------------------------------------------

Mutation = Callable[[bytes, random.Random, "Context"], tuple[bytes, Expect]]


@dataclass(frozen=True)
class Context:
    long_name_max: int  # bytes of the longest name the long_name mutation writes
    check_truncation: bool  # count the complete events of truncated mutants (slow on big seeds)


def byte_flip(data: bytes, rng: random.Random, ctx: Context) -> tuple[bytes, Expect]:
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 4, 16))):
        at = rng.randrange(len(out)) if out else 0
        if out:
            out[at] = (
                out[at] ^ (1 << rng.randrange(8)) if rng.random() < 0.5 else rng.randrange(256)
            )
    return bytes(out), NONE


def truncate(data: bytes, rng: random.Random, ctx: Context) -> tuple[bytes, Expect]:
    cut = rng.randrange(len(data)) if rng.random() < 0.9 else rng.randrange(min(len(data), 64) + 1)
    head = data[:cut]
    if not ctx.check_truncation:
        return head, NONE
    return head, Expect(complete_events=complete_events_before_cut(head), why="truncated")


def insert_garbage(data: bytes, rng: random.Random, ctx: Context) -> tuple[bytes, Expect]:
    at = rng.randrange(len(data) + 1)
    garbage = rng.choice(
        [
            bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64))),
            b",",
            b"}",
            b"]",
            b"{",
            b"[",
            b'"',
            b"\\",
            b"\x00",
            b'{"ph": "X"}',
            b"}, {",
            b"null",
            b",,",
            b"]}",
            b'"traceEvents": [',
        ]
    )
    return data[:at] + garbage + data[at:], NONE


def invalid_utf8(data: bytes, rng: random.Random, ctx: Context) -> tuple[bytes, Expect]:
    quotes = [m.end() for m in re.finditer(rb'"', data[: 1 << 20])]
    at = rng.choice(quotes) if quotes else 0
    bad = rng.choice(
        [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\x80"]
    )
    return data[:at] + bad + data[at:], NONE


def bom(data: bytes, rng: random.Random, ctx: Context) -> tuple[bytes, Expect]:
    mark = rng.choice([b"\xef\xbb\xbf", b"\xef\xbb\xbf\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"])
    return mark + data, NONE


def empty(data: bytes, rng: random.Random, ctx: Context) -> tuple[bytes, Expect]:
    return rng.choice([b"", b" ", b"\n\n", b"\x00", b"{}", b"[]", b'{"traceEvents": []}']), NONE


def deep_nesting(data: bytes, rng: random.Random, ctx: Context) -> tuple[bytes, Expect]:
    depth = rng.choice((100, 600, 1000, 5000, 100_000))
    nest = rng.choice(
        [
            b"[" * depth + b"]" * depth,
            b'{"a":' * depth + b"1" + b"}" * depth,
            b"[" * depth,  # never closed
        ]
    )
    doc = _Doc(data)
    where = rng.choice(("args", "event", "meta", "id"))
    if where == "args":
        _args(doc.pick(rng))["deep"] = doc.raw(nest.decode())
    elif where == "event":
        doc.events.insert(rng.randrange(len(doc.events) + 1), doc.raw(nest.decode()))
    elif where == "id":
        doc.pick(rng, FLOW_PHASES)["id"] = doc.raw(nest.decode())
    else:
        doc.meta["deep"] = doc.raw(nest.decode())
    return doc.encode(), NONE


def duplicate_key(data: bytes, rng: random.Random, ctx: Context) -> tuple[bytes, Expect]:
    doc = _Doc(data)
    event = doc.pick(rng)
    key = rng.choice(EVENT_KEYS)
    sentinel = "\x00dup\x00"
    event[sentinel] = _value_of_type(rng, doc)
    out = doc.encode().replace(orjson.dumps(sentinel), orjson.dumps(key))
    return out, NONE


def type_swap(data: bytes, rng: random.Random, ctx: Context) -> tuple[bytes, Expect]:
    doc = _Doc(data)
    event = doc.pick(rng)
    if rng.random() < 0.5:
        event[rng.choice(EVENT_KEYS)] = _value_of_type(rng, doc)
    else:
        _args(event)[rng.choice(ARG_KEYS)] = _value_of_type(rng, doc)
    return doc.encode(), NONE


def huge_int(data: bytes, rng: random.Random, ctx: Context) -> tuple[bytes, Expect]:
    doc = _Doc(data)
    event = doc.pick(rng)
    number = rng.choice(HUGE_INTS)
    target = rng.choice(("pid", "tid", "ts", "dur", "id", "args"))
    if target == "args":
        _args(event)[rng.choice(ARG_KEYS)] = doc.raw(number)
        return doc.encode(), NONE
    event[target] = doc.raw(number)
    return doc.encode(), _time_expect(event, target, number)


def special_float(data: bytes, rng: random.Random, ctx: Context) -> tuple[bytes, Expect]:
    doc = _Doc(data)
    event = doc.pick(rng)
    number = rng.choice(SPECIAL_FLOATS)
    target = rng.choice(("ts", "dur", "args", "pid"))
    if target == "args":
        _args(event)[rng.choice((*ARG_KEYS, "value"))] = doc.raw(number)
        return doc.encode(), NONE
    event[target] = doc.raw(number)
    return doc.encode(), _time_expect(event, target, number)


def out_of_range_time(data: bytes, rng: random.Random, ctx: Context) -> tuple[bytes, Expect]:
    """ts past int64 nanoseconds on a timed event, or dur on a complete one: must be refused."""
    doc = _Doc(data)
    if rng.random() < 0.5:
        event = doc.pick(rng, TIMED_PHASES)
        target = "ts"
    else:
        event = doc.pick(rng, ("X",))
        target = "dur"
    number = rng.choice(OUT_OF_RANGE_US)
    event[target] = doc.raw(number)
    return doc.encode(), _time_expect(event, target, number)


def _time_expect(event: dict[str, Any], target: str, number: str) -> Expect:
    try:
        value = float(number)
    except ValueError:
        return NONE
    if value != value or abs(value) * 1000 < 2.0**63:
        return NONE  # NaN is not JSON (a syntax error); small values are fine
    ph = event.get("ph")
    if (target == "ts" and ph in TIMED_PHASES) or (target == "dur" and ph == "X"):
        return Expect(error=True, why=f"{target}={number} on a {ph} event")
    return NONE


def missing_field(data: bytes, rng: random.Random, ctx: Context) -> tuple[bytes, Expect]:
    doc = _Doc(data)
    for _ in range(rng.choice((1, 1, 3, 50))):
        event = doc.pick(rng)
        event.pop(rng.choice(("ts", "dur", "ph", "pid", "tid", "name", "args", "cat")), None)
    return doc.encode(), NONE


def unknown_ph(data: bytes, rng: random.Random, ctx: Context) -> tuple[bytes, Expect]:
    doc = _Doc(data)
    event = doc.pick(rng)
    event["ph"] = rng.choice(
        ["Z", "", "XX", "ß", "x", "b", "e", "n", "O", "N", "D", "P", "R", "\u0000"]
    )
    return doc.encode(), NONE


def unbalanced_be(data: bytes, rng: random.Random, ctx: Context) -> tuple[bytes, Expect]:
    doc = _Doc(data)
    base = doc.pick(rng, ("X",))
    lane = {"pid": base.get("pid", 1), "tid": base.get("tid", 1), "cat": base.get("cat", "")}
    ts = base.get("ts") if isinstance(base.get("ts"), int | float) else 1
    made = rng.choice(
        [
            [{"ph": "B", "name": "open", "ts": ts, **lane}],
            [{"ph": "E", "ts": ts, **lane}],
            [{"ph": "E", "ts": ts, **lane}, {"ph": "B", "name": "late", "ts": ts + 5, **lane}],
            [{"ph": "B", "name": "b", "ts": ts + 5, **lane}, {"ph": "E", "ts": ts, **lane}],
            [{"ph": "B", "name": f"b{k}", "ts": ts + k, **lane} for k in range(200)],
        ]
    )
    for event in made:
        doc.events.insert(rng.randrange(len(doc.events) + 1), event)
    return doc.encode(), NONE


def long_name(data: bytes, rng: random.Random, ctx: Context) -> tuple[bytes, Expect]:
    doc = _Doc(data)
    size = rng.choice([1 << 16, 1 << 20, ctx.long_name_max])
    for _ in range(rng.choice((1, 1, 8)) if size <= 1 << 20 else 1):
        event = doc.pick(rng)
        field = rng.choice(("name", "name", "cat", "tid"))
        event[field] = rng.choice("xé€") * (size // 3)
    return doc.encode(), NONE


def flow_id_container(data: bytes, rng: random.Random, ctx: Context) -> tuple[bytes, Expect]:
    doc = _Doc(data)
    event = doc.pick(rng, FLOW_PHASES)
    event["id"] = rng.choice([{}, [], {"a": 1}, [1], [[]], True, 1.5, None])
    return doc.encode(), NONE


def step_overflow(data: bytes, rng: random.Random, ctx: Context) -> tuple[bytes, Expect]:
    doc = _Doc(data)
    number = rng.choice(["99999999999999999999999", "2147483648", "9223372036854775808", "-5"])
    event = doc.pick(rng, ("X",))
    event["name"] = f"ProfilerStep#{number}"
    event["cat"] = rng.choice(("user_annotation", "cpu_op"))
    return doc.encode(), NONE


def rank_overflow(data: bytes, rng: random.Random, ctx: Context) -> tuple[bytes, Expect]:
    doc = _Doc(data)
    value = rng.choice(
        [doc.raw("100000000000000000000"), doc.raw("2147483648"), -1, "3", 1.5, None]
    )
    if rng.random() < 0.5:
        doc.meta["distributedInfo"] = {"rank": value, "world_size": 2, "backend": "nccl"}
    else:
        doc.meta["hpuprof"] = {"rank": value, "run": 1}
    return doc.encode(), NONE


def base_overflow(data: bytes, rng: random.Random, ctx: Context) -> tuple[bytes, Expect]:
    doc = _Doc(data)
    text = rng.choice(
        [
            "9223372036854775808",
            "18446744073709551616",
            "-9223372036854775809",
            "1e308",
            "1e30",
            "9.2e18",
            '"abc"',
            "true",
            "[]",
            "-1",
        ]
    )
    doc.meta["baseTimeNanoseconds"] = doc.raw(text)
    return doc.encode(), NONE


def counter_overflow(data: bytes, rng: random.Random, ctx: Context) -> tuple[bytes, Expect]:
    doc = _Doc(data)
    event = doc.pick(rng, ("C",))
    _args(event)[rng.choice(("value", "bytes", "x"))] = doc.raw(
        rng.choice(["1" + "0" * 400, "1e400", "1e308", "-1e308", "18446744073709551616"])
    )
    return doc.encode(), NONE


def args_container(data: bytes, rng: random.Random, ctx: Context) -> tuple[bytes, Expect]:
    doc = _Doc(data)
    event = doc.pick(rng)
    key = rng.choice(ARG_KEYS)
    _args(event)[key] = rng.choice([[1, 2], ["a"], {"k": "v"}, [], {}, [[1]], 1.5, "x", True])
    return doc.encode(), NONE


def metadata_value(data: bytes, rng: random.Random, ctx: Context) -> tuple[bytes, Expect]:
    doc = _Doc(data)
    key = rng.choice(
        ("deviceProperties", "distributedInfo", "hpuprof", "schemaVersion", "traceName")
    )
    doc.meta[key] = rng.choice(
        [
            doc.raw("1e400"),
            doc.raw("1" + "0" * 400),
            [{"id": doc.raw("1e400")}],
            [],
            "x",
            None,
            {"rank": [1]},
            doc.raw("-1e400"),
            [[[[1]]]],
        ]
    )
    return doc.encode(), NONE


BYTE_MUTATIONS: tuple[str, ...] = (
    "byte_flip",
    "truncate",
    "insert_garbage",
    "invalid_utf8",
    "bom",
    "empty",
)
"""The JSON mutations that need no decoded document: the only ones for a seed that is not one
JSON document (the Synapse logger's excerpt has no enclosing brackets and is cut inside an
event at both ends)."""


@functools.lru_cache(maxsize=64)
def mutations_for(data: bytes) -> list[str]:
    """The names of `JSON_MUTATIONS` that apply to the seed `data` (one parse per seed)."""
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError:
        return sorted(BYTE_MUTATIONS)
    return sorted(JSON_MUTATIONS)


JSON_MUTATIONS: dict[str, Mutation] = {
    f.__name__: f
    for f in (
        byte_flip,
        truncate,
        insert_garbage,
        invalid_utf8,
        bom,
        empty,
        deep_nesting,
        duplicate_key,
        type_swap,
        huge_int,
        special_float,
        out_of_range_time,
        missing_field,
        unknown_ph,
        unbalanced_be,
        long_name,
        flow_id_container,
        step_overflow,
        rank_overflow,
        base_overflow,
        counter_overflow,
        args_container,
        metadata_value,
    )
}


# --- truncation: the complete events before a cut, counted independently ---------------------

_EVENTS_ARRAY = re.compile(rb'"traceEvents"\s*:\s*\[')
_STDLIB = json.JSONDecoder()


def complete_events_before_cut(head: bytes) -> int | None:
    """Raw events a loader must keep from a trace cut after `head`: the complete events of the
    events array (None when the cut is before the array or the count is not clear)."""
    text = head.decode("utf-8", "surrogateescape")
    match = _EVENTS_ARRAY.search(head)
    if text.lstrip()[:1] == "[":
        pos = text.index("[") + 1
    elif match is not None:
        pos = len(head[: match.end()].decode("utf-8", "surrogateescape"))
    else:
        return None
    count = 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            return count if pos < len(text) or count else None
        try:
            _, pos = _STDLIB.raw_decode(text, pos)
        except json.JSONDecodeError:
            return count
        count += 1


# --- other loader paths ----------------------------------------------------------------------


GZIP_KINDS = (
    "corrupt_body",
    "truncate_stream",
    "trailing_garbage",
    "whitespace_bomb",
    "event_bomb",
    "multi_member",
    "json_inside",
    "json_inside",
    "bad_header",
)


def gzip_mutation(data: bytes, rng: random.Random, ctx: Context) -> tuple[str, bytes, Expect]:
    """A mutant of a gzip seed (`data` is its decompressed JSON)."""
    kind = rng.choice(GZIP_KINDS)
    packed = gzip.compress(data, compresslevel=1)
    if kind == "corrupt_body":
        out = bytearray(packed)
        for _ in range(rng.choice((1, 4, 32))):
            at = rng.randrange(10, len(out))
            out[at] = rng.randrange(256)
        return kind, bytes(out), NONE
    if kind == "truncate_stream":
        return kind, packed[: rng.randrange(len(packed))], NONE
    if kind == "trailing_garbage":
        return kind, packed + rng.choice([b"garbage", b"\x1f\x8b", b"\x00" * 10, b"\xff"]), NONE
    if kind == "whitespace_bomb":
        return kind, _bomb(b" " * (1 << 20), rng.choice((64, 512, 2048)), b"[", b"]"), NONE
    if kind == "event_bomb":
        one = b'{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1},' * 8192
        return kind, _bomb(one, rng.choice((64, 512, 2048)), b"[", b'{"ph": "i", "ts": 2}]'), NONE
    if kind == "multi_member":
        cut = rng.randrange(len(data) + 1)
        return kind, gzip.compress(data[:cut]) + gzip.compress(data[cut:]), NONE
    if kind == "bad_header":
        out = bytearray(packed)
        out[2 + rng.randrange(8)] = rng.randrange(256)
        return kind, bytes(out), NONE
    name = rng.choice(list(JSON_MUTATIONS))
    mutated, expect = JSON_MUTATIONS[name](data, rng, ctx)
    return f"gz:{name}", gzip.compress(mutated, compresslevel=1), expect


def _bomb(block: bytes, blocks: int, head: bytes, tail: bytes) -> bytes:
    """`head` + `blocks` copies of `block` + `tail` as a multi-member gzip file: the block's
    member is compressed once and repeated (a bomb of gigabytes is made in milliseconds)."""
    member = gzip.compress(block, compresslevel=9)
    return gzip.compress(head) + member * blocks + gzip.compress(tail)


PERFETTO_KINDS = (
    "byte_flip",
    "truncate",
    "insert_garbage",
    "huge_varint",
    "structure",
    "structure",
    "structure",
    "empty",
)


def perfetto_mutation(data: bytes, rng: random.Random, ctx: Context) -> tuple[str, bytes, Expect]:
    kind = rng.choice(PERFETTO_KINDS)
    if kind == "byte_flip":
        return kind, byte_flip(data, rng, _QUIET)[0], NONE
    if kind == "truncate":
        return kind, data[: rng.randrange(len(data))], NONE
    if kind == "insert_garbage":
        return kind, insert_garbage(data, rng, _QUIET)[0], NONE
    if kind == "empty":
        return kind, b"", NONE
    if kind == "huge_varint":
        # a packet (field 1, length-delimited) that claims ~2^62 bytes
        return kind, data + b"\x0a" + b"\xff" * 8 + b"\x3f", NONE
    name, out = _perfetto_structure(data, rng)
    return f"proto:{name}", out, NONE


def _perfetto_structure(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace as TraceProto

    proto = TraceProto()
    proto.ParseFromString(data)
    packets = list(proto.packet)
    events = [p for p in packets if p.HasField("track_event")]
    kind = rng.choice(
        [
            "meta_blob",
            "meta_blob_key",
            "args_json",
            "args_b64",
            "notes",
            "timestamp",
            "track",
            "interned",
            "drop_packets",
            "end_without_begin",
            "counter",
        ]
    )
    if kind in ("meta_blob", "meta_blob_key"):
        for packet in packets:
            for entry in packet.chrome_events.metadata:
                if entry.name != "hpuprof.trace":
                    continue
                if kind == "meta_blob":
                    text = rng.choice(["", "{", "[]", "null", '{"a": 1}', "x", "[" * 5000])
                    if rng.random() < 0.5:
                        entry.json_value = text
                    else:
                        entry.string_value = text
                else:
                    blob = json.loads(entry.json_value)
                    key = rng.choice(sorted(blob))
                    if rng.random() < 0.5:
                        del blob[key]
                    else:
                        blob[key] = rng.choice([None, 1, "x", [], {}, "@@", 10**30, {"1": [1]}])
                    entry.json_value = json.dumps(blob)
    elif events:
        packet = rng.choice(events)
        event = packet.track_event
        if kind in ("args_json", "args_b64", "notes"):
            annotation = event.debug_annotations.add()
            annotation.name = {
                "args_json": "args",
                "args_b64": "hpuprof.args_base64",
                "notes": "hpuprof",
            }[kind]
            if kind == "args_b64":
                annotation.string_value = rng.choice(["@@@", "YQ", "", "////"])
            else:
                annotation.legacy_json_value = rng.choice(
                    ["{", "[]", "1", '{"row": "x"}', '{"row": 1e400}', '{"row": -5}', "null", '"s"']
                )
            if rng.random() < 0.5 and len(event.debug_annotations) > 1:
                del event.debug_annotations[0]
        elif kind == "timestamp":
            packet.timestamp = rng.choice([0, 2**63, 2**64 - 1, 2**62])
        elif kind == "track":
            event.track_uuid = rng.choice([0, 1, 2**64 - 1, 12345])
        elif kind == "interned":
            event.name_iid = rng.choice([0, 999_999, 2**63])
        elif kind == "drop_packets":
            for _ in range(rng.randrange(1, max(2, len(packets) // 4))):
                proto.packet.remove(rng.choice(list(proto.packet)))
        elif kind == "end_without_begin":
            event.type = rng.choice([0, 1, 2, 2, 3, 4])  # (protobuf refuses unknown values)
        elif kind == "counter":
            event.type = 4
            event.double_counter_value = rng.choice([float("nan"), float("inf"), 1e308])
    return kind, proto.SerializeToString()


def parquet_mutation(path: Path, rng: random.Random) -> tuple[str, bytes]:
    data = path.read_bytes()
    kind = rng.choice(["byte_flip", "truncate", "metadata", "metadata", "metadata", "columns"])
    if kind == "byte_flip":
        return kind, byte_flip(data, rng, _QUIET)[0]
    if kind == "truncate":
        return kind, data[: rng.randrange(len(data))]
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    meta = dict(table.schema.metadata or {})
    if kind == "metadata":
        key = rng.choice(sorted(k for k in meta if k.startswith(b"hpuprof.")))
        if rng.random() < 0.4:
            del meta[key]
        else:
            meta[key] = rng.choice(
                [b"", b"x", b"{", b"[1]", b"99", b"-1", b"\xff", b"1e400", meta[key][:7]]
            )
        table = table.replace_schema_metadata(meta)
    else:
        column = rng.randrange(table.num_columns)
        choice = rng.random()
        if choice < 0.3:
            table = table.remove_column(column)
        elif choice < 0.6:
            table = table.rename_columns(
                [n if i != column else n + "_x" for i, n in enumerate(table.column_names)]
            )
        else:
            table = table.set_column(
                column, table.field(column).name, pa.array(["x"] * table.num_rows)
            )
        table = table.replace_schema_metadata(meta)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return kind, bytes(sink.getvalue().to_pybytes())


_QUIET = Context(long_name_max=1 << 20, check_truncation=False)


def rundir_mutation(
    seed: Path, target: Path, rng: random.Random, outside: Path
) -> tuple[str, Expect]:
    """Copy the run directory `seed` to `target` and damage it; `outside` is a valid trace
    outside the run directory (a manifest naming it must be refused)."""
    shutil.copytree(seed, target, symlinks=True)
    manifest = target / "run.json"
    doc = json.loads(manifest.read_bytes())
    listed = list(doc.get("traces") or [])
    kind = rng.choice(
        [
            "absolute",
            "dotdot",
            "symlink_out",
            "proc",
            "not_json",
            "truncated_json",
            "not_object",
            "traces_type",
            "traces_empty_stream",
            "self",
            "directory",
            "missing_file",
            "nul",
            "leftovers",
            "byte_flip",
            "dotdot_inside",
        ]
    )
    expect = NONE
    if kind == "absolute":
        doc["traces"] = [str(outside.resolve()), *listed[: rng.randrange(len(listed) + 1)]]
        expect = Expect(error=True, why="absolute manifest entry")
    elif kind == "dotdot":
        rel = os.path.relpath(outside.resolve(), target.resolve())
        doc["traces"] = [*listed, rel]
        expect = Expect(error=True, why="manifest entry with ..")
    elif kind == "dotdot_inside":
        doc["traces"] = [f"traces/../{p}" for p in listed]  # stays inside: fine either way
    elif kind == "proc":
        doc["traces"] = [
            rng.choice(["/proc/self/environ", "/etc/passwd", "../../../../etc/passwd"])
        ]
        expect = Expect(error=True, why="manifest entry outside the run directory")
    elif kind == "symlink_out":
        link = target / "traces" / "linked.pt.trace.json"
        link.parent.mkdir(exist_ok=True)
        link.symlink_to(outside.resolve())
        doc["traces"] = [*listed, "traces/linked.pt.trace.json"]
        expect = Expect(error=True, why="manifest entry that links out of the run directory")
    elif kind == "not_json":
        manifest.write_bytes(rng.choice([b"", b"{", b"\xff\xfe", b"null", b"garbage"]))
        return kind, expect
    elif kind == "truncated_json":
        text = manifest.read_bytes()
        manifest.write_bytes(text[: rng.randrange(len(text))])
        return kind, expect
    elif kind == "not_object":
        manifest.write_bytes(rng.choice([b"[]", b"1", b'"traces"', b"[1, 2]"]))
        return kind, expect
    elif kind == "traces_type":
        doc["traces"] = rng.choice(["traces/x.json", {"a": 1}, [1, 2], [None], [["a"]], 5, [""]])
    elif kind == "traces_empty_stream":
        doc["traces"], doc["incomplete"] = [], listed  # a run killed before it ended
        doc["status"] = "running"
    elif kind == "self":
        doc["traces"] = ["run.json", *listed]
    elif kind == "directory":
        doc["traces"] = ["traces", "."]
    elif kind == "missing_file":
        doc["traces"] = [*listed, "traces/gone.pt.trace.json"]
    elif kind == "nul":
        doc["traces"] = ["traces/a\x00b.json", *listed]
    elif kind == "leftovers":
        scratch = target / ".scratch-abc123"
        scratch.mkdir()
        (scratch / "partial.json").write_bytes(b'{"traceEvents": [{"ph": "X"')
        (target / "traces" / ".x.pt.trace.json.123.tmp").write_bytes(b"{")
        (target / "perfetto").mkdir(exist_ok=True)
        (target / "perfetto" / ".y.perfetto-trace.tmp").write_bytes(b"\x0a\xff")
        if rng.random() < 0.5:
            doc["traces"] = []
    elif kind == "byte_flip":
        text = bytearray(manifest.read_bytes())
        for _ in range(rng.choice((1, 3))):
            text[rng.randrange(len(text))] = rng.randrange(256)
        manifest.write_bytes(bytes(text))
        return kind, expect
    manifest.write_text(json.dumps(doc))
    return kind, expect


# --- Gaudi hardware-profiler CSV and .hltv archives ---------------------------------------------

HW_CSV_KINDS = (
    "byte_flip", "truncate", "insert_garbage", "empty", "drop_line", "duplicate_line",
    "field_garbage", "shift_fields",
)  # fmt: skip
FIELD_GARBAGE = ("", "abc", "1e400", "-", "NaN", '"', "0x10", "-1", "1" * 40, "\x00", "BEGIN")


def hw_csv_mutation(data: bytes, rng: random.Random, ctx: Context) -> tuple[str, bytes, Expect]:
    """A mutant of a hardware-profiler CSV: byte-level, or one line or field changed."""
    kind = rng.choice(HW_CSV_KINDS)
    if kind == "byte_flip":
        return kind, byte_flip(data, rng, _QUIET)[0], NONE
    if kind == "truncate":
        return kind, data[: rng.randrange(len(data) + 1)], NONE
    if kind == "insert_garbage":
        return kind, insert_garbage(data, rng, _QUIET)[0], NONE
    if kind == "empty":
        return kind, b"", NONE
    lines = data.split(b"\n")
    at = rng.randrange(len(lines))
    if kind == "drop_line":
        del lines[at]
    elif kind == "duplicate_line":
        lines.insert(at, lines[at])
    else:
        fields = lines[at].split(b",")
        if kind == "field_garbage":
            fields[rng.randrange(len(fields))] = rng.choice(FIELD_GARBAGE).encode()
        else:
            fields = fields[1:] + fields[:1]
        lines[at] = b",".join(fields)
    return f"{kind}@{at}", b"\n".join(lines), NONE


def hltv_mutation(data: bytes, rng: random.Random, ctx: Context) -> tuple[str, bytes, Expect]:
    """A mutant of an .hltv archive: byte-level, or a member rewritten."""
    import io
    import zipfile

    kind = rng.choice(("byte_flip", "truncate", "empty", "member"))
    if kind == "byte_flip":
        return kind, byte_flip(data, rng, _QUIET)[0], NONE
    if kind == "truncate":
        return kind, data[: rng.randrange(len(data) + 1)], NONE
    if kind == "empty":
        return kind, b"", NONE
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    name = rng.choice(sorted(members))
    name_kind, members[name] = hw_csv_mutation(members[name], rng, ctx)[:2]
    if rng.random() < 0.2:
        del members[name]
        name_kind = "dropped"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, content in members.items():
            archive.writestr(member, content)
    return f"member:{name}:{name_kind}", out.getvalue(), NONE
