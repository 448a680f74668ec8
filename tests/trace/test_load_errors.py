"""Bad input gives a TraceFormatError naming file, position and expectation; truncation recovers."""

from __future__ import annotations

import gzip
import json
import random
import warnings
from pathlib import Path

import pytest

import hpuprof
from hpuprof.cli.main import main
from hpuprof.errors import TraceFormatError

GAUDI = Path(__file__).parent / "data" / "gaudi_merged.json"


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("name", "data", "position", "expected"),
    [
        ("empty.json", b"", "byte 0", "empty"),
        ("blank.json", b"  \n ", "byte 0", "empty"),
        ("text.json", b"hello world", "byte 0", "not JSON"),
        ("broken.json", b'{"traceEvents": [{"ph": "X", "ts": 1,, }]}', "byte", "JSON"),
        ("other.json", b'{"nodes": [1, 2]}', "top level", "traceEvents"),
        ("scalar.json", b'{"traceEvents": 5}', "byte", "array of events"),
        (
            "badts.json",
            b'{"traceEvents": [{"ph": "X", "ts": 1}, {"ph": "X", "ts": "abc"}]}',
            "event 1",
            "'ts'",
        ),
        ("notevent.json", b"[[1, 2], [3, 4]]", "event 0", "object"),
        ("noTs.json", b'[{"ph": "X", "name": "a"}]', "event 0", "'ts'"),
        ("badargs.json", b'[{"ph": "X", "ts": 1, "args": [1]}]', "events 0..0", "args"),
    ],
)
def test_bad_input(tmp_path: Path, name: str, data: bytes, position: str, expected: str) -> None:
    path = _write(tmp_path, name, data)
    with pytest.raises(TraceFormatError) as caught:
        hpuprof.load(path, cache=False)
    error = caught.value
    assert error.path == str(path)
    assert position in str(error.position)
    assert expected in error.expected


def test_corrupt_gzip(tmp_path: Path) -> None:
    data = bytearray(gzip.compress(GAUDI.read_bytes()))
    data[40:60] = bytes(20)
    path = _write(tmp_path, "corrupt.json.gz", bytes(data))
    with pytest.raises(TraceFormatError, match="gzip") as caught:
        hpuprof.load(path, cache=False)
    assert "compressed byte" in str(caught.value.position)


def test_missing_file_and_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="not found"):
        hpuprof.load(tmp_path / "nope.json")
    with pytest.raises(TraceFormatError, match="trace files"):
        hpuprof.load(tmp_path)


def test_cli_reports_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "text.json", b"hello")
    assert main(["info", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not JSON" in err and "Traceback" not in err


def test_cli_info_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(GAUDI), "--json", "--no-cache"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["events"] == 13 and info["devices"] == {"0": "GAUDI2"}
    assert info["steps"] == [1] and info["kinds"]["kernel"] == 2


def _complete_events_before(text: bytes, cut: int) -> int:
    """How many whole events end before byte `cut` (an independent count from the JSON)."""
    doc = json.loads(text)
    count = 0
    position = text.index(b'"traceEvents": [') + 16
    for event in doc["traceEvents"]:
        encoded = json.dumps(event, separators=(", ", ": ")).encode()
        start = text.index(b"{", position)
        end = start + len(encoded)
        assert text[start:end] == encoded
        if end > cut:
            break
        count += 1
        position = end
    return count


@pytest.mark.parametrize("compress", [False, True])
def test_truncation_at_random_offsets(tmp_path: Path, compress: bool) -> None:
    doc = json.loads(GAUDI.read_bytes())
    text = json.dumps(doc, separators=(", ", ": ")).encode()
    start = text.index(b'"traceEvents": [') + 17
    rng = random.Random(1234)
    offsets = sorted({rng.randrange(start, len(text) - 1) for _ in range(25)})
    full = hpuprof.load(_write(tmp_path, "full.json", text), cache=False)
    for cut in offsets:
        data = text[:cut]
        name = f"cut{cut}.json"
        if compress:  # cut the gzip stream itself, past its first half
            whole = gzip.compress(text)
            data = whole[: int(len(whole) * (0.5 + 0.5 * (cut - start) / (len(text) - start)))]
            name += ".gz"
        path = _write(tmp_path, name, data)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            trace = hpuprof.load(path, cache=False)
        assert len(caught) == 1, cut
        message = str(caught[0].message)
        assert str(path) in message and "byte" in message
        if not compress:
            kept = _complete_events_before(text, cut)
            all_events = doc["traceEvents"][:kept]
            expected = sum(1 for e in all_events if e["ph"] in ("X", "B", "i"))
            assert len(trace.events) == expected, cut
        assert len(trace.events) <= len(full.events)


def test_truncated_before_the_events_is_an_error(tmp_path: Path) -> None:
    path = _write(tmp_path, "head.json", GAUDI.read_bytes()[:60])
    with pytest.raises(TraceFormatError, match="truncated"):
        hpuprof.load(path, cache=False)
