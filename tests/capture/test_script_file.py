"""`hpuprof record -- python script.py` gives the script the `__file__` that `python script.py`
gives it: absolute (Python 3.9+), so a script that imports from `Path(__file__).parent.parent`
finds its neighbours (optimum-habana's `run_pipeline.py` imports `run_generation` so)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hpuprof.capture.runner import run_script


def test_a_script_named_relative_to_the_cwd_sees_its_absolute_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "shared_helper.py").write_text("VALUE = 42\n")
    inner = tmp_path / "pipeline"
    inner.mkdir()
    (inner / "script.py").write_text(
        "import sys\n"
        "from pathlib import Path\n"
        "sys.path.append(str(Path(__file__).parent.parent))\n"
        "from shared_helper import VALUE\n"
        "Path('seen.txt').write_text(f'{__file__}|{VALUE}')\n"
    )
    monkeypatch.chdir(inner)
    monkeypatch.delitem(sys.modules, "shared_helper", raising=False)
    outcome = run_script(["python", "script.py"])
    sys.modules.pop("shared_helper", None)
    assert outcome.exit_code == 0, outcome.error
    file, value = (inner / "seen.txt").read_text().split("|")
    assert Path(file).is_absolute()
    assert Path(file) == inner / "script.py"
    assert value == "42"
