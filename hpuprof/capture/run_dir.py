"""A run directory and its `run.json` manifest.

Layout (paths in the manifest are relative to the run directory):

    run.json                                  the manifest (this module)
    traces/<stem>-rank<R>.pt.trace.json       Kineto-compatible Chrome JSON, one per rank
    traces/<stem>-rank<R>.pt.trace.incomplete.json   while the run goes on (valid JSON)
    perfetto/<stem>-rank<R>.perfetto-trace    Perfetto protobuf, one per rank, made after the run
                                              (`perfetto_export.py`)
    metrics/<stem>-rank<R>.json               Habana metrics dump (JSON array format)

Several ranks (processes) may share one run directory: each merges its own entries into
`run.json` under an advisory file lock, and the file is replaced atomically.

`run.json` is written when a rank starts, already naming the trace it streams to (the
`.incomplete.json` file, listed in both `traces` and `incomplete`), so a run killed at any
moment loads; when the rank finishes, one atomic update swaps in the final file. How each
rank ended is under `ends`, the run's summary in `end_state` / `end_detail`
(`hpuprof.capture.run_end` defines the vocabulary: running, completed, failed, exception,
signal, killed). `status` is the older free-text form of the same, kept for older readers.

Scratch space (`.scratch-<pid>-*`) and temporary files (`.<name>.*.tmp`) are dot-named, which
every reader skips; the next run in the directory, or the next load of it, removes those a dead
process left behind (`hpuprof.trace.leftovers`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from hpuprof._version import __version__
from hpuprof.capture.run_end import RunEnd, run_end, summarize
from hpuprof.capture.stream_writer import check_writable_dir
from hpuprof.errors import HpuprofError
from hpuprof.path_text import path_text
from hpuprof.trace.atomic_write import write_bytes_atomic

MANIFEST = "run.json"
FILE_KEYS = ("traces", "perfetto", "metrics")
"""The manifest's file lists, each also the run-directory subfolder that holds those files."""
ENV_PREFIXES = ("PT_HPU_", "HABANA_", "PT_TB_", "LOG_LEVEL_", "ENABLE_CONSOLE", "HPUPROF_")
ENV_NAMES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def relevant_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment flags that change how a Gaudi run behaves (PT_HPU_*, HABANA_*, ranks)."""
    env = os.environ if environ is None else environ
    return {
        k: path_text(env[k]) for k in sorted(env) if k.startswith(ENV_PREFIXES) or k in ENV_NAMES
    }


def safe_stem(text: str) -> str:
    """File-name stem from a user string (Lightning sanitizes action names the same way)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("._") or "trace"


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).astimezone().isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class RunPaths:
    """Where one rank of a run writes. Args: root: the run directory; stem; rank."""

    root: Path
    stem: str
    rank: int

    @property
    def name(self) -> str:
        return f"{self.stem}-rank{self.rank}"

    @property
    def trace(self) -> Path:
        return self.root / "traces" / f"{self.name}.pt.trace.json"

    @property
    def perfetto(self) -> Path:
        return self.root / "perfetto" / f"{self.name}.perfetto-trace"

    @property
    def metrics(self) -> Path:
        return self.root / "metrics" / f"{self.name}.json"

    def rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def prepare(self) -> None:
        """Create the directories and check they are writable (raises OutputError)."""
        check_writable_dir(self.root)
        for sub in FILE_KEYS:
            check_writable_dir(self.root / sub)


_HELD: set[tuple[int, int, str]] = set()
"""(pid, thread, lock path) of the manifest locks this process holds now."""


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    """The run directory's manifest lock. Taken again on a thread that holds it (a SIGTERM
    handler writing the run while the interrupted code was inside an update), it is not
    taken twice: a second `flock` of the same file would wait on itself forever."""
    key = (os.getpid(), threading.get_ident(), str(root / ".run.json.lock"))
    if key in _HELD:
        yield
        return
    with open(root / ".run.json.lock", "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        _HELD.add(key)
        try:
            yield
        finally:
            _HELD.discard(key)
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def read_manifest(root: Path) -> dict[str, Any]:
    """The manifest of run directory `root` ({} when there is none yet)."""
    path = Path(root) / MANIFEST
    if not path.is_file():
        return {}
    try:
        data = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as error:
        raise HpuprofError(f"{path}: not a valid run manifest ({error})") from None
    return data if isinstance(data, dict) else {}


def read_run_end(root: Path) -> RunEnd | None:
    """How the run in directory `root` ended, as a reader finds it now; None when `root` has no
    readable `run.json` (not a run directory, or a damaged manifest the loader reports itself)."""
    if not (Path(root) / MANIFEST).is_file():
        return None
    try:
        return run_end(read_manifest(root))
    except HpuprofError:
        return None


def base_manifest(
    *, rank: int, world_size: int, mode: str, device_profile: str, backend: str, device_time: str
) -> dict[str, Any]:
    """The fields a rank knows when it starts."""
    torch_version = ""
    if "torch" in sys.modules:
        torch_version = str(getattr(sys.modules["torch"], "__version__", ""))
    return {
        "hpuprof_run": 1,
        "command": path_text(" ".join(sys.argv)),  # JSON takes only valid UTF-8
        "argv": [path_text(arg) for arg in sys.argv],
        "start_time": now_iso(),
        "start_ns": time.time_ns(),
        "end_time": None,
        "status": "running",
        "end_state": "running",
        "end_detail": "",
        "ends": {str(rank): RunEnd("running").to_json()},
        "host": socket.gethostname(),
        "pids": {str(rank): os.getpid()},
        "ranks": [rank],
        "world_size": world_size,
        "torch_version": torch_version,
        "hpuprof_version": __version__,
        "python_version": sys.version.split()[0],
        "mode": mode,
        "device_profile": device_profile,
        "backend": backend,
        "device_time": device_time,
        "env": relevant_env(),
        "traces": [],
        "perfetto": [],
        "metrics": [],
        "incomplete": [],
    }


def _merge(old: dict[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(old)
    for key, value in new.items():
        if key in (*FILE_KEYS, "incomplete", "ranks"):
            merged[key] = sorted({*old.get(key, []), *value})
        elif key in ("pids", "ends"):
            merged[key] = {**(old.get(key) or {}), **value}
        elif key == "start_ns" and old.get(key):
            merged[key] = min(old[key], value)
        elif key == "start_time" and old.get(key):
            continue
        else:
            merged[key] = value
    return merged


def update_manifest(
    root: Path,
    fields: Mapping[str, Any],
    *,
    fresh_for_rank: int | None = None,
    remove: Mapping[str, list[str]] | None = None,
    append: Mapping[str, list[str]] | None = None,
) -> dict[str, Any]:
    """Merge `fields` into `root/run.json` under a lock and write it atomically.

    Args:
        root: the run directory.
        fields: manifest keys; the file lists and `ranks` are unioned, the rest replaced.
        fresh_for_rank: starting rank: an old manifest that already lists this rank belongs
            to an earlier run in the same directory and is replaced, not merged.
        remove: relative paths to drop from the given file lists (e.g. `incomplete`).
        append: entries to add at the end of the given lists (e.g. `warnings`), each once.
    """
    root = Path(root)
    with _locked(root):
        old = read_manifest(root)
        if fresh_for_rank is not None and fresh_for_rank in old.get("ranks", []):
            old = {}
        merged = _merge(old, fields)
        for key, paths in (remove or {}).items():
            merged[key] = [p for p in merged.get(key, []) if p not in set(paths)]
        for key, entries in (append or {}).items():
            kept = list(merged.get(key) or [])
            merged[key] = kept + [e for e in dict.fromkeys(entries) if e not in kept]
        if merged.get("ranks"):
            merged["world_size"] = max(int(merged.get("world_size") or 1), len(merged["ranks"]))
        if isinstance(merged.get("ends"), dict):
            end = summarize({r: RunEnd.from_json(e) for r, e in merged["ends"].items()})
            merged["end_state"], merged["end_detail"] = end.state, end.detail
        data = orjson.dumps(merged, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
        write_bytes_atomic(root / MANIFEST, data)
    return merged
