"""`HABANA_PROFILE=1`: the emulated run writes what the Intel Gaudi Profiler would, an `.hltv` in
the working directory with the whole process profiled.

On a Gaudi machine `HABANA_PROFILE=1` makes the Synapse profiler record the run and write an
`.hltv` (a ZIP) when the process ends. Here, from `hpusim.enable()` on, the sink records, and at
exit the modeled device ops are written as the archive hpuprof's `.hltv` reader loads (the layout
Intel's `synapse/scripts/slicing_analyzer.py` reads, see hpuprof/trace/hltv.py):
- `views/trace_analyzer.json`: `analyzer_metadata`, one row per device op execution with the
  "Analyzed Nodes" keys (Unit, Node Name with Intel's ` iter N` for repeats, Op Type, Start /
  End time of node and Duration in µs);
- `prof-data/hw_prof_accel0.csv`: the ops as hardware-profiler rows, a BEGIN and an END on the
  engine's lane (`[HD0] MME`, `[HD0] TPC 0`, `[D0] DMA 0`, `[D0] NIC 0`), the recipe as
  `Recipe ID`;
- `prof-data/config/prof_config.json`: who wrote it.
Intel's binary `prof-data/bin/*.bin` is not written (only Intel's parser reads it). A profiler
that drains the sink meanwhile (hpuprof's `HPUProfiler`) takes its events from this file.
Writing never ends the program: a failure is one line on stderr.
"""

from __future__ import annotations

import atexit
import csv
import io
import json
import os
import sys
import time
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any, Final

from hpusim.sink import ENGINES, KIND_DEVICE, EventBatch, Sink

ENV: Final = "HABANA_PROFILE"
HEADER: Final = (
    "Name", "Trace Source", "Engine", "Event type", "Timestamp[usec]", "Recipe ID", "Recipe name",
    "Device", "Operation", "HW Event description",
)  # fmt: skip
LANES: Final = {"MME": "[HD0] MME", "TPC": "[HD0] TPC 0", "DMA": "[D0] DMA 0", "NIC": "[D0] NIC 0"}
_installed: list[Sink] = []


def requested() -> bool:
    """Whether this process asked for the profiler's file (`HABANA_PROFILE=1`)."""
    return os.environ.get(ENV, "") == "1"


def install(sink: Sink) -> None:
    """When requested: record from now on and write the `.hltv` at exit (once per process)."""
    if not requested():
        return
    sink.recording = True
    if not _installed:
        atexit.register(_write_at_exit)
    _installed[:] = [sink]


def _write_at_exit() -> None:
    try:
        batch = _installed[0].drain()
        stamp = time.strftime("%Y%m%d_%H%M%S")
        path = Path.cwd() / f"hpusim_{os.getpid()}_{stamp}.hltv"
        write_hltv(batch, path)
        print(f"hpusim: wrote {path}", file=sys.stderr)
    except Exception as error:  # a profiler never ends the program it profiles
        print(f"hpusim: no .hltv written ({type(error).__name__}: {error})", file=sys.stderr)


def _us(ns: int) -> str:
    """Epoch-ns as µs text with the profiler's 6 decimals."""
    return f"{ns // 1000}.{ns % 1000:03d}000"


def write_hltv(batch: EventBatch, path: Path) -> None:
    """Write the device ops of `batch` to `path` as an `.hltv` archive."""
    rows: list[tuple[int, int, list[str]]] = []
    nodes: list[dict[str, Any]] = []
    seen: Counter[str] = Counter()
    device = [i for i, kind in enumerate(batch.kind) if kind == KIND_DEVICE]
    device.sort(key=lambda i: batch.ts_ns[i])
    # the device clock from its first op, as a Gaudi's counts from boot: epoch µs with ns
    # digits are past float64's 16 digits
    zero = batch.ts_ns[device[0]] if device else 0
    for order, i in enumerate(device):
        unit = ENGINES[batch.engine[i]] or "OTHER"
        name = batch.string(batch.name[i])
        start = batch.ts_ns[i] - zero
        end = start + batch.dur_ns[i]
        graph = str(batch.graph[i]) if batch.graph[i] >= 0 else ""
        lane = LANES.get(unit, f"[D0] {unit} 0")
        common = [graph, f"recipe_{graph}" if graph else "", "accel0", name]
        # at one time, an op's END before a later op's BEGIN, and its own BEGIN before its END
        rows.append((start, 2 * order, [name, "HW", lane, "BEGIN", _us(start), *common, "START"]))
        rows.append((end, 2 * order + 1, [name, "HW", lane, "END", _us(end), *common, "END"]))
        seen[name] += 1
        shown = name if seen[name] == 1 else f"{name} iter {seen[name]}"
        nodes.append(
            {"Unit": unit, "Node Name": shown, "Op Type": name, "Start time of node": _us(start),
             "End time of node": _us(end), "Duration (us)": f"{(end - start) / 1000:.6f}"}
        )  # fmt: skip
    rows.sort(key=lambda row: (row[0], row[1]))
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(HEADER)
    writer.writerows(row for _, _, row in rows)
    config = {"generator": "hpusim (emulated Gaudi)", "pid": batch.pid, "epoch_ns_at_zero": zero}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("views/trace_analyzer.json", json.dumps({"analyzer_metadata": nodes}))
        archive.writestr("prof-data/hw_prof_accel0.csv", text.getvalue())
        archive.writestr("prof-data/config/prof_config.json", json.dumps(config))
