"""The step split: where a step's time on the device went, in exclusive categories.

One definition for every report and page (the bottleneck report's steps, the ranks report's
steps and ranks, the comparison's metrics, the dashboard's step figures). Inside a window (a
step, or a rank's device span when it has no steps) each instant counts once, in the first
category that is active then, in this order of precedence:

1. `compute_ns`: a compute kernel runs (MME/TPC, or a kernel of the COMPUTATION type);
2. `exposed_comm_ns`: communication runs and no compute (communication hidden under compute
   is `overlapped_comm_ns`, reported beside the split, not in it);
3. `exposed_memory_ns`: copies or sets run, under neither compute nor communication;
4. `idle_ns`: nothing runs on the device (a rank without device ops is idle all along).

The four add up to the window, less the time only uncategorised (OTHER) device ops run.
Overlapping busy times per category (each category's merged time, overlaps counted in each)
are another quantity with other names: the bottleneck report's `temporal` table (`comm_ns`,
`memory_ns`: busy time) and the distributed report's `comm_comp_overlap`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
import pandas as pd

from hpuprof.analysis import intervals as iv
from hpuprof.analysis._common import ends

SPLIT_PARTS: Final = ("compute", "exposed_comm", "exposed_memory", "idle")
"""The split's categories in order of precedence; each is the `<part>_ns` field of a step row."""
OVERLAPPED_COMM: Final = "overlapped_comm"
"""Communication under compute: beside the split (`overlapped_comm_ns`), not part of it."""


def merged(rows: pd.DataFrame) -> iv.Merged:
    """The union of the rows' [ts, ts + dur) intervals."""
    return iv.merge(rows["ts_ns"].to_numpy(dtype=np.int64), ends(rows))


@dataclass(frozen=True)
class DeviceSets:
    """One rank's device activity as merged intervals per kernel category.

    Args:
        compute / comm / memory: COMPUTATION, COMMUNICATION and MEMORY kernels.
        busy: every device op (OTHER included).
    """

    compute: iv.Merged
    comm: iv.Merged
    memory: iv.Merged
    busy: iv.Merged


def device_sets(rows: pd.DataFrame, kernel_type: np.ndarray) -> DeviceSets:
    """The merged sets of one rank's device rows, `kernel_type` giving each row's category."""
    return DeviceSets(
        compute=merged(rows[kernel_type == "COMPUTATION"]),
        comm=merged(rows[kernel_type == "COMMUNICATION"]),
        memory=merged(rows[kernel_type == "MEMORY"]),
        busy=merged(rows),
    )


@dataclass(frozen=True)
class EngineSets:
    """One rank's Gaudi engine activity as merged intervals per engine class (habana_perf_tool's
    MME / TPC / DMA totals and MME/TPC overlap; the bottleneck report's host / device table
    and the `perf_tool` report both read them from here).

    Args:
        mme / tpc / dma: the union of the device rows whose `engine` is that class.
    """

    mme: iv.Merged
    tpc: iv.Merged
    dma: iv.Merged

    @property
    def mme_tpc_overlap_ns(self) -> int:
        """The time an MME and a TPC op both run."""
        return iv.overlap(self.mme, self.tpc)

    def clipped(self, lo: int, hi: int) -> EngineSets:
        """The same sets inside [lo, hi)."""
        return EngineSets(
            iv.clip(self.mme, lo, hi), iv.clip(self.tpc, lo, hi), iv.clip(self.dma, lo, hi)
        )


def engine_sets(rows: pd.DataFrame, engine: np.ndarray) -> EngineSets:
    """The merged MME / TPC / DMA sets of one rank's device rows, `engine` giving each row's class."""
    return EngineSets(
        mme=merged(rows[engine == "MME"]),
        tpc=merged(rows[engine == "TPC"]),
        dma=merged(rows[engine == "DMA"]),
    )


def split_windows(sets: DeviceSets, lo: np.ndarray, hi: np.ndarray) -> dict[str, np.ndarray]:
    """The step split inside each window [lo[i], hi[i]): `SPLIT_PARTS` and `OVERLAPPED_COMM`
    -> ns per window (see the module docstring for the precedence)."""
    exposed_comm = iv.subtract(sets.comm, sets.compute)
    exposed_memory = iv.subtract(sets.memory, iv.union(sets.compute, sets.comm))
    return {
        "compute": iv.covered_in_windows(sets.compute, lo, hi),
        "exposed_comm": iv.covered_in_windows(exposed_comm, lo, hi),
        "exposed_memory": iv.covered_in_windows(exposed_memory, lo, hi),
        "idle": (hi - lo) - iv.covered_in_windows(sets.busy, lo, hi),
        OVERLAPPED_COMM: iv.covered_in_windows(iv.intersect(sets.comm, sets.compute), lo, hi),
    }
