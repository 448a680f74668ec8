"""`hpuprof` entry point: builds the Typer app from the command registry, maps errors to codes.

Each command lives in its own module under `hpuprof.cli.commands` and exposes
`register(app: typer.Typer) -> None`. Command modules import nothing heavy at module level
(no torch, no dash, no pandas): those imports live inside the command function, so
`hpuprof --help` stays fast.

Usage mistakes (an unknown option or command, a missing argument, a bad value) are click's to
report: its usage line, what was wrong, "Did you mean ...?", exit 2. Typer runs on its own copy
of click (typer >= 0.26), so they are left to its standalone mode rather than caught here by
class; an `hpuprof.errors.UsageError` raised by a command joins them (`HpuprofCommand`).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperCommand

from hpuprof.errors import HpuprofError, UsageError

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
"""Registered commands, in `--help` order. Add a module here to add a command."""


INTERNAL_ERROR_EXIT = 70
"""EX_SOFTWARE: hpuprof itself failed."""

INTERRUPTED_EXIT = 130
"""128 + SIGINT, as a shell reports a Ctrl-C."""

PROG_NAME = "hpuprof"


class HpuprofCommand(TyperCommand):
    """A command whose own exceptions end as the CLI promises.

    An `hpuprof.errors.UsageError` is reported as click reports a usage mistake: `ctx.fail`
    raises the usage error of the click typer runs on, with this command's context, so the
    message comes with the command's usage line and exit 2. Ctrl-C is one line and exit 130.
    """

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except UsageError as error:
            ctx.fail(str(error))
        except KeyboardInterrupt:
            print("hpuprof: interrupted", file=sys.stderr)
            raise typer.Exit(INTERRUPTED_EXIT) from None


def _exit_with_returned_code(code: object) -> None:
    """Result callback: a command's returned int is the exit code (standalone mode drops it)."""
    if isinstance(code, int) and code != 0:
        raise typer.Exit(code)


def build_app() -> typer.Typer:
    app = typer.Typer(
        name=PROG_NAME,
        help="Profile and analyse PyTorch on Intel Gaudi (HPU), real or emulated.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        # click's plain help and error text: rich panels label every flag `<bool>`
        rich_markup_mode=None,
        result_callback=_exit_with_returned_code,
    )
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(app)
    for command in app.registered_commands:
        if command.cls in (None, TyperCommand):  # the default class: a command may bring its own
            command.cls = HpuprofCommand
    return app


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
        command = typer.main.get_command(build_app())
        command.main(args=args, prog_name=PROG_NAME, standalone_mode=True)
    except SystemExit as done:  # standalone mode ends every run, help and usage errors included
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
    return 0


def run() -> None:
    """Console-script entry point: this process is hpuprof's own, so loads may tune its heap."""
    from hpuprof.trace.heap import tune_process

    tune_process()
    sys.exit(main())
