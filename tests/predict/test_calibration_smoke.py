"""A quick check of the calibration suite (the full run is `make calibrate`): its arithmetic,
its sources, and one tiny generation through `hpuprof predict` (HPU-graph replays on fake
tensors, the step layout the cases read)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

CALIB = Path(__file__).resolve().parents[2] / "bench" / "calibration"
sys.path.insert(0, str(CALIB))

from cases import CASES, _interp, _spans, _train_rate  # noqa: E402


def test_every_case_has_a_source_a_script_and_a_published_figure() -> None:
    assert len(CASES) >= 10
    assert {c.device for c in CASES} == {"gaudi2", "gaudi3"}
    for case in CASES:
        assert case.source.startswith("https://") and case.published > 0
        assert (CALIB / case.script).is_file()
        assert case.runs and all(args for args in case.runs.values())


def test_training_extrapolates_linearly_in_micro_batches() -> None:
    runs = {"accum1": {"step_time_s": 1.5}, "accum2": {"step_time_s": 2.5}}
    # 1 + 127 micro-batches of 1.0 s after a 0.5 s fixed part: 128 x 4096 tokens in 128.5 s
    assert _train_rate(runs, 128, 4096, 8) == pytest.approx(8 * 128 * 4096 / 128.5)


def test_decode_positions_one_per_bucket_and_interpolation() -> None:
    spans = _spans(128, 2048, 128, 5)
    assert spans[0] == 129 and spans[-1] == 2176 and len(spans) == 5
    times = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert _interp(spans, times, 129, 128) == 1.0
    assert _interp(spans, times, 2176, 128) == 5.0
    mid = _interp(spans, times, 700, 128)
    assert 1.0 < mid < 5.0


def test_a_tiny_generation_runs_through_predict(capsys: Any, monkeypatch: Any) -> None:
    from hpuprof.cli.main import main

    monkeypatch.delenv("PT_HPU_LAZY_MODE", raising=False)
    args = [
        "predict", "--format", "json", "--", "python", str(CALIB / "generate_decoder.py"),
        "--model", "llama2-7b", "--layers", "2", "--batch", "4", "--input-len", "64",
        "--output-len", "64", "--fp8", "--lengths", "65,128",
    ]  # fmt: skip
    code = main(args)
    import hpusim

    hpusim.disable()
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    times = data["step_times_s"]
    assert len(times) == 1 + 3 + 2 * 2  # init, prefill capture + 2 replays, 2 decode pairs
    assert times[3] <= times[2] * 1.01  # the steady replay the cases read
    assert max(times[3], times[7]) < min(times[1], times[4])  # replays beat their captures


def test_the_docs_table_is_the_saved_runs_output(tmp_path: Path) -> None:
    """docs/device-model.md's calibration table is what run.py renders from results.json."""
    import run

    rows = json.loads((CALIB / "results.json").read_text())
    assert [r["id"] for r in rows] == [c.id for c in CASES]
    assert run.markdown(rows) in run.DOC.read_text()  # regenerate: make calibrate
    doc = tmp_path / "doc.md"
    doc.write_text(f"head\n{run.BEGIN}\nstale\n{run.END}\ntail\n")
    run.update_docs(rows[:2], doc)
    text = doc.read_text()
    assert "stale" not in text and text.startswith("head\n") and text.endswith("tail\n")
    assert "g2-train-mpt-7b" not in text and "of 2 rows within 30%" in text
