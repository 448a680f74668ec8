"""`hpuprof --help` lists the commands from `COMMANDS` without importing their modules (issue
27: start-up); what it lists must be what click lists from the commands themselves."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from hpuprof.cli.main import COMMAND_MODULES, COMMANDS, build_app


@pytest.mark.parametrize("width", [30, 50, 80, 120, 240, 1000])
def test_the_listing_is_what_click_lists_from_the_commands(width: int) -> None:
    group = build_app()
    with click.Context(group) as ctx:
        from_table, from_commands = (
            click.HelpFormatter(width=width),
            click.HelpFormatter(width=width),
        )
        group.format_commands(ctx, from_table)
        click.Group.format_commands(group, ctx, from_commands)  # imports every command
    assert from_table.getvalue() == from_commands.getvalue()
    assert all(f"  {entry.name} " in from_table.getvalue() for entry in COMMANDS)


def test_each_summary_is_the_first_sentence_of_its_commands_help() -> None:
    group = build_app()
    with click.Context(group) as ctx:
        for entry in COMMANDS:
            command = group.get_command(ctx, entry.name)
            assert command is not None and command.name == entry.name
            assert command.get_short_help_str(10_000) == entry.summary, entry.name


def test_top_level_help_imports_no_command_module_nor_the_heap_tuning() -> None:
    code = (
        "import sys\nfrom hpuprof.cli.main import run\ntry:\n    run()\nexcept SystemExit:\n"
        "    pass\nprint('--loaded--' + ','.join(m for m in sys.modules "
        f"if m in {(*COMMAND_MODULES, 'ctypes', 'hpuprof.trace.heap')!r}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "--help"], capture_output=True, text=True, check=True
    )
    assert "Commands:" in done.stdout
    assert done.stdout.rpartition("--loaded--")[2].strip() == ""


def test_the_heap_is_tuned_once_a_command_runs() -> None:
    from hpuprof.cli import main as cli_main

    calls: list[str] = []
    assert cli_main.main(["--help"], before_command=lambda: calls.append("tuned")) == 0
    assert calls == []
    assert cli_main.main(["info", "--help"], before_command=lambda: calls.append("tuned")) == 0
    assert calls == ["tuned"]
