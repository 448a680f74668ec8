"""What killed writers leave in a run directory, and its removal (by the next load or record).

A recording exports into `.scratch-<pid>-*` folders and writes files through dot-named `.tmp`
files; a `kill -9` leaves them behind. Readers skip dot-named entries anyway; this reclaims the
space. A scratch folder is stale when its owner process is gone, or when the process now
holding that pid started after the folder was last written (a reused pid). Nothing is removed
for a run recorded on another host (its processes cannot be checked from here), and a live
run's scratch is never touched.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from pathlib import Path

import orjson

SCRATCH_PREFIX = ".scratch-"
STALE_TMP_S = 600.0
"""A dot-named `.tmp` file untouched this long was left by a writer that died."""
RUN_SUBFOLDERS = ("traces", "perfetto", "metrics")


def scratch_prefix() -> str:
    """`.scratch-<pid>-`: the owner's pid in the name lets a later run tell it is stale."""
    return f"{SCRATCH_PREFIX}{os.getpid()}-"


def pid_alive(pid: int, started_ns: int = 0) -> bool:
    """True when process `pid` exists on this host and started before `started_ns` (epoch ns;
    0: do not check) -- a newer process that reuses the pid is not the run's."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, another user's
    except OSError:
        return False
    if started_ns:
        begun = process_start_ns(pid)
        if begun is not None and begun > started_ns + 2_000_000_000:
            return False
    return True


def process_start_ns(pid: int) -> int | None:
    """Epoch ns when process `pid` started (Linux /proc), or None when unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
        with open("/proc/stat", "rb") as handle:
            boot = next(int(line.split()[1]) for line in handle if line.startswith(b"btime "))
        ticks = int(stat[stat.rindex(b")") + 2 :].split()[19])
        return (boot * 1_000_000_000) + ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def remove_leftovers(root: Path, *, now: float | None = None) -> list[Path]:
    """Remove what killed writers left in run directory `root` (see the module doc): stale
    `.scratch-<pid>-*` folders, and dot-named `.tmp` files untouched for `STALE_TMP_S`.
    Returns what was removed; never raises for what it cannot read or remove."""
    root = Path(root)
    now = time.time() if now is None else now
    local = _recorded_here(root)
    removed: list[Path] = []
    for folder in (root, *(root / sub for sub in RUN_SUBFOLDERS)):
        try:
            entries = list(folder.iterdir())
        except OSError:
            continue
        for path in entries:
            with contextlib.suppress(OSError):
                if _stale(path, now, local):
                    _remove(path)
                    removed.append(path)
    return removed


def _stale(path: Path, now: float, local: bool) -> bool:
    name = path.name
    if name.startswith(SCRATCH_PREFIX) and local and path.is_dir():
        owner = name[len(SCRATCH_PREFIX) :].split("-", 1)[0]
        return owner.isdigit() and not pid_alive(int(owner), path.stat().st_mtime_ns)
    return (
        name.startswith(".")
        and name.endswith(".tmp")
        and path.is_file()
        and now - path.stat().st_mtime > STALE_TMP_S
    )


def _remove(path: Path) -> None:
    import shutil

    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink()


def _recorded_here(root: Path) -> bool:
    """False when `root/run.json` says the run was recorded on another host."""
    try:
        manifest = orjson.loads((root / "run.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return True
    host = manifest.get("host") if isinstance(manifest, dict) else None
    return not host or host == socket.gethostname()
