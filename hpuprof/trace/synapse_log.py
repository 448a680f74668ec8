"""Reader for the Synapse logger's output: the bridge's trace of Synapse API calls and its own
scopes (Chrome-trace `B`/`E` events, one JSON object per event), into the one trace model.

What the logger writes, and what this reader does with it:
- the events array's brackets are optional: the logger opens `[` and never closes it, and an
  excerpt (`../shared/traces/gaudi/synapse-logger-example.json`) has neither;
- an event cut off at either end of the file (an excerpt, a killed process) is left out, with
  one warning naming where the sound events begin and end; malformed JSON *between* sound
  events is a `TraceFormatError` naming the file, the line and byte, and what was expected;
- `B`/`E` pairs are matched per thread (pid, tid), an `E` closing the innermost open `B` of its
  name: each pair becomes one slice (`ph: X`) whose args are the `B` args plus the `E` args
  under `result` (the call's `status`). An `E` whose `B` lies before the file's first event,
  and a `B` never closed, are left out and counted in the trace metadata
  (`synapse_logger.unmatched_ends` / `unmatched_begins`);
- API calls keep their names (`call:synLaunchWithExternalEvents`); their C signatures (the
  logger's `func`, the same for every call of a name) go to the metadata
  (`synapse_logger.signatures`) instead of every row;
- each process is named `Synapse Logger`, so the loader counts its events as host runtime
  events (`normalize.HOST_RUNTIME_PROCESSES`); times are the logger's epoch microseconds.

The Synapse logger's own parser (`gson_parsing.py` in the bridge) reads one event per line;
this reader does not depend on the layout (a pretty-printed excerpt loads the same).
"""

from __future__ import annotations

import re
import warnings
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

import msgspec

from hpuprof.errors import TraceFormatError
from hpuprof.path_text import path_text
from hpuprof.trace.formats import ReadOptions
from hpuprof.trace.model import Trace
from hpuprof.trace.rawio import GZIP_MAGIC, BlockStream

FORMAT: Final = "synapse-logger+gaudi"
"""`Trace.format` of a Synapse logger trace (`+gaudi`: the device it ran on)."""
METADATA: Final = "synapse_logger"
"""The metadata key of what the reader counted (`SynapseLogStats.to_dict`)."""
PROCESS_NAME: Final = "Synapse Logger"
CALL_PREFIX: Final = "call:"
"""Name prefix of the Synapse API calls (the bridge's own scopes have none)."""

_MARKS: Final = (b'"call:syn', b'"func": "synStatus', b'"func":"synStatus')
_WS: Final = b" \t\r\n"
_EVENT_KEY: Final = rb'"(?:ph|ts|tid|pid|name|cat|func|args|dur|id)"\s*:'
_EVENTS_FIRST: Final = re.compile(
    rb"(?:\xef\xbb\xbf)?\s*(?:\[|" + _EVENT_KEY + rb"|\{\s*" + _EVENT_KEY + rb")"
)
_BOUNDARY: Final = re.compile(rb"\}\s*,\s*\{")
_BYTE: Final = re.compile(r"\(byte (\d+)\)")


class _Entry(msgspec.Struct, gc=False):
    """One event as the logger writes it."""

    ph: str
    ts: int | float
    name: str = ""
    cat: str = ""
    pid: int | str = 0
    tid: int | str = 0
    func: str = ""
    args: dict[str, Any] = {}
    dur: int | float | None = None


_ENTRIES: Final = msgspec.json.Decoder(list[_Entry])
_ENTRY: Final = msgspec.json.Decoder(_Entry)


@dataclass(frozen=True)
class SynapseLogStats:
    """What reading one Synapse logger file found besides its events.

    Args:
        events: sound events read (before pairing).
        unmatched_begins: `B` events never closed (left out).
        unmatched_ends: `E` events with no open `B` on their thread (left out).
        cut_head: bytes before the first sound event (an event cut off at the start), 0 if none.
        cut_tail: bytes after the last sound event (an event cut off at the end), 0 if none.
        signatures: each API call's C signature (the logger's `func`).
    """

    events: int
    unmatched_begins: int
    unmatched_ends: int
    cut_head: int
    cut_tail: int
    signatures: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "unmatched_begins": self.unmatched_begins,
            "unmatched_ends": self.unmatched_ends,
            "cut_head_bytes": self.cut_head,
            "cut_tail_bytes": self.cut_tail,
            "signatures": dict(self.signatures),
        }


def is_synapse_log(head: bytes) -> bool:
    """Whether a file's first bytes (plain or gzip) are the Synapse logger's: events from the
    start (an array, a bare event, or an excerpt cut inside one; not a Chrome-trace object
    with top-level keys) and an API call's name or signature among them."""
    if head.startswith(GZIP_MAGIC):
        try:
            head = zlib.decompressobj(wbits=31).decompress(head, 1 << 16)
        except zlib.error:
            return False
    return _EVENTS_FIRST.match(head) is not None and any(mark in head for mark in _MARKS)


# --- bytes -> entries ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Body:
    """The text between the optional brackets: data[start:end]."""

    data: bytes
    start: int
    end: int


def _body(data: bytes, path: Path) -> _Body:
    start = len(data) - len(data.lstrip(_WS))
    if data.startswith(b"\xef\xbb\xbf", start):
        start += 3
        start += len(data[start:]) - len(data[start:].lstrip(_WS))
    if data[start : start + 1] == b"[":
        start += 1
        start += len(data[start:]) - len(data[start:].lstrip(_WS))
    end = len(data.rstrip(_WS))
    if end > start and data[end - 1 : end] == b"]":
        end -= 1
    end = start + len(data[start:end].rstrip(_WS + b","))
    if end <= start:
        raise TraceFormatError(path_text(path), _where(data, start), "Synapse logger events (none)")
    return _Body(data, start, end)


def _where(data: bytes, at: int) -> str:
    """`line L (byte B)` of offset `at`."""
    line = data.count(b"\n", 0, at) + 1
    return f"line {line} (byte {at})"


def _entries(body: _Body, path: Path) -> tuple[list[_Entry], int, int]:
    """The sound events, and the bytes cut off before the first and after the last."""
    data = body.data
    text = b"".join((b"[", memoryview(data)[body.start : body.end], b"]"))
    try:
        return _ENTRIES.decode(text), 0, 0
    except msgspec.DecodeError:
        pass  # cut off at an end, or corrupt: event by event finds which
    matches = list(_BOUNDARY.finditer(data, body.start, body.end))
    starts = [body.start, *(m.end() - 1 for m in matches)]
    ends = [*(m.start() + 1 for m in matches), body.end]
    last = len(starts) - 1
    entries: list[_Entry] = []
    bad: list[tuple[int, int, int, msgspec.DecodeError]] = []
    for i, (lo, hi) in enumerate(zip(starts, ends, strict=True)):
        try:
            entries.append(_ENTRY.decode(memoryview(data)[lo:hi]))
        except msgspec.DecodeError as error:
            bad.append((i, lo, hi, error))
    # a cut-off first event fails anyhow; a cut-off last one ends early (not any error)
    inner = [b for b in bad if b[0] > 0 and (b[0] < last or "truncated" not in str(b[3]))]
    if inner or not entries:
        _, lo, hi, first = (inner or bad)[0]
        raise _entry_error(data, lo, hi, first, path)
    head = any(b[0] == 0 for b in bad)
    tail = any(b[0] == last > 0 for b in bad)
    cut_head = (ends[0] - starts[0]) if head else 0
    cut_tail = (ends[-1] - starts[-1]) if tail else 0
    return entries, cut_head, cut_tail


def _entry_error(
    data: bytes, lo: int, hi: int, error: msgspec.DecodeError, path: Path
) -> TraceFormatError:
    """The error for data[lo:hi], which should be one event."""
    message = str(error)
    found = _BYTE.search(message)
    at = lo + int(found.group(1)) if found else hi if "truncated" in message else lo
    said = _BYTE.sub("", message).strip()
    if isinstance(error, msgspec.ValidationError):
        expected = f"a Synapse logger event: an object with 'ph' and 'ts' ({said})"
    else:
        expected = f"a JSON object per event ({said})"
    return TraceFormatError(path_text(path), _where(data, at), expected)


# --- entries -> Chrome events -------------------------------------------------------------------


def _paired(entries: list[_Entry]) -> tuple[list[dict[str, Any]], int, int, dict[str, str]]:
    """Chrome-trace event dicts with each thread's `B`/`E` pairs made slices; the counts of
    unmatched begins and ends; the API signatures."""
    events: list[dict[str, Any]] = []
    open_by_lane: dict[tuple[Any, Any], list[tuple[_Entry, int]]] = {}
    unmatched_ends = 0
    signatures: dict[str, str] = {}
    for entry in entries:
        if entry.func and entry.name not in signatures:
            signatures[entry.name] = entry.func
        lane = (entry.pid, entry.tid)
        if entry.ph == "B":
            open_by_lane.setdefault(lane, []).append((entry, len(events)))
            events.append({})  # its place in file order; filled when its E comes
            continue
        if entry.ph == "E":
            stack = open_by_lane.get(lane, [])
            at = _innermost(stack, entry.name)
            if at is None:
                unmatched_ends += 1
                continue
            begin, slot = stack.pop(at)
            args = dict(begin.args)
            if entry.args:
                args["result"] = entry.args
            events[slot] = _event(begin, "X", args, max(entry.ts - begin.ts, 0))
            continue
        events.append(_event(entry, entry.ph, entry.args, entry.dur))
    unmatched_begins = sum(len(stack) for stack in open_by_lane.values())
    return [e for e in events if e], unmatched_begins, unmatched_ends, signatures


def _innermost(stack: list[tuple[_Entry, int]], name: str) -> int | None:
    """Index in `stack` of the innermost open `B` an `E` named `name` closes (any, unnamed)."""
    for i in range(len(stack) - 1, -1, -1):
        if not name or stack[i][0].name == name:
            return i
    return None


def _event(entry: _Entry, ph: str, args: dict[str, Any], dur: float | None) -> dict[str, Any]:
    event: dict[str, Any] = {
        "ph": ph,
        "name": entry.name,
        "pid": entry.pid,
        "tid": entry.tid,
        "ts": entry.ts,
    }
    if entry.cat:
        event["cat"] = entry.cat
    if dur is not None:
        event["dur"] = dur
    if args:
        event["args"] = args
    return event


def _process_names(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    pids = dict.fromkeys(e["pid"] for e in events)
    return [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": PROCESS_NAME}}
        for pid in pids
    ]


# --- entry points -------------------------------------------------------------------------------


def read_synapse_log(path: str | Path) -> Trace:
    """Load one Synapse logger file (plain or gzip, with or without brackets) into a `Trace`.

    Raises:
        TraceFormatError: no sound event, or malformed JSON between sound events.
    """
    from hpuprof.trace.kineto_json import trace_from_events

    path = Path(path)
    stream = BlockStream(path)
    data = b"".join(stream)
    body = _body(data, path)
    entries, cut_head, cut_tail = _entries(body, path)
    events, begins, ends, signatures = _paired(entries)
    if not events:
        raise TraceFormatError(
            path_text(path), None, "Synapse logger events (every B/E event is unpaired)"
        )
    stats = SynapseLogStats(len(entries), begins, ends, cut_head, cut_tail, signatures)
    cut = _cut_text(body, stats, stream.truncation)
    if cut:
        warnings.warn(
            f"{path_text(path)}: Synapse logger excerpt ({cut}); kept {len(entries)} complete "
            "events",
            stacklevel=2,
        )
    trace = trace_from_events(
        [*_process_names(events), *events], {METADATA: stats.to_dict()}, source=str(path)
    )
    return replace(trace, format=FORMAT)


def _cut_text(body: _Body, stats: SynapseLogStats, truncation: str | None) -> str:
    parts = []
    if stats.cut_head:
        parts.append(
            f"an event cut off at the start: sound events begin at byte "
            f"{body.start + stats.cut_head}"
        )
    if stats.cut_tail:
        parts.append(
            f"an event cut off at the end: sound events end at byte {body.end - stats.cut_tail}"
        )
    if truncation:
        parts.append(truncation)
    return "; ".join(parts)


def read_trace(path: Path, options: ReadOptions) -> Trace:
    """The reader of `formats.SYNAPSE_LOG` (`read_synapse_log`)."""
    return read_synapse_log(path)
