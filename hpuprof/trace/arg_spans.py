"""Where each event's raw `args` bytes are while a file loads: spans of the memory-mapped file
itself, or of one buffer of copies, gathered once into the events' args column.

A plain file is memory-mapped: the compiled scanner reports where each event's args object
lies in it (`fastscan.scan(..., spans=True)`) and nothing is copied while the file is read;
the rows the events table keeps are copied straight from the file into their exactly sized
buffer at the end (`ArgSpans.take`). Until then the args cost 16 bytes a row instead of their
size (on the 260 MB synthetic trace, 112 MB of copies that coexisted with the normalized
columns at the load's peak). Input that is not mapped (gzip, a file streamed in blocks under an
address-space limit) and chunks the msgspec path decodes are copied into one growing buffer
(`copies`), its spans recorded the same way.

Pages of the mapped file that the gather reads count in the resident set until they are
dropped again: the gather goes a slice of rows at a time and drops them after each.
"""

from __future__ import annotations

import io
import mmap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from hpuprof.trace import fastscan

_GATHER_ROWS = 1 << 14
"""Rows gathered between two drops of the mapped file's pages. The rows come in the table's
order, not the file's, so a slice's rows lie scattered over the file and each brings in its
page and the kernel's fault-around of it: on the 260 MB synthetic trace (2 threads) a slice of
1 << 16 rows made 21 MB of the file resident at the gather's peak (422 MB RSS), 1 << 14 rows
5 MB (411 MB), the gather as fast (0.18-0.19 s)."""
_MAPPED, _COPIED = 0, 1


@dataclass(frozen=True)
class ArgSpans:
    """Every event's raw args bytes (b"" when none), in file order: row r's are
    `pieces[p][starts[r] : starts[r] + lengths[r]]`, p the piece whose rows
    `bases[p] .. bases[p + 1]` hold r."""

    pieces: Sequence[Any]
    bases: NDArray[np.int64]
    starts: NDArray[np.int64]
    lengths: NDArray[np.int64]
    mapped: mmap.mmap | None = None
    """The memory-mapped file some pieces are views of (its pages dropped as they are read)."""

    def __len__(self) -> int:
        return len(self.lengths)

    @property
    def nbytes(self) -> int:
        """The args bytes of every row together."""
        return int(self.lengths.sum())

    def take(self, rows: NDArray[np.int64]) -> pa.LargeBinaryArray:
        """The args of `rows`, in that order, as one array over one buffer of the exact size."""
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        n = len(rows)
        if n and (rows.min() < 0 or rows.max() >= len(self)):
            raise IndexError("ArgSpans.take: row out of range")
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(self.lengths[rows], out=offsets[1:])
        data = np.empty(int(offsets[-1]), dtype=np.uint8)
        gather = fastscan.gather_function()
        if gather is None:
            self._take_copied(rows, offsets, data)
        else:
            for first in range(0, n, _GATHER_ROWS):
                last = min(first + _GATHER_ROWS, n)
                begin, end = int(offsets[first]), int(offsets[last])
                gather(
                    self.pieces,
                    self.bases,
                    self.starts,
                    rows[first:last],
                    offsets[first : last + 1] - begin,
                    data[begin:end],
                )
                self.drop_pages()
        return pa.LargeBinaryArray.from_buffers(
            pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        )

    def _take_copied(
        self, rows: NDArray[np.int64], offsets: NDArray[np.int64], data: NDArray[np.uint8]
    ) -> None:
        """Without the compiled module every chunk was copied, in order, into one piece: its
        rows are one Arrow array, taken a slice of rows at a time."""
        starts, lengths = self.starts, self.lengths
        contiguous = not len(starts) or bool(np.array_equal(starts[1:], starts[:-1] + lengths[:-1]))
        if len(self.pieces) != 1 or self.mapped is not None or not contiguous:
            raise ValueError("ArgSpans: spans of several pieces need the compiled gather")
        bounds = np.zeros(len(starts) + 1, dtype=np.int64)
        if len(starts):
            bounds[:-1] = starts
            bounds[-1] = starts[-1] + lengths[-1]
        array = pa.LargeBinaryArray.from_buffers(
            pa.large_binary(),
            len(starts),
            [None, pa.py_buffer(bounds), pa.py_buffer(self.pieces[0])],
        )
        for first in range(0, len(rows), _GATHER_ROWS):
            last = min(first + _GATHER_ROWS, len(rows))
            begin, end = int(offsets[first]), int(offsets[last])
            if end > begin:
                piece = array.take(pa.array(rows[first:last]))
                data[begin:end] = np.frombuffer(
                    piece.buffers()[2], dtype=np.uint8, count=end - begin, offset=0
                )

    def drop_pages(self) -> None:
        """Drop the mapped file's pages from the resident set (they stay in the page cache)."""
        if self.mapped is not None and hasattr(mmap, "MADV_DONTNEED"):
            self.mapped.madvise(mmap.MADV_DONTNEED)

    def values(self) -> list[bytes]:
        """Every row's args as bytes (tests, small tables)."""
        return list(self.take(np.arange(len(self), dtype=np.int64)).to_pylist())


class ArgsStore:
    """Collects the args spans chunk after chunk (`ColumnBuilder`); `finish` -> `ArgSpans`.

    `mapped`: the memory-mapped file whose spans `add_spans` records (None when the input is
    not mapped: then every chunk is copied)."""

    def __init__(self, mapped: mmap.mmap | None = None) -> None:
        self.mapped = mapped
        self.copies = io.BytesIO()
        self.starts: list[NDArray[np.int64]] = []
        self.lengths: list[NDArray[np.int64]] = []
        self.sources: list[int] = []  # of each run of rows: _MAPPED or _COPIED
        self.bases: list[int] = [0]  # where each run of rows starts
        self.rows = 0

    def add_spans(self, starts: Any, lengths: Any, origin: int) -> None:
        """A chunk's spans as the scanner reports them, from the chunk's offset in the map."""
        starts = np.frombuffer(starts, dtype=np.int64) + origin
        self._add(starts, np.frombuffer(lengths, dtype=np.int64), _MAPPED)

    def add_copied(self, offsets: NDArray[np.int64], data: Any) -> None:
        """A chunk's args copied: `data`, row r's bytes at offsets[r]:offsets[r + 1]."""
        start = self.copies.tell()
        self.copies.write(data)
        self.add_written(start, np.diff(offsets))

    def add_written(self, start: int, lengths: NDArray[np.int64]) -> None:
        """A chunk's args already written to `copies` from `start` on, one row after another."""
        starts = np.empty(len(lengths), dtype=np.int64)
        starts[0:1] = start
        np.cumsum(lengths[:-1], out=starts[1:])
        starts[1:] += start
        self._add(starts, lengths, _COPIED)

    def side_bytes(self, starts: Any, lengths: Any, origin: int, rows: list[int]) -> list[bytes]:
        """Rows `rows` of a chunk whose spans are `starts`/`lengths` (`add_spans`'s), copied."""
        assert self.mapped is not None
        at = np.asarray(rows, dtype=np.int64)
        begins = (np.frombuffer(starts, dtype=np.int64)[at] + origin).tolist()
        ends = np.asarray(begins, dtype=np.int64) + np.frombuffer(lengths, dtype=np.int64)[at]
        mapped = self.mapped
        return [mapped[begin:end] for begin, end in zip(begins, ends.tolist(), strict=True)]

    def _add(self, starts: NDArray[np.int64], lengths: NDArray[np.int64], source: int) -> None:
        if not len(lengths):
            return
        if not self.sources or self.sources[-1] != source:
            if self.sources:
                self.bases.append(self.rows)
            self.sources.append(source)
        self.starts.append(starts)
        self.lengths.append(lengths)
        self.rows += len(lengths)

    def finish(self) -> ArgSpans:
        """The spans of every row added (nothing is added after)."""
        copied = self.copies.getbuffer()
        uses_map = self.mapped is not None and _MAPPED in self.sources
        mapped_view = memoryview(self.mapped) if uses_map else None  # type: ignore[arg-type]
        pieces = [mapped_view if s == _MAPPED else copied for s in self.sources] or [copied]
        bases = np.array([*self.bases, self.rows], dtype=np.int64)
        if not self.sources:
            bases = np.array([0, 0], dtype=np.int64)
        starts = _joined(self.starts)
        lengths = _joined(self.lengths)
        self.starts, self.lengths = [], []
        return ArgSpans(pieces, bases, starts, lengths, self.mapped if uses_map else None)


def _joined(parts: list[NDArray[np.int64]]) -> NDArray[np.int64]:
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)
