"""`soon` and `after`: parts of a load run in a pool once their inputs exist, or at once
without a pool, with the same results and errors."""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from hpuprof.trace.soon import after, soon


def _thread_and(*values: int) -> tuple[str, tuple[int, ...]]:
    return threading.current_thread().name, values


def test_after_waits_for_every_input_and_runs_in_the_pool() -> None:
    gate = threading.Event()
    with ThreadPoolExecutor(2, thread_name_prefix="part") as pool:
        first = pool.submit(lambda: 1)
        second = pool.submit(lambda: (gate.wait(5), 2)[1])
        result = after(pool, [first, second], _thread_and)
        first.result()
        assert not result.done()  # (the second input is held back)
        gate.set()
        name, values = result.result(timeout=5)
    assert name.startswith("part")
    assert values == (1, 2)


def test_after_blocks_no_thread_while_it_waits() -> None:
    """With one thread, a part waiting for an input that is submitted after it still runs."""
    with ThreadPoolExecutor(1) as pool:
        held: Future[int] = Future()
        result = after(pool, [held], lambda value: value + 1)
        other = pool.submit(lambda: 7)
        assert other.result(timeout=5) == 7  # the pool's one thread was free
        held.set_result(41)
        assert result.result(timeout=5) == 42


def test_after_fails_with_its_input_error() -> None:
    with ThreadPoolExecutor(2) as pool:
        bad = pool.submit(lambda: 1 // 0)
        good = pool.submit(lambda: 1)
        result = after(pool, [good, bad], _thread_and)
        with pytest.raises(ZeroDivisionError):
            result.result(timeout=5)


def test_after_fails_with_its_own_error() -> None:
    def broken(value: int) -> int:
        raise ValueError(f"no {value}")

    with ThreadPoolExecutor(2) as pool:
        result = after(pool, [pool.submit(lambda: 3)], broken)
        with pytest.raises(ValueError, match="no 3"):
            result.result(timeout=5)


def test_after_without_a_pool_runs_at_once() -> None:
    result = after(None, [soon(None, lambda: 4), soon(None, lambda: 5)], _thread_and)
    assert result.done()
    assert result.result() == (threading.current_thread().name, (4, 5))


def test_after_with_no_inputs() -> None:
    with ThreadPoolExecutor(1) as pool:
        assert after(pool, [], lambda: 6).result(timeout=5) == 6


def test_soon_here_runs_at_once_without_a_pool_and_in_the_pool_with_one() -> None:
    from hpuprof.trace.soon import Ready, soon_here

    ready = soon_here(None, pow, 2, 5)
    assert isinstance(ready, Ready) and ready.result() == 32
    with pytest.raises(ZeroDivisionError):  # raised at once, as `soon` raises it
        soon_here(None, divmod, 1, 0)
    with ThreadPoolExecutor(1) as pool:
        pending = soon_here(pool, threading.current_thread)
        assert isinstance(pending, Future)
        assert pending.result() is not threading.current_thread()
