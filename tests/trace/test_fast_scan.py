"""The compiled scanner (`_kineto_scan.c`) and the pure-Python msgspec path give identical
`Trace` tables, warnings and errors: on every real and sample trace, on Hypothesis-generated
traces (escaped and unicode strings, huge ints, nested args, odd whitespace), at random
truncation points and on malformed input. Skipped when the extension is not built."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hpuprof.trace.kineto_json as kineto_json
from hpuprof.errors import TraceFormatError
from hpuprof.trace import fastscan
from hpuprof.trace.kineto_json import read_kineto_json
from hpuprof.trace.model import Trace
from tests.conftest import shared_trace_files

pytestmark = pytest.mark.skipif(not fastscan.available(), reason="_kineto_scan is not built")

ROOT = Path(__file__).parents[2]
SAMPLES = sorted((ROOT / "sample_traces").rglob("*.pt.trace.json*"))
GAUDI = Path(__file__).parent / "data" / "gaudi_merged.json"


class _Counting:
    """`fastscan.scan` that counts the chunks it read (so equality is not vacuous)."""

    def __init__(self, scan: Callable[..., Any]) -> None:
        self.scan = scan
        self.read = 0

    def __call__(self, chunk: Any, **options: Any) -> Any:
        result = self.scan(chunk, **options)
        self.read += result is not None
        return result


def _load(path: Path, fast: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, int]:
    """(Trace, or the error's text; the warnings' texts) and the chunks the scanner read."""
    counting = _Counting(fastscan.scan if fast else lambda chunk, **options: None)
    with monkeypatch.context() as patch:
        patch.setattr(fastscan, "scan", counting)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result: Any = read_kineto_json(path)
            except TraceFormatError as error:
                result = f"TraceFormatError: {error}"
            except (ValueError, ArithmeticError) as error:  # see test_truncated_and_corrupted
                result = f"{type(error).__name__}: {error}"
    return (result, [str(w.message) for w in caught]), counting.read


def _frames(trace: Trace) -> Iterator[tuple[str, pd.DataFrame]]:
    for name in ("events", "counters", "flows", "processes", "threads"):
        yield name, getattr(trace, name)


def assert_same(fast: Any, pure: Any) -> None:
    (a, a_warnings), (b, b_warnings) = fast, pure
    assert a_warnings == b_warnings
    if isinstance(b, str) or isinstance(a, str):
        assert a == b
        return
    assert (a.metadata, a.sources, a.format) == (b.metadata, b.sources, b.format)
    for (name, x), (_, y) in zip(_frames(a), _frames(b), strict=True):
        assert list(x.columns) == list(y.columns), name
        assert list(x.dtypes) == list(y.dtypes), name
        for column in x.columns:
            if isinstance(x[column].dtype, pd.CategoricalDtype):
                assert list(x[column].cat.categories) == list(y[column].cat.categories), column
        pd.testing.assert_frame_equal(x, y, check_exact=True, obj=f"{name} table")


def _compare(path: Path, monkeypatch: pytest.MonkeyPatch, *, must_scan: bool = True) -> None:
    fast, scanned = _load(path, True, monkeypatch)
    pure, _ = _load(path, False, monkeypatch)
    assert_same(fast, pure)
    if must_scan and not isinstance(pure[0], str) and len(pure[0].events):
        assert scanned > 0, "the scanner read no chunk of this trace"


@pytest.mark.parametrize("path", shared_trace_files(), ids=lambda p: p.name)
def test_shared_traces_identical(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _compare(path, monkeypatch)


@pytest.mark.parametrize("path", [*SAMPLES, GAUDI], ids=lambda p: str(p.relative_to(ROOT)))
def test_sample_traces_identical(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _compare(path, monkeypatch)


# --- generated traces --------------------------------------------------------------------------

_names = st.text(st.characters(codec="utf-8"), max_size=12)
_huge = st.integers(min_value=-(1 << 63), max_value=(1 << 64) - 1)
_ids = st.one_of(st.none(), st.integers(-5, 1 << 40), _huge, st.sampled_from(["7", "0x1f"]))
_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(1 << 70), 1 << 70),
    _names,
    st.floats(allow_nan=False, allow_infinity=False),
)
_nested = st.recursive(
    _scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_names, inner, max_size=3)
)
_args = st.fixed_dictionaries(
    {},
    optional={
        "External id": _ids,
        "correlation": _ids,
        "stream": st.integers(0, 20),
        "device": st.one_of(st.integers(0, 7), st.none()),
        "Input Dims": st.lists(st.lists(st.integers(0, 64), max_size=3), max_size=3),
        "Input type": st.lists(st.sampled_from(["float", "c10::BFloat16", ""]), max_size=3),
        "recipeId": st.one_of(st.integers(-1, 9), _names),
        "hpuprof.mode": st.sampled_from(["lazy", "eager", "compile"]),
        "hpuprof.module": _names,
        "hpuprof.fallback": st.one_of(st.booleans(), st.none()),
        "hpuprof.flops": _nested,  # (`ARG_VALUE_KEYS`: any JSON value, typed after the scan)
        "hpuprof.bytes": _nested,
        "hpuprof.modeled": _scalar,
        "hpuprof.measured_us": _scalar,
        "dataType": _nested,
        "other": _nested,
    },
)
_times = st.one_of(
    st.integers(0, 1 << 52),
    st.floats(0, 1e12, allow_nan=False),
    st.decimals(0, 10**7, places=3, allow_nan=False).map(float),
)
_event = st.fixed_dictionaries(
    {
        "ph": st.sampled_from(["X", "X", "X", "i", "s", "f", "t", "C", "M", "B", "E"]),
        "name": _names,
        "pid": st.one_of(st.integers(0, 3), st.just(""), st.sampled_from(["p0", "1"])),
        "tid": st.one_of(st.integers(0, 3), _huge, st.just("")),
        "ts": _times,
    },
    optional={
        "cat": st.sampled_from(["cpu_op", "kernel", "hpu_op", "ac2g", "é\u2028"]),
        "dur": _times,
        "id": st.one_of(st.integers(0, 1 << 40), _huge, _names),
        "bp": st.just("e"),
        "args": _args,
        "s": st.just("t"),
    },
)


def _dump(events: list[dict[str, Any]], ascii_only: bool, spaced: bool) -> bytes:
    separators = (" ,\n\t", " :  ") if spaced else (",", ":")
    text = json.dumps({"traceEvents": events}, ensure_ascii=ascii_only, separators=separators)
    return text.encode()


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_event, min_size=1, max_size=25), st.booleans(), st.booleans())
def test_generated_traces_identical(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    events: list[dict[str, Any]],
    ascii_only: bool,
    spaced: bool,
) -> None:
    path = tmp_path / "gen.json"
    path.write_bytes(_dump(events, ascii_only, spaced))
    _compare(path, monkeypatch, must_scan=False)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_event, min_size=2, max_size=25), st.floats(0.05, 1.0), st.integers(0, 255))
def test_truncated_and_corrupted_identical(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    events: list[dict[str, Any]],
    where: float,
    byte: int,
) -> None:
    body = _dump(events, True, False)
    cut = int(len(body) * where)
    path = tmp_path / "cut.json"
    path.write_bytes(body[:cut])
    _compare(path, monkeypatch, must_scan=False)
    # a random byte: the msgspec path has known non-TraceFormatError failures on some (e.g. a
    # number out of range in the metadata: ValidationError); both paths must fail the same way
    path.write_bytes(body[:cut] + bytes([byte]) + body[cut + 1 :])
    _compare(path, monkeypatch, must_scan=False)


def test_small_chunks_identical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kineto_json, "CHUNK_BYTES", 300)
    for path in (GAUDI, SAMPLES[0]):
        _compare(path, monkeypatch)


def test_generated_scalars_go_through_the_scanner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # escapes, surrogate pairs, uint64 ids, decimals of every length: the scanner's own ground
    events = [
        {
            "ph": "X",
            "name": 'a\\"\n\u00e9\U0001f600\u0000',
            "pid": i % 3 or "",
            "tid": (1 << 64) - 1 - i,
            "ts": 1700000000000 + i / 1000 + (0.1234567 if i % 2 else 0),
            "dur": 1e-3 * i,
            "args": {"External id": (1 << 64) - 1, "hpuprof.mode": "lazy", "x": {"y": [1, "}"]}},
        }
        for i in range(50)
    ]
    path = tmp_path / "t.json"
    path.write_bytes(_dump(events, True, True))
    _compare(path, monkeypatch)


# a special byte at every place of the scanner's 8-byte words: its word-at-a-time search jumps
# to the first one it flags, which must be the first special byte, whatever follows it
_SPECIALS = {
    "escaped quote": '\\"',
    "escaped backslash": "\\\\",
    "escaped newline": "\\n",
    "unicode escape": "\\u00e9",
    "surrogate pair": "\\ud83d\\ude00",
    "two-byte UTF-8": "é",
    "four-byte UTF-8": "😀",
    "raw tab": "\t",  # a control byte: not JSON, both paths refuse it
    "quote then backslash": '\\"\\\\',
}


@pytest.mark.parametrize("special", list(_SPECIALS), ids=list(_SPECIALS))
def test_a_special_byte_at_every_place_of_a_word(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, special: str
) -> None:
    text = _SPECIALS[special]
    events = ",".join(
        f'{{"ph":"X","name":"{"a" * place}{text}{"b" * 9}","cat":"c{"d" * place}","pid":1,'
        f'"tid":1,"ts":{place},"dur":1,"args":{{"k{"x" * place}":"{text}{"y" * place}"}}}}'
        for place in range(18)
    )
    path = tmp_path / "specials.json"
    path.write_text(f'{{"traceEvents":[{events}]}}', encoding="utf-8")
    fast, _ = _load(path, True, monkeypatch)
    _compare(path, monkeypatch, must_scan=special != "raw tab")
    if special != "raw tab":
        names = fast[0].events["name"].astype(str).tolist()
        assert len(names) == 18 and all(n.endswith("b" * 9) for n in names), names
