"""The chunked writer: valid JSON after every chunk, atomic rename, clear output errors."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from hpuprof.capture.stream_writer import ChunkedTraceWriter, check_writable_dir, incomplete_path
from hpuprof.errors import OutputError


def _ev(i: int) -> dict[str, object]:
    return {"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1}


def test_valid_json_after_every_chunk_and_rename(tmp_path: Path) -> None:
    final = tmp_path / "t-rank0.pt.trace.json"
    writer = ChunkedTraceWriter(final, {"schemaVersion": 1, "hpuprof": {"mode": "lazy"}})
    assert writer.path == incomplete_path(final)
    assert writer.path.name == "t-rank0.pt.trace.incomplete.json"
    assert orjson.loads(writer.path.read_bytes())["traceEvents"] == []
    for chunk in range(3):
        writer.write([_ev(chunk * 10 + i) for i in range(10)])
        data = orjson.loads(writer.path.read_bytes())
        assert len(data["traceEvents"]) == (chunk + 1) * 10
        assert data["hpuprof"] == {"mode": "lazy"}
    assert not final.exists()
    assert writer.close({"deviceProperties": [{"name": "GAUDI2"}]}) == final
    # the incomplete name stays, whole and valid, until the manifest no longer names it
    assert orjson.loads(writer.path.read_bytes())["traceEvents"][-1]["name"] == "op29"
    writer.discard_incomplete()
    assert not writer.path.exists()
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    data = orjson.loads(final.read_bytes())
    assert [e["name"] for e in data["traceEvents"]] == [f"op{i}" for i in range(30)]
    assert list(data)[-2:] == ["traceEvents", "traceName"]
    assert data["deviceProperties"] == [{"name": "GAUDI2"}]
    assert list(data)[:2] == ["schemaVersion", "hpuprof"]
    assert writer.events_written == 30


def test_empty_chunks_and_double_close(tmp_path: Path) -> None:
    writer = ChunkedTraceWriter(tmp_path / "x.json", {})
    assert writer.write([]) == 0
    path = writer.close()
    assert writer.close() == path
    assert orjson.loads(path.read_bytes())["traceEvents"] == []
    assert orjson.loads(writer.path.read_bytes()) == orjson.loads(path.read_bytes())  # a link
    writer.discard_incomplete()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.json"]
    with pytest.raises(OutputError):
        writer.write([_ev(1)])


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_unwritable_directory(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(OutputError, match="not writable"):
            check_writable_dir(locked / "run")
    finally:
        locked.chmod(0o700)


def test_disk_full_is_known_at_start(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="free"):
        check_writable_dir(tmp_path, min_free_bytes=1 << 62)


def test_directory_path_is_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OutputError, match="cannot create"):
        check_writable_dir(blocker / "run")
