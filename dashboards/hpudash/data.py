"""Cached loading of traces, reports and derived tables, keyed by path + mtime (LRU).

Nothing is loaded at import time or when the app is built: the first request for a run loads
it (through `hpuprof.load`, which keeps its own Parquet cache), later requests reuse it until
the files change. Callbacks only ever ask this store; it is thread-safe (Flask serves requests
on threads), and each run is computed once even when several requests ask at the same time.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from hpudash import catalog
from hpudash.figcache import FiguresCache
from hpuprof.errors import HpuprofError

if TYPE_CHECKING:
    from hpuprof.trace.model import Trace

T = TypeVar("T")
Loader = Callable[[Path], "Trace"]
Analyzer = Callable[["Trace"], "Analysis"]
log = logging.getLogger("hpudash")


class UnknownRunError(HpuprofError):
    """A run key that names no run or trace under the dashboard's directory."""


def default_loader(path: Path) -> Trace:
    import hpuprof

    return hpuprof.load(path)


@dataclass(frozen=True)
class Analysis:
    """A run's analysis: the `Report` (for renderers), its dict (for pages), section errors.

    Args:
        report: the `hpuprof.analysis.Report`, or None when nothing could be analysed.
        data: `report.to_dict()` (the JSON contract), `{}` when there is no report.
        errors: report section -> error message for sections whose analysis failed; pages
            show them (a failing section never hides the others).
    """

    report: Any
    data: dict[str, Any]
    errors: dict[str, str] = field(default_factory=dict)


def default_analyzer(trace: Trace) -> Analysis:
    """`hpuprof.analysis.analyze(trace)`; sections that fail are reported, the rest kept."""
    from hpuprof.analysis import REPORT_NAMES, analyze

    try:
        report = analyze(trace)
        return Analysis(report, report.to_dict())
    except Exception:
        log.exception("analysis of %s failed; retrying section by section", trace.sources)
    errors: dict[str, str] = {}
    ok: list[str] = []
    for name in REPORT_NAMES:
        try:
            analyze(trace, reports=[name])
            ok.append(name)
        except Exception as error:
            errors[name] = f"{type(error).__name__}: {error}"
    partial = analyze(trace, reports=ok) if ok else None
    return Analysis(partial, partial.to_dict() if partial is not None else {}, errors)


class DataStore:
    """Loads and caches what the pages show, per entry version (key, mtime, size).

    Args:
        root: the directory the dashboard serves.
        loader: path -> Trace (default `hpuprof.load`).
        analyzer: Trace -> Analysis (default `default_analyzer`).
        capacity: how many runs stay in memory (least recently used are dropped).
        figures_cache: where key figures persist (default: a sidecar under `root`).
    """

    def __init__(
        self,
        root: Path,
        *,
        loader: Loader | None = None,
        analyzer: Analyzer | None = None,
        capacity: int = 4,
        figures_cache: FiguresCache | None = None,
    ) -> None:
        self.root = Path(root).resolve()
        self.figures = figures_cache if figures_cache is not None else FiguresCache(self.root)
        self._loader = loader or default_loader
        self._analyzer = analyzer or default_analyzer
        self._capacity = capacity
        self._lock = threading.Lock()
        self._runs: OrderedDict[tuple[str, int, int], dict[str, Any]] = OrderedDict()
        self._key_locks: dict[tuple[str, int, int], Any] = {}

    def entries(self) -> list[catalog.Entry]:
        """A fresh scan of the root (new runs appear without a restart)."""
        return catalog.scan(self.root)

    def entry(self, key: str) -> catalog.Entry:
        """The entry named `key`; raises UnknownRunError for anything else."""
        found = catalog.find(self.root, key) if key else None
        if found is None:
            raise UnknownRunError(f"no run or trace named {key!r} under {self.root}")
        return found

    def get(self, key: str, what: str, fn: Callable[[catalog.Entry], T]) -> T:
        """`fn(entry)` for the current version of `key`, computed once and cached (LRU)."""
        entry = self.entry(key)
        version = (entry.key, entry.mtime_ns, entry.size)
        with self._lock:
            slot = self._runs.get(version)
            if slot is not None:
                self._runs.move_to_end(version)
                if what in slot:
                    return slot[what]
            key_lock = self._key_locks.setdefault(version, threading.RLock())
        with key_lock:
            with self._lock:
                slot = self._runs.setdefault(version, {})
                if what in slot:
                    return slot[what]
            value = fn(entry)
            with self._lock:
                self._runs.setdefault(version, {})[what] = value
                self._runs.move_to_end(version)
                while len(self._runs) > self._capacity:
                    old, _ = self._runs.popitem(last=False)
                    self._key_locks.pop(old, None)
        return value

    def cached_key_figures(self, entry: catalog.Entry) -> dict[str, Any] | None:
        """The key figures of `entry` if already known (memory or sidecar); never computes."""
        return self.figures.get(entry)

    def key_figures(self, key: str, entry: catalog.Entry | None = None) -> dict[str, Any]:
        """The Runs page's figures of `key` (`figures.key_figures`), computed once per version
        and kept in the sidecar so a restarted dashboard does not analyse again."""
        entry = entry or self.entry(key)
        got = self.figures.get(entry)
        if got is None:
            from hpudash.figures import key_figures

            got = key_figures(self.report(key), self.trace(key))
            self.figures.put(entry, got)
        return got

    def trace(self, key: str) -> Trace:
        return self.get(key, "trace", self._load_entry)

    def _load_entry(self, entry: catalog.Entry) -> Trace:
        """The entry's trace files, loaded one by one and combined (a run's ranks)."""
        traces = [self._loader(p) for p in entry.traces]
        if len(traces) == 1:
            return traces[0]
        from hpuprof.trace.combine import combine

        return combine(traces)

    def analysis(self, key: str) -> Analysis:
        return self.get(key, "analysis", lambda e: self._analyzer(self.trace(key)))

    def report(self, key: str) -> dict[str, Any]:
        """The report dict of `key` (`Report.to_dict()` keys)."""
        return self.analysis(key).data

    def derived(self, key: str, what: str, fn: Callable[[Trace], T]) -> T:
        """`fn(trace)` cached with the run (op table, timeline index, ...)."""
        return self.get(key, what, lambda e: fn(self.trace(key)))
