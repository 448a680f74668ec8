"""`main(argv)` turns every failure into one line and an exit code."""

from __future__ import annotations

import pytest

from hpuprof.cli import main as cli_main


def _boom(*_args: object, **_kwargs: object) -> None:
    raise ValueError("boom")


def test_unexpected_exception_is_one_line_and_exit_70(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("HPUPROF_DEBUG", raising=False)
    monkeypatch.setattr(cli_main, "build_app", lambda: _boom)
    assert cli_main.main(["info", "x"]) == cli_main.INTERNAL_ERROR_EXIT
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "hpuprof: internal error: ValueError: boom "
        "(set HPUPROF_DEBUG=1 for the traceback, and please report it)"
    ]


def test_debug_env_reraises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HPUPROF_DEBUG", "1")
    monkeypatch.setattr(cli_main, "build_app", lambda: _boom)
    with pytest.raises(ValueError, match="boom"):
        cli_main.main(["info", "x"])
