"""Chunks of one file scanned in parallel threads give exactly the tables, warnings and errors of
one thread: on real and sample traces cut into many small chunks (plain, gzip streams whose
buffer moves on while chunks are in flight), with `}, {` inside strings where a cut is guessed,
metadata after the events array, truncations at every kind of place, and errors mid-file."""

from __future__ import annotations

import gzip
import json
import random
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

import hpuprof.trace.kineto_json as kineto_json
from hpuprof.errors import TraceFormatError
from hpuprof.trace import fastscan
from hpuprof.trace.kineto_json import read_kineto_json
from tests.conftest import shared_trace_files
from tests.trace.test_fast_scan import assert_same

pytestmark = pytest.mark.skipif(not fastscan.available(), reason="_kineto_scan is not built")

ROOT = Path(__file__).parents[2]
SAMPLES = sorted((ROOT / "sample_traces").rglob("*.pt.trace.json"))
SMALL_CHUNK = 1 << 12


def _load(
    path: Path, threads: int, monkeypatch: pytest.MonkeyPatch, chunk: int = SMALL_CHUNK
) -> tuple[Any, int]:
    scanned = [0]
    real = kineto_json._Reader._scan_ahead

    def counting(self: Any, pos: int) -> int:
        before = self.chunks
        try:
            return real(self, pos)
        finally:
            scanned[0] += self.chunks - before

    with monkeypatch.context() as patch:
        patch.setattr(kineto_json, "CHUNK_BYTES", chunk)
        # the last chunks halve down to this: near the end, cuts land in the bytes after the
        # array (the trailing keys) too
        patch.setattr(kineto_json, "_LAST_CHUNK_BYTES", max(chunk // 16, 64))
        patch.setattr(kineto_json._Reader, "_scan_ahead", counting)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result: Any = read_kineto_json(path, threads=threads)
            except TraceFormatError as error:
                result = f"TraceFormatError: {error}"
    return (result, [str(w.message) for w in caught]), scanned[0]


def _compare(
    path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    must_scan: bool = True,
    chunk: int = SMALL_CHUNK,
    threads: int = 3,
) -> None:
    one, _ = _load(path, 1, monkeypatch, chunk)
    many, scanned = _load(path, threads, monkeypatch, chunk)
    assert_same(many, one)  # column by column: names, dtypes, categories, every value exactly
    if must_scan and not isinstance(one[0], str) and len(one[0].events) > 50:
        assert scanned > 2, "the parallel path scanned no chunk"


@pytest.mark.parametrize(
    "path", [p for p in shared_trace_files() if p.stat().st_size < 150_000], ids=lambda p: p.name
)
def test_shared_traces_identical(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _compare(path, monkeypatch)  # gzip: a stream whose buffer moves while chunks are scanned


@pytest.mark.parametrize(
    "path", [p for p in shared_trace_files() if p.stat().st_size >= 150_000], ids=lambda p: p.name
)
def test_large_shared_traces_identical(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 2.5 to 54 MB once unpacked: 5 to 100 chunks of 512 KiB, two threads as on this machine
    _compare(path, monkeypatch, chunk=1 << 19, threads=2)


def test_large_synthetic_trace_identical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The load benchmark's trace (bench/gen_synthetic_trace.py), 60,000 events, ~13 MB: its
    flows, counters, metadata and nested ops across 26 chunks of 512 KiB."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from gen_synthetic_trace import generate
    finally:
        sys.path.remove(str(ROOT / "bench"))
    path = tmp_path / "synthetic.pt.trace.json"
    generate(path, 60_000)
    one, _ = _load(path, 1, monkeypatch, 1 << 19)
    many, scanned = _load(path, 2, monkeypatch, 1 << 19)
    assert not isinstance(one[0], str), one[0]
    assert len(one[0].events) > 35_000 and len(one[0].flows) > 10_000  # (flows apart)
    assert scanned >= 20, scanned
    assert_same(many, one)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_sample_traces_identical(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _compare(path, monkeypatch)


def _events(count: int, rng: random.Random) -> list[dict[str, Any]]:
    events = []
    for i in range(count):
        name = rng.choice(["op", "a}, {b", '"}, {"ph": "X"', "x" * 300, "ünï☃"])
        events.append({"ph": "X", "name": name, "cat": "cpu_op", "pid": 1, "tid": i % 3,
                       "ts": i * 10, "dur": 5, "args": {"note": rng.choice(["}, {", "]"]),
                                                         "External id": i}})  # fmt: skip
    return events


@pytest.mark.parametrize("seed", range(3))
def test_cuts_inside_strings_tails_and_truncations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    rng = random.Random(seed)
    doc = {"schemaVersion": 1, "traceEvents": _events(400, rng), "traceName": "t]}, {x"}
    text = json.dumps(doc, ensure_ascii=False, indent=rng.choice([None, 1])).encode()
    cases = {"whole": text, "cut": text[: rng.randrange(len(text) // 3, len(text))]}
    broken = bytearray(text)
    broken[rng.randrange(len(text) // 2, len(text) - 100)] = ord("@")
    cases["error"] = bytes(broken)
    for name, data in cases.items():
        for packed in (False, True):
            path = tmp_path / f"{name}.json{'.gz' if packed else ''}"
            path.write_bytes(gzip.compress(data) if packed else data)
            _compare(path, monkeypatch, must_scan=name == "whole")
