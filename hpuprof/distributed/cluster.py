"""A Dask client: a `LocalCluster` of worker processes on 127.0.0.1, or an existing scheduler.

Dask (`dask[distributed]`, the `distributed` extra of hpuprof) is imported only here, and only
when more than one worker or a scheduler address is asked for.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from typing import Any

from hpuprof.errors import UsageError

MISSING = "--workers/--scheduler need Dask: pip install 'hpuprof[distributed]'"
ALLOWED_FAILURES = 1
"""A task whose worker dies is retried once on another worker, then its rank is named failed."""
LOCAL_CONFIG: dict[str, object] = {
    "distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
    # a few long tasks need no statistical profiler (a stack sample every 10 ms), no GIL
    # monitor and no 20 ms event-loop watchdog: an idle 2-worker cluster used 14% of a core
    # with Dask's defaults, 2.4% with these (measured on the 2-core machine)
    "distributed.worker.profile.enabled": False,
    "distributed.admin.system-monitor.gil.enabled": False,
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.admin.tick.interval": "500ms",
    "distributed.worker.memory.monitor-interval": "250ms",
}


def _dask() -> Any:
    try:
        import distributed
    except ImportError:
        raise UsageError(MISSING) from None
    return distributed


def local_load_threads(workers: int) -> int:
    """Scan threads of each load on a local cluster of `workers` processes: their share of the
    cores this process may run on, at least one. The workers already keep every core busy
    with a rank each; more threads per load only add threading costs and take a core from
    the other workers' analyses (32 ranks of bench/bench_distributed.py on 2 workers and 2
    cores, alternated: 29.1-30.5 s with one thread each, 29.7-32.5 s with two)."""
    from hpuprof.trace.kineto_json import load_threads, usable_cores

    return load_threads(cores=usable_cores() // max(workers, 1))  # ($HPUPROF_LOAD_THREADS wins)


@contextlib.contextmanager
def dask_client(
    workers: int, scheduler: str | None = None, worker_memory: str | None = None
) -> Iterator[Any]:
    """A connected `distributed.Client`, closed (and its local cluster stopped) on exit.

    Args:
        workers: worker processes of the local cluster (one thread each).
        scheduler: address of an existing scheduler (`tcp://host:8786`); no local cluster then.
        worker_memory: memory limit of each local worker ("3GB"); a worker above it is
            restarted by its nanny and its rank retried, then named failed. Default: Dask's
            (the machine's memory shared by the workers).
    """
    distributed = _dask()
    import dask

    with dask.config.set(LOCAL_CONFIG):
        if scheduler:
            try:
                client = distributed.Client(scheduler, timeout="10s")
            except (OSError, TimeoutError, ValueError) as error:
                raise UsageError(
                    f"cannot reach the Dask scheduler at {scheduler}: {error}"
                ) from None
            try:
                yield client
            finally:
                client.close()
            return
        environ = dict(os.environ)
        try:
            cluster = distributed.LocalCluster(
                n_workers=max(workers, 1),
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=":0",
                silence_logs=logging.CRITICAL,
                memory_limit=worker_memory or "auto",
            )
            _put_back(environ)
            client = distributed.Client(cluster)
            try:
                from hpuprof.distributed.owned_workers import TunedHeap

                client.register_plugin(TunedHeap())
                yield client
            finally:
                client.close()
                cluster.close()
        finally:
            _put_back(environ)


def _put_back(environ: dict[str, str]) -> None:
    """`os.environ` as it was. Dask's nanny writes its workers' environment into this
    process's before it spawns one (MALLOC_TRIM_THRESHOLD_, OMP_NUM_THREADS=1,
    PYTHONHASHSEED...) and leaves it there: every later subprocess of a user's process
    inherited it (a load's heap probe in a subprocess saw the trim threshold)."""
    for key in set(os.environ) - set(environ):
        del os.environ[key]
    for key, value in environ.items():
        if os.environ.get(key) != value:
            os.environ[key] = value
