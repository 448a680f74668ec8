"""The trace file formats hpuprof reads and writes, one row each: the reader table.

`hpuprof.load`, `hpuprof convert` and the dashboard's run catalog all pick a format here: by the
file name's suffix, else (loading) by sniffing the file's first bytes. Adding a format is one
module (a `read_trace(path, options)`, and a `write_trace(trace, path, progress)` when hpuprof
writes it) plus one row of `FORMATS`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from hpuprof.errors import TraceFormatError

if TYPE_CHECKING:
    from hpuprof.trace.model import Trace

LoadProgress = Callable[[int], None]
"""Called with the number of input-file bytes read since the last call."""
WriteProgress = Callable[[int, int], None]
"""Called with (events written, events in all)."""
SNIFF_BYTES: Final = 4096
"""How much of a file's start `TraceFormat.sniff` is given."""


@dataclass(frozen=True)
class ReadOptions:
    """What a reader may use besides the path.

    Args:
        progress: called as input bytes are read (readers that read in one go may ignore it).
        threads: threads that may scan one file (None: the reader's default).
    """

    progress: LoadProgress | None = None
    threads: int | None = None


@dataclass(frozen=True)
class TraceFormat:
    """One trace file format.

    Args:
        name: its name in messages.
        suffixes: the (lower-case) file name endings it owns.
        sniff: whether a file's first `SNIFF_BYTES` bytes are this format's (for a file
            with none of the suffixes).
        reader: "module:function", `function(path: Path, options: ReadOptions) -> Trace`.
        writer: "module:function", `function(trace, path: Path, progress) -> list[Path]`
            (the files written), or "" when hpuprof does not write the format.
        cached: loads go through the load cache (a format that is itself a cache does not).
        shares: another format's suffixes this format's files also end with; such a file is
            this format's when `sniff` says so (its first bytes are read to tell).
    """

    name: str
    suffixes: tuple[str, ...]
    sniff: Callable[[bytes], bool]
    reader: str
    writer: str = ""
    cached: bool = True
    shares: tuple[str, ...] = ()

    def read(self, path: Path, options: ReadOptions) -> Trace:
        """The trace in `path`."""
        trace: Trace = _function(self.reader)(path, options)
        return trace

    def write(self, trace: Trace, path: Path, progress: WriteProgress | None = None) -> list[Path]:
        """Write `trace` to `path`; returns the files written."""
        if not self.writer:
            raise TraceFormatError(str(path), None, f"a format hpuprof writes ({self.name}: not)")
        written: list[Path] = _function(self.writer)(trace, path, progress)
        return written


def _function(where: str) -> Callable[..., Any]:
    module, name = where.split(":")
    function: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return function


def _is_parquet(head: bytes) -> bool:
    return head.startswith(b"PAR1")


def _is_json(head: bytes) -> bool:
    return head.startswith(b"\x1f\x8b") or head.lstrip()[:1] in (b"{", b"[")


def _is_gaudi_hw_csv(head: bytes) -> bool:
    head = head.removeprefix(b"\xef\xbb\xbf")
    return head.startswith(b"Name,") and b",Engine," in head and b"Event type" in head


def _is_hltv(head: bytes) -> bool:
    return head.startswith(b"PK\x03\x04") and (b"views/" in head or b"prof-data/" in head)


def _is_synapse_log(head: bytes) -> bool:
    is_log: bool = _function("hpuprof.trace.synapse_log:is_synapse_log")(head)
    return is_log


def _never(head: bytes) -> bool:
    return False  # a protobuf stream has no magic bytes to go by


PARQUET: Final = TraceFormat(
    "Parquet (hpuprof's columnar file)",
    (".parquet",),
    _is_parquet,
    "hpuprof.trace.parquet:read_trace",
    "hpuprof.trace.parquet:write_trace",
    cached=False,
)
PERFETTO: Final = TraceFormat(
    "Perfetto protobuf",
    (".perfetto-trace", ".pftrace"),
    _never,
    "hpuprof.trace.perfetto_read:read_trace",
    "hpuprof.trace.perfetto_write:write_trace",
)
KINETO_JSON: Final = TraceFormat(
    "Kineto / Chrome JSON",
    (".json", ".json.gz", ".gz"),
    _is_json,
    "hpuprof.trace.kineto_json:read_trace",
    "hpuprof.trace.json_write:write_trace",
)

GAUDI_HW_CSV: Final = TraceFormat(
    "Gaudi hardware-profiler CSV",
    (".csv",),
    _is_gaudi_hw_csv,
    "hpuprof.trace.hw_profiler_csv:read_trace",
)

GAUDI_HLTV: Final = TraceFormat(
    "Intel Gaudi Profiler .hltv",
    (".hltv",),
    _is_hltv,
    "hpuprof.trace.hltv:read_trace",
)

SYNAPSE_LOG: Final = TraceFormat(
    "Synapse logger JSON",
    (),
    _is_synapse_log,
    "hpuprof.trace.synapse_log:read_trace",
    shares=KINETO_JSON.suffixes,
)

FORMATS: Final[tuple[TraceFormat, ...]] = (
    PARQUET,
    PERFETTO,
    SYNAPSE_LOG,
    KINETO_JSON,
    GAUDI_HW_CSV,
    GAUDI_HLTV,
)
"""Every format, sniffed in this order."""
TRACE_SUFFIXES: Final[tuple[str, ...]] = tuple(s for f in FORMATS for s in f.suffixes)
"""Every file name ending a trace file may have."""


def named_format(path: Path | str) -> TraceFormat | None:
    """The format whose suffix the file name ends with (the longest such suffix), or None."""
    name = Path(path).name.lower()
    owned = [(s, f) for f in FORMATS for s in f.suffixes if name.endswith(s)]
    return max(owned, key=lambda pair: len(pair[0]))[1] if owned else None


def format_of(path: Path) -> TraceFormat:
    """The format of the file `path`: by its suffix, else by its first bytes.

    Raises:
        TraceFormatError: a file no format owns.
    """
    named = named_format(path)
    name = Path(path).name.lower()
    sharing = [f for f in FORMATS if f.shares and name.endswith(f.shares)]
    if named is not None and not sharing:
        return named
    with open(path, "rb") as handle:
        head = handle.read(SNIFF_BYTES)
    for candidate in sharing:
        if candidate.sniff(head):
            return candidate
    if named is not None:
        return named
    for candidate in FORMATS:
        if candidate.sniff(head):
            return candidate
    raise TraceFormatError(str(path), 0, f"a trace file: {', '.join(TRACE_SUFFIXES)}")
