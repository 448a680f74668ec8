"""A rich progress bar that appears only when a load takes more than a second."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

DELAY_S = 1.0


@contextmanager
def delayed_progress(total: int | None, label: str) -> Iterator[Callable[[int], None]]:
    """Yield a callback taking byte counts; a bar (on stderr) shows after `DELAY_S` seconds."""
    started = time.monotonic()
    state: dict[str, Any] = {"done": 0, "bar": None, "task": None}

    def advance(count: int) -> None:
        state["done"] += count
        if state["bar"] is None:
            if time.monotonic() - started < DELAY_S:
                return
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, Progress, TimeElapsedColumn

            bar = Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                DownloadColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            bar.start()
            state["bar"] = bar
            state["task"] = bar.add_task(label, total=total)
        state["bar"].update(state["task"], completed=state["done"])

    try:
        yield advance
    finally:
        if state["bar"] is not None:
            state["bar"].stop()
