"""Run a part of a load in a thread pool when there is one, else at once, behind one interface."""

from __future__ import annotations

from concurrent.futures import Executor, Future
from typing import Any


def soon(pool: Executor | None, function: Any, *args: Any) -> Future[Any]:
    """`function(*args)` submitted to `pool` (the caller takes `.result()` when it needs it),
    or done at once without a pool (an exception then raises at once)."""
    if pool is not None:
        return pool.submit(function, *args)
    done: Future[Any] = Future()
    done.set_result(function(*args))
    return done
