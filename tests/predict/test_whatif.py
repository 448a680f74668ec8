"""`hpuprof predict --device A,B --cards 1,8,64`: one run, replayed per combination
(`hpusim.whatif`). The oracle: replaying the log on the run's own device and card count gives
the live prediction's figures exactly; a replay on another device or card count agrees with a
live run there (up to the measured host time of two different runs)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[2]
TRAIN = REPO / "bench" / "calibration" / "train_decoder.py"
DECODER = ("--model", "llama2-7b", "--layers", "1", "--seq", "256", "--steps", "3")

BIG = textwrap.dedent(
    """
    import torch
    import habana_frameworks.torch.core as htcore
    blocks = [torch.empty(2**30, dtype=torch.bfloat16, device="hpu") for _ in range(50)]
    w = torch.empty(2**30, dtype=torch.bfloat16, device="hpu")
    (w * 2).sum()
    htcore.mark_step()
    """
)
"""100 GiB of weights, then a kernel: over Gaudi 2's usable HBM, under Gaudi 3's."""
FIGURES = [
    *("step_time_s", "step_times_s", "micro_step_times_s", "samples_per_s", "tokens_per_s"),
    *("model_flops_per_step", "achieved_tflops_per_card", "mfu_pct", "compilations"),
    *("recompilations", "compile_time_s", "peak_hbm_gib", "hbm_gib", "fits", "oom_at"),
    *("host_bound_pct", "comm_pct", "warmup_steps", "samples_per_step", "tokens_per_step"),
    *("device", "cards", "steps", "mode"),
]


@pytest.fixture
def one_run(monkeypatch: pytest.MonkeyPatch) -> Any:
    """`one_run(device, cards, mode, *command, steps=3) -> OneRun`: the script run once with
    its work log recorded (the CLI's own path), the runtime disabled after."""
    from hpuprof.cli.commands.predict import _predict_run

    monkeypatch.delenv("PT_HPU_LAZY_MODE", raising=False)

    def run(device: str, cards: int, mode: str, *command: str, steps: int = 3) -> Any:
        result = _predict_run(["python", *command], device, cards, steps, None, mode, None, True)
        assert not isinstance(result, int), "the script failed"
        return result[0]

    yield run
    import hpusim

    hpusim.disable()


def _figures(pred: Any) -> dict[str, Any]:
    data = pred.to_json()
    return {k: data[k] for k in FIGURES}


@pytest.mark.parametrize(
    ("device", "cards", "mode", "extra"),
    [
        ("gaudi2", 1, "lazy", ()),
        ("gaudi2", 8, "lazy", ()),
        ("gaudi3", 64, "lazy", ()),
        ("gaudi2", 8, "eager", ()),
        ("gaudi2", 16, "lazy", ("--tp", "2", "--accum", "2")),  # TP collectives, micro-steps
        ("gaudi2", 8, "compile", ("compiled",)),  # torch.compile, a graph break, host-built
    ],
    ids=["lazy-1", "lazy-8", "gaudi3-lazy-64", "eager-8", "tp2-accum2-16", "compile-8"],
)
def test_replay_of_the_run_equals_the_live_prediction(
    one_run: Any, tmp_path: Path, device: str, cards: int, mode: str, extra: tuple[str, ...]
) -> None:
    from hpusim.whatif import Combination

    command = (str(TRAIN), *DECODER, *extra)
    if extra == ("compiled",):
        from .test_training_kernels import COMPILED

        script = tmp_path / "compiled.py"
        script.write_text(textwrap.dedent(COMPILED))
        command = (str(script),)
    one = one_run(device, cards, mode, *command)
    assert one.log is not None and one.log.events
    replayed = one.predict(Combination(device, cards), replayed=True)
    assert _figures(replayed) == _figures(one.live)
    assert one.live.step_time_s and one.live.mfu_pct
    if cards > 1:
        assert one.live.comm_pct is not None
    # the replay is priced again, not copied: another device gives other figures
    other = one.predict(Combination("gaudi3" if device == "gaudi2" else "gaudi2", cards))
    assert other.mfu_pct != one.live.mfu_pct
    if extra != ("compiled",):  # (the toy's small matmuls run on Gaudi 3's TPCs: no MME FLOPs)
        assert other.model_flops_per_step == one.live.model_flops_per_step


def test_replay_on_another_device_and_one_card_agrees_with_a_live_run(one_run: Any) -> None:
    """A device-bound step (a 7B-shaped layer, batch 8 x seq 4096: the device idles ~7 % of
    it): the replay of a gaudi2 x 8 run on gaudi3 x 1 against a live gaudi3 x 1 run (two runs:
    the script's measured host time differs a little)."""
    from hpusim.whatif import Combination

    command = (str(TRAIN), "--model", "llama2-7b", "--layers", "1", "--seq", "4096")
    command += ("--batch", "8", "--steps", "4")
    one = one_run("gaudi2", 8, "lazy", *command, steps=4)
    replayed = one.predict(Combination("gaudi3", 1))
    live = one_run("gaudi3", 1, "lazy", *command, steps=4).live
    assert replayed.comm_pct == live.comm_pct == pytest.approx(0.0, abs=1e-9)
    assert replayed.model_flops_per_step == live.model_flops_per_step
    assert replayed.compilations == live.compilations
    # the device's part agrees closely; the step, with the host's idle gaps, within the two
    # runs' host noise (4-7 % idle measured at load 8)
    assert _busy_s(replayed) == pytest.approx(_busy_s(live), rel=0.02)
    assert replayed.step_time_s == pytest.approx(live.step_time_s, rel=0.05)
    assert replayed.mfu_pct == pytest.approx(live.mfu_pct, rel=0.05)
    # and the card counts scale the all-reduce: more cards, more exposed communication time
    eight, sixty_four = (one.predict(Combination("gaudi2", n)) for n in (8, 64))
    assert eight.step_time_s is not None and sixty_four.step_time_s is not None
    assert sixty_four.step_time_s >= eight.step_time_s


def _busy_s(pred: Any) -> float:
    """The step's device-busy seconds (the median step less its mean idle share)."""
    assert pred.step_time_s is not None and pred.host_bound_pct is not None
    busy: float = pred.step_time_s * (1 - pred.host_bound_pct / 100)
    return busy


def test_memory_fits_on_one_device_and_not_the_other(one_run: Any, tmp_path: Path) -> None:
    """100 GiB of weights: over Gaudi 2's 94 GB usable HBM, under Gaudi 3's 126 GB; the replay
    says where Gaudi 2 runs out, as a live Gaudi 2 run does."""
    from hpusim.whatif import Combination

    script = tmp_path / "big.py"
    script.write_text(BIG)
    one = one_run("gaudi3", 1, "lazy", str(script))
    assert one.live.fits and one.live.oom_at is None
    g2 = one.predict(Combination("gaudi2", 1))
    assert not g2.fits and g2.oom_at is not None and "in use of 87.54 GiB" in g2.oom_at
    live_g2 = one_run("gaudi2", 1, "lazy", str(script)).live
    assert g2.oom_at == live_g2.oom_at


def test_the_table_says_where_a_combination_runs_out_of_memory(
    run_predict: Any, tmp_path: Path
) -> None:
    from hpuprof.cli.commands.predict import format_whatif

    script = tmp_path / "big.py"
    script.write_text(BIG)
    code, out, err = run_predict(str(script), options=("--device", "gaudi2,gaudi3"))
    assert code == 0, err
    doc = json.loads(out)
    text = format_whatif(doc)
    rows = {line.split()[0]: line for line in text.splitlines()[2:4]}
    assert rows["gaudi2"].endswith(" no") and rows["gaudi3"].endswith(" yes")
    g2 = doc["predictions"][0]
    assert f"gaudi2 x 1 would run out of memory at {g2['oom_at']}" in text
    assert "gaudi3 x 1 would run out" not in text


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("--device", "gaudi2,gaudi4"), "unknown 'gaudi4'; choose from gaudi2, gaudi3"),
        (("--cards", "1,12"), "'12' is not a card count; choose 1-8 in one server or a multiple"),
        (("--cards", "eight"), "'eight' is not a card count"),
        (("--cards", "0"), "'0' is not a card count"),
    ],
)
def test_bad_device_or_cards_names_the_choices(
    run_predict: Any, tmp_path: Path, options: tuple[str, ...], message: str
) -> None:
    script = tmp_path / "never.py"
    script.write_text("raise SystemExit('the script must not run')\n")
    code, out, err = run_predict(str(script), options=options)
    assert code == 2 and not out
    assert message in err and "Traceback" not in err


def test_json_has_one_prediction_per_combination_from_one_run(run_predict: Any) -> None:
    code, out, err = run_predict(
        str(TRAIN), *DECODER, options=("--device", "gaudi2,gaudi3", "--cards", "1,8,64")
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["script_runs"] == 1 and doc["run"]["device"] == "gaudi2"
    assert doc["run"]["cards"] == 64
    combos = [(p["device"], p["cards"]) for p in doc["predictions"]]
    assert combos == [(d, c) for d in ("gaudi2", "gaudi3") for c in (1, 8, 64)]
    assert doc["replay_seconds"][2] is None  # gaudi2 x 64: the run itself
    assert all(s is not None and s < doc["run"]["seconds"] for i, s in
               enumerate(doc["replay_seconds"]) if i != 2)  # fmt: skip
    one_card = doc["predictions"][0]
    assert one_card["comm_pct"] == 0 and doc["predictions"][1]["comm_pct"] > 0
    text = _whatif_text(doc)
    for p in doc["predictions"]:
        assert f"{p['step_time_s'] * 1e3:,.1f} ms" in text


def _whatif_text(doc: dict[str, Any]) -> str:
    from hpuprof.cli.commands.predict import format_whatif

    text: str = format_whatif(doc)
    return text
