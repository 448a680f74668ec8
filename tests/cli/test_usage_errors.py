"""A usage mistake gets click's usage line, what was wrong, a suggestion and exit 2 (issue 25).

Exit 70 ("internal error ... please report it") is kept for hpuprof's own bugs; a command's
returned code is still the process's exit code.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hpuprof.cli.main import COMMAND_MODULES, INTERNAL_ERROR_EXIT, main
from tests.cli.usage_text import usage_error
from tests.conftest import REPO_ROOT, SAMPLE_TRACES
from tests.multirank.ranks import write_run

LAZY = SAMPLE_TRACES / "emulated_lazy"
TOP_USAGE = "Usage: hpuprof [OPTIONS] COMMAND [ARGS]..."


def _hpuprof(*argv: str) -> subprocess.CompletedProcess[str]:
    """The installed entry point's code path, in a fresh process."""
    command = [sys.executable, "-c", "from hpuprof.cli.main import run; run()", *argv]
    env = {k: v for k, v in os.environ.items() if k != "HPUPROF_DEBUG"}
    return subprocess.run(
        command, capture_output=True, text=True, timeout=120, cwd=REPO_ROOT, env=env
    )


@pytest.mark.parametrize(
    ("argv", "command", "message"),
    [
        (
            ["analyze", str(LAZY), "--no-cache"],
            "analyze",
            "Error: No such option '--no-cache'. (Did you mean one of: '--name', '--no-color'?)",
        ),
        (["analyze"], "analyze", "Error: Missing argument"),
        (["anlyze"], "", "Error: No such command 'anlyze'. Did you mean 'analyze'?"),
        (["analyze", str(LAZY), "-w", "many"], "analyze", "Invalid value for '--workers'"),
        # a bad value that hpuprof itself checks (`hpuprof.errors.UsageError`)
        (["analyze", str(LAZY), "-f", "pdf"], "analyze", "Error: unknown format 'pdf'"),
        (["diff", str(LAZY), str(LAZY), "-f", "pdf"], "diff", "unknown format"),
    ],
)
def test_usage_mistake_gets_usage_message_and_exit_2(
    argv: list[str], command: str, message: str
) -> None:
    done = _hpuprof(*argv)
    assert done.returncode == 2, done.stderr
    assert message in usage_error(done.stderr, command)
    assert done.stdout == ""


def test_no_command_shows_the_commands() -> None:
    done = _hpuprof()
    assert done.returncode == 2
    shown = done.stdout + done.stderr
    assert shown.startswith(TOP_USAGE)
    for module in COMMAND_MODULES:
        assert f"\n  {module.rsplit('.', 1)[1]} " in shown


@pytest.mark.parametrize("command", ["", *(m.rsplit(".", 1)[1] for m in COMMAND_MODULES)])
def test_help_shows_no_bool_metavar_for_flags(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, "--help"] if command else ["--help"]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"Usage: hpuprof {command}".rstrip())
    assert "--help" in shown and "Show this message and exit." in shown
    assert "<bool>" not in shown


def test_analyze_help_lists_its_flags_bare(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", "--help"]) == 0
    lines = capsys.readouterr().out.splitlines()
    drop = next(line for line in lines if "--drop-last-step" in line)
    assert drop.split()[:2] == ["--drop-last-step", "Drop"]


def _summarize_raises(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    """`hpuprof info` fails inside the command, where a bug of ours would."""
    import hpuprof.trace.directory_summary
    import hpuprof.trace.summary

    def broken_summary(*_args: object, **_kwargs: object) -> None:
        raise error

    monkeypatch.setattr(hpuprof.trace.summary, "summarize", broken_summary)  # a file
    monkeypatch.setattr(hpuprof.trace.directory_summary, "merge_parts", broken_summary)  # a dir


def test_a_bug_of_ours_is_still_internal_error_70(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("HPUPROF_DEBUG", raising=False)
    _summarize_raises(monkeypatch, ZeroDivisionError("a bug in summarize"))
    assert main(["info", str(LAZY)]) == INTERNAL_ERROR_EXIT
    assert capsys.readouterr().err.strip().splitlines() == [
        "hpuprof: internal error: ZeroDivisionError: a bug in summarize "
        "(set HPUPROF_DEBUG=1 for the traceback, and please report it)"
    ]


def test_a_bug_of_ours_reraises_with_debug(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HPUPROF_DEBUG", "1")
    _summarize_raises(monkeypatch, ZeroDivisionError("a bug in summarize"))
    with pytest.raises(ZeroDivisionError, match="a bug in summarize"):
        main(["info", str(LAZY)])


def test_ctrl_c_is_one_line_and_exit_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _summarize_raises(monkeypatch, KeyboardInterrupt())
    assert main(["info", str(LAZY)]) == 130
    assert capsys.readouterr().err.strip().splitlines() == ["hpuprof: interrupted"]


def test_a_command_returned_code_is_the_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    write_run(run, ranks=2, straggler=1)
    (run / "rank2.json").write_text('{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": ]}')
    out = tmp_path / "report.json"
    code = main(["analyze", str(run), "-w", "1", "-r", "distributed", "-o", str(out)])
    assert code == 1  # a rank was not analysed: analyze_by_rank returned 1
    assert f"rank not analysed: {run / 'rank2.json'}" in capsys.readouterr().err
    assert out.stat().st_size > 0


def test_main_leaves_no_excepthook_behind() -> None:
    hook = sys.excepthook
    assert main(["--help"]) == 0
    assert sys.excepthook is hook


def test_every_option_says_what_it_does() -> None:
    import click

    from hpuprof.cli.main import build_app

    group = build_app()
    with click.Context(group) as ctx:
        commands = [group.get_command(ctx, name) for name in group.list_commands(ctx)]
    silent = [
        f"{command.name} {param.opts[0]}"
        for command in commands
        if command is not None
        for param in command.params
        if param.param_type_name == "option" and not (param.help or "").strip()
    ]
    assert not silent
