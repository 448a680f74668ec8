"""`torch.distributed` on the emulated HPU: the `hccl` backend is gloo on the inner CPU tensors.

One process per emulated card, as on a Gaudi server (`RANK`, `WORLD_SIZE`, `MASTER_ADDR`,
`MASTER_PORT`). `init_process_group(backend="hccl")` creates a gloo process group; collectives
called on `hpu` tensors (`dist.all_reduce(p.grad)`) reach `HpuTensor`'s dispatch as `c10d` ops,
which run them on the inner CPU tensors like any other op, so results are exact and every rank
records its own events. `import habana_frameworks.torch.distributed.hccl` (the bridge's way to
register the backend) works through the shim.

Diverges: a collective's host time is gloo's on this host (measured), not HCCL's; its device
time is modeled as an ordinary device op on the TPC lane (there is no NIC / scale-out link
model), so analyses count it as computation, not communication.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Final

BACKEND_NAME: Final = "hccl"


def _gloo(store: Any, rank: int, size: int, timeout: timedelta) -> Any:
    from torch.distributed import ProcessGroupGloo

    return ProcessGroupGloo(store, rank, size, timeout)


def install() -> None:
    """Register `hccl` with torch.distributed (once per process; torch cannot unregister)."""
    import torch.distributed as dist

    if not dist.is_available() or BACKEND_NAME in dist.Backend.backend_list:
        return
    dist.Backend.register_backend(BACKEND_NAME, _gloo, devices=["hpu", "cpu"])
