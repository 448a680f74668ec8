"""Ctrl-C anywhere in the CLI, even while the command table or the arguments are read (outside
a command's own invoke), is one line and exit 130, never click's "Aborted!" and exit 1 (the
kill trials' SIGINT at 24 ms into a run found that)."""

from __future__ import annotations

from typing import Any

import pytest

from hpuprof.cli import main as cli_main


def test_ctrl_c_while_the_command_loads_exits_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(self: Any, ctx: Any, name: str) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_main.LazyGroup, "get_command", interrupted)
    assert cli_main.main(["info", "x.json"]) == cli_main.INTERRUPTED_EXIT
    err = capsys.readouterr().err
    assert "hpuprof: interrupted" in err and "Aborted!" not in err


def test_exit_codes_of_a_normal_run_help_and_a_usage_mistake(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli_main.main(["--help"]) == 0
    assert cli_main.main(["anlyze"]) == 2
    assert "Did you mean 'analyze'?" in capsys.readouterr().err
    assert cli_main.main(["info", "/nonexistent/x.json"]) != 0
