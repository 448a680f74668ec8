"""The few lines that say what a recording holds: the analysis summary, or the event counts.

`HPUProfiler.summary()` and the report `hpuprof record` / `hpuprof demo` print at the end use
these. The summary loads the trace and runs the analyses, so it is only ever made on request,
after the run was written; when that is not possible (no analysis package, a trace that does
not load) the event counts the writer kept stand in.
"""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hpuprof.trace.model import Trace


def load_trace(path: Path) -> Trace | None:
    """The written trace at `path`, or None (with a warning) when it does not load."""
    from hpuprof.trace.load import load  # pandas and the loaders: only once a run is written

    try:
        return load(path, cache=False)
    except Exception as error:  # the run is on disk: a failing load must not lose it
        if not isinstance(error, ImportError):
            warnings.warn(
                f"hpuprof: {path} not loaded: {type(error).__name__}: {error}", stacklevel=2
            )
        return None


def analysis_summary(trace: Trace) -> str | None:
    """`hpuprof.analysis.summarize(trace)` when the analysis package provides it.

    As wide as the terminal it is printed on (`COLUMNS`, else 80 when not a terminal): wider
    text would be wrapped again by the terminal, past the renderer's indents.
    """
    try:
        from hpuprof.analysis import summarize  # the analyses: only when a summary is asked
    except ImportError:
        return None
    try:
        return str(summarize(trace, width=shutil.get_terminal_size().columns))
    except Exception as error:  # the run is on disk: a failing analysis must not lose it
        if not isinstance(error, ImportError):
            warnings.warn(
                f"hpuprof: analysis summary failed: {type(error).__name__}: {error}", stacklevel=2
            )
        return None


def format_counts(counts: Mapping[str, int], backend: str) -> str:
    """A few lines of event counts by category."""
    total = sum(counts.values())
    lines = [f"{total} events recorded ({backend} backend)"]
    for cat, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"  {n:>9}  {cat or '(none)'}")
    return "\n".join(lines)


def summary_text(trace: Trace | None, counts: Mapping[str, int], backend: str) -> str:
    """The analysis summary of `trace`, else the event counts."""
    text = analysis_summary(trace) if trace is not None else None
    return text if text is not None else format_counts(counts, backend)
