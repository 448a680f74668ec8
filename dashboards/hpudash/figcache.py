"""A small JSON sidecar of each run's key figures, so the Runs page opens without re-analysing.

The Runs page needs a handful of numbers per run (`figures.key_figures`); computing them means
loading and analysing the trace. They are kept in `<root>/.hpudash-cache/figures.json` (or, when
the root is read-only, `$XDG_CACHE_HOME/hpuprof/hpudash-<hash>.json`), keyed by the entry's key
and valid while its traces' newest mtime and total size are unchanged. A restarted dashboard
reads them back; a changed or new run is recomputed. Writes are atomic (temp file + rename).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from pathlib import Path
from typing import Any

import orjson

from hpudash.catalog import Entry
from hpuprof.errors import OutputError
from hpuprof.trace.atomic_write import write_bytes_atomic

FIGURES_VERSION = 1
"""Bump when `figures.key_figures` changes what it computes: invalidates every sidecar."""
SIDECAR_DIR = ".hpudash-cache"
log = logging.getLogger("hpudash")


def _user_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hpuprof"


def sidecar_candidates(root: Path) -> list[Path]:
    """Where the sidecar of `root` may live, in order of preference."""
    digest = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16]
    return [root / SIDECAR_DIR / "figures.json", _user_dir() / f"hpudash-{digest}.json"]


class FiguresCache:
    """Key figures by entry, persisted beside the runs; thread-safe.

    Args:
        root: the dashboard's directory.
        persist: False keeps the figures in memory only (tests, read-only setups).
    """

    def __init__(self, root: Path, *, persist: bool = True) -> None:
        self.root = Path(root).resolve()
        self.persist = persist
        self._lock = threading.Lock()
        self._data: dict[str, dict[str, Any]] = {}
        self._errors: dict[tuple[str, int, int], str] = {}
        self._path: Path | None = None
        if persist:
            self._read()

    @property
    def path(self) -> Path | None:
        """The sidecar file in use (None before the first write or when not persisting)."""
        return self._path

    def _read(self) -> None:
        for path in sidecar_candidates(self.root):
            try:
                doc = orjson.loads(path.read_bytes())
            except (OSError, orjson.JSONDecodeError):
                continue
            if isinstance(doc, dict) and doc.get("version") == FIGURES_VERSION:
                runs = doc.get("runs")
                if isinstance(runs, dict):
                    self._data = {str(k): v for k, v in runs.items() if isinstance(v, dict)}
                    self._path = path
                    return

    def get(self, entry: Entry) -> dict[str, Any] | None:
        """The cached figures of `entry`'s current version, or None."""
        with self._lock:
            slot = self._data.get(entry.key)
        if slot is None or slot.get("mtime_ns") != entry.mtime_ns or slot.get("size") != entry.size:
            return None
        figs = slot.get("figures")
        return dict(figs) if isinstance(figs, dict) else None

    def error(self, entry: Entry) -> str | None:
        """Why `entry`'s current version could not be read (kept in memory only), or None."""
        with self._lock:
            return self._errors.get((entry.key, entry.mtime_ns, entry.size))

    def fail(self, entry: Entry, message: str) -> None:
        """Remember that `entry`'s current version failed, so it is not retried every tick."""
        with self._lock:
            self._errors[(entry.key, entry.mtime_ns, entry.size)] = message

    def put(self, entry: Entry, figs: dict[str, Any]) -> None:
        """Remember `figs` for `entry`'s current version (and write the sidecar)."""
        with self._lock:
            self._data[entry.key] = {
                "mtime_ns": entry.mtime_ns,
                "size": entry.size,
                "figures": figs,
            }
            if self.persist:
                self._write()

    def _write(self) -> None:
        doc = orjson.dumps(
            {"version": FIGURES_VERSION, "runs": self._data},
            option=orjson.OPT_NON_STR_KEYS,
            default=str,
        )
        candidates = [self._path] if self._path else sidecar_candidates(self.root)
        for path in candidates:
            try:
                write_bytes_atomic(path, doc)
            except OutputError:
                continue
            self._path = path
            return
        log.warning("key figures cache: no writable place for %s", self.root)
        self.persist = False
