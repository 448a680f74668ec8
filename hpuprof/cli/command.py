"""What every `hpuprof` command is built from: click's command, with hpuprof's errors and defaults.

Every command module imports this one to declare its command (`@command`, `@option`,
`@argument`); it imports click and nothing heavy, so listing the commands stays fast.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import click

from hpuprof.errors import UsageError

INTERRUPTED_EXIT = 130
"""128 + SIGINT, as a shell reports a Ctrl-C."""


class HpuprofCommand(click.Command):
    """A command whose own exceptions end as the CLI promises.

    An `hpuprof.errors.UsageError` is reported as click reports a usage mistake (`ctx.fail`):
    the command's usage line, the message, exit 2. Ctrl-C is one line and exit 130 (click
    would print "Aborted!" and exit 1).
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except UsageError as error:
            ctx.fail(str(error))
        except KeyboardInterrupt:
            print("hpuprof: interrupted", file=sys.stderr)
            raise click.exceptions.Exit(INTERRUPTED_EXIT) from None


def _says_something(default: Any) -> bool:
    """A default worth showing in `--help`: not None, empty or a plain flag's False (0 is)."""
    if default is None or default is False or default == "":
        return False
    return not (isinstance(default, (list, tuple)) and not default)


class Option(click.Option):
    """An option that shows its default in `--help` when the default says something (an
    `--x/--no-x` pair always does)."""

    def __init__(
        self,
        param_decls: Sequence[str] | None = None,
        show_default: bool | str | None = None,
        **attrs: Any,
    ) -> None:
        super().__init__(param_decls, show_default=show_default, **attrs)
        if show_default is None:
            self.show_default = bool(self.secondary_opts) or _says_something(self.default)


def command(name: str, **settings: Any) -> Callable[[Callable[..., Any]], HpuprofCommand]:
    """`@click.command` making an `HpuprofCommand` (the class the CLI's promises rest on)."""
    return click.command(name, cls=HpuprofCommand, **settings)


def option(*decls: str, **attrs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`@click.option` making an `Option` (its default shown when it says something)."""
    return click.option(*decls, cls=Option, **attrs)
