"""Installs the runtime extensions with `hpusim.enable()`: the `hpu_backend` dynamo backend,
Habana autocast for `torch.autocast("hpu")`, and the HPU-graph API (lazy mode only, as the
bridge). Imported by `hpusim/__init__.py`; importing it imports no torch."""

from __future__ import annotations


def install() -> None:
    from hpusim import (
        activity_profiler,
        autocast,
        compile_backend,
        distributed,
        environment,
        hpu_graphs,
        hpu_ops,
    )

    hpu_ops.install()
    activity_profiler.install()
    environment.install()
    compile_backend.install()
    autocast.install()
    hpu_graphs.install()
    distributed.install()


def uninstall() -> None:
    from hpusim import activity_profiler, autocast, compile_backend, environment, hpu_graphs

    environment.uninstall()
    activity_profiler.uninstall()
    hpu_graphs.uninstall()
    autocast.uninstall()
    compile_backend.uninstall()


def register() -> None:
    """Hook `install`/`uninstall` into `hpusim.enable()`/`disable()`."""
    import hpusim

    hpusim.on_enable(install)
    hpusim.on_disable(uninstall)
