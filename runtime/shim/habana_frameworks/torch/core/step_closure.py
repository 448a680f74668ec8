"""`habana_frameworks.torch.core.step_closure` (emulated).

`mark_step` flushes the pending lazy graph (the bridge's "step marker due to host step
marker") and then runs the step closures; `iter_mark_step` only resets the per-iteration graph
counter and runs the closures (no flush, as the bridge's `IterStepMarker`). All three are
`lazy_only` (core/step_closure.py:45-78): outside lazy mode they do nothing, and importing this
module logs "Calling <name> function does not have any effect..." once for each of them on the
`habana_frameworks.torch.utils.internal` logger (utils/internal.py:34-46)."""

from typing import Any

from habana_frameworks.torch.utils.internal import lazy_only
from hpusim import lazy as _lazy
from hpusim.hpex import mark_step_if_lazy


@lazy_only
def add_step_closure(closure: Any, args: tuple[Any, ...] = ()) -> None:
    _lazy.add_step_closure(closure, args)


def _note_mark_step(device_str: str = "", sync: bool = False) -> None:
    """Outside lazy mode: no effect, but the step marker is noted (the trace's mark_step
    event; `hpuprof predict` cuts an eager script's steps there)."""
    _lazy.mark_step(device_str, sync, warn=False)


def _mark_step(device_str: str = "", sync: bool = False) -> None:
    _lazy.mark_step(device_str, sync)


_mark_step.__name__ = "mark_step"  # (the bridge's log line names it)
mark_step = lazy_only(_mark_step, observe=_note_mark_step)


@lazy_only
def iter_mark_step(device_str: str = "") -> None:
    _lazy.iter_mark_step(device_str)


def _mark_step_if_lazy(device_str: str = "") -> None:
    mark_step_if_lazy()


__all__ = ["add_step_closure", "iter_mark_step", "mark_step"]
