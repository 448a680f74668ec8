"""`run_predict`: `hpuprof predict --format json -- python SCRIPT ARGS` in-process."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


@pytest.fixture
def run_predict(capsys: Any, monkeypatch: Any) -> Callable[..., tuple[int, str, str]]:
    """`run_predict(script, *args, options=(predict options)) -> (exit code, stdout,
    stderr)` (the runtime disabled after each run)."""
    from hpuprof.cli.main import main

    monkeypatch.setenv("PT_HPU_LAZY_MODE", "")  # --mode compile sets it: restored after the
    monkeypatch.delenv("PT_HPU_LAZY_MODE")  # test (a bare delenv of an unset name records nothing)

    def run(*command: str, options: tuple[str, ...] = ()) -> tuple[int, str, str]:
        capsys.readouterr()
        try:
            code = main(["predict", "--format", "json", *options, "--", "python", *command])
        finally:
            import hpusim

            hpusim.disable()
        out, err = capsys.readouterr()
        return code, out, err

    return run
