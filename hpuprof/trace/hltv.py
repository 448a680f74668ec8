"""Intel Gaudi Profiler `.hltv` files -> `Trace`.

An `.hltv` is a ZIP archive. Intel's `synapse/scripts/slicing_analyzer.py`
(HabanaAI/Intel_Gaudi3_Software) opens one with `zipfile` and reads the member
`views/trace_analyzer.json`, a JSON object whose `analyzer_metadata` is a list of per-node
objects ("MME Origin Node", "MME Expected Compute (usec)", ...); its `trace_analyzer.py` shows
the raw hardware trace inside as `prof-data/bin/*.bin`, decoded only by Intel's closed
`synprof_parser`. So this reader takes what is open: the per-node rows of
`analyzer_metadata`, whose keys are taken to be the "Analyzed Nodes" table's headers ("Unit",
"Node Name", "Start time of node", "End time of node" in µs, ...; no public `.hltv` exists to
check more against). Each timed row becomes one slice on the lane of its unit ("MME", "TPC",
"DMA") of `/device:HPU:0`, with the whole row as its args, and a span on the "Analyzed Nodes"
lane (`gaudi_node_spans`), so the `nodes` report has one row per node. A hardware-profiler CSV
inside the archive (a `*.csv` member with that header) is read in full instead of the rows'
unit lanes, the rows giving its node spans.

Bad input: one `TraceFormatError` naming the archive member and what was expected.
"""

from __future__ import annotations

import json
import tempfile
import zipfile
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from hpuprof.errors import TraceFormatError
from hpuprof.path_text import path_text
from hpuprof.trace import gaudi_node_spans
from hpuprof.trace.formats import ReadOptions
from hpuprof.trace.model import Trace
from hpuprof.trace.schema import DeviceTimeSource

VIEW: Final = "views/trace_analyzer.json"
"""The member Intel's slicing_analyzer.py reads."""
ROWS_KEY: Final = "analyzer_metadata"
CONFIG: Final = "prof-data/config/prof_config.json"
FORMAT_NAME: Final = "gaudi-hltv"
_HW_CSV_HEADER: Final = b"Name,"
_UNREADABLE: Final = (
    zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, OSError, EOFError, ValueError,
    NotImplementedError, RuntimeError,  # an unknown compression method, an encrypted member
)  # fmt: skip


def read_trace(path: Path, options: ReadOptions) -> Trace:
    """The reader of `formats.GAUDI_HLTV` (`read_hltv`)."""
    return read_hltv(path)


def read_hltv(path: str | Path) -> Trace:
    """Load an `.hltv` archive (see the module docstring).

    Raises:
        TraceFormatError: not a ZIP, no `views/trace_analyzer.json`, or rows not as expected.
    """
    path = Path(path)
    source = path_text(path)
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            if VIEW not in names:
                raise TraceFormatError(source, VIEW, "the profiler's trace-analyzer view (absent)")
            view = archive.read(VIEW)
            member, hw_csv = _hardware_csv(archive, names)
            device_time = _device_time(archive, names)
    except _UNREADABLE as error:
        raise TraceFormatError(source, 0, f"an .hltv ZIP archive ({error})") from None
    rows = _rows(view, source)
    metadata = {"gaudi_hltv": {"members": names}}
    if hw_csv is not None:
        from hpuprof.trace.hw_profiler_csv import read_hw_profiler_csv

        with tempfile.TemporaryDirectory(prefix="hpuprof-hltv-") as tmp:
            inner = Path(tmp) / "hw.csv"
            inner.write_bytes(hw_csv)
            (Path(tmp) / f"hw{gaudi_node_spans.ANALYZED_NODES_SUFFIX}").write_text(_rows_csv(rows))
            try:
                trace = read_hw_profiler_csv(inner)
            except TraceFormatError as error:
                raise TraceFormatError(
                    source, f"{member} {error.position}", error.expected
                ) from None
        return replace(trace, format=FORMAT_NAME, sources=(source,), device_time=device_time)
    from hpuprof.trace.kineto_json import trace_from_events

    spans = _spans(rows, source)
    events = _unit_slices(rows, spans) + spans
    trace = trace_from_events(events, metadata, source=source)
    return replace(trace, format=FORMAT_NAME, device_time=device_time)


def _device_time(archive: zipfile.ZipFile, names: list[str]) -> DeviceTimeSource:
    """ "modeled" for an archive hpusim wrote (its `prof_config.json` says so), else
    "measured"."""
    if CONFIG not in names:
        return "measured"
    try:
        config = json.loads(archive.read(CONFIG))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return "measured"
    generator = config.get("generator") if isinstance(config, dict) else None
    return (
        "modeled" if isinstance(generator, str) and generator.startswith("hpusim") else "measured"
    )


def _hardware_csv(archive: zipfile.ZipFile, names: list[str]) -> tuple[str, bytes | None]:
    """The first hardware-profiler CSV member: its name and bytes (None when there is none)."""
    for name in names:
        if name.lower().endswith(".csv") and not name.endswith(
            gaudi_node_spans.ANALYZED_NODES_SUFFIX
        ):
            with archive.open(name) as member:
                if member.read(len(_HW_CSV_HEADER)) == _HW_CSV_HEADER:
                    return name, archive.read(name)
    return "", None


def _rows(view: bytes, source: str) -> list[dict[str, Any]]:
    try:
        document = json.loads(view)
    except json.JSONDecodeError as error:
        raise TraceFormatError(source, f"{VIEW} byte {error.pos}", f"JSON ({error.msg})") from None
    except (UnicodeDecodeError, RecursionError) as error:
        raise TraceFormatError(source, VIEW, f"UTF-8 JSON ({error})") from None
    rows = document.get(ROWS_KEY) if isinstance(document, dict) else None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise TraceFormatError(source, VIEW, f"an object with '{ROWS_KEY}': a list of node objects")
    return rows


def _spans(rows: list[dict[str, Any]], source: str) -> list[dict[str, Any]]:
    try:
        return gaudi_node_spans.span_events(rows, 0, source)
    except TraceFormatError as error:
        raise TraceFormatError(source, f"{VIEW} {error.position}", error.expected) from None


def _unit_slices(rows: list[dict[str, Any]], spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One slice per timed row (one with a span) on its unit's lane."""
    by_name = {s["name"]: s for s in spans if s["ph"] == "X"}
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": 0, "tid": "", "args": {"name": "/device:HPU:0"}}
    ]
    units: list[str] = []
    for row in rows:
        span = by_name.get(str(row.get("Node Name")))
        if span is None:
            continue
        unit = str(row.get("Unit") or "OTHER")
        if unit not in units:
            units.append(unit)
            events.append(gaudi_node_spans.lane_name(0, unit, unit))
        args = {key: str(value) for key, value in row.items()}
        events.append({**span, "cat": "Kernel", "tid": unit, "args": args})
    return events


def _rows_csv(rows: list[dict[str, Any]]) -> str:
    import csv
    import io

    keys = list(dict.fromkeys(key for row in rows for key in row))
    text = io.StringIO()
    writer = csv.DictWriter(text, keys)
    writer.writeheader()
    writer.writerows(rows)
    return text.getvalue()
