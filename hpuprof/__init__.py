"""hpuprof: profiling and trace analysis for PyTorch on Intel Gaudi (HPU).

Importing this package is cheap and side-effect free: it never imports torch, dash or the
emulated runtime. Heavy parts load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hpuprof._version import __version__
from hpuprof.errors import HpuprofError, TraceFormatError

if TYPE_CHECKING:
    from hpuprof.trace.model import Trace

__all__ = ["HpuprofError", "TraceFormatError", "__version__", "load"]


def load(path: str | Any, **options: Any) -> Trace:
    """Load a trace file or a directory of rank traces into one columnar `Trace`.

    Args:
        path: a `.json`, `.json.gz`, `.perfetto-trace`/`.pftrace` or `.parquet` file, or a
            directory of per-rank traces (loaded into one Trace with a `rank` column).
        options: passed to the loader (e.g. `cache=False`; `lazy=True` returns a `RankSet`
            of the directory's rank files, each opened on demand, instead of one Trace).
    """
    from hpuprof.trace.load import load as _load

    return _load(path, **options)


def __getattr__(name: str) -> Any:
    # Lazy public names so `import hpuprof` stays light.
    if name == "HPUProfiler":
        from hpuprof.capture.profiler import HPUProfiler

        return HPUProfiler
    if name == "analyze":
        from hpuprof.analysis import analyze

        return analyze
    if name == "Trace":
        from hpuprof.trace.model import Trace

        return Trace
    raise AttributeError(f"module 'hpuprof' has no attribute {name!r}")
