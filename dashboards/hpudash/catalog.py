"""Find runs and traces under a directory, recursively; rescanned on demand (new runs appear).

Three kinds of entry:
- *run*: a directory with a `run.json` manifest (written by `hpuprof record`): its traces are
  the files `hpuprof analyze` loads from it (`hpuprof.trace.run_manifest`: the listed traces,
  the stream of a rank killed before its trace was final, else the files in `traces/`).
- *ranks*: a directory without a manifest holding two or more trace files of distinct ranks
  of one job (`...rank-0...`, `...rank1...` in the file names, or the same `world_size` with
  distinct ranks in each file's `distributedInfo`): one run with several ranks, as
  `hpuprof analyze DIR` reads it.
- *trace*: any other trace file, on its own.

Entry keys are POSIX paths relative to the root: the only handle the browser ever sends
back, resolved against a scan, so a request can name nothing outside the root. Symbolic
links are never followed (a link inside the root may point anywhere).
"""

from __future__ import annotations

import gzip
import os
import re
import stat
import threading
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hpuprof.capture.run_dir import read_manifest
from hpuprof.errors import HpuprofError, TraceFormatError
from hpuprof.path_text import path_text
from hpuprof.trace.formats import KINETO_JSON, TRACE_SUFFIXES
from hpuprof.trace.gaudi_node_spans import ANALYZED_NODES_SUFFIX
from hpuprof.trace.run_manifest import MANIFEST, run_trace_files

SKIP_SUFFIXES: tuple[str, ...] = (".incomplete.json", ".incomplete.json.gz", ANALYZED_NODES_SUFFIX)
"""Partial traces, and Intel's analyzed-nodes tables (companions of the hardware traces beside
them, read with them; `hpuprof.trace.trace_file.trace_files` leaves them out too)."""
NOT_TRACES: frozenset[str] = frozenset({MANIFEST, "package.json"})
RANK_IN_NAME = re.compile(r"(?:^|[^a-z0-9])rank[-_]?(\d{1,6})(?![0-9])", re.IGNORECASE)
HEAD_BYTES = 1 << 16
"""How much of a file's (decompressed) start is read to find its `distributedInfo`."""
DISTRIBUTED_INFO = re.compile(rb'"distributedInfo"\s*:\s*\{([^{}]{0,4096})\}')
RANK_KEY = re.compile(rb'"rank"\s*:\s*(\d{1,6})\b')
WORLD_KEY = re.compile(rb'"world_size"\s*:\s*(\d{1,6})\b')
SCAN_TTL_S = 1.0
"""A scan is reused for this long: every request asks the catalog, a walk per request would
make the served directory's size the cost of every click."""

RESCAN_UNKNOWN_S = 0.25
"""An unknown key rescans at once, but not more often than this (a flood of bad keys must
not turn into a flood of directory walks)."""

EntryKind = Literal["run", "ranks", "trace"]


@dataclass(frozen=True)
class Entry:
    """One run or trace under the root.

    Args:
        key: path relative to the root (POSIX), the entry's id in URLs ("." for the root).
        path: absolute path of the run directory or trace file.
        kind: "run" (a run directory), "ranks" (a directory of rank files) or "trace".
        traces: the trace files to load, absolute, in rank order for "ranks".
        perfetto: Perfetto exports of a run, absolute.
        mtime_ns: newest modification time among the traces (cache key part).
        size: total bytes of the traces (of `run.json` for a refused run).
        refused: why `hpuprof analyze` refuses the run (its manifest names a file outside it,
            or no trace at all), shown where its figures would be; "" for a loadable entry.
    """

    key: str
    path: Path
    kind: EntryKind
    traces: tuple[Path, ...]
    perfetto: tuple[Path, ...] = ()
    mtime_ns: int = 0
    size: int = 0
    refused: str = ""

    @property
    def version(self) -> tuple[str, int, int]:
        """What identifies the entry's current content (changes when a trace changes)."""
        return (self.key, self.mtime_ns, self.size)

    def files(self) -> tuple[Path, ...]:
        """Every file of the entry the dashboard may serve (traces and Perfetto exports)."""
        return (*self.perfetto, *self.traces)


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


def _inside(path: Path, root: Path) -> bool:
    """`path` is a regular file inside `root` reached through no symbolic link."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return False
    cur = root
    for part in rel.parts:
        cur = cur / part
        if cur.is_symlink():
            return False
    return path.is_file()


def _run_traces(run: Path) -> tuple[tuple[Path, ...], str]:
    """The traces `hpuprof analyze RUN` loads, those reached through no symbolic link, or
    none and why the run is refused (a manifest entry outside the run, no trace at all)."""
    try:
        files = run_trace_files(run)
    except TraceFormatError as error:
        return (), str(error)
    return tuple(p for p in files if _inside(p, run)), ""


def _read_manifest(run: Path) -> dict[str, object]:
    """`run.json` as `hpuprof info` reads it ({} when unreadable: its traces say why)."""
    try:
        return read_manifest(run)
    except (HpuprofError, OSError):
        return {}


def _listed_files(run: Path, manifest: dict[str, object], key: str) -> tuple[Path, ...]:
    """The files under the manifest's `key` (Perfetto exports, metrics) that lie inside `run`."""
    out: list[Path] = []
    items = manifest.get(key) or []
    for rel in items if isinstance(items, list) else []:
        if not isinstance(rel, str) or not rel or "\x00" in rel or os.path.isabs(rel):
            continue
        p = Path(os.path.normpath(run / rel))
        if _inside(p, run):
            out.append(p)
    return tuple(sorted(out))


def rank_from_name(name: str) -> int | None:
    """The rank a file name states (`rank-3`, `rank_3`, `rank3`), or None."""
    found = RANK_IN_NAME.findall(name)
    return int(found[-1]) if len(found) >= 1 else None


def _head(path: Path) -> bytes:
    """The first HEAD_BYTES of the file's content (gunzipped when gzip), b"" when unreadable."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(HEAD_BYTES)
        if raw[:2] != b"\x1f\x8b":
            return raw
        with gzip.open(path, "rb") as handle:
            return handle.read(HEAD_BYTES)
    except (OSError, EOFError, zlib.error):
        return b""


def rank_from_header(path: Path) -> tuple[int, int] | None:
    """(rank, world_size) from the `distributedInfo` near the start of a Chrome JSON trace."""
    if not path.name.lower().endswith(KINETO_JSON.suffixes):
        return None
    found = DISTRIBUTED_INFO.search(_head(path))
    if not found:
        return None
    rank, world = RANK_KEY.search(found.group(1)), WORLD_KEY.search(found.group(1))
    if not rank or not world:
        return None
    return int(rank.group(1)), int(world.group(1))


class _HeaderMemo:
    """`rank_from_header` per (path, mtime, size): each file's start is read once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, int, int], tuple[int, int] | None] = {}

    def get(self, path: Path) -> tuple[int, int] | None:
        try:
            st = path.stat()
        except OSError:
            return None
        key = (str(path), st.st_mtime_ns, st.st_size)
        with self._lock:
            if key in self._seen:
                return self._seen[key]
        got = rank_from_header(path)
        with self._lock:
            self._seen[key] = got
        return got


def rank_group(files: list[Path], headers: _HeaderMemo | None = None) -> dict[int, Path]:
    """The files of one directory that are the ranks of one job, by rank ({} if none).

    Files whose names state distinct ranks form the group; failing that, files whose
    `distributedInfo` gives the same world size (> 1) and distinct ranks. Two or more are
    needed; any clash of ranks means the files are separate traces, not one run.
    """
    named = {p: r for p in files if (r := rank_from_name(p.name)) is not None}
    if len(named) >= 2 and len(set(named.values())) == len(named):
        return {r: p for p, r in named.items()}
    memo = headers or _HeaderMemo()
    info = {p: h for p in files if (h := memo.get(p)) is not None}
    worlds = {w for _, w in info.values()}
    ranks = [r for r, _ in info.values()]
    if len(info) >= 2 and len(worlds) == 1 and min(worlds) > 1 and len(set(ranks)) == len(ranks):
        return {r: p for p, (r, _) in info.items()}
    return {}


def _regular_files(folder: Path, names: Iterable[str]) -> dict[Path, os.stat_result]:
    """The regular files among `names` in `folder` (no symbolic link), with their status: one
    `lstat` a file (a walk of 10,000 traces made four system calls of each)."""
    out: dict[Path, os.stat_result] = {}
    for name in names:
        path = folder / name
        try:
            status = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(status.st_mode):
            out[path] = status
    return out


def _entry(
    root: Path,
    here: Path,
    kind: EntryKind,
    traces: tuple[Path, ...],
    perfetto: tuple[Path, ...],
    refused: str = "",
    status: os.stat_result | None = None,
) -> Entry:
    """`status`: the status of a lone trace (`here`), when known."""
    if status is not None:
        mtime, size = status.st_mtime_ns, status.st_size
    else:
        mtime, size = _stat(traces or ((here / MANIFEST),))
    # path_text: the key goes to the browser as JSON, which takes only valid UTF-8
    key = path_text(here.relative_to(root).as_posix())
    return Entry(key, here, kind, traces, perfetto, mtime, size, refused)


def scan(root: Path, headers: _HeaderMemo | None = None) -> list[Entry]:
    """Every run directory, rank directory and lone trace under `root`, sorted by key."""
    root = Path(root).resolve()
    entries: list[Entry] = []
    claimed: set[Path] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = sorted(
            d for d in dirnames if not d.startswith(".") and not d.endswith(".hpuprof-cache")
        )
        found = _regular_files(here, (n for n in sorted(filenames) if is_trace_name(n)))
        lone = list(found)
        if MANIFEST in filenames and not (here / MANIFEST).is_symlink():
            manifest = _read_manifest(here)
            traces, refused = _run_traces(here)
            perfetto = _listed_files(here, manifest, "perfetto")
            claimed.update((*traces, *perfetto, *_listed_files(here, manifest, "metrics")))
            if traces or refused:
                entries.append(_entry(root, here, "run", traces, perfetto, refused))
        elif len(free := [p for p in lone if p not in claimed]) >= 2:
            group = rank_group(free, headers)
            if group:
                traces = tuple(group[r] for r in sorted(group))
                claimed.update(traces)
                entries.append(_entry(root, here, "ranks", traces, ()))
        entries += [_entry(root, p, "trace", (p,), (), status=found[p]) for p in lone]
    return sorted((e for e in entries if e.kind != "trace" or e.path not in claimed), key=_order)


def _order(e: Entry) -> str:
    return e.key


class Catalog:
    """The entries under `root`, rescanned at most every `ttl_s` seconds; thread-safe.

    Args:
        root: the directory served.
        ttl_s: how long a scan is reused (0: every call rescans).
    """

    def __init__(self, root: Path, ttl_s: float = SCAN_TTL_S) -> None:
        self.root = Path(root).resolve()
        self.ttl_s = ttl_s
        self._lock = threading.Lock()
        self._headers = _HeaderMemo()
        self._at = -float("inf")
        self._entries: list[Entry] = []
        self._by_key: dict[str, Entry] = {}

    def entries(self, *, fresh: bool = False) -> list[Entry]:
        """The entries of a scan at most `ttl_s` old (`fresh`: scan now)."""
        with self._lock:
            if fresh or time.monotonic() - self._at > self.ttl_s:
                self._entries = scan(self.root, self._headers)
                self._by_key = {e.key: e for e in self._entries}
                self._at = time.monotonic()
            return self._entries

    def find(self, key: str) -> Entry | None:
        """The entry named `key`, or None: unknown keys (and every path) name nothing."""
        if not isinstance(key, str) or not key:
            return None
        self.entries()
        with self._lock:
            found = self._by_key.get(key)
        if found is None and time.monotonic() - self._at > RESCAN_UNKNOWN_S:
            self.entries(fresh=True)  # a run that appeared since the last scan
            with self._lock:
                found = self._by_key.get(key)
        return found


def find(root: Path, key: str) -> Entry | None:
    """The entry named `key` in a fresh scan of `root`, or None (unknown keys name nothing)."""
    return Catalog(root, ttl_s=0).find(key)
