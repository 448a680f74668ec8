"""Raw bytes of a trace file as a stream of blocks: plain or gzip, truncation-aware.

The JSON reader consumes blocks as they come, so a 430 MB trace is never held twice. A gzip
stream that stops early (the profiled process was killed mid-write) is not an error here:
`BlockStream.truncation` records where the compressed data ended and the reader keeps every
complete event. A corrupt gzip stream is a `TraceFormatError` with the compressed offset.
"""

from __future__ import annotations

import mmap
import os
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

from hpuprof.errors import TraceFormatError
from hpuprof.trace.memory_limit import may_map

GZIP_MAGIC = b"\x1f\x8b"
READ_SIZE = 1 << 22  # compressed bytes per read; plain files read BLOCK_SIZE at once
BLOCK_SIZE = 1 << 24


def map_plain(path: Path) -> mmap.mmap | None:
    """A private copy-on-write map of a plain (not gzip), non-empty file; None otherwise.

    The reader decodes straight from the mapped page cache (no copy of the file's bytes), may
    write a byte in place (a private copy of one page; the file never changes), and drops the
    pages it has consumed from its resident set as it goes. None too for a file too large to
    map under the process's address-space limit (`memory_limit.may_map`): it is streamed.
    """
    if is_gzip(path) or not may_map(path.stat().st_size):
        return None
    with open(path, "rb") as handle:
        try:
            return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY)
        except (ValueError, OSError):  # empty file, or a file that cannot be mapped
            return None


def is_gzip(path: Path) -> bool:
    """True when the file starts with the gzip magic bytes (whatever its suffix)."""
    with open(path, "rb") as handle:
        return handle.read(2) == GZIP_MAGIC


class BlockStream:
    """Iterate the (decompressed) bytes of `path` in blocks of about `BLOCK_SIZE`.

    After iteration, `truncation` is None for a complete file, else a phrase saying where the
    compressed stream ended; `size` is the number of (decompressed) bytes produced.
    """

    def __init__(
        self,
        path: Path,
        block_size: int = BLOCK_SIZE,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        self.path = path
        self.progress = progress
        self.block_size = block_size
        self.truncation: str | None = None
        self.size = 0
        self.compressed = is_gzip(path)

    def __iter__(self) -> Iterator[bytes]:
        blocks = self._gzip_blocks() if self.compressed else self._plain_blocks()
        for block in blocks:
            self.size += len(block)
            yield block

    def _plain_blocks(self) -> Iterator[bytes]:
        with open(self.path, "rb") as handle:
            while block := handle.read(self.block_size):
                if self.progress is not None:
                    self.progress(len(block))
                yield block

    def _gzip_blocks(self) -> Iterator[bytes]:
        limit = expansion_limit(self.path.stat().st_size)
        decompressor = zlib.decompressobj(wbits=31)
        offset = 0  # compressed bytes consumed so far
        total = 0  # decompressed bytes so far
        pending: list[bytes] = []
        pending_size = 0
        with open(self.path, "rb") as handle:
            while chunk := handle.read(READ_SIZE):
                if self.progress is not None:
                    self.progress(len(chunk))
                data = chunk
                while data:
                    at = offset + len(chunk) - len(data)
                    try:  # at most a block out per call: a gzip bomb never lands at once
                        out = decompressor.decompress(data, self.block_size)
                    except zlib.error as error:
                        raise TraceFormatError(
                            str(self.path),
                            f"compressed byte {at}",
                            f"a valid gzip stream ({error})",
                        ) from None
                    data = decompressor.unconsumed_tail
                    if out:
                        total += len(out)
                        if total > limit:
                            raise self._bomb(at, limit)
                        pending.append(out)
                        pending_size += len(out)
                        if pending_size >= self.block_size:
                            yield b"".join(pending)
                            pending, pending_size = [], 0
                    if decompressor.eof:
                        rest = decompressor.unused_data
                        data = b""
                        if rest[:2] == GZIP_MAGIC:  # a multi-member gzip file
                            decompressor = zlib.decompressobj(wbits=31)
                            data = rest
                        elif rest.strip(b"\x00"):
                            raise TraceFormatError(
                                str(self.path),
                                f"compressed byte {offset + len(chunk) - len(rest)}",
                                "end of file after the gzip stream (found trailing data)",
                            )
                offset += len(chunk)
        if pending:
            yield b"".join(pending)
        if not decompressor.eof:
            self.truncation = f"the gzip stream ends early at compressed byte {offset}"

    def _bomb(self, at: int, limit: int) -> TraceFormatError:
        return TraceFormatError(
            str(self.path),
            f"compressed byte {at}",
            f"a gzip stream that expands to at most {limit:,} bytes ({max_gzip_ratio()}x its "
            f"size, at least {GZIP_FLOOR >> 20} MiB; real traces expand 5-25x): this one "
            "expands further, like a gzip bomb (HPUPROF_MAX_GZIP_RATIO allows more)",
        )


GZIP_FLOOR = 64 << 20
"""Decompressed bytes any gzip file may expand to, whatever its size."""
GZIP_RATIO = 100
"""Default for `HPUPROF_MAX_GZIP_RATIO`: how many times its size a gzip trace may expand to.
Kineto JSON compresses 5-25x (the shared torch.profiler traces: 7.1-22.6x); a gzip bomb,
thousands of times. The limit bounds a load's memory and time by the file's size."""


def max_gzip_ratio() -> int:
    """`HPUPROF_MAX_GZIP_RATIO` (a positive integer), else `GZIP_RATIO`."""
    try:
        ratio = int(os.environ.get("HPUPROF_MAX_GZIP_RATIO", GZIP_RATIO))
    except ValueError:
        return GZIP_RATIO
    return ratio if ratio > 0 else GZIP_RATIO


def expansion_limit(compressed_size: int) -> int:
    """Decompressed bytes a gzip file of `compressed_size` bytes may expand to."""
    return max(GZIP_FLOOR, max_gzip_ratio() * compressed_size)
