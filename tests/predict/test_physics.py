"""The device model's physics, without published data: `hpuprof predict` on scripts whose
answer is known in kind (more layers take longer in proportion, bf16 beats fp32, a toy is
host-bound and a 7B-shaped layer stack device-bound), plus the prediction's JSON surface."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[2]
TRAIN = REPO / "bench" / "calibration" / "train_decoder.py"

ISSUE_KEYS = [
    *("device", "cards", "steps", "step_time_s", "samples_per_s", "tokens_per_s"),
    *("model_flops_per_step", "achieved_tflops_per_card", "mfu_pct", "compilations"),
    *("recompilations", "compile_time_s", "peak_hbm_gib", "hbm_gib", "fits", "oom_at"),
    *("host_bound_pct", "comm_pct", "timeline", "assumptions"),
]


@pytest.fixture
def predict(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """`predict(args, script args...) -> dict`: `hpuprof predict --format json` in-process."""
    from hpuprof.cli.main import main

    monkeypatch.delenv("PT_HPU_LAZY_MODE", raising=False)

    def run(options: list[str], *command: str) -> dict[str, Any]:
        capsys.readouterr()
        code = main(["predict", "--format", "json", *options, "--", "python", *command])
        out = capsys.readouterr().out
        assert code == 0, out
        data: dict[str, Any] = json.loads(out)
        return data

    yield run
    import hpusim

    hpusim.disable()


def _decoder(
    predict: Any, *args: str, options: tuple[str, ...] = (), steps: int = 3
) -> dict[str, Any]:
    return predict(["--steps", str(steps), *options], str(TRAIN), *args, "--steps", str(steps))


def test_json_has_exactly_the_issue_keys_first(predict: Any) -> None:
    data = _decoder(predict, "--model", "llama2-7b", "--layers", "1", "--seq", "128")
    assert list(data)[: len(ISSUE_KEYS)] == ISSUE_KEYS
    assert data["timeline"] == "projected" and data["device"] == "gaudi2"
    assert data["steps"] == 3 and data["compilations"] >= 2
    assert data["tokens_per_s"] == pytest.approx(128 / data["step_time_s"], rel=1e-6)
    assert isinstance(data["assumptions"], list) and data["assumptions"]
    assert data["fits"] is True and data["oom_at"] is None


def test_doubling_the_layers_doubles_the_step_time(predict: Any) -> None:
    args = ("--model", "llama2-7b", "--seq", "2048")
    eight = _decoder(predict, *args, "--layers", "8", steps=4)["step_time_s"]
    sixteen = _decoder(predict, *args, "--layers", "16", steps=4)["step_time_s"]
    ratio = sixteen / eight
    # the embedding, LM head and loss do not double (about 0.65 of a block at 7B widths): at
    # 8 -> 16 layers the blocks' doubling shows as ~1.93, clear of the 10% bound (at 4 -> 8 it
    # is ~1.86, and the script's measured host time moved it to the bound on a loaded machine)
    assert 1.8 <= ratio <= 2.2, ratio


def test_bf16_is_faster_than_fp32(predict: Any) -> None:
    args = ("--model", "llama2-7b", "--layers", "2", "--seq", "2048")
    bf16 = _decoder(predict, *args)["step_time_s"]
    fp32 = _decoder(predict, *args, "--fp32")["step_time_s"]
    assert bf16 < 0.6 * fp32


def test_fp8_linear_layers_are_faster_than_bf16(predict: Any) -> None:
    args = ("--model", "llama2-7b", "--layers", "2", "--seq", "8192")
    bf16 = _decoder(predict, *args)
    fp8 = _decoder(predict, *args, "--fp8")
    assert fp8["step_time_s"] < 0.9 * bf16["step_time_s"]


def test_a_toy_is_host_bound_and_a_7b_layer_stack_device_bound(
    predict: Any, tmp_path: Path
) -> None:
    toy = tmp_path / "toy.py"
    toy.write_text(
        textwrap.dedent(
            """
            import torch
            import habana_frameworks.torch.core as htcore

            model = torch.nn.Sequential(
                torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)
            ).to("hpu")
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(6):
                x = torch.randn(16, 32).to("hpu")
                loss = model(x).square().mean()
                loss.backward()
                opt.step()
                opt.zero_grad()
                htcore.mark_step()
                print(loss.item())
            """
        )
    )
    small = predict(["--steps", "5"], str(toy))
    assert small["host_bound_pct"] > 80, small
    big = _decoder(predict, "--model", "llama2-7b", "--layers", "4", "--seq", "4096")
    assert big["host_bound_pct"] < 50, big  # the device is busy most of the step
    assert big["mfu_pct"] > 20


def test_data_parallel_cards_add_overlapped_communication(predict: Any) -> None:
    args = ("--model", "llama2-7b", "--layers", "2", "--seq", "4096")
    one = _decoder(predict, *args)
    eight = _decoder(predict, *args, options=("--cards", "8"))
    assert eight["cards"] == 8 and one["comm_pct"] == 0
    assert 0 < eight["comm_pct"] < 50
    assert eight["step_time_s"] >= one["step_time_s"]
    assert eight["tokens_per_s"] > 5 * one["tokens_per_s"]  # near-linear scaling


def test_a_card_too_small_says_where_it_runs_out(predict: Any) -> None:
    data = _decoder(predict, "--model", "llama2-13b", "--layers", "24", "--seq", "256")
    assert data["fits"] is False
    assert data["peak_hbm_gib"] > data["hbm_gib"] * 0.9
    assert data["oom_at"] and "requested" in data["oom_at"]


def test_host_reads_get_stand_ins_named_by_line(predict: Any, tmp_path: Path) -> None:
    script = tmp_path / "reads.py"
    script.write_text(
        textwrap.dedent(
            """
            import torch
            import habana_frameworks.torch.core as htcore

            x = torch.randn(4, 4).to("hpu")
            for step in range(2):
                y = (x @ x).sum()
                if bool(y > 0):        # data-dependent control flow
                    y = y * 2
                htcore.mark_step()
                print(y.item(), y.tolist(), y.cpu())
            """
        )
    )
    with pytest.warns(RuntimeWarning, match=r"reads\.py:8 reads a value that was never"):
        data = predict([], str(script))
    assert any(s.startswith("reads.py:8:") for s in data["standins"])
    assert any(s.startswith("reads.py:11:") for s in data["standins"])
