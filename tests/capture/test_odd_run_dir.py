"""`hpuprof record` into a run directory whose name is not UTF-8 (issue 27): the manifest, the
stream, torch's export and the printed summary all take it; the run loads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import hpuprof
from hpuprof.capture.run_dir import read_manifest

from .helpers import child_env

pytest.importorskip("torch")


def test_record_into_a_directory_whose_name_is_not_utf8(tmp_path: Path) -> None:
    out = Path(os.fsdecode(os.fsencode(tmp_path) + b"/run\xff"))
    try:
        out.mkdir()
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system refuses names that are not UTF-8")
    script = tmp_path / "train.py"
    script.write_text("import torch\nx = torch.ones(4, 4)\nprint(torch.mm(x, x).sum().item())\n")
    record = ["record", "--backend", "cpu", "-o", out, "--", "python", str(script)]
    done = subprocess.run(
        [sys.executable, "-c", "from hpuprof.cli.main import run; run()", *record],
        env=child_env(PYTHONIOENCODING="utf-8:strict"),  # a terminal that refuses bad text
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert b"64.0" in done.stdout and b"run\\xff" in done.stdout
    manifest = read_manifest(out)
    assert manifest["end_state"] == "completed"
    assert any("run\\xff" in arg for arg in manifest["argv"])
    assert manifest["perfetto"] and (out / manifest["perfetto"][0]).is_file()
    trace = hpuprof.load(out)
    assert (trace.events["name"] == "aten::mm").sum() == 1
    assert not list(out.glob(".scratch-*"))
