"""Find runs and traces under a directory, recursively; rescanned on demand (new runs appear).

A *run* is a directory with a `run.json` manifest (written by `hpuprof record`): its traces are
the relative paths under the manifest's `traces` key. Any other trace file under the root is
its own entry. Entry keys are POSIX paths relative to the root: the only handle the browser
ever sends back, resolved against a fresh scan, so a request can name nothing outside it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import orjson

MANIFEST = "run.json"
TRACE_SUFFIXES: tuple[str, ...] = (
    ".json",
    ".json.gz",
    ".perfetto-trace",
    ".pftrace",
    ".parquet",
)
SKIP_SUFFIXES: tuple[str, ...] = (".incomplete.json", ".incomplete.json.gz")
NOT_TRACES: frozenset[str] = frozenset({MANIFEST, "package.json"})


@dataclass(frozen=True)
class Entry:
    """One run or trace under the root.

    Args:
        key: path relative to the root (POSIX), the entry's id in URLs.
        path: absolute path of the run directory or trace file.
        kind: "run" (a run directory) or "trace" (a lone trace file).
        traces: the trace files to load, absolute.
        perfetto: Perfetto exports of a run, absolute.
        mtime_ns: newest modification time among the traces (cache key part).
        size: total bytes of the traces.
    """

    key: str
    path: Path
    kind: Literal["run", "trace"]
    traces: tuple[Path, ...]
    perfetto: tuple[Path, ...] = ()
    mtime_ns: int = 0
    size: int = 0


def is_trace_name(name: str) -> bool:
    """True for file names the loaders read (and not partial or manifest files)."""
    low = name.lower()
    if low in NOT_TRACES or low.endswith(SKIP_SUFFIXES) or low.startswith("."):
        return False
    return low.endswith(TRACE_SUFFIXES)


def _stat(paths: tuple[Path, ...]) -> tuple[int, int]:
    mtime, size = 0, 0
    for p in paths:
        try:
            st = p.stat()
        except OSError:
            continue
        mtime = max(mtime, st.st_mtime_ns)
        size += st.st_size
    return mtime, size


def _manifest_files(run: Path, key: str) -> tuple[Path, ...]:
    try:
        data = orjson.loads((run / MANIFEST).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return ()
    if not isinstance(data, dict):
        return ()
    root = run.resolve()
    out: list[Path] = []
    for rel in data.get(key) or []:
        if not isinstance(rel, str):
            continue
        p = (run / rel).resolve()
        if p.is_relative_to(root) and p.is_file():
            out.append(p)
    return tuple(sorted(out))


def scan(root: Path) -> list[Entry]:
    """Every run directory and lone trace under `root`, sorted by key."""
    root = Path(root).resolve()
    entries: list[Entry] = []
    claimed: set[Path] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = sorted(
            d for d in dirnames if not d.startswith(".") and not d.endswith(".hpuprof-cache")
        )
        if MANIFEST in filenames:
            traces = _manifest_files(here, "traces")
            perfetto = _manifest_files(here, "perfetto")
            claimed.update((*traces, *perfetto, *_manifest_files(here, "metrics")))
            if traces:
                mtime, size = _stat(traces)
                key = here.relative_to(root).as_posix()
                entries.append(
                    Entry(
                        key=key,
                        path=here,
                        kind="run",
                        traces=traces,
                        perfetto=perfetto,
                        mtime_ns=mtime,
                        size=size,
                    )
                )
        for name in sorted(filenames):
            p = here / name
            if is_trace_name(name) and p.is_file() and not p.is_symlink():
                entries.append(_lone(root, p))
    return sorted((e for e in entries if e.kind == "run" or e.path not in claimed), key=_order)


def _lone(root: Path, p: Path) -> Entry:
    mtime, size = _stat((p,))
    return Entry(
        key=p.relative_to(root).as_posix(),
        path=p,
        kind="trace",
        traces=(p,),
        mtime_ns=mtime,
        size=size,
    )


def _order(e: Entry) -> str:
    return e.key


def find(root: Path, key: str) -> Entry | None:
    """The entry named `key` in a fresh scan of `root`, or None (unknown keys name nothing)."""
    for e in scan(root):
        if e.key == key:
            return e
    return None
