"""A script that fails under `hpuprof predict` gets no prediction: its error and the script's
line on stderr, a non-zero exit, nothing on stdout; one the kernel kills is reported with its
signal by the watching parent."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

STEP = """
import torch
import habana_frameworks.torch.core as htcore
model = torch.nn.Linear(8, 8).to("hpu")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    model(torch.randn(4, 8).to("hpu")).sum().backward()
    opt.step()
    htcore.mark_step()
"""


def _script(tmp_path: Path, tail: str) -> Path:
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(STEP) + textwrap.dedent(tail))
    return path


def test_a_script_that_raises_gets_its_error_and_line_and_no_figures(
    tmp_path: Path, run_predict: Any
) -> None:
    script = _script(tmp_path, "def broken(x):\n    return x + 'a'\nbroken(1)\n")
    code, out, err = run_predict(str(script))
    assert code == 1
    assert out == ""  # no step time, no `fits`
    line = len(script.read_text().splitlines()) - 1  # `return x + 'a'`
    assert f"failed at {script.resolve()}:{line} (in broken) with TypeError" in err
    assert "no prediction" in err


def test_a_script_that_exits_non_zero_gets_its_status(tmp_path: Path, run_predict: Any) -> None:
    code, out, err = run_predict(str(_script(tmp_path, "raise SystemExit(3)\n")))
    assert (code, out) == (3, "")
    assert "exited with status 3; no prediction" in err


def test_reading_the_data_of_a_fake_host_tensor_is_explained(
    tmp_path: Path, run_predict: Any
) -> None:
    code, out, err = run_predict(str(_script(tmp_path, "torch.randn(1024, 1024).numpy()\n")))
    assert (code, out) == (1, "")
    assert "with RuntimeError: .numpy() is not supported" in err
    assert "has a shape but no values" in err


def test_a_script_that_finishes_is_still_predicted(tmp_path: Path, run_predict: Any) -> None:
    code, out, _ = run_predict(str(_script(tmp_path, "")))
    assert code == 0 and '"step_time_s"' in out


def test_a_script_killed_by_a_signal_is_reported_by_the_watching_parent(tmp_path: Path) -> None:
    script = _script(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    entry = "from hpuprof.cli.main import run; run()"
    done = subprocess.run(
        [sys.executable, "-c", entry, "predict", "--", "python", str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 128 + 9, done.stderr
    assert done.stdout == ""
    assert "killed by SIGKILL after reaching" in done.stderr
    assert "no prediction" in done.stderr
