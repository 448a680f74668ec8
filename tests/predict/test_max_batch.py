"""`hpuprof predict --max-batch ARG`: the search (hpuprof.capture.max_batch) against brute
force, and the command on a script whose peak HBM is 1 GiB per sample."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hpuprof.capture.max_batch import batch_value, search_max_batch, with_batch


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    per_sample=st.integers(1, 1000),
    base=st.integers(0, 5000),
    caps=st.lists(st.integers(0, 200_000), min_size=1, max_size=3),
    start=st.integers(1, 300),
)
def test_search_finds_what_brute_force_finds(
    per_sample: int, base: int, caps: list[int], start: int
) -> None:
    limit = 512
    calls: list[int] = []

    def peak(b: int) -> int:
        calls.append(b)
        return base + per_sample * b

    capacities = {f"d{i}": c for i, c in enumerate(caps)}
    found = search_max_batch(peak, capacities, start, limit)
    for name, cap in capacities.items():
        best = max((b for b in range(1, limit + 1) if peak(b) <= cap), default=0)
        assert found.largest[name] == best
        assert found.at_limit[name] == (best == limit)
    assert found.runs == len(set(calls[: found.runs])) <= 2 * 10 * len(caps) + 2
    assert len({b for b, _ in found.tried}) == found.runs  # no batch run twice


def test_batch_argument_read_and_replaced() -> None:
    cmd = ["python", "t.py", "--batch", "8", "--seq=128"]
    assert batch_value(cmd, "--batch") == 8 and batch_value(cmd, "--seq") == 128
    assert batch_value(cmd, "--steps") is None
    assert with_batch(cmd, "--batch", 32)[3] == "32"
    assert with_batch(cmd, "--seq", 64)[4] == "--seq=64"
    assert with_batch(cmd, "--mb", 2)[-2:] == ["--mb", "2"]


def test_command_finds_the_largest_batch_of_each_device(run_predict: Any, tmp_path: Path) -> None:
    """1 GiB per sample: Gaudi 2's 94 GB usable HBM (87.54 GiB) holds 87 samples and the
    script's small rest, Gaudi 3's 126 GB (117.3 GiB) 117."""
    pytest.importorskip("torch")
    script = tmp_path / "batch.py"
    script.write_text(
        textwrap.dedent(
            """
            import argparse
            import torch
            import habana_frameworks.torch.core as htcore
            ap = argparse.ArgumentParser()
            ap.add_argument("--batch", type=int, default=4)
            args = ap.parse_args()
            x = torch.empty(args.batch, 2**29, dtype=torch.bfloat16, device="hpu")
            w = torch.empty(2**20, device="hpu", requires_grad=True)
            opt = torch.optim.SGD([w], lr=0.1)
            for _ in range(2):
                (w * x[0, : 2**20]).sum().backward()
                opt.step()
                htcore.mark_step()
            """
        )
    )
    options = ("--device", "gaudi2,gaudi3", "--max-batch", "--batch")
    code, out, err = run_predict(str(script), "--batch", "80", options=options)
    assert code == 0, err
    doc = json.loads(out)
    search = doc["max_batch"]
    assert search["largest"] == {"gaudi2": 87, "gaudi3": 117}
    assert doc["script_runs"] == len(search["tried"]) <= 14
    tried = {t["batch"]: t["peak_hbm_gib"] for t in search["tried"]}
    assert tried[87] < 87.54 < tried[88] and tried[117] < 117.35 < tried[118]
    preds = {p["device"]: p for p in doc["predictions"]}
    assert preds["gaudi2"]["batch"] == 87 and preds["gaudi2"]["fits"]
    assert preds["gaudi3"]["batch"] == 117 and preds["gaudi3"]["fits"]


def test_a_script_that_fails_during_the_search_gets_no_prediction(
    run_predict: Any, tmp_path: Path
) -> None:
    pytest.importorskip("torch")
    script = tmp_path / "fails.py"
    script.write_text("import sys\nif int(sys.argv[-1]) > 2:\n    raise TypeError('too big')\n")
    code, out, err = run_predict(str(script), "--batch", "2", options=("--max-batch", "--batch"))
    assert code == 1 and not out
    assert "with TypeError: too big; no prediction" in err
