"""`DistributedDataParallel` under `hpuprof predict`: the script's DDP settings, modeled.

A prediction runs one process on fake tensors, so DDP's C++ reducer cannot run (its bucket
copies read the gradients' data: a fake gradient has none, and the backward crashes). While
the ledger is installed, `torch.nn.parallel.DistributedDataParallel` is `PredictedDDP`: a
subclass that wraps the module without a reducer and notes what decides the gradient
all-reduce on a Gaudi: `bucket_cap_mb` (torch's default 25 MB; DDP's first bucket is 1 MB,
`dist._DEFAULT_FIRST_BUCKET_BYTES`) and the communication hook (`bf16_compress_hook`,
`fp16_compress_hook` and their wrappers all-reduce 2-byte buffers; any other hook is modeled as
an all-reduce of the gradients in their own dtype, and named as such). The ledger
(hpusim.predict) buckets the gradients with them after each backward that DDP would
synchronize: a backward of a forward run outside `no_sync` (torch's
`require_backward_grad_sync`), so gradient accumulation without `no_sync` all-reduces every
micro-batch, as DDP does, and with it once per optimizer step.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, Final

DEFAULT_BUCKET_CAP_MB: Final = 25
"""torch's `bucket_cap_mb` default."""
FIRST_BUCKET_BYTES: Final = 1 * 2**20
"""DDP's first bucket (the last gradients of the backward), so the all-reduce starts early."""
HALF_HOOKS: Final = ("bf16_compress", "fp16_compress")
"""Comm hooks (by function name) whose all-reduce buffer is 2 bytes per element."""


@dataclass(frozen=True)
class DdpSettings:
    """How the script's DDP all-reduces gradients."""

    bucket_cap_bytes: int = DEFAULT_BUCKET_CAP_MB * 2**20
    first_bucket_bytes: int = FIRST_BUCKET_BYTES
    comm_bytes_per_element: int | None = None
    """None: each gradient's own element size."""
    hook: str = ""

    def describe(self) -> str:
        cap = self.bucket_cap_bytes / 2**20
        dtype = (
            f"{self.comm_bytes_per_element}-byte elements ({self.hook})"
            if self.comm_bytes_per_element
            else "the gradients' own dtype"
            + (f" (comm hook {self.hook}: not modeled beyond that)" if self.hook else "")
        )
        return f"DDP buckets of {cap:g} MB (first {self.first_bucket_bytes / 2**20:g} MB), {dtype}"


def settings_of(module: Any) -> DdpSettings | None:
    """The DDP settings of `module` if it is a `PredictedDDP`."""
    settings = getattr(module, "_hpuprof_ddp", None)
    return settings if isinstance(settings, DdpSettings) else None


def _predicted_ddp_class(base: Any) -> Any:
    import torch

    signature = inspect.signature(base.__init__)

    class PredictedDDP(base):
        """DDP without its reducer (module doc)."""

        def __init__(self, module: Any, *args: Any, **kwargs: Any) -> None:
            torch.nn.Module.__init__(self)
            bound = signature.bind(self, module, *args, **kwargs).arguments
            self.module = module
            self.require_backward_grad_sync = True  # torch's attribute, False in no_sync
            cap = bound.get("bucket_cap_mb")
            self._hpuprof_ddp = DdpSettings(
                bucket_cap_bytes=int(
                    float(cap if cap is not None else DEFAULT_BUCKET_CAP_MB) * 2**20
                )
            )

        def forward(self, *inputs: Any, **kwargs: Any) -> Any:
            return self.module(*inputs, **kwargs)

        def register_comm_hook(self, state: object, hook: Any) -> None:
            name = str(getattr(hook, "__name__", type(hook).__name__))
            half = any(h in name for h in HALF_HOOKS)
            self._hpuprof_ddp = replace(
                self._hpuprof_ddp, hook=name, comm_bytes_per_element=2 if half else None
            )

        @contextlib.contextmanager
        def no_sync(self) -> Iterator[None]:
            before, self.require_backward_grad_sync = self.require_backward_grad_sync, False
            try:
                yield
            finally:
                self.require_backward_grad_sync = before

        def join(self, *args: Any, **kwargs: Any) -> Any:
            return contextlib.nullcontext()

    PredictedDDP.__name__ = PredictedDDP.__qualname__ = "DistributedDataParallel"
    return PredictedDDP


_saved: dict[str, Any] = {}


def install() -> None:
    """`torch.nn.parallel.DistributedDataParallel` is `PredictedDDP` until `uninstall`."""
    import torch.nn.parallel as parallel
    import torch.nn.parallel.distributed as distributed

    if "ddp" in _saved:
        return
    original = parallel.DistributedDataParallel
    _saved["ddp"] = original
    stand_in = _predicted_ddp_class(original)
    parallel.DistributedDataParallel = stand_in  # type: ignore[misc]
    distributed.DistributedDataParallel = stand_in  # type: ignore[misc]


def uninstall() -> None:
    import torch.nn.parallel as parallel
    import torch.nn.parallel.distributed as distributed

    original = _saved.pop("ddp", None)
    if original is not None:
        parallel.DistributedDataParallel = original  # type: ignore[misc]
        distributed.DistributedDataParallel = original  # type: ignore[misc]
