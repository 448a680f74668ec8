"""`habana_frameworks.torch.core.step_closure` (emulated).

`mark_step` flushes the pending lazy graph (the bridge's "step marker due to host step
marker") and then runs the step closures; `iter_mark_step` only resets the per-iteration graph
counter and runs the closures (no flush, as the bridge's `IterStepMarker`). Both are no-ops
outside lazy mode (the bridge replaces them by no-ops and logs once)."""

from typing import Any

from hpusim import lazy as _lazy
from hpusim.hpex import mark_step_if_lazy


def mark_step(device_str: str = "", sync: bool = False) -> None:
    _lazy.mark_step(device_str, sync)


def iter_mark_step(device_str: str = "") -> None:
    _lazy.iter_mark_step(device_str)


def add_step_closure(closure: Any, args: tuple[Any, ...] = ()) -> None:
    _lazy.add_step_closure(closure, args)


def _mark_step_if_lazy(device_str: str = "") -> None:
    mark_step_if_lazy()


__all__ = ["add_step_closure", "iter_mark_step", "mark_step"]
