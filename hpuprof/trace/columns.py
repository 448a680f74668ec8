"""Decoded event chunks -> raw columns (`RawColumns`), with no Python call per event.

The chunk decoder hands over a list of msgspec Structs. Each chunk is transposed in C
(`zip(*map(astuple, events))`), numbers go straight to numpy, strings are interned with one
`set` pass and one `map(dict.__getitem__)` pass (both C loops; phases by their byte), JSON
fragments kept as `msgspec.Raw` are joined into one buffer and dictionary-encoded by pyarrow.
The raw `args` of a chunk the compiled scanner reads from a memory-mapped file stay where they
are in the file (`arg_spans.ArgSpans`: a start and a length per row); those of other chunks are
written into one growing buffer (`BytesIO.writelines`, a C loop) and the keys the model reads
are decoded from a view of what each chunk wrote; the normalizer gathers the rows it keeps
into their exactly sized buffer in C (`take_binary`). Columns whose values are all absent in
a chunk (most hpuprof keys in a CUDA trace) cost one `tuple.count` and no more.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, overload

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from msgspec.structs import astuple
from numpy.typing import NDArray

from hpuprof.trace import fastscan
from hpuprof.trace.arg_spans import ArgSpans, ArgsStore
from hpuprof.trace.schema import ARG_KEYS, ARG_PREFIX, ARG_VALUE_KEYS, NO_ID
from hpuprof.trace.soon import soon_here

_INT64_MAX = (1 << 63) - 1
_UINT64_LIMIT = 1 << 64
_EMPTY_RAW = msgspec.Raw(b"")


class Event(msgspec.Struct, gc=False):
    """One Chrome-trace event as decoded; `args` stays the exact JSON bytes."""

    ph: str = ""
    name: str = ""
    cat: str = ""
    pid: int | str = ""
    tid: int | str = ""
    ts: float | None = None
    dur: float | None = None
    id: Any = None
    bp: str = ""
    args: msgspec.Raw = _EMPTY_RAW


class Args(
    msgspec.Struct,
    gc=False,
    rename={
        "external_id": "External id",
        "input_dims": "Input Dims",
        "input_types": "Input type",
        "recipe_id": "recipeId",
        **ARG_KEYS,
        **ARG_VALUE_KEYS,
        "data_type": "dataType",
    },
):
    """The args keys the model reads; everything else stays in the raw `args` bytes."""

    external_id: Any = None
    correlation: Any = None
    stream: Any = None
    device: Any = None
    input_dims: msgspec.Raw = _EMPTY_RAW
    input_types: msgspec.Raw = _EMPTY_RAW
    recipe_id: Any = None
    mode: Any = None
    module: Any = None
    phase: Any = None
    graph_id: Any = None
    hpu_event: Any = None
    flush_reason: Any = None
    fallback: Any = None
    flops: msgspec.Raw = _EMPTY_RAW  # (`ARG_VALUE_KEYS`: the JSON value as written)
    bytes_moved: msgspec.Raw = _EMPTY_RAW
    modeled: msgspec.Raw = _EMPTY_RAW
    measured_dur_ns: msgspec.Raw = _EMPTY_RAW
    data_type: msgspec.Raw = _EMPTY_RAW


EVENT_FIELDS: tuple[str, ...] = Event.__struct_fields__
ARG_FIELDS: tuple[str, ...] = Args.__struct_fields__
ARG_NAMES: dict[str, str] = dict(zip(ARG_FIELDS, Args.__struct_encode_fields__, strict=True))
"""The args key of each `Args` field ("correlation", "hpuprof.mode", ...)."""
ARGS_DECODER = msgspec.json.Decoder(Args)
_ANY_DECODER = msgspec.json.Decoder()

CODED_EVENT = ("ph", "name", "cat", "pid", "tid", "flow_id", "bp")
RAW_ARGS = ("input_dims", "input_types")
VALUE_ARGS = (*ARG_VALUE_KEYS, "data_type")
"""Coded by the JSON value as written (compact JSON categories, "" absent): of any type."""
CODED_ARGS: tuple[str, ...] = (*RAW_ARGS, "recipe_id", "mode", "module", "phase", "graph_id")
CODED_ARGS += ("hpu_event", "flush_reason", *VALUE_ARGS)
_RAW_CODED = (*RAW_ARGS, *VALUE_ARGS)
ID_ARGS = ("external_id", "correlation", "stream", "device")
_OUR_KEY = b'"' + ARG_PREFIX.encode()
"""What the args of a row holding one of hpuprof's keys contain (`RawColumns.our_keys`)."""
_FLOW_PHASES = ("s", "t", "f")
_SIDE_PHASES = ("M", "C")


# --- interning ---------------------------------------------------------------------------------


class Interner:
    """Map values to dense integer codes across chunks (the categories of a column).

    Code 0 is the column's absent value, so a chunk without the column is all zeros.
    """

    def __init__(self, absent: Any) -> None:
        self.index: dict[Any, int] = {absent: 0}
        self.values: list[Any] = [absent]

    def code(self, value: Any) -> int:
        found = self.index.get(value)
        if found is None:
            found = self.index[value] = len(self.values)
            self.values.append(value)
        return found

    def codes(self, values: Sequence[Any]) -> NDArray[np.int32]:
        index = self.index
        new = list(set(values).difference(index))
        if new:  # added in C: a column of unique ids adds every value
            first = len(self.values)
            index.update(zip(new, range(first, first + len(new)), strict=True))
            self.values.extend(new)
        return np.fromiter(map(index.__getitem__, values), dtype=np.int32, count=len(values))

    def raw_codes(self, values: Sequence[msgspec.Raw]) -> NDArray[np.int32]:
        """Codes of JSON fragments (interned by their bytes), encoded by pyarrow."""
        local = binary_array(values).dictionary_encode()
        remap = np.array([self.code(v) for v in local.dictionary.to_pylist()], dtype=np.int32)
        indices = local.indices.to_numpy(zero_copy_only=False)
        return remap[indices] if len(remap) else np.zeros(len(values), dtype=np.int32)


def binary_array(values: Sequence[Any]) -> pa.LargeBinaryArray:
    """One Arrow array over byte-like values (bytes, `msgspec.Raw`), built from two buffers."""
    n = len(values)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, values), dtype=np.int64, count=n), out=offsets[1:])
    data = b"".join(values)
    return pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


_TAKE_ROWS = 1 << 16


def _binary_piece(n: int, offsets: Any, data: Any) -> pa.LargeBinaryArray:
    return pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


def _piece_offsets(piece: pa.LargeBinaryArray) -> NDArray[np.int64]:
    begin = piece.offset
    return np.frombuffer(piece.buffers()[1], dtype=np.int64)[begin : begin + len(piece) + 1]


def take_binary(
    array: pa.ChunkedArray | pa.LargeBinaryArray | ArgSpans, rows: NDArray[np.int64]
) -> pa.LargeBinaryArray:
    """`array.take(rows)` as one array over one buffer of the exact size. With the compiled
    module the rows' bytes are gathered in C straight from the pieces; otherwise the pieces
    are joined and taken a slice of rows at a time."""
    if isinstance(array, ArgSpans):
        return array.take(rows)
    if isinstance(array, pa.LargeBinaryArray):
        array = pa.chunked_array([array], type=pa.large_binary())
    gather = fastscan.gather_function()
    if gather is None or not array.num_chunks:
        return _take_joined(array.combine_chunks(), rows)
    pieces = array.chunks
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    if len(rows) and (rows.min() < 0 or rows.max() >= len(array)):
        raise IndexError("take_binary: row out of range")
    if len(pieces) == 1:
        # one piece (a file's args; the args keys of some events): the offsets of the rows
        # taken only, not a start and length for every row of the column (three column-long
        # int64 temporaries at the load's peak)
        piece_offsets = _piece_offsets(pieces[0])
        starts = piece_offsets[rows]
        lengths = piece_offsets[rows + 1] - starts
        bases = np.array([0, len(rows)], dtype=np.int64)
        taken_rows = np.arange(len(rows), dtype=np.int64)
    else:
        bases = np.zeros(len(pieces) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in pieces], out=bases[1:])
        all_offsets = [_piece_offsets(p) for p in pieces]
        starts = np.concatenate([o[:-1] for o in all_offsets])
        lengths = np.concatenate([np.diff(o) for o in all_offsets])
        del all_offsets
        taken_rows = rows
    n = len(rows)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths[taken_rows], out=offsets[1:])
    del lengths
    data = np.empty(int(offsets[-1]), dtype=np.uint8)
    # a piece's offsets point into its whole data buffer (a sliced piece shares it)
    buffers = [memoryview(p.buffers()[2] or b"") for p in pieces]
    gather(buffers, bases, starts, taken_rows, offsets, data)
    return _binary_piece(n, offsets, data)


def _take_joined(array: pa.LargeBinaryArray, rows: NDArray[np.int64]) -> pa.LargeBinaryArray:
    """`array.take(rows)` into one buffer of the exact size, taken a slice of rows at a time
    (Arrow's take grows its output as it goes: 300 MB of peak for 190 MB of args)."""
    n = len(rows)
    begin = array.offset
    lengths = np.diff(
        np.frombuffer(array.buffers()[1], dtype=np.int64)[begin : begin + len(array) + 1]
    )
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths[rows], out=offsets[1:])
    del lengths
    data = np.empty(int(offsets[-1]), dtype=np.uint8)
    for start in range(0, n, _TAKE_ROWS):
        piece = array.take(pa.array(rows[start : start + _TAKE_ROWS]))
        first, last = int(offsets[start]), int(offsets[min(start + _TAKE_ROWS, n)])
        if last > first:
            data[first:last] = np.frombuffer(piece.buffers()[2], dtype=np.uint8, count=last - first)
    return pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


class NumberTexts(Sequence[str]):
    """The texts of integer categories ("" for the first, the absent value), each made when it
    is read: a large trace has ~330k distinct flow ids, and turning them all into Python str
    (then sorting those) held the GIL for ~0.2 s of a load that other threads share.
    `texts_at` makes many at once in Arrow."""

    def __init__(self, numbers: NDArray[np.int64]) -> None:
        self.numbers = numbers  # numbers[0] stands for the absent value, whatever it holds

    def __len__(self) -> int:
        return len(self.numbers)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        position = range(len(self))[index]  # (IndexError past the end, as a list's)
        return "" if position == 0 else str(int(self.numbers[position]))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, NumberTexts):
            return np.array_equal(self.numbers, other.numbers)
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def texts_at(self, positions: NDArray[np.int64]) -> pa.LargeStringArray:
        """The texts of the categories at `positions`, as one Arrow array (made in C)."""
        texts = pc.cast(pa.array(self.numbers[positions]), pa.large_string())
        absent = pa.array(positions == 0)
        return pc.if_else(absent, pa.scalar("", pa.large_string()), texts)


@dataclass(frozen=True)
class Coded:
    """A column as integer codes into `categories` (text)."""

    codes: NDArray[np.int32]
    categories: Sequence[str]
    numbers: NDArray[np.int64] | None = None
    """The categories as int64 (NO_ID for the absent "") when every other one is an integer
    within int64 (flow ids: no text parsed back into numbers); None otherwise."""

    def values(self, rows: NDArray[np.int64] | None = None) -> NDArray[np.object_]:
        """The text of every row, or of `rows` only (no object per row of the others)."""
        codes = self.codes if rows is None else self.codes[rows]
        return np.asarray(self.categories, dtype=object)[codes]


def text(value: Any) -> str:
    """The text of a raw JSON value as the model stores it ("" for absent)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def compact_json(raw: Any) -> str:
    """A JSON fragment re-encoded compactly ("" for none), or its text if it is not JSON."""
    if not raw:
        return ""
    try:
        return msgspec.json.encode(_ANY_DECODER.decode(raw)).decode()
    except (msgspec.DecodeError, UnicodeDecodeError):
        return bytes(raw).decode("utf-8", "replace")


def finish_coded(codes: NDArray[np.int32], interner: Interner, convert: Any = text) -> Coded:
    """Turn interned raw values into text categories, merging values with the same text."""
    values = interner.values
    kinds = set(map(type, values[1:])) if convert is text else None
    if kinds is not None and kinds <= {int} and text(values[0]) == "":
        # distinct integers have distinct texts, none of them "": no merging to look for
        numbers = _int64_or_none(values[1:])
        texts = ["", *map(str, values[1:])] if numbers is None else NumberTexts(numbers)
        return Coded(codes, texts, numbers)
    if kinds is not None and kinds <= {str, int}:
        texts = [text(values[0]), *map(str, values[1:])]  # str() in C, no call per value
    else:
        texts = [convert(v) for v in values]
    if len(set(texts)) == len(texts):
        return Coded(codes, texts)
    unique: dict[str, int] = {}
    remap = np.array([unique.setdefault(t, len(unique)) for t in texts], dtype=np.int32)
    return Coded(remap[codes] if len(codes) else codes, list(unique))


def _int_coded(codes: NDArray[np.int32], chunks: list[NDArray[np.int64]]) -> Coded:
    """`codes` (1-based positions in the concatenated `chunks`, 0 absent) as codes of their
    distinct values, found by one sort."""
    distinct, inverse = np.unique(np.concatenate(chunks), return_inverse=True)
    remap = np.zeros(len(inverse) + 1, dtype=np.int32)
    remap[1:] = inverse.ravel() + 1
    numbers = np.empty(len(distinct) + 1, dtype=np.int64)
    numbers[0] = NO_ID
    numbers[1:] = distinct
    return Coded(remap[codes], NumberTexts(numbers), numbers)


def _int64_or_none(values: list[int]) -> NDArray[np.int64] | None:
    """NO_ID followed by `values` as int64, or None when one is past int64."""
    numbers = np.empty(len(values) + 1, dtype=np.int64)
    numbers[0] = NO_ID
    try:
        numbers[1:] = np.fromiter(values, dtype=np.int64, count=len(values))
    except OverflowError:
        return None
    return numbers


class BadValue(ValueError):
    """A value of the wrong type or out of range at row `row` of what is being added.

    Args:
        row: the row (the event's index in its chunk, or in the values given).
        field: what the value is, e.g. "args 'correlation'".
        expected: what it should be, e.g. "an integer id within 64 bits".
        found: the value itself (shown shortened).
    """

    def __init__(self, row: int, field: str, expected: str, found: Any) -> None:
        shown = repr(found)
        self.row, self.field, self.expected = row, field, expected
        self.found = shown if len(shown) <= 60 else shown[:57] + "..."
        super().__init__(f"row {row}: {expected} as {field} (found {self.found})")

    def at(self, row: int) -> BadValue:
        """The same problem at another row number (a chunk row instead of a value index)."""
        return BadValue(row, self.field, self.expected, _Shown(self.found))


class _Shown:
    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


_SCALARS = frozenset({str, int, float, bool, type(None)})


def check_scalars(values: Sequence[Any], field: str) -> None:
    """Raise `BadValue` at the first array or object among `values` (text-like columns)."""
    if set(map(type, values)) <= _SCALARS:
        return
    for row, value in enumerate(values):
        if type(value) not in _SCALARS:
            raise BadValue(row, field, "a string or a number", value)


def to_int64_ids(values: Sequence[Any], field: str = "an id") -> NDArray[np.int64]:
    """Integer ids as int64, NO_ID when missing.

    uint64 values above int64 max are stored as their two's-complement int64 (lossless, and
    the raw value stays in `args`); text ids are parsed (`"0x1f"` too), text that is no number
    is no id (NO_ID). Raises `BadValue` for numbers outside 64 bits, fractions, arrays and
    objects: never a silent NO_ID for a value that claims to be an id.
    """
    n = len(values)
    if values.count(None) == n:
        return np.full(n, NO_ID, dtype=np.int64)
    try:
        array = pa.array(values)
    except (OverflowError, TypeError, ValueError, pa.ArrowException):
        array = None
    if array is not None and array.type == pa.int64():
        return np.asarray(array.fill_null(NO_ID).to_numpy(), dtype=np.int64)
    return np.fromiter(
        (_one_id(value, row, field) for row, value in enumerate(values)), dtype=np.int64, count=n
    )


def _one_id(value: Any, row: int, field: str) -> int:
    if isinstance(value, bool) or value is None:
        return NO_ID
    if isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            try:
                value = int(value, 0)
            except ValueError:
                return NO_ID  # a text id that is no number: kept in args, no join key
    if isinstance(value, float):
        if not value.is_integer():
            raise BadValue(row, field, "an integer id", value)
        value = int(value)
    if not isinstance(value, int):
        raise BadValue(row, field, "an integer or text id", value)
    if not -_INT64_MAX - 1 <= value < _UINT64_LIMIT:
        raise BadValue(row, field, "an id within 64 bits", value)
    return value - _UINT64_LIMIT if value > _INT64_MAX else value


def _absent_column(field: str, n: int) -> NDArray[Any]:
    """A chunk's column of an args key that no event has (int8: a column's pieces join as the
    widest of them)."""
    if field == "fallback" or field in ID_ARGS:
        return np.full(n, -1 if field == "fallback" else NO_ID, dtype=np.int8)
    return np.zeros(n, dtype=np.int8)


def code_width(count: int) -> type[np.signedinteger[Any]]:
    """The narrowest integer type of codes into `count` values (as pandas narrows them)."""
    return np.int8 if count <= 127 else np.int16 if count <= 32767 else np.int32


def narrow_codes(codes: NDArray[Any], count: int) -> NDArray[Any]:
    """`codes` (into `count` values) in their narrowest type: a raw column's pieces, 1 byte a
    row instead of 4 for most columns (they coexist with the normalized columns)."""
    return codes.astype(code_width(count), copy=False)


def narrow_ids(ids: NDArray[np.int64]) -> NDArray[np.signedinteger[Any]]:
    """Integer ids in the narrowest type that holds them all (int8 .. int64)."""
    if not len(ids):
        return ids.astype(np.int8)
    low, high = int(ids.min()), int(ids.max())
    for width in (np.int8, np.int16, np.int32):
        info = np.iinfo(width)
        if info.min <= low and high <= info.max:
            return ids.astype(width)
    return ids


def _our_keys(data: memoryview, lengths: NDArray[np.int64]) -> NDArray[np.uint64]:
    """The chunk's rows (`fastscan.ALL_BUCKETS`, else 0) whose args (`data`: each row's
    `lengths` bytes, one after another) hold a key with hpuprof's prefix: the compiled
    scanner's 'p' column, except that each marked row may hold any key (its keys are not
    told apart) and rows holding only the keys read with the event are marked too (decoded
    again later, to find nothing more)."""
    if re.search(re.escape(_OUR_KEY), data) is None:
        return np.zeros(len(lengths), dtype=np.uint64)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    rows = _binary_piece(len(lengths), offsets, bytes(data))  # a copy: `data` is written on
    hit = pc.match_substring(rows, _OUR_KEY.decode()).fill_null(False)
    marked = np.asarray(hit.to_numpy(zero_copy_only=False), dtype=bool)
    return np.where(marked, np.uint64(fastscan.ALL_BUCKETS), np.uint64(0))


def _flags(values: Sequence[Any], field: str) -> NDArray[np.int8]:
    """-1 absent, 0 false, 1 true; `BadValue` for anything but true, false and null."""
    for row, value in enumerate(values):
        if value is not None and not isinstance(value, bool):
            raise BadValue(row, field, "true, false or null", value)
    return np.fromiter(
        (-1 if v is None else int(v) for v in values), dtype=np.int8, count=len(values)
    )


def _raw_arrays(values: Sequence[msgspec.Raw], field: str) -> list[msgspec.Raw]:
    """Raw JSON arrays (`Input Dims`, `Input type`); null is absent; `BadValue` otherwise."""
    out = []
    for row, value in enumerate(values):
        text = bytes(value).lstrip(b" \t\r\n")
        if text.startswith(b"null"):
            value = _EMPTY_RAW
        elif text and not text.startswith(b"["):
            raise BadValue(row, field, "an array", _Shown(text[:40].decode("utf-8", "replace")))
        out.append(value)
    return out


def _utf8(value: bytes) -> str:
    return value.decode("utf-8")


def _untag(value: bytes) -> Any:
    """A scanned value tagged by its first byte: s string, i integer, n absent (None)."""
    tag, body = value[:1], value[1:]
    if tag == b"s":
        return body.decode("utf-8")
    return int(body) if tag == b"i" else None


_TAG_INT, _ZERO, _MINUS = ord("i"), ord("0"), ord("-")


def _untag_ints(distinct: pa.LargeBinaryArray) -> list[Any] | None:
    """`[_untag(v) for v in distinct]` parsed by Arrow when every value is an integer ('i') or
    absent (empty): a chunk's flow ids are nearly all distinct integers, one Python call each
    otherwise. None when some value is of another kind (the caller untags value by value)."""
    if len(distinct) < 64:
        return None
    ints = _untag_int64(distinct)
    return None if ints is None else ints.to_pylist()


def _untag_int64(distinct: pa.LargeBinaryArray) -> pa.Int64Array | None:
    """`distinct` as int64 (null where absent) when every value is an integer ('i') or absent
    (empty); None when some value is of another kind."""
    n = len(distinct)
    data = distinct.buffers()[2]
    if data is None:
        return None
    offsets = np.frombuffer(distinct.buffers()[1], dtype=np.int64)[
        distinct.offset : distinct.offset + n + 1
    ]
    present = offsets[1:] > offsets[:-1]
    starts = offsets[:-1][present]
    raw = np.frombuffer(data, dtype=np.uint8)
    if not len(starts) or not (raw[starts] == _TAG_INT).all():
        return None
    # the tag byte becomes a leading zero ("i-5" -> "-05": the sign moves first), read by Arrow
    digits = raw[: int(offsets[-1])].copy()
    digits[starts] = _ZERO
    negative = starts[offsets[1:][present] - starts > 1]
    negative = negative[digits[negative + 1] == _MINUS]
    digits[negative] = _MINUS
    digits[negative + 1] = _ZERO
    strings = pa.LargeStringArray.from_buffers(
        n,
        pa.py_buffer(offsets - offsets[0]),
        pa.py_buffer(digits[int(offsets[0]) :]),
        pa.array(present).buffers()[1],
    )
    try:
        ints: pa.Int64Array = pc.cast(strings, pa.int64())
    except pa.ArrowInvalid:  # not what the scanner writes (it checks the int64 range)
        return None
    return ints


# --- the raw columns of one file ---------------------------------------------------------------


@dataclass(frozen=True)
class RawColumns:
    """Every event of one file in file order, before normalization (times still in µs)."""

    ph: Coded
    name: Coded
    cat: Coded
    pid: Coded
    tid: Coded
    ts_us: NDArray[np.float64]
    dur_us: NDArray[np.float64]
    flow_id: Coded
    bp: Coded
    args: ArgSpans | pa.ChunkedArray
    """Every event's exact args bytes (b"" when none): where they are in the file or in copies
    (`ArgSpans`), or large_binary (tables built from rows, `hw_profiler_columns`)."""
    external_id: NDArray[np.signedinteger[Any]]
    """The id columns are of the narrowest integer type that holds every value (int8 ..
    int64); NO_ID when absent. Coded columns' codes too are of the narrowest type (int8 for
    most: a raw column costs 1 byte a row while the normalizer works)."""
    correlation: NDArray[np.signedinteger[Any]]
    stream: NDArray[np.signedinteger[Any]]
    device: NDArray[np.signedinteger[Any]]
    input_dims: Coded
    input_types: Coded
    recipe_id: Coded
    mode: Coded
    module: Coded
    phase: Coded
    graph_id: Coded
    hpu_event: Coded
    flush_reason: Coded
    flops: Coded
    """`flops`, `bytes_moved`, `modeled`, `measured_dur_ns` (`schema.ARG_VALUE_KEYS`): their
    values as compact JSON, typed by `arg_columns.value_column`."""
    bytes_moved: Coded
    modeled: Coded
    measured_dur_ns: Coded
    data_type: Coded
    """The bridge's `dataType` arg of device ops, as compact JSON (`normalize.data_types`)."""
    fallback: NDArray[np.int8]
    our_keys: NDArray[Any]
    """Nonzero on the rows whose args hold hpuprof keys besides those above (read by
    `arg_columns`): uint64, the `fastscan.key_bucket` bits of the keys each holds."""
    side_args: Mapping[int, bytes]
    """Raw args of `M` and `C` events by row (decoded as dicts by the normalizer)."""

    def __len__(self) -> int:
        return len(self.ts_us)

    def release(self, *names: str) -> None:
        """Drop columns the normalizer has consumed, so their memory goes while it still works
        (a load's peak is raw + normalized columns otherwise). Reading one afterwards fails."""
        for name in names:
            object.__setattr__(self, name, None)


class ColumnBuilder:
    """Accumulates decoded chunks as column pieces (numpy / Arrow, never Python lists).

    `trim` is called while `finish` joins the pieces: they are small heap blocks, and
    without returning them to the OS the joined columns would count twice in the peak RSS.
    """

    def __init__(self, trim: Callable[[], None] = lambda: None, mapped: Any = None) -> None:
        self.trim = trim
        absent: dict[str, Any] = {"flow_id": None, "pid": "", "tid": ""}
        absent.update({name: b"" for name in _RAW_CODED})
        self.interners = {
            name: Interner(absent.get(name, "" if name in CODED_EVENT else None))
            for name in CODED_EVENT + CODED_ARGS
        }
        self.pieces: dict[str, list[NDArray[Any]]] = {
            name: []
            for name in (*CODED_EVENT, *CODED_ARGS, *ID_ARGS, "ts", "dur", "fallback", "our_keys")
        }
        # where every event's raw args are: spans of the mapped file `mapped` (nothing copied)
        # or of one buffer of copies (55 chunk-sized pieces left on the heap made the load ~5%
        # slower); gathered into the events' args column at the end
        self.args = ArgsStore(mapped)
        self.side_args: dict[int, bytes] = {}
        # flow ids as the chunks' int64 values, coded once in finish (see _flow_ids)
        self.flow_ints: list[NDArray[np.int64]] = []
        self.flow_int_count = 0
        self.rows = 0

    def add(self, events: list[Event]) -> None:
        """Append one decoded chunk; raises `msgspec.MsgspecError` for args that are no object."""
        n = len(events)
        if not n:
            return
        self._settle_flow_ints()
        ph, name, cat, pid, tid, ts, dur, fid, bp, args = zip(*map(astuple, events), strict=True)
        ph_codes = self._ph_codes(ph)
        for field, values in (("name", name), ("cat", cat), ("pid", pid), ("tid", tid)):
            self._code(field, values)
        self.pieces["ts"].append(np.array(ts, dtype=np.float64))
        self.pieces["dur"].append(np.array(dur, dtype=np.float64))
        self._flow_columns(ph_codes, fid, bp)
        lengths = np.fromiter(map(len, args), dtype=np.int64, count=n)
        stream = self.args.copies
        start = stream.tell()
        stream.writelines(args)
        self.args.add_written(start, lengths)
        self._side_args(ph_codes, args)
        del args, fid, bp  # the chunk's raw args now live in args_data
        # decoded from a view of what was just written: the view (and every msgspec.Raw made
        # from it) must be gone before the next write, which would raise BufferError otherwise
        with stream.getbuffer() as written:
            self._args_columns(written[start:], np.flatnonzero(lengths), n)
            self.pieces["our_keys"].append(_our_keys(written[start:], lengths))
        self.rows += n

    def add_scanned(self, scanned: Sequence[Any], origin: int | None = None) -> None:
        """Append one chunk's columns from the compiled scanner (`fastscan.scan`): the same
        pieces `add` makes from the decoded events, built from buffers (no object per event;
        the text columns come dictionary-encoded: one Python value per distinct value). With
        `origin` (the chunk's offset in the mapped file), the chunk was scanned with `spans`:
        its args are where the scanner found them in the file."""
        n, ph, ts, dur, name, cat, pid, tid, fid, bp, args, *arg_columns, our_keys = scanned
        if not n:
            return
        ph_codes = self._ph_byte_codes(np.frombuffer(ph, dtype=np.uint8))
        self.pieces["ph"].append(ph_codes)
        for field, pair in (("name", name), ("cat", cat)):
            self.pieces[field].append(self._intern_spans(field, n, pair, _utf8))
        for field, pair in (("pid", pid), ("tid", tid)):
            self.pieces[field].append(self._intern_spans(field, n, pair, _untag))
        self.pieces["ts"].append(np.frombuffer(ts, dtype=np.float64))
        self.pieces["dur"].append(np.frombuffer(dur, dtype=np.float64))
        # the scanner wrote flow ids and bindings of flow rows only (absent elsewhere)
        self.pieces["flow_id"].append(self._flow_ids(n, fid))
        self.pieces["bp"].append(self._intern_spans("bp", n, bp, _utf8))
        side_rows = self._rows_with(ph_codes, _SIDE_PHASES).tolist()
        if origin is not None:
            self.args.add_spans(args[0], args[1], origin)
            side = self.args.side_bytes(args[0], args[1], origin, side_rows)
            self.side_args.update(zip((self.rows + i for i in side_rows), side, strict=True))
        else:
            offsets = np.frombuffer(args[0], dtype=np.int64)
            self.args.add_copied(offsets, args[1])
            for i in side_rows:
                self.side_args[self.rows + i] = args[1][offsets[i] : offsets[i + 1]]
        for field, column in zip(ARG_FIELDS, arg_columns, strict=True):
            if field in ID_ARGS:
                self.pieces[field].append(narrow_ids(np.frombuffer(column, dtype=np.int64)))
            elif field == "fallback":
                self.pieces[field].append(np.frombuffer(column, dtype=np.int8))
            elif field in _RAW_CODED:
                self.pieces[field].append(self._intern_spans(field, n, column, bytes))
            else:
                self.pieces[field].append(self._intern_spans(field, n, column, _untag))
        self.pieces["our_keys"].append(np.frombuffer(our_keys, dtype=np.uint64))
        self.rows += n

    def _intern_spans(
        self, field: str, n: int, encoded: Any, value: Callable[[bytes], Any]
    ) -> NDArray[np.int32]:
        """Codes of a column as the scanner encodes it (None: no value in any row; else the
        offsets and data of its distinct values and each row's index into them), each
        distinct value turned into the interned value (`value`) once."""
        if encoded is None:
            return np.zeros(n, dtype=np.int8)
        offsets, data, indices = encoded
        distinct = _binary_piece(len(offsets) // 8 - 1, offsets, data)
        values = _untag_ints(distinct) if value is _untag else None
        if values is None:
            values = list(map(value, distinct.to_pylist()))
        interner = self.interners[field]
        remap = narrow_codes(interner.codes(values), len(interner.values))
        return remap[np.frombuffer(indices, dtype=np.int32)]

    def _flow_ids(self, n: int, encoded: Any) -> NDArray[np.int32]:
        """Codes of a chunk's flow ids. A large trace has ~330k, nearly all distinct: while
        every one is an integer they are kept as int64 and coded in `finish` by one sort
        (`_int_coded`), not one dict entry each on this thread. The codes meanwhile are
        positions in `flow_ints` (1-based, 0 absent); the first id of another kind settles
        them into the interner."""
        if encoded is not None and len(self.interners["flow_id"].values) == 1:
            offsets, data, indices = encoded
            ints = _untag_int64(_binary_piece(len(offsets) // 8 - 1, offsets, data))
            if ints is not None:
                present = ints.is_valid().to_numpy(zero_copy_only=False)
                values = ints.drop_null().to_numpy()
                remap = np.zeros(len(ints), dtype=np.int32)
                first = self.flow_int_count + 1
                remap[present] = np.arange(first, first + len(values), dtype=np.int32)
                self.flow_ints.append(values)
                self.flow_int_count += len(values)
                return remap[np.frombuffer(indices, dtype=np.int32)]
        self._settle_flow_ints()
        return self._intern_spans("flow_id", n, encoded, _untag)

    def _settle_flow_ints(self) -> None:
        """Intern the flow ids kept as int64 so far and recode their chunks' pieces."""
        if not self.flow_ints:
            return
        values = np.concatenate(self.flow_ints).tolist()
        self.flow_ints, self.flow_int_count = [], 0
        remap = np.zeros(len(values) + 1, dtype=np.int32)
        remap[1:] = self.interners["flow_id"].codes(values)
        pieces = self.pieces["flow_id"]
        pieces[:] = [remap[piece] for piece in pieces]

    def _rows_with(self, ph_codes: NDArray[np.int32], phases: tuple[str, ...]) -> NDArray[Any]:
        index = self.interners["ph"].index
        wanted = [index[p] for p in phases if p in index]
        if not wanted:
            return np.empty(0, dtype=np.int64)
        return np.flatnonzero(np.isin(ph_codes, wanted))

    def _flow_columns(self, ph_codes: NDArray[np.int32], fid: tuple[Any, ...], bp: Any) -> None:
        """Flow ids and bindings matter only on flow events: intern just those rows."""
        rows = self._rows_with(ph_codes, _FLOW_PHASES)
        for field, values in (("flow_id", fid), ("bp", bp)):
            codes = np.zeros(len(ph_codes), dtype=np.int32)
            if len(rows):
                taken = [values[i] for i in rows.tolist()]
                try:
                    check_scalars(taken, "the flow 'id'")
                except BadValue as bad:
                    raise bad.at(int(rows[bad.row])) from None
                codes[rows] = self.interners[field].codes(taken)
            count = len(self.interners[field].values)
            self.pieces[field].append(codes if field == "flow_id" else narrow_codes(codes, count))

    def _side_args(self, ph_codes: NDArray[np.int32], args: tuple[msgspec.Raw, ...]) -> None:
        for i in self._rows_with(ph_codes, _SIDE_PHASES).tolist():
            self.side_args[self.rows + i] = bytes(args[i])

    def _args_columns(self, data: memoryview, present: NDArray[np.int64], n: int) -> None:
        """Decode the keys the model reads from the chunk's args (their concatenated bytes:
        one JSON value after another) and scatter them to their rows."""
        parsed = ARGS_DECODER.decode_lines(data) if len(present) else []
        if len(parsed) != len(present):
            raise msgspec.ValidationError("an args object on each line")
        columns = zip(*map(astuple, parsed), strict=True) if parsed else [()] * len(ARG_FIELDS)
        for field, values in zip(ARG_FIELDS, columns, strict=True):
            absent = _EMPTY_RAW if field in _RAW_CODED else None
            full = _absent_column(field, n)
            if values.count(absent) == len(values):
                self.pieces[field].append(full)
                continue
            try:
                full = self._args_column(field, values, full, present)
            except BadValue as bad:
                raise bad.at(int(present[bad.row])) from None
            self.pieces[field].append(full)

    def _args_column(
        self, field: str, values: Sequence[Any], full: NDArray[Any], present: NDArray[np.int64]
    ) -> NDArray[Any]:
        """`full` with the values of the rows `present` set (`BadValue` for a wrong one)."""
        name = f"args {ARG_NAMES[field]!r}"
        if field in ID_ARGS:
            ids = narrow_ids(to_int64_ids(values, name))
            full = full.astype(np.promote_types(full.dtype, ids.dtype), copy=False)
            full[present] = ids
        elif field == "fallback":
            full[present] = _flags(values, name)
        else:
            interner = self.interners[field]
            if field in RAW_ARGS:
                codes = interner.raw_codes(_raw_arrays(values, name))
            elif field in VALUE_ARGS:
                codes = interner.raw_codes(values)
            else:
                check_scalars(values, name)
                codes = interner.codes(values)
            full = full.astype(code_width(len(interner.values)), copy=False)
            full[present] = codes
        return full

    def _ph_codes(self, ph: Sequence[str]) -> NDArray[np.int32]:
        """Phases are one ASCII letter each: code them by their byte, without a hash per row."""
        letters = "".join(ph)
        if len(letters) != len(ph) or not letters.isascii():
            return self._code("ph", ph)
        codes = self._ph_byte_codes(np.frombuffer(letters.encode("ascii"), dtype=np.uint8))
        self.pieces["ph"].append(codes)
        return codes

    def _ph_byte_codes(self, by_byte: NDArray[np.uint8]) -> NDArray[np.int32]:
        table = np.zeros(128, dtype=np.int32)
        interner = self.interners["ph"]
        for byte in np.flatnonzero(np.bincount(by_byte, minlength=128)).tolist():
            table[byte] = interner.code(chr(byte))
        return narrow_codes(table, len(interner.values))[by_byte]

    def _code(self, field: str, values: Sequence[Any]) -> NDArray[np.int32]:
        interner = self.interners[field]
        codes = narrow_codes(interner.codes(values), len(interner.values))
        self.pieces[field].append(codes)
        return codes

    def finish(self, pool: Executor | None = None) -> RawColumns:
        """The joined columns. With `pool`, the joins (copies without the GIL) run in its
        threads while this one turns each column's interned values into text."""
        trim = self.trim

        def joined(field: str, dtype: Any) -> NDArray[Any]:
            parts = self.pieces.pop(field)  # the pieces go as their column is made
            if not parts:
                return np.empty(0, dtype or np.int32)
            column = np.concatenate(parts)  # mixed int32 / int64 pieces join as int64
            return column.astype(dtype, copy=False) if dtype else column

        coded_fields = CODED_EVENT + CODED_ARGS
        flow_ints, self.flow_ints = self.flow_ints, []

        def flow_coded() -> Coded:
            return _int_coded(joined("flow_id", np.int32), flow_ints)

        joins = {
            field: soon_here(pool, flow_coded)
            if field == "flow_id" and flow_ints
            # joined in the pool (as the widest of its pieces), coded here
            else soon_here(pool, joined, field, None)
            for field in coded_fields
        }
        joins.update((f, soon_here(pool, joined, f, None)) for f in ID_ARGS)  # int32, or int64
        joins.update(
            (f, soon_here(pool, joined, f, dtype))
            for f, dtype in (
                ("ts", np.float64),
                ("dur", np.float64),
                ("fallback", np.int8),
                ("our_keys", np.uint64),
            )
        )
        coded: dict[str, Coded] = {}
        for i, field in enumerate(coded_fields):
            convert = compact_json if field in _RAW_CODED else text
            done = joins[field].result()
            if isinstance(done, Coded):  # the flow ids coded in the pool
                coded[field] = done
            else:
                coded[field] = finish_coded(done, self.interners[field], convert)
            if i % 4 == 3:
                trim()  # the joined pieces were heap blocks: return them before the next columns
        ids = {f: joins[f].result() for f in ID_ARGS}
        trim()
        args = self.args.finish()
        fields: dict[str, Any] = {**coded, **ids}
        return RawColumns(
            ts_us=joins["ts"].result(),
            dur_us=joins["dur"].result(),
            args=args,
            fallback=joins["fallback"].result(),
            our_keys=joins["our_keys"].result(),
            side_args=self.side_args,
            **fields,
        )
