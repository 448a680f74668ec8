"""Schedules record the same windows as torch.profiler.schedule."""

from __future__ import annotations

import pytest

from hpuprof.capture.schedule import Action, Schedule, parse_schedule, schedule
from hpuprof.errors import UsageError

CASES = [(1, 1, 3, 0, 0), (0, 1, 2, 2, 0), (2, 0, 1, 3, 1), (0, 0, 4, 1, 5)]


@pytest.mark.parametrize("params", CASES)
def test_matches_torch_schedule(params: tuple[int, ...]) -> None:
    torch_profiler = pytest.importorskip("torch.profiler")
    ours = Schedule(*params)
    wait, warmup, active, repeat, skip_first = params
    theirs = torch_profiler.schedule(
        wait=wait, warmup=warmup, active=active, repeat=repeat, skip_first=skip_first
    )
    for step in range(40):
        assert ours(step).name == theirs(step).name, step


def test_windows() -> None:
    sched = schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    assert sched.windows(20) == [range(3, 5), range(7, 9)]
    assert sched(4) is Action.RECORD_AND_SAVE
    assert Schedule(0, 0, 3).windows(7) == [range(0, 3), range(3, 6), range(6, 7)]


def test_parse() -> None:
    assert parse_schedule("1,1,3") == Schedule(1, 1, 3)
    assert parse_schedule("0, 1, 2, 2, 5") == Schedule(0, 1, 2, 2, 5)
    for bad in ("1,2", "a,b,c", "1,1,0", "1,1,1,1,1,1"):
        with pytest.raises(UsageError):
            parse_schedule(bad)
