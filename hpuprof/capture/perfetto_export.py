"""The Perfetto protobuf trace of a run, written once recording is over -- never by its stop.

Converting a trace loads it whole (the columnar model) and encodes it again: seconds and
hundreds of MB for a large run. Inside `HPUProfiler.stop()` that work would land in the
training process, in its signal handlers and its atexit hook too. So it is done after:

- `hpuprof record` and `hpuprof demo`, once the script has ended (`record_session.py`: one load
  serves the Perfetto trace and the summary);
- `hpuprof convert RUN_DIR`, for every finished rank of a run (`export_run`);
- `HPUProfiler.export_perfetto()`, when a script asks for it.

Each writes `perfetto/<stem>-rank<R>.perfetto-trace` atomically and then adds it to `run.json`'s
`perfetto` list, which so names only Perfetto traces that exist. A conversion that fails is a
warning (in `run.json`'s `warnings` too), never an error of the run.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hpuprof.capture.run_dir import read_manifest, update_manifest
from hpuprof.errors import HpuprofError, UsageError

if TYPE_CHECKING:
    from hpuprof.trace.model import Trace

TRACE_SUFFIXES = (".pt.trace.json", ".json.gz", ".json")


@dataclass(frozen=True)
class PerfettoExport:
    """What one conversion did.

    Args:
        trace: the run-relative Chrome trace converted.
        perfetto: the run-relative Perfetto trace written, or None when it failed.
        warning: why it failed ("" when it did not).
    """

    trace: str
    perfetto: str | None
    warning: str = ""


def perfetto_name(trace_rel: str) -> str:
    """`traces/x-rank0.pt.trace.json` -> `perfetto/x-rank0.perfetto-trace`."""
    name = Path(trace_rel).name
    stem = next((name[: -len(s)] for s in TRACE_SUFFIXES if name.endswith(s)), name)
    return f"perfetto/{stem}.perfetto-trace"


def export_trace(root: Path, trace_rel: str, trace: Trace | None = None) -> PerfettoExport:
    """Write the Perfetto trace of run `root`'s trace file `trace_rel` and list it in
    `run.json` (a failure is listed under `warnings` and warned about).

    Args:
        root: the run directory.
        trace_rel: the Chrome trace, relative to `root` (as `run.json` names it).
        trace: that trace already loaded, if the caller has it (else it is loaded here).
    """
    root = Path(root)
    target = perfetto_name(trace_rel)
    try:
        from hpuprof.trace.perfetto_write import write_perfetto  # protobuf: only when asked

        if trace is None:
            from hpuprof.trace.load import load

            trace = load(root / trace_rel, cache=False)
        write_perfetto(trace, root / target)
    except (HpuprofError, ImportError, ValueError, OSError) as error:
        text = f"Perfetto trace not written: {error}"
        update_manifest(root, {}, append={"warnings": [text]})
        warnings.warn(f"hpuprof: {text}", stacklevel=2)
        return PerfettoExport(trace_rel, None, text)
    update_manifest(root, {"perfetto": [target]})
    return PerfettoExport(trace_rel, target)


def export_run(root: Path) -> list[PerfettoExport]:
    """The Perfetto trace of every finished rank of run `root` (the streams of ranks still
    running, or killed, are left: `hpuprof convert FILE OUT.perfetto-trace` converts one).

    Raises:
        UsageError: `root` is not a run directory.
    """
    manifest = read_manifest(Path(root))
    if not manifest:
        raise UsageError(f"{root}: not a run directory (no run.json)")
    streaming = set(manifest.get("incomplete") or [])
    finished = [t for t in manifest.get("traces") or [] if t not in streaming]
    return [export_trace(Path(root), rel) for rel in finished]
