"""The store every page asks: entries of the served directory and their analysed data.

Nothing is loaded at import time or when the app is built: the first request for a run loads
it (through `hpuprof.load`, which keeps its own cache) and analyses it; the results are kept
in memory within a byte budget and on disk under the user's cache directory
(`hpudash.diskcache`), so later requests, other worker processes and a restarted dashboard
read them back instead of analysing again. Thread-safe (the server answers on threads), and
each run version is computed once even when several requests ask at the same time.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from hpudash.catalog import SCAN_TTL_S, Catalog, Entry
from hpudash.diskcache import (
    DEFAULT_DISK_BYTES,
    DEFAULT_MEMORY_BYTES,
    DiskCache,
    MemoryCache,
    cached,
)
from hpuprof.errors import HpuprofError

if TYPE_CHECKING:
    from hpudash.timeline_index import TimelineIndex
    from hpuprof.trace.model import Trace

T = TypeVar("T")
Loader = Callable[[Path], "Trace"]
Analyzer = Callable[["Trace"], "Analysis"]
log = logging.getLogger("hpudash")


class UnknownRunError(HpuprofError):
    """A run key that names no run or trace under the dashboard's directory."""


class RefusedRunError(HpuprofError):
    """A run directory whose manifest `hpuprof analyze` refuses (`Entry.refused` says why)."""


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
    """Loads, analyses and caches what the pages show, per entry version.

    Args:
        root: the directory the dashboard serves.
        loader: path -> Trace (default `hpuprof.load`).
        analyzer: Trace -> Analysis (default `default_analyzer`).
        memory_bytes: budget of the in-memory cache (traces, reports, timeline indexes).
        disk: the disk cache (default: a `DiskCache` of `root` under the user's cache dir);
            `False` keeps nothing on disk.
        scan_ttl_s: how long a scan of the root is reused.
    """

    def __init__(
        self,
        root: Path,
        *,
        loader: Loader | None = None,
        analyzer: Analyzer | None = None,
        memory_bytes: int = DEFAULT_MEMORY_BYTES,
        disk: DiskCache | bool = True,
        disk_bytes: int = DEFAULT_DISK_BYTES,
        scan_ttl_s: float = SCAN_TTL_S,
    ) -> None:
        self.root = Path(root).resolve()
        self.catalog = Catalog(self.root, ttl_s=scan_ttl_s)
        self.memory = MemoryCache(memory_bytes)
        if isinstance(disk, DiskCache):
            self.disk: DiskCache | None = disk
        else:
            self.disk = DiskCache(self.root, max_bytes=disk_bytes) if disk else None
        self._loader = loader or default_loader
        self._analyzer = analyzer or default_analyzer
        self._lock = threading.Lock()
        self._key_locks: dict[str, threading.RLock] = {}
        self._failures: dict[tuple[str, int, int], str] = {}

    # --- entries -----------------------------------------------------------------------------

    def entries(self) -> list[Entry]:
        """The runs and traces under the root (rescanned at most every `scan_ttl_s`)."""
        return self.catalog.entries()

    def entry(self, key: Any) -> Entry:
        """The entry named `key`; raises UnknownRunError for anything else."""
        found = self.catalog.find(key) if isinstance(key, str) else None
        if found is None:
            shown = key if isinstance(key, str) and len(key) < 200 else "(that name)"
            raise UnknownRunError(f"No run or trace named {shown!r} in this dashboard.")
        return found

    def _entry_of(self, key: str | Entry) -> Entry:
        return key if isinstance(key, Entry) else self.entry(key)

    # --- caching -------------------------------------------------------------------------------

    def _key_lock(self, entry: Entry) -> threading.RLock:
        with self._lock:
            lock = self._key_locks.get(entry.key)
            if lock is None:
                lock = self._key_locks[entry.key] = threading.RLock()
            return lock

    def _once(
        self,
        entry: Entry,
        what: str,
        compute: Callable[[], T],
        load: Callable[[], T | None] | None = None,
        save: Callable[[T], None] | None = None,
    ) -> T:
        """The cached `what` of `entry` (memory, then disk), computed once when missing."""
        key = (entry.version, what)
        got = self.memory.get(key)
        if got is not None:
            return got
        with self._key_lock(entry):
            return cached(self.memory, key, compute, load=load, save=save)

    def failure(self, entry: Entry) -> str | None:
        """Why this version of `entry` could not be read, if it could not (memory only)."""
        with self._lock:
            return self._failures.get(entry.version)

    def fail(self, entry: Entry, message: str) -> None:
        """Remember that `entry`'s current version failed, so it is not retried every tick."""
        with self._lock:
            self._failures[entry.version] = message

    # --- what pages ask for ----------------------------------------------------------------------

    def trace(self, key: str | Entry) -> Trace:
        entry = self._entry_of(key)
        return self._once(entry, "trace", lambda: self._load_entry(entry))

    def _load_entry(self, entry: Entry) -> Trace:
        """The entry's trace files, loaded one by one and combined (a run's ranks)."""
        if entry.refused:
            raise RefusedRunError(entry.refused)
        traces = [self._loader(p) for p in entry.traces]
        if len(traces) == 1:
            return traces[0]
        from hpuprof.trace.combine import combine

        return combine(traces)

    def analysis(self, key: str | Entry) -> Analysis:
        """The run's `Analysis` (with the `Report` object, for renderers)."""
        entry = self._entry_of(key)
        return self._once(entry, "analysis", lambda: self._analyzer(self.trace(entry)))

    def _view_doc(
        self, entry: Entry, name: str, compute: Callable[[], dict[str, Any]]
    ) -> dict[str, Any]:
        """A view document (`reportview.view_doc`) of `entry` kept as `name`: in memory, and
        on disk where the store has a disk cache (dropped when its format version changed)."""
        from hpudash.reportview import VIEW_VERSION

        disk = self.disk
        if disk is None:
            return self._once(entry, name, compute)

        def load() -> dict[str, Any] | None:
            got = disk.read_json(entry, name)
            return got if isinstance(got, dict) and got.get("version") == VIEW_VERSION else None

        return self._once(
            entry, name, compute, load=load, save=lambda v: disk.write_json(entry, name, v)
        )

    def view(self, key: str | Entry) -> dict[str, Any]:
        """The run's report as pages show it (`reportview.view_doc`: the report dict, its
        tables, findings and failed sections), from disk when analysed before."""
        from hpudash.reportview import view_doc

        entry = self._entry_of(key)

        def compute() -> dict[str, Any]:
            a = self.analysis(entry)
            return view_doc(a.report, a.errors)

        return self._view_doc(entry, "view", compute)

    def ranks_view(self, key: str | Entry) -> dict[str, Any]:
        """The Ranks page's view: the `ranks` report merged from per-rank summaries, each rank
        file loaded and analysed alone, one after another (`hpuprof.distributed.runner`), so a
        run of 64 ranks opens without holding 64 ranks of events. The run's whole view instead
        when it is known already, or when the entry is one file."""
        from hpudash.reportview import view_doc

        entry = self._entry_of(key)
        if len(entry.traces) < 2 or self.memory.get((entry.version, "view")) is not None:
            return self.view(entry)

        def compute() -> dict[str, Any]:
            from hpuprof.distributed.runner import analyze_files

            if entry.refused:
                raise RefusedRunError(entry.refused)
            report, _ = analyze_files(entry.traces, ["ranks"], workers=1)
            return view_doc(report)

        return self._view_doc(entry, "ranks-view", compute)

    def nodes_view(self, key: str | Entry) -> dict[str, Any]:
        """The Nodes page's view: the `nodes` report (Intel's "Analyzed Nodes" per graph
        node, `hpuprof analyze --report nodes`), analysed the first time it is asked for (it
        is not among the reports every run gets) and kept like the run's view."""
        from hpudash.reportview import view_doc

        entry = self._entry_of(key)

        def compute() -> dict[str, Any]:
            from hpuprof.analysis import analyze

            return view_doc(analyze(self.trace(entry), reports=["nodes"]))

        return self._view_doc(entry, "nodes-view", compute)

    def report(self, key: str | Entry) -> dict[str, Any]:
        """The report dict of `key` (`Report.to_dict()`: the JSON of `hpuprof analyze`)."""
        data = self.view(key).get("data")
        return data if isinstance(data, dict) else {}

    def comparison(self, a: str | Entry, b: str | Entry) -> dict[str, Any]:
        """The view of run B against run A (`hpuprof.analysis.compare`), kept like a report."""
        from hpudash.reportview import view_doc
        from hpuprof.analysis import compare

        ea, eb = self._entry_of(a), self._entry_of(b)
        name = "compare-" + hashlib.sha256(repr(eb.version).encode()).hexdigest()[:16]
        return self._view_doc(ea, name, lambda: view_doc(compare(self.trace(ea), self.trace(eb))))

    def cached_key_figures(self, entry: Entry) -> dict[str, Any] | None:
        """The key figures of `entry` if already known (memory or disk); never computes."""
        got = self.memory.get((entry.version, "figures"))
        if got is None and self.disk is not None:
            got = self.disk.read_json(entry, "figures")
            if got is not None:
                self.memory.put((entry.version, "figures"), got)
        return got if isinstance(got, dict) else None

    def key_figures(self, key: str | Entry) -> dict[str, Any]:
        """The run's key figures (`hpuprof.analysis.key_figures`, the report's meta), a dict."""
        entry = self._entry_of(key)
        disk = self.disk

        def compute() -> dict[str, Any]:
            figs = (self.report(entry).get("meta") or {}).get("key_figures")
            return dict(figs) if isinstance(figs, dict) else {}

        return self._once(
            entry,
            "figures",
            compute,
            load=(lambda: disk.read_json(entry, "figures")) if disk else None,
            save=(lambda v: disk.write_json(entry, "figures", v)) if disk else None,
        )

    def timeline(self, key: str | Entry) -> TimelineIndex:
        """The run's timeline index (kept on disk as arrays: a restart does not rebuild it)."""
        from hpudash.timeline_index import TimelineIndex, build_index

        entry = self._entry_of(key)
        disk = self.disk

        def load() -> TimelineIndex | None:
            arrays = disk.read_arrays(entry, "timeline") if disk else None
            return TimelineIndex.from_arrays(arrays) if arrays is not None else None

        return self._once(
            entry,
            "timeline",
            lambda: build_index(self.trace(entry)),
            load=load if disk else None,
            save=(lambda v: disk.write_arrays(entry, "timeline", v.to_arrays())) if disk else None,
        )

    def derived(self, key: str | Entry, what: str, fn: Callable[[Trace], T]) -> T:
        """`fn(trace)` cached in memory with the run."""
        entry = self._entry_of(key)
        return self._once(entry, what, lambda: fn(self.trace(entry)))
