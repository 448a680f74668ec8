"""Raw bytes of a trace file as a stream of blocks: plain or gzip, truncation-aware.

The JSON reader consumes blocks as they come, so a 430 MB trace is never held twice. A gzip
stream that stops early (the profiled process was killed mid-write) is not an error here:
`BlockStream.truncation` records where the compressed data ended and the reader keeps every
complete event. A corrupt gzip stream is a `TraceFormatError` with the compressed offset.
"""

from __future__ import annotations

import mmap
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

from hpuprof.errors import TraceFormatError

GZIP_MAGIC = b"\x1f\x8b"
READ_SIZE = 1 << 22  # compressed bytes per read; plain files read BLOCK_SIZE at once
BLOCK_SIZE = 1 << 24


def map_plain(path: Path) -> mmap.mmap | None:
    """A private copy-on-write map of a plain (not gzip), non-empty file; None otherwise.

    The reader decodes straight from the mapped page cache (no copy of the file's bytes), may
    write a byte in place (a private copy of one page; the file never changes), and drops the
    pages it has consumed from its resident set as it goes.
    """
    if is_gzip(path):
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
        decompressor = zlib.decompressobj(wbits=31)
        offset = 0  # compressed bytes consumed so far
        pending: list[bytes] = []
        pending_size = 0
        with open(self.path, "rb") as handle:
            while chunk := handle.read(READ_SIZE):
                if self.progress is not None:
                    self.progress(len(chunk))
                data = chunk
                while data:
                    try:
                        out = decompressor.decompress(data)
                    except zlib.error as error:
                        raise TraceFormatError(
                            str(self.path),
                            f"compressed byte {offset}",
                            f"a valid gzip stream ({error})",
                        ) from None
                    if out:
                        pending.append(out)
                        pending_size += len(out)
                    data = b""
                    if decompressor.eof:
                        rest = decompressor.unused_data
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
                if pending_size >= self.block_size:
                    yield b"".join(pending)
                    pending, pending_size = [], 0
        if pending:
            yield b"".join(pending)
        if not decompressor.eof:
            self.truncation = f"the gzip stream ends early at compressed byte {offset}"
