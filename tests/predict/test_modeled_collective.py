"""`hpusim.predict.modeled_collective`, the tensor-parallel collective a script's shard hands to
the emulator: whatever reads its output waits for it on the modeled device, for as long as
`DeviceTimeline.collective_ns` says, in lazy and in eager mode."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

SCRIPT = textwrap.dedent(
    """
    import sys
    import torch
    import habana_frameworks.torch.core as htcore
    from hpusim.predict import modeled_collective

    gather = sys.argv[1] == "1"
    w = torch.ones(4096, 8192, device="hpu", dtype=torch.bfloat16)
    for step in range(4):
        x = torch.ones(1, 1024, 4096, device="hpu", dtype=torch.bfloat16)
        full = x.new_empty((1, 4096, 4096))
        if gather:
            full = modeled_collective("all_gather", x, full, 4)
        y = full @ w
        htcore.mark_step()
    """
)


def _step(tmp_path: Path, capsys: Any, monkeypatch: Any, mode: str, gather: bool) -> float:
    from hpuprof.cli.main import main

    monkeypatch.delenv("PT_HPU_LAZY_MODE", raising=False)
    script = tmp_path / "tp.py"
    script.write_text(SCRIPT)
    capsys.readouterr()
    code = main(
        [
            "predict",
            "--format",
            "json",
            "--mode",
            mode,
            "--",
            "python",
            str(script),
            str(int(gather)),
        ]
    )
    import hpusim

    hpusim.disable()
    out = capsys.readouterr().out
    assert code == 0, out
    data: dict[str, Any] = json.loads(out)
    return float(data["step_time_s"])


@pytest.mark.parametrize("mode", ["lazy", "eager"])
def test_the_consumer_of_an_all_gather_waits_for_it(
    tmp_path: Path, capsys: Any, monkeypatch: Any, mode: str
) -> None:
    from hpusim.device_model import DeviceTimeline, load_profile

    expected = DeviceTimeline(load_profile("gaudi2")).collective_ns(
        "all_gather", 4096 * 4096 * 2, 4
    )
    with_ag = _step(tmp_path, capsys, monkeypatch, mode, True)
    without = _step(tmp_path, capsys, monkeypatch, mode, False)
    assert (with_ag - without) * 1e9 == pytest.approx(expected, rel=0.05)


def test_an_unknown_collective_is_a_clear_error() -> None:
    from hpusim.predict import modeled_collective

    with pytest.raises(ValueError, match="not one of"):
        modeled_collective("all_to_all", None, None, 4)
