"""`hpuprof` entry point: builds the Typer app from the command registry, maps errors to codes.

Each command lives in its own module under `hpuprof.cli.commands` and exposes
`register(app: typer.Typer) -> None`. Command modules import nothing heavy at module level
(no torch, no dash, no pandas): those imports live inside the command function, so
`hpuprof --help` stays fast.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence

import click
import typer

from hpuprof.errors import HpuprofError

COMMAND_MODULES: tuple[str, ...] = (
    "hpuprof.cli.commands.info",
    "hpuprof.cli.commands.convert",
    "hpuprof.cli.commands.record",
    "hpuprof.cli.commands.demo",
    "hpuprof.cli.commands.analyze",
    "hpuprof.cli.commands.diff",
    "hpuprof.cli.commands.dashboard",
)
"""Registered commands, in `--help` order. Add a module here to add a command."""


INTERNAL_ERROR_EXIT = 70
"""EX_SOFTWARE: hpuprof itself failed."""


def build_app() -> typer.Typer:
    app = typer.Typer(
        name="hpuprof",
        help="Profile and analyse PyTorch on Intel Gaudi (HPU), real or emulated.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(app)
    return app


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI on `argv` (default: `sys.argv[1:]`) and return the exit code.

    Known errors become one line on stderr and their exit code; Ctrl-C is 130; an unexpected
    exception (a bug of ours) is one line and exit 70 unless `HPUPROF_DEBUG` is set.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        result = build_app()(args=args, standalone_mode=False)
    except HpuprofError as error:
        print(f"hpuprof: error: {error}", file=sys.stderr)
        return error.exit_code
    except click.exceptions.Exit as done:
        return int(done.exit_code or 0)
    except click.ClickException as error:
        error.show()
        return error.exit_code
    except (KeyboardInterrupt, click.exceptions.Abort):
        print("hpuprof: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as error:  # a bug of ours: one line, the traceback on request
        if os.environ.get("HPUPROF_DEBUG"):
            raise
        print(
            f"hpuprof: internal error: {type(error).__name__}: {error} "
            "(set HPUPROF_DEBUG=1 for the traceback, and please report it)",
            file=sys.stderr,
        )
        return INTERNAL_ERROR_EXIT
    return int(result) if isinstance(result, int) else 0


def run() -> None:
    """Console-script entry point: this process is hpuprof's own, so loads may tune its heap."""
    from hpuprof.trace.heap import tune_process

    tune_process()
    sys.exit(main())
