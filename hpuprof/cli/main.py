"""`hpuprof` entry point: a click group over the command table, mapping errors to exit codes.

Each command lives in its own module under `hpuprof.cli.commands`, which holds the click
command of its own name (`hpuprof.cli.commands.info.info`), built with `hpuprof.cli.command`.
`COMMANDS` names each command's module and the summary `hpuprof --help` lists for it, so the
top-level help imports no command module; the group imports a command's module only when that
command is asked for (`hpuprof info ...` imports `info` alone). Command modules import nothing
heavy at module level (no pandas, no torch, no dash): those imports live inside the command
function. A test checks each summary against its command's own help.

Usage mistakes (an unknown option or command, a missing argument, a bad value) are click's to
report: its usage line, what was wrong, "Did you mean ...?", exit 2; an
`hpuprof.errors.UsageError` raised by a command joins them (`HpuprofCommand`).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from gettext import gettext as _
from typing import Any

import click

from hpuprof.cli.command import INTERRUPTED_EXIT, HpuprofCommand
from hpuprof.errors import HpuprofError


@dataclass(frozen=True)
class CommandEntry:
    """A command of the table: its module, and what `hpuprof --help` lists for it.

    Args:
        module: the module holding the command (its last name is the command's name).
        summary: the first sentence of the command's help (click shortens it to the terminal's
            width as it shortens the command's own help).
    """

    module: str
    summary: str

    @property
    def name(self) -> str:
        return self.module.rsplit(".", 1)[1]


_PACKAGE = "hpuprof.cli.commands"
COMMANDS: tuple[CommandEntry, ...] = (
    CommandEntry(
        f"{_PACKAGE}.info",
        "Events, time span, ranks, devices, categories, kinds, steps and format of a trace.",
    ),
    CommandEntry(
        f"{_PACKAGE}.convert",
        "Convert a trace: .json, .json.gz, .gz, .perfetto-trace/.pftrace, .parquet (by "
        "extension); OUT may be a directory for one Chrome-trace file per rank.",
    ),
    CommandEntry(
        f"{_PACKAGE}.record", "Run a script unchanged under HPUProfiler and write a run directory."
    ),
    CommandEntry(
        f"{_PACKAGE}.predict",
        "Predict a script's step time, throughput, MFU, compilations and peak HBM on a Gaudi.",
    ),
    CommandEntry(
        f"{_PACKAGE}.demo",
        "Run a small transformer on the emulated Gaudi (lazy mode, recompiles, bf16, a CPU "
        "fallback, a host sync, HPU graphs), record it and print the analysis.",
    ),
    CommandEntry(
        f"{_PACKAGE}.analyze",
        "Analyse traces into reports (--report) as text, JSON, Markdown, HTML or CSV.",
    ),
    CommandEntry(
        f"{_PACKAGE}.diff",
        "Compare two traces per step: step time, device time split, per-op host self and "
        "device time, per-kernel time, new and vanished ops; a change is a regression only "
        "beyond the step-to-step noise.",
    ),
    CommandEntry(
        f"{_PACKAGE}.dashboard",
        "Serve the web dashboard over DIR: runs, timelines, reports, comparisons (runs found "
        "recursively; new runs appear without a restart).",
    ),
)
"""Registered commands, in `--help` order. Add an entry here to add a command."""

COMMAND_MODULES: tuple[str, ...] = tuple(entry.module for entry in COMMANDS)
"""The modules of `COMMANDS`, in `--help` order."""

INTERNAL_ERROR_EXIT = 70
"""EX_SOFTWARE: hpuprof itself failed."""

__all__ = [
    "COMMANDS",
    "COMMAND_MODULES",
    "INTERNAL_ERROR_EXIT",
    "INTERRUPTED_EXIT",
    "CommandEntry",
    "build_app",
    "main",
]

PROG_NAME = "hpuprof"


class LazyGroup(click.Group):
    """The top-level group: a command's module is imported when that command is asked for,
    never to list the commands (`format_commands` reads the table's summaries)."""

    def __init__(self, entries: Sequence[CommandEntry], **settings: Any) -> None:
        super().__init__(**settings)
        self.entries: Mapping[str, CommandEntry] = {entry.name: entry for entry in entries}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.entries)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands and their summaries, as `click.Group.format_commands` lists them from
        the commands themselves (same width limit, same shortening), without importing them."""
        if not self.entries:
            return
        limit = formatter.width - 6 - max(len(name) for name in self.entries)
        rows = [
            (name, click.Command(name, help=entry.summary).get_short_help_str(limit))
            for name, entry in self.entries.items()
        ]
        with formatter.section(_("Commands")):  # (click's heading, translated as click does)
            formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = self.entries.get(cmd_name)
        if entry is None:
            return None
        module = entry.module
        command = getattr(importlib.import_module(module), cmd_name, None)
        if not isinstance(command, HpuprofCommand) or command.name != cmd_name:
            raise TypeError(f"{module}.{cmd_name} must be the HpuprofCommand {cmd_name!r}")
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as error:  # suggest among commands not yet loaded
            raise click.exceptions.NoSuchCommand(
                error.command_name, possibilities=self.list_commands(ctx), ctx=ctx
            ) from None


def _exit_with_returned_code(code: object, **_params: object) -> None:
    """Result callback: a command's returned int is the exit code (standalone mode drops it)."""
    if isinstance(code, int) and code != 0:
        raise click.exceptions.Exit(code)


def build_app(before_command: Callable[[], None] | None = None) -> LazyGroup:
    """The `hpuprof` group (commands load on demand: `get_command(ctx, name)`);
    `before_command` runs once a command is about to run (not for `hpuprof --help`)."""
    return LazyGroup(
        COMMANDS,
        name=PROG_NAME,
        help="Profile and analyse PyTorch on Intel Gaudi (HPU), real or emulated.",
        callback=before_command,
        result_callback=_exit_with_returned_code,
    )


def _system_exit_code(done: SystemExit) -> int:
    if done.code is None:
        return 0
    if isinstance(done.code, int):
        return done.code
    print(done.code, file=sys.stderr)
    return 1


def main(
    argv: Sequence[str] | None = None, before_command: Callable[[], None] | None = None
) -> int:
    """Run the CLI on `argv` (default: `sys.argv[1:]`) and return the exit code;
    `before_command` runs once a command is about to run (after the arguments are read).

    Usage mistakes get click's usage message and exit 2; known errors become one line on stderr
    and their exit code; an unexpected exception (a bug of ours) is one line and exit 70 unless
    `HPUPROF_DEBUG` is set.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        # not click's standalone mode: it turns a Ctrl-C outside a command's own invoke (while
        # the command table or the arguments are read) into "Aborted!" and exit 1
        code = build_app(before_command).main(args=args, prog_name=PROG_NAME, standalone_mode=False)
        # a command's returned code comes back as click's Exit (the result callback); else None
    except click.exceptions.Abort as abort:
        if isinstance(abort.__cause__, KeyboardInterrupt):
            print("hpuprof: interrupted", file=sys.stderr)
            return INTERRUPTED_EXIT
        print("Aborted!", file=sys.stderr)
        return 1
    except click.ClickException as error:  # a usage mistake: click's usage message, exit 2
        error.show()
        return error.exit_code
    except SystemExit as done:  # a command that exits with its own code
        return _system_exit_code(done)
    except HpuprofError as error:
        print(f"hpuprof: error: {error}", file=sys.stderr)
        return error.exit_code
    except Exception as error:  # a bug of ours: one line, the traceback on request
        if os.environ.get("HPUPROF_DEBUG"):
            raise
        print(
            f"hpuprof: internal error: {type(error).__name__}: {error} "
            "(set HPUPROF_DEBUG=1 for the traceback, and please report it)",
            file=sys.stderr,
        )
        return INTERNAL_ERROR_EXIT
    return code if isinstance(code, int) else 0


def _tune_heap() -> None:
    from hpuprof.trace.heap import tune_process  # (ctypes: not for `hpuprof --help`)

    tune_process()


def run() -> None:
    """Console-script entry point: this process is hpuprof's own, so loads may tune its heap
    (once a command is about to run, before it starts any thread)."""
    sys.exit(main(before_command=_tune_heap))
