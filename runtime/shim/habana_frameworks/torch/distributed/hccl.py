"""Emulated `habana_frameworks.torch.distributed.hccl`: importing it registers the `hccl`
torch.distributed backend (gloo on the emulator's inner CPU tensors; `hpusim.distributed`), and
`initialize_distributed_hpu()` reads the launcher's environment like the bridge does."""

import os

from hpusim import distributed as _distributed

_distributed.install()

HABANA_VISIBLE_MODULES_VAR = "HABANA_VISIBLE_MODULES"
HLS_MODULE_ID_VAR = "HLS_MODULE_ID"
_MPI = {
    "OMPI_COMM_WORLD_LOCAL_RANK": "LOCAL_RANK",
    "OMPI_COMM_WORLD_SIZE": "WORLD_SIZE",
    "OMPI_COMM_WORLD_RANK": "RANK",
}


def _setup_environment_from_mpi() -> None:
    if all(v in os.environ for v in _MPI.values()):
        return
    if all(k in os.environ for k in _MPI):
        for mpi, name in _MPI.items():
            os.environ[name] = os.environ[mpi]
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "12345")


def _setup_module_id(local_rank: int, world_size: int) -> None:
    if HLS_MODULE_ID_VAR in os.environ or local_rank == -1 or world_size == 1:
        return
    visible = os.environ.get(HABANA_VISIBLE_MODULES_VAR)
    if visible is not None:
        modules = visible.split(",")
        if local_rank >= len(modules):
            raise AssertionError(
                f"There is not enough devices available for training. Please verify if "
                f"{HABANA_VISIBLE_MODULES_VAR} is set correctly."
            )
        os.environ[HLS_MODULE_ID_VAR] = modules[local_rank]
        return
    os.environ[HLS_MODULE_ID_VAR] = str(local_rank)


def initialize_distributed_hpu(
    world_size: int | None = None, rank: int | None = None, local_rank: int | None = None
) -> tuple[int, int, int]:
    """(world_size, rank, local_rank) from the arguments, else from torchrun's or MPI's
    environment (`WORLD_SIZE`/`RANK`/`LOCAL_RANK`, `OMPI_COMM_WORLD_*`); also sets
    `HLS_MODULE_ID` for multi-card runs and `ID` (the Synapse logger's rank) as the bridge."""
    if world_size is not None and rank is not None and local_rank is not None:
        os.environ["WORLD_SIZE"] = str(world_size)
        os.environ["RANK"] = str(rank)
        os.environ["LOCAL_RANK"] = str(local_rank)
    else:
        _setup_environment_from_mpi()
    world = int(os.getenv("WORLD_SIZE", "1"))
    rk = int(os.getenv("RANK", "-1"))
    local = int(os.environ.get("LOCAL_RANK", "-1"))
    _setup_module_id(local, world)
    if rk != -1:
        os.environ["ID"] = str(rk)
    return world, rk, local


initialize_distributed_hpu()  # at import, as the bridge

__all__ = ["initialize_distributed_hpu"]
