"""Top-level keys written after `traceEvents` (Kineto writes `traceName`, on-demand traces
`distributedInfo` there) load as metadata, whatever `]`, `}, {` they hold and wherever the
reader's chunk cuts fall."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import orjson
import pytest

import hpuprof.trace.kineto_json as kineto_json
from hpuprof.trace.kineto_json import read_raw

TAILS: dict[str, dict[str, Any]] = {
    "trace name with ]": {"traceName": "/tmp/a]b.json"},
    "distributedInfo list": {
        "distributedInfo": {
            "backend": "nccl",
            "rank": 0,
            "world_size": 2,
            "pg_config": [{"pg_name": "0", "ranks": [0, 1]}, {"pg_name": "1", "ranks": [0]}],
        },
        "traceName": "/runs/x]y/t.json",
    },
    "many ]": {"deviceProperties": [{"id": i, "dims": [[1], [2]]} for i in range(40)]},
}


def _event(i: int) -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1}


def _write(path: Path, count: int, tail: dict[str, Any]) -> Path:
    head = orjson.dumps({"schemaVersion": 1, "traceEvents": [_event(i) for i in range(count)]})
    path.write_bytes(head[:-1] + b", " + orjson.dumps(tail)[1:])
    return path


def _read_strictly(path: Path) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a tail read as truncation would warn
        return read_raw(path)


@pytest.mark.parametrize("tail", list(TAILS.values()), ids=list(TAILS))
def test_tail_keys_load_as_metadata(tmp_path: Path, tail: dict[str, Any]) -> None:
    decoded = _read_strictly(_write(tmp_path / "t.json", 7, tail))
    assert decoded.truncated is None
    assert len(decoded.columns) == 7
    for key, value in tail.items():
        assert decoded.metadata[key] == value


@pytest.mark.parametrize("tail", list(TAILS.values()), ids=list(TAILS))
def test_tail_keys_at_every_chunk_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tail: dict[str, Any]
) -> None:
    # small chunks put a cut near the array's end for some count: the next `}, {` is then
    # inside the tail (pg_config, deviceProperties), which once read as malformed JSON
    monkeypatch.setattr(kineto_json, "CHUNK_BYTES", 200)
    for count in range(1, 30):
        decoded = _read_strictly(_write(tmp_path / f"t{count}.json", count, tail))
        assert (len(decoded.columns), decoded.truncated) == (count, None), count
        assert decoded.metadata["schemaVersion"] == 1
        assert all(decoded.metadata[key] == value for key, value in tail.items())


def test_truncated_tail_is_still_a_truncation(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.json", 5, TAILS["distributedInfo list"])
    path.write_bytes(path.read_bytes()[:-20])
    with pytest.warns(UserWarning, match="truncated"):
        trace = hpuprof_load(path)
    assert len(trace.events) == 5


def hpuprof_load(path: Path) -> Any:
    import hpuprof

    return hpuprof.load(path, cache=False)
