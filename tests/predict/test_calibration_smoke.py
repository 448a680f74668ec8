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

from cases import CASES, _interp, _spans, train_step_s  # noqa: E402


def test_every_case_has_a_source_a_script_and_a_published_figure() -> None:
    assert len(CASES) >= 10
    assert {c.device for c in CASES} == {"gaudi2", "gaudi3"}
    for case in CASES:
        assert case.source.startswith("https://") and case.published > 0
        assert (CALIB / case.script).is_file()
        assert case.runs and all(args for args in case.runs.values())


def test_training_extrapolates_the_last_micro_batch_of_one_run() -> None:
    # the last step: 0.5 s (first micro-batch, with its host time), 0.4 s (an accumulating
    # one), 0.6 s (the optimizer); 128 micro-batches add 126 more of 0.4 s
    run = {"step_times_s": [9.0, 1.5], "micro_step_times_s": [[5.0, 3.0, 1.0], [0.5, 0.4, 0.6]]}
    assert train_step_s(run, 128) == pytest.approx(1.5 + 126 * 0.4)
    assert train_step_s(run, 2) == pytest.approx(1.5)
    with pytest.raises(ValueError, match="at least 2 micro-batches"):
        train_step_s({"step_times_s": [1.0], "micro_step_times_s": [[0.5, 0.5]]}, 8)


def _predict_json(capsys: Any, monkeypatch: Any, script: str, *args: str) -> dict[str, Any]:
    from hpuprof.cli.main import main

    monkeypatch.delenv("PT_HPU_LAZY_MODE", raising=False)
    code = main(["predict", "--format", "json", "--", "python", str(CALIB / script), *args])
    import hpusim

    hpusim.disable()
    assert code == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


def test_micro_batches_of_a_step_and_a_tensor_parallel_shard(capsys: Any, monkeypatch: Any) -> None:
    """One run cuts each optimizer step at its mark_steps: the accumulating micro-batch of a
    device-bound step is its graph's device time, the same in every steady step; a TP-2 shard
    with sequence parallelism runs half the matmul FLOPs plus modeled collectives."""
    common = [
        "--model", "llama2-7b", "--layers", "1", "--seq", "2048", "--batch", "1",
        "--accum", "3", "--steps", "3",
    ]  # fmt: skip
    full = _predict_json(capsys, monkeypatch, "train_decoder.py", *common)
    micro = full["micro_step_times_s"]
    assert [len(m) for m in micro] == [4, 4, 4]  # 3 micro-batches, then the optimizer
    for m, t in zip(micro, full["step_times_s"], strict=True):
        assert sum(m) == pytest.approx(t, rel=1e-6)
    assert micro[2][1] == pytest.approx(micro[2][2], rel=1e-9)  # same graph, same device time
    assert micro[2][1] == pytest.approx(micro[1][2], rel=1e-9)
    shard = _predict_json(
        capsys, monkeypatch, "train_decoder.py", *common, "--tp", "2", "--recompute-attention"
    )
    assert shard["model_flops_per_step"] < 0.6 * full["model_flops_per_step"]
    assert shard["comm_pct"] > 0 and full["comm_pct"] == 0


def test_decode_positions_one_per_bucket_and_interpolation() -> None:
    spans = _spans(128, 2048, 128, 5)
    assert spans[0] == 129 and spans[-1] == 2176 and len(spans) == 5
    times = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert _interp(spans, times, 129, 128) == 1.0
    assert _interp(spans, times, 2176, 128) == 5.0
    mid = _interp(spans, times, 700, 128)
    assert 1.0 < mid < 5.0


def test_a_tiny_generation_runs_through_predict(capsys: Any, monkeypatch: Any) -> None:
    args = [
        "--model", "llama2-7b", "--layers", "2", "--batch", "4", "--input-len", "64",
        "--output-len", "64", "--fp8", "--lengths", "65,128",
    ]  # fmt: skip
    data = _predict_json(capsys, monkeypatch, "generate_decoder.py", *args)
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
    assert "g2-train-mpt-7b" not in text and "all rows: 2 rows: mean" in text
    assert "Held-out rows" in text and "of 2 within 25%" in text


def test_the_summary_reports_all_and_held_out_rows() -> None:
    """Rows a constant was fitted on are left out of the held-out figures."""
    import run

    rows = [
        {"id": "a", "device": "gaudi2", "family": "llm", "error_pct": 10.0, "held_out": True},
        {"id": "b", "device": "gaudi3", "family": "vision", "error_pct": -30.0, "held_out": False},
        {"id": "c", "device": "gaudi3", "family": "llm", "error_pct": 2.0, "held_out": True},
    ]
    text = run.summary(rows)  # type: ignore[arg-type]
    assert "all rows: 3 rows: mean 14.0%, median 10.0%, max 30.0% (b)" in text
    assert "(no constant fitted on them): 2 rows: mean 6.0%, median 6.0%, max 10.0% (a)" in text
    assert "1 non-LLM rows, 2 Gaudi 3 rows; 2 of 3 within 25%" in text


def test_the_image_loader_is_fitted_leave_one_out_and_bounds_the_step() -> None:
    """An image-classification row's loader time per image comes from the other rows of its
    server, never its own published figure; the slower of step and loader sets the rate."""
    import dataclasses

    import cases

    vision = [c for c in CASES if cases.LOADER_FIT in c.fitted]
    assert {c.device for c in vision} == {"gaudi2", "gaudi3"}
    for case in vision:
        others = [c for c in vision if c.device == case.device and c.id != case.id]
        expected = sum(1 / c.published for c in others) / len(others)
        assert cases.loader_s_per_image(case.device, case.id) == pytest.approx(expected)
        batch = int(case.shape.split()[1])
        fast = {"train": {"step_time_s": 1e-3}}  # a device far faster than the loader
        assert case.predict(fast) == pytest.approx(1 / expected)
        slow = {"train": {"step_time_s": 10.0}}  # a step slower than the loader
        assert case.predict(slow) == pytest.approx(batch / 10.0)
    # the row's own published figure does not move its prediction
    row = vision[0]
    before = row.predict({"train": {"step_time_s": 1e-3}})
    i = CASES.index(row)
    try:
        CASES[i] = dataclasses.replace(row, published=row.published * 5)
        assert CASES[i].predict({"train": {"step_time_s": 1e-3}}) == pytest.approx(before)
    finally:
        CASES[i] = row
    with pytest.raises(ValueError, match="no other image-classification row"):
        cases.loader_s_per_image("gaudi1", "x")


def test_mrpc_counts_samples_as_the_trainer_does() -> None:
    """MRPC's 3,668 examples pad to 15 steps of 256 an epoch on one card; the Trainer counts
    3,668 x 3 less 3 warmup steps of 256 over the 42 steps after them. A data set of whole
    batches counts what it trains; the 8-card rows are not scaled."""
    import cases

    assert cases.counted_share(3668, 3, 256) == pytest.approx((11004 - 768) / (42 * 256))
    assert cases.counted_share(256 * 10, 2, 256) == pytest.approx(1.0)
    mrpc = [c for c in CASES if "mrpc" in c.id]
    assert {c.device for c in mrpc} == {"gaudi2", "gaudi3"}
    for case in mrpc:
        got = case.predict({"train": {"step_time_s": 0.1}})
        assert got == pytest.approx(2560 * (11004 - 768) / (42 * 256))
    squad8 = next(c for c in CASES if c.id == "g2-ft-roberta-large-squad-8")
    assert squad8.predict({"train": {"step_time_s": 0.1}}) == pytest.approx(8 * 32 / 0.1)


def test_the_squad_rows_run_the_compiled_recipe_their_tests_run() -> None:
    """optimum-habana's question-answering example tests run `torch_compile=True`
    (tests/test_examples.py): the SQuAD rows compile the model (hpu_backend) and predict in
    compile mode; the other optimum-habana rows stay lazy, as their tests run."""
    from cases import CASES

    squad = [c for c in CASES if "squad" in c.id]
    assert len(squad) == 4
    for case in squad:
        assert "--torch-compile" in case.runs["train"], case.id
        at = list(case.predict_args).index("--mode")
        assert case.predict_args[at + 1] == "compile", case.id
        assert "torch.compile" in case.note
    for case in (c for c in CASES if "mrpc" in c.id):
        assert "--torch-compile" not in case.runs["train"]
        assert "--mode" not in case.predict_args


def test_mpt_attention_is_llm_foundrys_alibi_path() -> None:
    """MPT's attention (LLM Foundry's attn_impl torch) equals causal SDPA with the ALiBi bias
    as an additive mask; its slopes are 2^(-8 h / heads) per head."""
    import dataclasses

    import torch
    from models import CONFIGS, Attention, alibi_bias

    bias = alibi_bias(4, 6, torch.device("cpu"))
    assert bias.shape == (1, 4, 1, 6) and bias.dtype == torch.float32
    assert bias[0, 0, 0, 0].item() == pytest.approx(-5 * 2**-2)  # offset -5, slope 2^(-8/4)
    assert bias[0, 3, 0, 0].item() == pytest.approx(-5 * 2**-8)
    assert CONFIGS["mpt-7b"].attention == "alibi" and CONFIGS["llama2-7b"].attention == "sdpa"
    cfg = dataclasses.replace(CONFIGS["mpt-7b"], hidden=32, heads=4, kv_heads=4)
    attn = Attention(cfg, fp8=False)
    q, k, v = (torch.randn(2, 4, 6, 8) for _ in range(3))
    causal = torch.full((6, 6), float("-inf")).triu(1)
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias + causal)
    assert torch.allclose(attn._alibi_attention(q, k, v), expected, atol=1e-5)
    with pytest.raises(ValueError, match="one card only"):
        Attention(cfg, fp8=False, tp=2)
