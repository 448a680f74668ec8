"""`hpuprof` entry point: a click group over the command registry, mapping errors to exit codes.

Each command lives in its own module under `hpuprof.cli.commands`, which holds the click
command of its own name (`hpuprof.cli.commands.info.info`), built with `hpuprof.cli.command`. The group imports a command's module only when
that command is asked for (`hpuprof info ...` imports `info` alone; `--help` imports them all
to list them), and command modules import nothing heavy at module level (no pandas, no torch,
no dash): those imports live inside the command function, so `hpuprof --help` stays fast.

Usage mistakes (an unknown option or command, a missing argument, a bad value) are click's to
report: its usage line, what was wrong, "Did you mean ...?", exit 2; an
`hpuprof.errors.UsageError` raised by a command joins them (`HpuprofCommand`).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

import click

from hpuprof.cli.command import INTERRUPTED_EXIT, HpuprofCommand
from hpuprof.errors import HpuprofError

COMMAND_MODULES: tuple[str, ...] = (
    "hpuprof.cli.commands.info",
    "hpuprof.cli.commands.convert",
    "hpuprof.cli.commands.record",
    "hpuprof.cli.commands.predict",
    "hpuprof.cli.commands.demo",
    "hpuprof.cli.commands.analyze",
    "hpuprof.cli.commands.diff",
    "hpuprof.cli.commands.dashboard",
)
"""Registered commands, in `--help` order; each module's last name is its command's name.
Add a module here to add a command."""

INTERNAL_ERROR_EXIT = 70
"""EX_SOFTWARE: hpuprof itself failed."""

__all__ = ["COMMAND_MODULES", "INTERNAL_ERROR_EXIT", "INTERRUPTED_EXIT", "build_app", "main"]

PROG_NAME = "hpuprof"


class LazyGroup(click.Group):
    """The top-level group: a command's module is imported when that command is asked for."""

    def __init__(self, modules: Sequence[str], **settings: Any) -> None:
        super().__init__(**settings)
        self.modules = {module.rsplit(".", 1)[1]: module for module in modules}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.modules)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = self.modules.get(cmd_name)
        if module is None:
            return None
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


def build_app() -> LazyGroup:
    """The `hpuprof` group (commands load on demand: `get_command(ctx, name)`)."""
    return LazyGroup(
        COMMAND_MODULES,
        name=PROG_NAME,
        help="Profile and analyse PyTorch on Intel Gaudi (HPU), real or emulated.",
        result_callback=_exit_with_returned_code,
    )


def _system_exit_code(done: SystemExit) -> int:
    if done.code is None:
        return 0
    if isinstance(done.code, int):
        return done.code
    print(done.code, file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI on `argv` (default: `sys.argv[1:]`) and return the exit code.

    Usage mistakes get click's usage message and exit 2; known errors become one line on stderr
    and their exit code; an unexpected exception (a bug of ours) is one line and exit 70 unless
    `HPUPROF_DEBUG` is set.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        # not click's standalone mode: it turns a Ctrl-C outside a command's own invoke (while
        # the command table or the arguments are read) into "Aborted!" and exit 1
        code = build_app().main(args=args, prog_name=PROG_NAME, standalone_mode=False)
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


def run() -> None:
    """Console-script entry point: this process is hpuprof's own, so loads may tune its heap."""
    from hpuprof.trace.heap import tune_process

    tune_process()
    sys.exit(main())
