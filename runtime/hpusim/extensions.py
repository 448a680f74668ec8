"""The runtime extensions installed with `hpusim.enable()` (after the device itself): the
`hpu_backend` dynamo backend, Habana autocast for
`torch.autocast("hpu")`, the HPU-graph API (lazy mode only, as the bridge), torch.profiler's
HPU activity, the stand-ins of a Gaudi installation, the `hccl` backend and, with
`PT_HPU_GPU_MIGRATION=1`, the GPU Migration Toolkit (gpu_migration.py)."""

from __future__ import annotations

import hpusim.activity_profiler as activity_profiler
import hpusim.autocast as autocast
import hpusim.compile_backend as compile_backend
import hpusim.distributed as distributed
import hpusim.environment as environment
import hpusim.gpu_migration as gpu_migration
import hpusim.hpu_graphs as hpu_graphs


def install() -> None:
    activity_profiler.install()
    environment.install()
    compile_backend.install()
    autocast.install()
    hpu_graphs.install()
    distributed.install()
    gpu_migration.install_if_requested()


def uninstall() -> None:
    gpu_migration.uninstall()
    environment.uninstall()
    activity_profiler.uninstall()
    hpu_graphs.uninstall()
    autocast.uninstall()
    compile_backend.uninstall()
