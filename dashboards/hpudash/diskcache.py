"""What the dashboard keeps between requests and restarts, bounded in bytes, never in the
served directory.

- `MemoryCache`: computed values (a run's trace, report, timeline index) by (entry version,
  name), least recently used dropped once their estimated size passes `max_bytes`.
- `DiskCache`: analysed results of each run version (the report as JSON, the timeline index
  as `.npz`, the Runs page's figures), so a memory miss or a restarted dashboard reads a file
  instead of loading and analysing the trace again. It lives under the user's cache
  directory (`$HPUDASH_CACHE_DIR`, else `hpuprof`'s cache directory + `/hpudash`), one
  folder per served root; a run directory may be read-only or shared. Writes are atomic;
  a new version of a run replaces the old one; the folder is trimmed to `max_bytes`.

Every key includes `code_stamp()`: a hash of hpuprof's version and the modification times of
the analysis and dashboard sources, so results of older code are never shown.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import logging
import os
import shutil
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from hpudash.catalog import Entry
from hpuprof.errors import OutputError
from hpuprof.trace.atomic_write import write_bytes_atomic

log = logging.getLogger("hpudash")
CACHE_VERSION = 1
DEFAULT_MEMORY_BYTES = 1 << 30
DEFAULT_DISK_BYTES = 4 << 30


def user_cache_dir() -> Path:
    """`$HPUDASH_CACHE_DIR`, else the hpuprof cache directory's `hpudash` folder."""
    explicit = os.environ.get("HPUDASH_CACHE_DIR")
    if explicit:
        return Path(explicit)
    from hpuprof.trace.cache import cache_dir

    return cache_dir() / "hpudash"


@functools.cache
def code_stamp() -> str:
    """A hash of the code that computes what is cached (changes when that code changes)."""
    import hpuprof

    parts = [hpuprof.__version__, str(CACHE_VERSION)]
    library = Path(hpuprof.__file__).parent
    for package in (library / "analysis", library / "render", Path(__file__).parent):
        for path in sorted(package.rglob("*.py")):
            try:
                parts.append(f"{path.name}:{path.stat().st_mtime_ns}")
            except OSError:
                continue
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def approx_nbytes(value: Any, _depth: int = 0) -> int:
    """A cheap estimate of the memory `value` holds (arrays and frames exactly, containers
    by walking them, anything else as a small object)."""
    if _depth > 6:
        return 64
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if hasattr(value, "memory_usage") and hasattr(value, "columns"):  # a DataFrame
        return int(value.memory_usage(index=False, deep=False).sum())
    if isinstance(value, (str, bytes, bytearray)):
        return len(value) + 49
    if isinstance(value, Mapping):
        return 64 + sum(
            approx_nbytes(k, _depth + 1) + approx_nbytes(v, _depth + 1) for k, v in value.items()
        )
    if isinstance(value, (list, tuple, set, frozenset)):
        return 56 + sum(approx_nbytes(v, _depth + 1) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return 64 + sum(
            approx_nbytes(getattr(value, f.name), _depth + 1) for f in dataclasses.fields(value)
        )
    return 32


class MemoryCache:
    """Values by key with a byte budget (LRU); thread-safe. A value bigger than the whole
    budget is still returned to its caller, just not kept."""

    def __init__(self, max_bytes: int = DEFAULT_MEMORY_BYTES) -> None:
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._items: OrderedDict[Any, tuple[Any, int]] = OrderedDict()
        self.bytes = 0

    def get(self, key: Any) -> Any | None:
        with self._lock:
            got = self._items.get(key)
            if got is None:
                return None
            self._items.move_to_end(key)
            return got[0]

    def put(self, key: Any, value: Any, nbytes: int | None = None) -> None:
        size = approx_nbytes(value) if nbytes is None else nbytes
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            if size > self.max_bytes:
                return
            self._items[key] = (value, size)
            self.bytes += size
            while self.bytes > self.max_bytes and self._items:
                _, (_, dropped) = self._items.popitem(last=False)
                self.bytes -= dropped

    def __len__(self) -> int:
        return len(self._items)


def _digest(text: str, n: int = 16) -> str:
    # os.fsencode: keys hold file names, which need not be valid UTF-8 (a lone surrogate
    # from surrogateescape makes str.encode() raise).
    return hashlib.sha256(os.fsencode(text)).hexdigest()[:n]


class DiskCache:
    """Analysed results per run version under the user's cache directory (see module).

    Args:
        root: the served directory (each root has its own folder).
        base: where the folders live (default `user_cache_dir()`).
        max_bytes: the folder of this root is trimmed to this size, oldest first.
    """

    def __init__(
        self, root: Path, base: Path | None = None, max_bytes: int = DEFAULT_DISK_BYTES
    ) -> None:
        self.root = Path(root).resolve()
        self.dir = (base or user_cache_dir()) / _digest(str(self.root))
        self.max_bytes = max_bytes
        self.enabled = True
        self._lock = threading.Lock()

    def _slot(self, entry: Entry) -> Path:
        key_dir = self.dir / _digest(entry.key)
        version = f"{entry.mtime_ns}-{entry.size}-{code_stamp()}"
        return key_dir / _digest(version)

    def _read(self, entry: Entry, name: str) -> bytes | None:
        if not self.enabled:
            return None
        path = self._slot(entry) / name
        try:
            data = path.read_bytes()
            os.utime(path.parent)  # recently used: kept longest by trim()
        except OSError:
            return None
        return data

    def _write(self, entry: Entry, name: str, data: bytes) -> None:
        if not self.enabled:
            return
        slot = self._slot(entry)
        try:
            write_bytes_atomic(slot / name, data)
        except OutputError as error:
            log.warning("dashboard cache disabled: %s", error)
            self.enabled = False
            return
        for other in slot.parent.iterdir():  # older versions of this run
            if other != slot and other.is_dir():
                shutil.rmtree(other, ignore_errors=True)
        self.trim()

    def read_json(self, entry: Entry, name: str) -> Any | None:
        data = self._read(entry, name + ".json")
        if data is None:
            return None
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            return None

    def write_json(self, entry: Entry, name: str, value: Any) -> None:
        data = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY, default=str)  # fmt: skip
        self._write(entry, name + ".json", data)

    def read_arrays(self, entry: Entry, name: str) -> dict[str, np.ndarray] | None:
        data = self._read(entry, name + ".npz")
        if data is None:
            return None
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as npz:
                return {k: npz[k] for k in npz.files}
        except (OSError, ValueError, KeyError):
            return None

    def write_arrays(self, entry: Entry, name: str, arrays: Mapping[str, np.ndarray]) -> None:
        buf = io.BytesIO()
        np.savez(buf, **dict(arrays))  # type: ignore[arg-type]
        self._write(entry, name + ".npz", buf.getvalue())

    def trim(self) -> None:
        """Delete the least recently used run versions until the folder fits `max_bytes`."""
        with self._lock:
            slots = []
            total = 0
            for key_dir in self.dir.glob("*"):
                for slot in key_dir.glob("*"):
                    try:
                        size = sum(f.stat().st_size for f in slot.iterdir())
                        slots.append((slot.stat().st_mtime_ns, size, slot))
                    except OSError:
                        continue
                    total += size
            for _, size, slot in sorted(slots):
                if total <= self.max_bytes:
                    break
                shutil.rmtree(slot, ignore_errors=True)
                total -= size


def cached(
    memory: MemoryCache,
    key: Any,
    compute: Callable[[], Any],
    *,
    load: Callable[[], Any | None] | None = None,
    save: Callable[[Any], None] | None = None,
) -> Any:
    """`memory[key]`, else what `load` finds on disk, else `compute()` (then `save`d)."""
    got = memory.get(key)
    if got is not None:
        return got
    got = load() if load is not None else None
    if got is None:
        got = compute()
        if save is not None:
            save(got)
    memory.put(key, got)
    return got
