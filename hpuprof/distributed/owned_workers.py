"""Set-up of the workers of a local cluster that hpuprof starts (imported only with Dask).

Those workers are processes hpuprof owns, as its command line is: their loads tune the heap
as the command line's do (`hpuprof.trace.heap.tune_process`). Workers of a cluster given by
address belong to someone else and are left as they are.
"""

from __future__ import annotations

from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin


class TunedHeap(WorkerPlugin):
    """Opts each worker into the loader's heap tuning (also a worker its nanny restarts).

    Dask's nanny starts workers with `MALLOC_TRIM_THRESHOLD_=65536`, which also fixes glibc's
    mmap threshold at 128 KiB: every column-sized temporary of a load then got fresh pages
    (260-290k page faults and 0.45-0.58 s of system time per 100 MB rank, against 80-90k
    and 0.2-0.4 s tuned, on the 2-core machine).
    """

    name = "hpuprof-tuned-heap"

    def setup(self, worker: Any) -> None:
        from hpuprof.trace.heap import tune_process

        tune_process()
