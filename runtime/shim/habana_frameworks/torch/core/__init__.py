"""`habana_frameworks.torch.core` (emulated): `mark_step`, `iter_mark_step`, `add_step_closure`."""

from typing import Any

from hpusim import lazy as _lazy


def mark_step(device_str: str = "", sync: bool = False) -> None:
    """Flush the accumulated lazy graph (compile or cache hit, then launch); no-op in eager."""
    _lazy.mark_step(device_str, sync)


def iter_mark_step(device_str: str = "") -> None:
    _lazy.mark_step(device_str, False)


def add_step_closure(closure: Any, args: tuple[Any, ...] = ()) -> None:
    _lazy.add_step_closure(closure, args)


def is_lazy() -> bool:
    import hpusim

    cfg = hpusim.config()
    return bool(cfg is not None and cfg.mode == "lazy")


__all__ = ["add_step_closure", "is_lazy", "iter_mark_step", "mark_step"]
