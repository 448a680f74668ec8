"""Whether the emulator is on, where its shim lives, and the installers registered to run with
`enable()` / `disable()` (`on_enable`, `on_disable`). Imports no torch."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import hpusim.state as state

_on_enable: list[Callable[[], None]] = []
_on_disable: list[Callable[[], None]] = []


def shim_path() -> Path:
    """`runtime/shim`, beside this package in a source/editable checkout."""
    return Path(__file__).resolve().parent.parent / "shim"


def is_enabled() -> bool:
    return state.RT is not None


def on_enable(fn: Callable[[], None]) -> None:
    """Run `fn()` at every `enable()` (now too, if already enabled)."""
    _on_enable.append(fn)
    if is_enabled():
        fn()


def on_disable(fn: Callable[[], None]) -> None:
    """Run `fn()` at every `disable()`."""
    _on_disable.append(fn)


def run_enable_hooks() -> None:
    for fn in list(_on_enable):
        fn()


def run_disable_hooks() -> None:
    for fn in list(_on_disable):
        fn()
