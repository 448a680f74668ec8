"""Profiling schedules with torch.profiler's semantics, usable without torch.

`schedule(wait=1, warmup=1, active=3, repeat=2, skip_first=0)` returns a `Schedule`: a frozen
callable mapping a step number to an `Action`, exactly like `torch.profiler.schedule`, so the
same numbers record the same steps on every backend (the torch backends hand the equivalent
`torch.profiler.schedule` to torch; the emulated backend drives its sink from ours).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hpuprof.errors import UsageError


class Action(enum.Enum):
    """What the profiler does during a step (torch.profiler.ProfilerAction's members)."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


RECORDING: frozenset[Action] = frozenset({Action.RECORD, Action.RECORD_AND_SAVE})


@dataclass(frozen=True)
class Schedule:
    """skip `skip_first` steps, then cycles of `wait` idle, `warmup`, `active` recorded steps.

    Args:
        wait: idle steps at the start of each cycle.
        warmup: steps where the profiler runs but discards what it records.
        active: recorded steps per cycle (> 0); the last one ends the window (RECORD_AND_SAVE).
        repeat: number of cycles, 0 for as many as the run has.
        skip_first: steps ignored before the first cycle.
    """

    wait: int
    warmup: int
    active: int
    repeat: int = 0
    skip_first: int = 0

    def __post_init__(self) -> None:
        if min(self.wait, self.warmup, self.repeat, self.skip_first) < 0 or self.active <= 0:
            raise UsageError(
                f"invalid schedule wait={self.wait} warmup={self.warmup} active={self.active} "
                f"repeat={self.repeat} skip_first={self.skip_first}: active must be > 0 and "
                "the others >= 0"
            )

    def __call__(self, step: int) -> Action:
        if step < 0:
            raise UsageError(f"schedule step must be >= 0, got {step}")
        if step < self.skip_first:
            return Action.NONE
        step -= self.skip_first
        cycle = self.wait + self.warmup + self.active
        if self.repeat > 0 and step // cycle >= self.repeat:
            return Action.NONE
        pos = step % cycle
        if pos < self.wait:
            return Action.NONE
        if pos < self.wait + self.warmup:
            return Action.WARMUP
        return Action.RECORD if pos < cycle - 1 else Action.RECORD_AND_SAVE

    def windows(self, n_steps: int) -> list[range]:
        """The recorded step ranges among steps `0..n_steps-1`, one range per cycle."""
        out: list[range] = []
        start: int | None = None
        for step in range(n_steps):
            action = self(step)
            if action in RECORDING and start is None:
                start = step
            if action is Action.RECORD_AND_SAVE and start is not None:
                out.append(range(start, step + 1))
                start = None
        if start is not None:
            out.append(range(start, n_steps))
        return out

    def to_torch(self) -> Callable[[int], Any]:
        """The equivalent `torch.profiler.schedule` (imports torch)."""
        import warnings

        import torch.profiler

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns about warmup=0; we accept it
            return torch.profiler.schedule(
                wait=self.wait,
                warmup=self.warmup,
                active=self.active,
                repeat=self.repeat,
                skip_first=self.skip_first,
            )


def schedule(
    *, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0
) -> Schedule:
    """torch.profiler.schedule's signature, returning our `Schedule`."""
    return Schedule(wait, warmup, active, repeat, skip_first)


def parse_schedule(text: str) -> Schedule:
    """Parse `wait,warmup,active[,repeat[,skip_first]]` (the `--schedule` option)."""
    parts = [p.strip() for p in text.split(",")]
    if not 3 <= len(parts) <= 5 or not all(p.isdigit() for p in parts):
        raise UsageError(
            f"--schedule {text!r}: expected wait,warmup,active[,repeat[,skip_first]] "
            "as non-negative integers, e.g. 1,1,3 or 0,1,2,2"
        )
    return Schedule(*(int(p) for p in parts))


def as_schedule(value: Any) -> Schedule | Callable[[int], Any] | None:
    """Accept our Schedule, a (wait, warmup, active, ...) tuple, a `parse_schedule` string,
    or any callable step -> action (e.g. a `torch.profiler.schedule`)."""
    if value is None or isinstance(value, Schedule):
        return value
    if isinstance(value, str):
        return parse_schedule(value)
    if isinstance(value, tuple | list):
        return Schedule(*(int(v) for v in value))
    if callable(value):
        return value
    raise UsageError(f"schedule must be a Schedule, tuple, string or callable, not {value!r}")


def action_of(sched: Schedule | Callable[[int], Any], step: int) -> Action:
    """Normalize what any schedule callable returns (ours or torch's ProfilerAction)."""
    result = sched(step)
    if isinstance(result, Action):
        return result
    name = getattr(result, "name", str(result))
    try:
        return Action[name]
    except KeyError:
        return Action.NONE
