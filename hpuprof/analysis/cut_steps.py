"""Steps the trace cut off: a rank's last step that the profiler stopped inside.

`torch.profiler.profile` used as a context manager with `prof.step()` at the end of every
iteration opens one more `ProfilerStep#N` at the last `step()` call and closes it when the
profiler stops: a step that holds little or nothing of an iteration (HTA's AMD MI250 trace:
step 1 lasts 9.29 ms and holds 70 host ops, step 2 lasts 49 us and holds none). A trace
stopped in the middle of an iteration ends the same way. Such a step is no sample of the step
time, so the step means (ranks, compare, key figures) leave it out and say so.

The rule, per rank with two or more steps: its last step (by start) is cut off when it holds
fewer than `options.cut_step_ops_pct` % of the median number of host ops of the rank's other
steps (an op counts in the step the loader placed it in, `step`). A shorter last batch of the
same model still runs the same ops, so it is kept.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from hpuprof.analysis._common import host_ops


@dataclass(frozen=True)
class CutStep:
    """A step left out of the step means.

    Args:
        rank, step: which step.
        duration_ns: its length as recorded.
        ops: host ops that start in it.
        typical_ops: the median number of host ops of the rank's other steps.
    """

    rank: int
    step: int
    duration_ns: int
    ops: int
    typical_ops: float

    @property
    def note(self) -> str:
        """Why it is left out, in words."""
        return (
            f"rank {self.rank}, step {self.step} left out of the step means: the trace ends "
            f"inside it ({self.duration_ns / 1e6:,.3f} ms, {self.ops} host ops against "
            f"{self.typical_ops:g} in the rank's other steps)"
        )


def complete_steps(
    ev: pd.DataFrame, windows: pd.DataFrame, ops_pct: float
) -> tuple[pd.DataFrame, tuple[CutStep, ...]]:
    """The step windows (`_common.step_windows(ev)`) less the cut-off last steps, and those.

    Args:
        ev: the events the windows were read from (their `step` column places the ops).
        windows: [rank, step, start_ns, end_ns] rows.
        ops_pct: `AnalysisOptions.cut_step_ops_pct`.
    """
    if windows.empty:
        return windows, ()
    ops = host_ops(ev)
    per_step = ops.groupby([ops["rank"].to_numpy(), ops["step"].to_numpy()]).size()
    dropped: list[int] = []
    cut: list[CutStep] = []
    for rank, mine in windows.groupby("rank", sort=True):
        if len(mine) < 2:
            continue
        mine = mine.sort_values("start_ns")
        keys = pd.MultiIndex.from_arrays([np.full(len(mine), rank), mine["step"].to_numpy()])
        counts = per_step.reindex(keys, fill_value=0).to_numpy()
        typical = float(np.median(counts[:-1]))
        if typical > 0 and counts[-1] < ops_pct / 100.0 * typical:
            last = mine.iloc[-1]
            dropped.append(int(mine.index[-1]))
            cut.append(
                CutStep(
                    int(last["rank"]),
                    int(last["step"]),
                    int(last["end_ns"] - last["start_ns"]),
                    int(counts[-1]),
                    typical,
                )
            )
    return windows.drop(index=dropped), tuple(cut)
