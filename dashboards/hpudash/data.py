"""Cached loading of traces, reports and derived tables, keyed by path + mtime (LRU).

Nothing is loaded at import time or when the app is built: the first request for a run loads
it (through `hpuprof.load`, which keeps its own Parquet cache), later requests reuse it until
the files change. Callbacks only ever ask this store; it is thread-safe (Flask serves requests
on threads), and each run is computed once even when several requests ask at the same time.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from hpudash import catalog
from hpuprof.errors import HpuprofError

if TYPE_CHECKING:
    from hpuprof.trace.model import Trace

T = TypeVar("T")
Loader = Callable[[Path], "Trace"]
Analyzer = Callable[["Trace"], dict[str, Any]]


class UnknownRunError(HpuprofError):
    """A run key that names no run or trace under the dashboard's directory."""


def default_loader(path: Path) -> Trace:
    import hpuprof

    return hpuprof.load(path)


def default_analyzer(trace: Trace) -> dict[str, Any]:
    """`hpuprof.analysis.analyze(trace).to_dict()`; `{}` while the analysis is unavailable."""
    try:
        from hpuprof.analysis import analyze
    except ImportError:
        return {}
    result: dict[str, Any] = analyze(trace).to_dict()
    return result


class DataStore:
    """Loads and caches what the pages show, per entry version (key, mtime, size).

    Args:
        root: the directory the dashboard serves.
        loader: path -> Trace (default `hpuprof.load`).
        analyzer: Trace -> report dict (default `hpuprof.analysis.analyze(...).to_dict()`).
        capacity: how many runs stay in memory (least recently used are dropped).
    """

    def __init__(
        self,
        root: Path,
        *,
        loader: Loader | None = None,
        analyzer: Analyzer | None = None,
        capacity: int = 4,
    ) -> None:
        self.root = Path(root).resolve()
        self._loader = loader or default_loader
        self._analyzer = analyzer or default_analyzer
        self._capacity = capacity
        self._lock = threading.Lock()
        self._runs: OrderedDict[tuple[str, int, int], dict[str, Any]] = OrderedDict()
        self._key_locks: dict[tuple[str, int, int], Any] = {}
        self._small: dict[tuple[str, int, int, str], Any] = {}

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

    def small(self, key: str, what: str, fn: Callable[[str], T]) -> T:
        """Like `get` for small results kept for every run (the Runs page's key figures)."""
        entry = self.entry(key)
        version = (entry.key, entry.mtime_ns, entry.size, what)
        with self._lock:
            if version in self._small:
                return self._small[version]
        value = fn(key)
        with self._lock:
            self._small[version] = value
        return value

    def trace(self, key: str) -> Trace:
        return self.get(key, "trace", lambda e: self._loader(e.load_path))

    def report(self, key: str) -> dict[str, Any]:
        return self.get(key, "report", lambda e: self._analyzer(self.trace(key)))
