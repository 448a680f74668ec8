"""Run a part of a load in a thread pool when there is one, else at once, behind one interface."""

from __future__ import annotations

import threading
from collections.abc import Sequence
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


class Ready:
    """A result made already, read as a future's (`.result()`)."""

    __slots__ = ("_value",)

    def __init__(self, value: Any) -> None:
        self._value = value

    def result(self) -> Any:
        return self._value


def soon_here(pool: Executor | None, function: Any, *args: Any) -> Future[Any] | Ready:
    """As `soon`, for a result read only by its caller (never passed to `after`): without a
    pool, a `Ready` instead of a `Future`, whose lock and condition cost ~30 us to make, set
    and read (a small file's columns make 24: 0.5 of its ~3 CPU-ms in `info DIR`)."""
    if pool is not None:
        return pool.submit(function, *args)
    return Ready(function(*args))


def after(pool: Executor | None, needs: Sequence[Future[Any]], function: Any) -> Future[Any]:
    """`function(*results of needs)`, submitted to `pool` once every one of `needs` is done,
    with no thread blocked meanwhile (so a part starts as soon as its inputs exist, not when
    the thread that would submit it gets to it). Without a pool, at once: `needs` must be
    done. The first of `needs` that failed fails the result with its exception."""
    if pool is None:
        return soon(None, function, *(need.result() for need in needs))
    started: Future[Any] = Future()
    waiting = [len(needs)]
    lock = threading.Lock()

    def one_done(_: Future[Any]) -> None:
        with lock:
            waiting[0] -= 1
            if waiting[0]:
                return
        try:
            inputs = [need.result() for need in needs]
            pool.submit(function, *inputs).add_done_callback(lambda part: _pass_on(part, started))
        except BaseException as error:  # a failed input, or a pool shut down meanwhile
            started.set_exception(error)

    if not needs:
        return pool.submit(function)
    for need in needs:
        need.add_done_callback(one_done)
    return started


def _pass_on(part: Future[Any], to: Future[Any]) -> None:
    if part.cancelled():
        to.cancel()
        return
    error = part.exception()
    if error is not None:
        to.set_exception(error)
    else:
        to.set_result(part.result())
