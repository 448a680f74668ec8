"""The details of one timeline slice as (label, text) rows: words, units, no placeholders.

Fields the trace does not have for this event (a correlation of -1, an empty engine, a step
outside every step) are left out rather than shown as `-1` or `""`; times read as durations
since the first event, never as epoch nanoseconds; the event's own args follow, one per row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from hpudash import fmt
from hpuprof.trace.schema import NO_ID

if TYPE_CHECKING:
    from hpuprof.trace.model import Trace

TEXT_FIELDS: tuple[tuple[str, str], ...] = (
    ("cat", "Category"),
    ("kind", "Kind"),
    ("engine", "Engine"),
    ("mode", "Execution mode"),
    ("module", "Module"),
    ("phase", "Phase"),
    ("graph_id", "Graph"),
    ("hpu_event", "HPU event"),
    ("flush_reason", "Flush reason"),
    ("input_dims", "Input shapes"),
    ("input_types", "Input types"),
)
ID_FIELDS: tuple[tuple[str, str], ...] = (
    ("rank", "Rank"),
    ("step", "Step"),
    ("device", "Device"),
    ("stream", "Stream"),
    ("correlation", "Correlation id"),
    ("external_id", "External id"),
)
MAX_ARGS = 60


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value, default=str).decode()


def event_rows(trace: Trace, row: int, t0_ns: int) -> list[tuple[str, str]]:
    """(label, value) rows describing event `row` of `trace` (times relative to `t0_ns`)."""
    ev = trace.events
    if not isinstance(row, int) or not 0 <= row < len(ev):
        return []
    rec = ev.iloc[row]
    out: list[tuple[str, str]] = [("Name", str(rec["name"]))]
    out.append(("Start", f"{fmt.duration(int(rec['ts_ns']) - t0_ns)} after the first event"))
    if str(rec["ph"]) == "X":
        out.append(("Duration", fmt.duration(int(rec["dur_ns"]))))
    out.append(("Process", str(rec["pid"])))
    out.append(("Thread / stream", str(rec["tid"])))
    for col, label in ID_FIELDS:
        if col in ev.columns and int(rec[col]) != NO_ID:
            out.append((label, str(int(rec[col]))))
    for col, label in TEXT_FIELDS:
        if col in ev.columns:
            value = str(rec[col])
            if value and value != "nan":
                out.append((label, value))
    if bool(rec.get("fallback", False)):
        out.append(("CPU fallback", "yes: this op ran on the host"))
    out.append(("Runs on", "device" if bool(rec["is_device"]) else "host"))
    raw = rec["args"] if "args" in ev.columns else b""
    if isinstance(raw, (bytes, bytearray, memoryview)) and len(raw):
        try:
            args = orjson.loads(bytes(raw))
        except orjson.JSONDecodeError:
            args = {"args": bytes(raw).decode("utf-8", "replace")}
        if isinstance(args, dict):
            items = list(args.items())
            for key, value in items[:MAX_ARGS]:
                out.append((f"arg: {key}", _text(value)))
            if len(items) > MAX_ARGS:
                out.append(("arg: ...", f"{len(items) - MAX_ARGS} more"))
    return out
