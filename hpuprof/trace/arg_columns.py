"""hpuprof's args keys that are not read with the event, read at load time into their columns.

The scanner reads `schema.ARG_KEYS` (mode, module, phase, ...) with every event. The other keys
of `schema.ARGS` (`LATER`: compile causes, sync reasons, cast dtypes, modeled bytes, ...) sit on
a few rows of traces hpuprof wrote and on none of the others, so they are read here, from the
rows that hold them only: the scanner marks those rows (`RawColumns.our_keys`, with a hash
bucket of each key a row holds, so that keys no row holds are not searched for: `MarkedRows`),
or, for tables made another way, a byte search of the args finds them (`our_rows`). Their args
are decoded in one msgspec pass and each key becomes a column (`schema.ARG_COLUMNS`, and the raw values of
`flops`, `cause` and `call_site`, which `derive.py` completes).

The keys other profilers write that analyses read (`schema.SOURCE_KEYS`) are read the same
way from the events each is declared on (`read_source_keys`).

A key that no row holds costs nothing: its column is one broadcast value (a zero-stride array,
no memory per row; `broadcast_columns.py`). A value of the wrong type for its key (text where
a count is due) loads as absent, as other tools' keys that happen to share our prefix.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain
from operator import attrgetter
from typing import Any, Final

import msgspec
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from msgspec.structs import astuple
from numpy.typing import NDArray

from hpuprof.trace.broadcast_columns import absent_column, absent_text
from hpuprof.trace.categories import categorical
from hpuprof.trace.columns import Coded, take_binary, text
from hpuprof.trace.fastscan import ALL_BUCKETS, key_bucket
from hpuprof.trace.schema import (
    ARG_BY_KEY,
    ARG_COLUMN_DEFAULTS,
    ARG_KEYS,
    ARG_PREFIX,
    ARG_VALUE_KEYS,
    ARGS,
    NO_ID,
    SOURCE_KEYS,
    ArgKey,
    EventRows,
    SourceKey,
)

LATER: Final[tuple[ArgKey, ...]] = tuple(arg for arg in ARGS if arg.column not in ARG_KEYS)
"""The keys read here, from the rows that hold them (the others come with the event)."""
_OUR_KEY: Final = '"' + ARG_PREFIX
_ANY_JSON: Final = msgspec.json.Decoder()


class _Keys:
    """Decodes the values of some args keys (each key a field of a msgspec Struct)."""

    def __init__(self, name: str, keys: Sequence[str]) -> None:
        fields = [f"k{i}" for i in range(len(keys))]
        self.struct = msgspec.defstruct(
            name,
            [(field, Any, None) for field in fields],
            rename=dict(zip(fields, keys, strict=True)),
            gc=False,
        )
        self.decoder = msgspec.json.Decoder(self.struct)
        self.count = len(keys)

    def values(self, args: Any, rows: NDArray[np.int64]) -> list[Sequence[Any]]:
        """Per key, its values in the args of `rows` (None where absent)."""
        return self.values_taken(take_binary(arrow_args(args), rows) if len(rows) else None)

    def values_taken(self, taken: Any) -> list[Sequence[Any]]:
        """Per key, its values in `taken` (some rows' args as Arrow binary; None: no rows)."""
        decoded = self._decode(taken) if taken is not None and self.count else []
        if not decoded:
            return [()] * self.count
        return [list(map(attrgetter(name), decoded)) for name in self.struct.__struct_fields__]

    def given_taken(self, taken: Any) -> list[tuple[NDArray[np.int64], list[Any]]]:
        """Per key, (the positions in `taken` whose args hold it, its values there): the
        decoded rows as one object table, compared with None in one pass, so that a key that
        few rows hold costs no Python work per row that lacks it."""
        decoded = self._decode(taken) if taken is not None and self.count else []
        if not decoded:
            return [(np.zeros(0, dtype=np.int64), []) for _ in range(self.count)]
        flat = np.fromiter(
            chain.from_iterable(map(astuple, decoded)),
            dtype=object,
            count=len(decoded) * self.count,
        )  # (fromiter: a value that is a list stays one object)
        table = flat.reshape(len(decoded), self.count)
        holds = np.not_equal(table, None)  # type: ignore[call-overload]
        out: list[tuple[NDArray[np.int64], list[Any]]] = []
        for key in range(self.count):
            at = np.flatnonzero(holds[:, key])
            out.append((at, table[at, key].tolist()))
        return out

    def _decode(self, taken: Any) -> list[Any]:
        data = taken.buffers()[2]
        try:
            decoded = self.decoder.decode_lines(memoryview(data) if data is not None else b"")
        except msgspec.MsgspecError:
            decoded = []
        if len(decoded) == len(taken):
            return decoded
        return [self._one(raw) for raw in taken.to_pylist()]  # some row's args are no object

    def _one(self, raw: bytes | None) -> Any:
        try:
            return self.decoder.decode(raw or b"{}")
        except msgspec.MsgspecError:
            return self.struct()


_QUOTED: Final = {arg.key: f'"{arg.key}"'.encode() for arg in LATER}
"""Each `LATER` key as it is written in JSON (a key written with escapes is not found)."""


@lru_cache(maxsize=32)
def _later_keys(keys: tuple[str, ...]) -> _Keys:
    """The decoder of these `LATER` keys (those a trace holds: seldom more than a few)."""
    return _Keys("_Later", list(keys))


_BUCKETS: Final = {arg.key: key_bucket(arg.key) for arg in LATER}


@dataclass(frozen=True)
class MarkedRows:
    """The rows whose args may hold `LATER` keys, and which keys they may hold: bit
    `fastscan.key_bucket(key)` of `buckets` is clear when no row holds `key`. `given`: the
    columns of `LATER` keys read with the events already (`schema.ARG_VALUE_KEYS`, by
    `value_column`), which the rows' args are not searched for (the scanner marks no row
    for them)."""

    rows: NDArray[np.int64]
    buckets: int = ALL_BUCKETS
    given: Mapping[str, Any] = field(default_factory=dict)


def marked_rows(marks: NDArray[Any], given: Mapping[str, Any] | None = None) -> MarkedRows:
    """The `MarkedRows` of the scanner's marks per row (`RawColumns.our_keys`: uint64 key
    buckets, nonzero where a row may hold a key; marks of another dtype: any key)."""
    rows = np.flatnonzero(marks)
    if marks.dtype != np.uint64:
        return MarkedRows(rows, given=given or {})
    held = np.bitwise_or.reduce(marks[rows]) if len(rows) else 0
    return MarkedRows(rows, int(held), given or {})


def value_column(column: str, coded: Coded, rows: NDArray[np.int64]) -> Any:
    """The typed column of an `ARG_VALUE_KEYS` key at `rows` from its raw coded column (its
    values as compact JSON, "" absent): each distinct value typed once, as `read_later_keys`
    types a value it decodes (so a trace loads alike whichever way the key was read)."""
    arg = ARG_BY_KEY[ARG_VALUE_KEYS[column]]
    default = ARG_COLUMN_DEFAULTS.get(arg.column, _ABSENT[arg.type])
    values = [None if not text else _ANY_JSON.decode(text) for text in coded.categories]
    typed = np.asarray(
        _column(arg.type, default, values, np.arange(len(values)), len(values), arg.scale)
    )
    codes = coded.codes[rows]
    absent = typed.dtype.type(default)
    if not _present(typed, absent)[codes].any():
        return absent_column(absent, len(rows))
    return typed[codes]


def _named_later(taken: Any, buckets: int, given: Mapping[str, Any]) -> tuple[ArgKey, ...]:
    """The `LATER` keys named anywhere in `taken` (a superset of those its objects hold), so
    that rows are decoded and columns built only for keys that can have a value; keys outside
    `buckets` are held by no row (not searched for: each absent key was a search of all), and
    keys whose columns are `given` are not read."""
    data = taken.buffers()[2] if taken is not None else None
    if data is None:
        return ()
    candidates = [arg for arg in LATER if buckets & _BUCKETS[arg.key] and arg.column not in given]
    blob = memoryview(data).tobytes() if candidates else b""
    return tuple(arg for arg in candidates if _QUOTED[arg.key] in blob)  # (a memmem per key)


def arrow_args(args: Any) -> pa.Array | pa.ChunkedArray:
    """An events `args` column (a Series or its array) as Arrow binary, without a copy when it
    is one already (as the loaders make it)."""
    values = args.array if isinstance(args, pd.Series) else args
    arrow = getattr(values, "__arrow_array__", None)
    if arrow is not None:
        return arrow()
    return pa.array(list(values), type=pa.large_binary())


def our_rows(args: Any) -> NDArray[np.int64]:
    """The rows whose raw args mention a key with hpuprof's prefix (a byte search: for tables
    that did not come through the scanner, which marks them as it reads)."""
    array = arrow_args(args)
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks else pa.array([], pa.large_binary())
    if not len(array):
        return np.zeros(0, dtype=np.int64)
    data = array.buffers()[2]
    if data is None or _OUR_KEY.encode() not in memoryview(data).tobytes():
        return np.zeros(0, dtype=np.int64)
    hit = pc.match_substring(array, _OUR_KEY).fill_null(False)
    return np.flatnonzero(np.asarray(hit.to_numpy(zero_copy_only=False), dtype=bool))


def read_later_keys(
    args: Any, marked: MarkedRows | NDArray[np.int64] | None, n: int
) -> dict[str, Any]:
    """Every `LATER` key as its column over `n` rows: the values found in the args of the
    `marked` rows (all rows that may hold one, and which keys they may hold; positions
    alone: any key; None: find them with `our_rows`), defaults elsewhere.

    Args:
        args: the events' raw args column.
        marked: the rows whose args may hold the keys, or None.
        n: the number of events.

    Returns:
        column name -> values (dtype per `ArgKey.type`); a `json` key's values as `Found`, for
        `derive.py` to encode.
    """
    if marked is None:
        marked = MarkedRows(our_rows(args))
    elif not isinstance(marked, MarkedRows):
        marked = MarkedRows(marked)
    rows = marked.rows
    taken = take_binary(arrow_args(args), rows) if len(rows) else None
    named = _named_later(taken, marked.buckets, marked.given)
    given = _later_keys(tuple(arg.key for arg in named)).given_taken(taken)
    found = dict(zip(named, given, strict=True))
    nowhere: tuple[NDArray[np.int64], list[Any]] = (np.zeros(0, dtype=np.int64), [])
    out: dict[str, Any] = dict(marked.given)
    for arg in LATER:
        if arg.column in out:
            continue
        at, values = found.get(arg, nowhere)
        if arg.type == "json":
            out[arg.column] = Found(rows[at], values)
            continue
        default = ARG_COLUMN_DEFAULTS.get(arg.column, _ABSENT[arg.type])
        if arg.type == "int" and arg.scale != 1 and 0 < len(at) < len(rows):
            # (beside absent values, scaled numbers are rounded one by one: see `_numbers`)
            spread: list[Any] = [None] * len(rows)
            for position, value in zip(at.tolist(), values, strict=True):
                spread[position] = value
            out[arg.column] = _column(arg.type, default, spread, rows, n, arg.scale)
        else:
            out[arg.column] = _column(arg.type, default, values, rows[at], n, arg.scale)
    return out


def read_source_keys(events: pd.DataFrame) -> dict[str, Any]:
    """Every `schema.SOURCE_KEYS` column, read from the args of the rows each key is declared
    on (`SourceKey.rows`); `events` needs the columns kind, engine, name and args."""
    n = len(events)
    selected = _selected(events, [rows for rows, _, _ in _SOURCE_GROUPS])
    out: dict[str, Any] = {}
    for (_, keys, decoder), rows in zip(_SOURCE_GROUPS, selected, strict=True):
        values = iter(decoder.values(events["args"], rows))
        for key in keys:
            spellings = [next(values) for _ in key.keys]
            first = (
                spellings[0]
                if len(spellings) == 1
                else [
                    next((v for v in vs if v is not None), None)
                    for vs in zip(*spellings, strict=True)
                ]
            )
            out[key.column] = _column(key.type, key.default, first, rows, n, 1)
    return out


def _source_groups() -> list[tuple[EventRows, list[SourceKey], _Keys]]:
    """The source keys by the events they are read from, each group with its decoder."""
    groups: dict[EventRows, list[SourceKey]] = {}
    for key in SOURCE_KEYS:
        groups.setdefault(key.rows, []).append(key)
    assert len(groups) <= 8, "one bit per group in _selected's uint8 tables"
    return [
        (rows, keys, _Keys(f"_Source{i}", [s for key in keys for s in key.keys]))
        for i, (rows, keys) in enumerate(groups.items())
    ]


_SOURCE_GROUPS: Final = _source_groups()


def _selected(events: pd.DataFrame, groups: Sequence[EventRows]) -> list[NDArray[np.int64]]:
    """The rows each of `groups` declares: one bit per group per category of the name, kind
    and engine columns, gathered by the rows' codes (one pass per column that any group
    names), so a trace without such events costs three small tables."""
    bits: NDArray[np.uint8] | None = None
    for column, test_of in _TESTS:
        values = (
            pd.Categorical(events[column])
            if events[column].dtype != "category"
            else events[column].array
        )
        names = [str(c) for c in values.categories]
        table = np.zeros(len(names) + 1, dtype=np.uint8)  # (the last: a missing value, code -1)
        for g, rows in enumerate(groups):
            test = test_of(rows)
            table[:-1] |= np.array([bool(test(c)) for c in names], dtype=np.uint8) << g
        if not table.any():
            continue
        got = table[np.asarray(values.codes)]  # code -1 takes the last entry
        bits = got if bits is None else bits | got
    if bits is None:
        return [np.zeros(0, dtype=np.int64) for _ in groups]
    some = np.flatnonzero(bits)
    return [some[(bits[some] >> g) & 1 == 1] for g in range(len(groups))]


def _name_test(rows: EventRows) -> Callable[[str], bool]:
    pattern = re.compile(rows.name_pattern) if rows.name_pattern else None

    def named(name: str) -> bool:
        return name in rows.names or (pattern is not None and pattern.match(name) is not None)

    return named


_TESTS: Final[tuple[tuple[str, Callable[[EventRows], Callable[[str], bool]]], ...]] = (
    ("name", _name_test),
    ("kind", lambda rows: rows.kinds.__contains__),
    ("engine", lambda rows: rows.engines.__contains__),
)
"""The events column each part of an `EventRows` tests, and the test of a category."""


@dataclass(frozen=True)
class Found:
    """The values of a key as decoded (None where the row lacks it), at `rows`."""

    rows: NDArray[np.int64]
    values: Sequence[Any]


_PLAIN_TEXT: Final = frozenset({str, type(None)})
_type_of: Final = type  # (`_column`'s argument `type` hides the builtin)
_ABSENT: Final[dict[str, Any]] = {"text": "", "int": NO_ID, "float": math.nan, "flag": False}


def _column(
    type: str, default: Any, values: Sequence[Any], rows: NDArray[np.int64], n: int, scale: int
) -> NDArray[Any] | pd.Categorical:
    """A column of `type` over `n` rows: `values` (as decoded) at `rows`, `default` elsewhere
    and where a value is of another type."""
    kinds = set(map(_type_of, values))  # (one C pass: the common cases need no call per row)
    if type == "text":
        if kinds <= _PLAIN_TEXT:
            texts = ["" if v is None else v for v in values]
            return sparse_text(n, rows, texts) if str in kinds else absent_text(n)
        return sparse_text(n, rows, [_text(v) for v in values])  # ("" where absent)
    if type == "flag":
        flags = np.array([v is True for v in values], dtype=bool)
        return _scattered(n, rows, flags, np.False_)
    dtype = np.int64 if type == "int" else np.float64
    kept = _numbers(values, kinds, dtype, scale, default)
    if kept is None:  # (absent values, other types, out of range: one by one)
        numbers = [_number(v, type, scale) for v in values]
        kept = np.array([default if x is None else x for x in numbers], dtype=dtype)
    return _scattered(n, rows, kept, dtype(default))


def _numbers(
    values: Sequence[Any], kinds: set[type], dtype: Any, scale: int, default: Any
) -> NDArray[Any] | None:
    """`values` (their types `kinds`) as numbers at once when every one is an int (a float
    column: or a float) within range or absent (None: `default`), as the torch.profiler and
    emulator keys of most events are; None otherwise."""
    present = kinds - {type(None)}
    if not present <= ({int} if dtype is np.int64 and scale == 1 else {int, float}):
        return None
    if len(present) < len(kinds) and dtype is np.int64 and scale != 1 and present - {int}:
        return None  # (absent values beside floats to scale: one by one, as `_number` rounds)
    array: Any = values
    missing = None
    if len(present) < len(kinds):
        array = np.array(values, dtype=object)
        missing = np.equal(array, None)  # type: ignore[call-overload]
        array[missing] = 0
    try:
        numbers = np.array(array, dtype=dtype)
    except OverflowError:
        return None
    scaled_too_far = dtype is np.int64 and scale != 1 and len(numbers)
    if scaled_too_far and int(np.abs(numbers).max()) >= 2**63 // scale:  # (int64 overflow)
        return None
    if scale != 1:
        numbers = numbers * scale
    if missing is not None:
        numbers[missing] = default
    return numbers


def _present(values: NDArray[Any], absent: Any) -> NDArray[np.bool_]:
    """Where `values` hold something other than the column's `absent` value (NaN too)."""
    if isinstance(absent, float) and math.isnan(absent):
        return ~np.isnan(values)
    return np.asarray(values != absent, dtype=bool)


def _scattered(n: int, rows: NDArray[np.int64], values: NDArray[Any], absent: Any) -> NDArray[Any]:
    """`values` at `rows` and `absent` elsewhere; one broadcast value when every one is absent."""
    if not _present(values, absent).any():
        return absent_column(absent, n)
    out = np.full(n, absent, dtype=values.dtype)
    out[rows] = values
    return out


def sparse_text(
    n: int, rows: Sequence[int] | NDArray[np.int64], values: list[str]
) -> pd.Categorical:
    """A text column that is "" except at `rows` (built without touching the other rows),
    categories "" then the values sorted."""
    vocabulary = ["", *sorted(set(values) - {""})]
    if len(vocabulary) == 1:
        return absent_text(n)
    at = {v: i for i, v in enumerate(vocabulary)}
    codes = np.zeros(n, dtype=np.int64)
    if len(rows):
        codes[np.asarray(rows, dtype=np.int64)] = [at[v] for v in values]
    return categorical(codes, vocabulary)


def _text(value: Any) -> str:
    """A text key's value as its column holds it (an object or array: as compact JSON)."""
    if isinstance(value, (dict, list)):
        return msgspec.json.encode(value).decode()
    return text(value)


def _number(value: Any, type: str, scale: int) -> int | float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    scaled = value * scale if scale != 1 else value
    if type == "float":
        return float(scaled)
    if isinstance(scaled, float):
        if not math.isfinite(scaled) or abs(scaled) >= 2**63:
            return None
        return round(scaled)
    return scaled if -(2**63) <= scaled < 2**63 else None
