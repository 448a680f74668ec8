"""What capture writes loads with `hpuprof.load`: run directories, and keys after traceEvents."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from hpuprof.capture.stream_writer import ChunkedTraceWriter

from .helpers import try_load

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"


def _ev(i: int) -> dict[str, object]:
    return {"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1}


@pytest.mark.parametrize(
    "tail",
    [
        {"traceName": "/runs/exp]1/t.json"},
        {"note": "a]}"},
        {"deviceProperties": [{"name": "GAUDI2]"}], "x": [[1], [2]]},
    ],
)
def test_top_level_key_after_trace_events_with_bracket_loads(
    tmp_path: Path, tail: dict[str, object]
) -> None:
    # Kineto writes `traceName` after `traceEvents`; a `]` inside it once read as the array end
    path = tmp_path / "t.json"
    path.write_bytes(
        orjson.dumps({"schemaVersion": 1, "traceEvents": [_ev(i) for i in range(5)]})[:-1]
        + b","
        + orjson.dumps(tail)[1:]
    )
    assert list(orjson.loads(path.read_bytes()))[-1] == list(tail)[-1]
    trace = try_load(path)
    assert sorted(trace.events["name"].astype(str)) == [f"op{i}" for i in range(5)]


def test_writer_trace_in_a_directory_with_brackets_loads(tmp_path: Path) -> None:
    final = tmp_path / "run]x[" / "traces" / "t-rank0.pt.trace.json"
    final.parent.mkdir(parents=True)
    writer = ChunkedTraceWriter(final, {"schemaVersion": 1})
    writer.write([_ev(i) for i in range(3)])
    writer.close({"deviceProperties": [{"name": "a]"}]})
    assert list(orjson.loads(final.read_bytes()))[-1] == "traceName"
    assert len(try_load(final).events) == 3


def test_run_directory_loads_the_traces_its_manifest_lists() -> None:
    run = SAMPLES / "emulated_two_ranks"
    if not (run / "run.json").is_file():
        pytest.skip("the two-rank sample is not present")
    trace = try_load(run)  # run.json itself is not a trace
    assert sorted(int(r) for r in trace.events["rank"].unique()) == [0, 1]


def test_two_rank_sample_all_reduces_over_hccl_on_both_ranks() -> None:
    run = SAMPLES / "emulated_two_ranks"
    if not (run / "run.json").is_file():
        pytest.skip("the two-rank sample is not present")
    manifest = orjson.loads((run / "run.json").read_bytes())
    assert manifest["ranks"] == [0, 1] and manifest["world_size"] == 2
    for rank, rel in enumerate(manifest["traces"]):
        data = orjson.loads((run / rel).read_bytes())
        assert data["distributedInfo"] == {"rank": rank, "world_size": 2, "backend": "hccl"}
        events = data["traceEvents"]
        assert sum(e["name"] == "c10d::allreduce_" for e in events) == 16  # 4 params x 4 steps
        # a collective is the process group's job, never a CPU fallback
        assert not [e for e in events if e.get("args", {}).get("hpuprof.event") == "fallback"]
