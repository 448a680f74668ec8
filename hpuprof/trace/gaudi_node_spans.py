"""Intel's "Analyzed Nodes" records (the profiler's per-node table) as node-span events.

The Intel Gaudi profiler writes, beside a hardware trace, one row per graph node and iteration
(`<trace>_analyzed_nodes.csv` with `--invoc csv`; `analyzer_metadata` in an `.hltv`'s
`views/trace_analyzer.json`). Those rows are the only place that says where one iteration of a
node ends and the next begins (`g_1_conv_0_tpc_packing`, `... iter 2`, `... iter 3`): the
hardware events carry the node's name alone. The readers put each row on the device's
"Analyzed Nodes" lane as a device annotation, so the timeline shows them and the `nodes`
report groups engine activations by them; every figure of that report is computed from the
hardware events, not copied from the row.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from hpuprof.errors import TraceFormatError

NODES_LANE: Final = "Analyzed Nodes"
"""The `tid` (and thread name) of the node-span lane on a hardware trace's device process."""
NODE_SPAN_CATEGORY: Final = "gpu_user_annotation"
"""Their `cat`: a device annotation (it is no engine's busy time)."""
NODE_COLUMNS: Final = ("Unit", "Node Name", "Start time of node", "End time of node")
"""The columns a node row must have."""
KEPT_COLUMNS: Final = ("Unit", "Unique node id", "Op Type")
"""The columns kept as the span's args."""
ANALYZED_NODES_SUFFIX: Final = "_analyzed_nodes.csv"


def sibling_table(trace_csv: Path) -> Path | None:
    """Intel's analyzed-nodes table written beside a hardware-trace CSV, or None."""
    candidate = trace_csv.with_name(trace_csv.stem + ANALYZED_NODES_SUFFIX)
    return candidate if candidate.is_file() else None


def read_table(path: Path) -> list[dict[str, str]]:
    """The rows of an analyzed-nodes CSV table.

    Raises:
        TraceFormatError: not readable, or without the columns of `NODE_COLUMNS`.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise TraceFormatError(str(path), None, f"a readable UTF-8 CSV table ({error})") from None
    rows = list(csv.DictReader(io.StringIO(text)))
    return rows


def span_events(rows: Iterable[Mapping[str, Any]], pid: int, source: str) -> list[dict[str, Any]]:
    """Chrome-trace events of the node rows: one slice each on `NODES_LANE` of process `pid`,
    plus the lane's name (none when there are no rows).

    Raises:
        TraceFormatError: a row without the columns of `NODE_COLUMNS` or with times that are
            not numbers (the position is the row, 1 = the first after the header).
    """
    events: list[dict[str, Any]] = []
    for index, row in enumerate(rows, start=1):
        missing = [c for c in NODE_COLUMNS if c not in row]
        if missing:
            raise TraceFormatError(source, f"node row {index}", f"the columns {', '.join(missing)}")
        try:
            start = float(row["Start time of node"])
            end = float(row["End time of node"])
        except (TypeError, ValueError):
            raise TraceFormatError(
                source, f"node row {index}", "start and end times of the node in µs"
            ) from None
        if not (start == start and end == end and end >= start):  # NaN or reversed
            continue  # a node the profiler could not time: no span to show
        args = {c: str(row[c]) for c in KEPT_COLUMNS if c in row}
        events.append(
            {
                "ph": "X",
                "cat": NODE_SPAN_CATEGORY,
                "name": str(row["Node Name"]),
                "pid": pid,
                "tid": NODES_LANE,
                "ts": start,
                "dur": end - start,
                "args": args,
            }
        )
    if events:
        events.append(lane_name(pid, NODES_LANE, NODES_LANE))
    return events


def lane_name(pid: int, tid: int | str, name: str) -> dict[str, Any]:
    """The Chrome-trace metadata event that names lane (pid, tid)."""
    return {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}
