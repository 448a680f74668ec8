"""`hpuprof predict --max-batch ARG`: the largest value of a script's batch argument whose
modeled peak HBM fits each device, by galloping then bisection over runs of the script.

The search only needs `peak_of(batch)` (one prediction run, cached by the caller: every device
is answered from the same runs) and assumes the peak grows with the batch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

SEARCH_LIMIT: Final = 2**16
"""The largest batch the search tries (a batch still fitting there is reported as the limit)."""


@dataclass(frozen=True)
class BatchSearch:
    """The answer: per device the largest batch that fits (0: not even 1), whether the search
    stopped at its limit, and every batch run with its peak HBM (bytes), in run order."""

    largest: dict[str, int]
    at_limit: dict[str, bool]
    tried: tuple[tuple[int, int], ...]

    @property
    def runs(self) -> int:
        return len(self.tried)


def batch_value(command: list[str], arg: str) -> int | None:
    """The value of `arg` in the script's command line (`--batch 8` or `--batch=8`)."""
    for i, a in enumerate(command):
        text = command[i + 1] if a == arg and i + 1 < len(command) else None
        if a.startswith(arg + "="):
            text = a.split("=", 1)[1]
        if text is not None:
            return int(text) if text.isdigit() else None
    return None


def with_batch(command: list[str], arg: str, value: int) -> list[str]:
    """The command with `arg` set to `value` (appended when the command does not give it)."""
    out = list(command)
    for i, a in enumerate(out):
        if a == arg and i + 1 < len(out):
            out[i + 1] = str(value)
            return out
        if a.startswith(arg + "="):
            out[i] = f"{arg}={value}"
            return out
    return [*out, arg, str(value)]


def search_max_batch(
    peak_of: Callable[[int], int],
    capacities: dict[str, int],
    start: int = 1,
    limit: int = SEARCH_LIMIT,
) -> BatchSearch:
    """For each device (`name -> usable HBM bytes`), the largest batch in 1..`limit` whose
    `peak_of(batch)` fits: from `start`, doubling until one does not fit (or halving until one
    does), then bisecting between the two. Runs are shared between devices (memoized here)."""
    peaks: dict[int, int] = {}

    def peak(b: int) -> int:
        if b not in peaks:
            peaks[b] = peak_of(b)
        return peaks[b]

    largest: dict[str, int] = {}
    at_limit: dict[str, bool] = {}
    for name, cap in sorted(capacities.items(), key=lambda kv: kv[1]):
        fit = max((b for b, p in peaks.items() if p <= cap), default=0)
        over = min((b for b, p in peaks.items() if p > cap), default=None)
        b = min(max(start, 2 * fit), limit)
        while over is None and b <= limit:  # gallop up
            if peak(b) <= cap:
                fit = b
                if b == limit:
                    break
                b = min(b * 2, limit)
            else:
                over = b
        while fit == 0 and over is not None and over > 1:  # gallop down
            b = over // 2
            if peak(b) <= cap:
                fit = b
            else:
                over = b
        while over is not None and over - fit > 1:  # bisect
            mid = (fit + over) // 2
            if peak(mid) <= cap:
                fit = mid
            else:
                over = mid
        largest[name] = fit
        at_limit[name] = over is None and fit == limit
    return BatchSearch(largest, at_limit, tuple(peaks.items()))
