"""`torch.distributed`'s process group under `hpuprof predict`: one process stands for the cards.

A training script launched on a Gaudi server by `torchrun`, `mpirun` or `gaudi_spawn.py` calls
`dist.init_process_group(backend="hccl")` and finds its rank and world size in the launcher's
environment (`RANK`, `LOCAL_RANK`, `WORLD_SIZE`, `MASTER_ADDR`). A prediction runs ONE process
for all `cards` (each card runs the same script on its own batch), so there is no launcher and
no other rank to meet: the env:// rendezvous raises without `RANK`, or waits forever for the
other ranks when `WORLD_SIZE` is above 1.

While installed (`install`, by the prediction's ledger):
- `init_process_group` makes the group of the predicted cards with this process as its rank 0,
  whatever init method, rank and world size the script or its environment asks for (noted:
  `World.asked`): torch's fake process group (`torch.testing._internal.distributed.fake_pg`,
  the one torch's own tools trace distributed code with), whose collectives communicate
  nothing and complete at once, as a prediction's fake tensors hold nothing to send. So the
  group's size is the card count for everything that reads it: a `DistributedSampler` shards
  the data set per card, FSDP shards the parameters, gradients and optimizer states and
  all-gathers / reduce-scatters them (their sizes on the card's modeled allocator), and every
  collective is modeled over the cards (`hpusim.distributed.collective_on_device`);
- the launcher's variables a script reads itself (`RANK`, `LOCAL_RANK`, `WORLD_SIZE`) are set
  for rank 0 where the environment lacks them, and removed again at `uninstall`.

Not modeled: the other ranks' differences (every card runs as rank 0), a backend the script
checks for by name (the group's backend is "fake", not "hccl").
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Final

_LAUNCHER_ENV: Final = ("RANK", "LOCAL_RANK", "WORLD_SIZE")
_saved: dict[str, Any] = {}


@dataclass
class World:
    """The process group the script made under the prediction."""

    cards: int
    made: bool = False
    asked: int | None = None
    """The world size the script or its environment asked for (None: it did not say)."""

    def describe(self) -> str:
        """The assumption's text ("" when the script made no process group)."""
        if not self.made:
            return ""
        text = (
            "torch.distributed: the script's process group is one process standing for rank 0 "
            f"of {self.cards} card(s) (init_process_group made torch's fake process group of "
            f"{self.cards}: no communication, the collectives modeled; every card runs as "
            "rank 0)"
        )
        if self.asked is not None and self.asked > 1 and self.asked != self.cards:
            text += (
                f"; the script asked for a world of {self.asked}: predict with --cards "
                f"{self.asked} to model that many"
            )
        return text


def install(cards: int) -> World:
    """Patch `torch.distributed` for a prediction over `cards` cards (see the module
    docstring); returns the `World` that records what the script made."""
    import torch.distributed as dist

    world = World(cards)
    if not dist.is_available() or "init" in _saved:
        return world
    from torch.testing._internal.distributed.fake_pg import FakeStore  # (registers "fake")

    init = dist.init_process_group
    _saved.update(init=init, env={k: os.environ.get(k) for k in _LAUNCHER_ENV}, world=world)
    for name, value in (("RANK", 0), ("LOCAL_RANK", 0), ("WORLD_SIZE", cards)):
        os.environ.setdefault(name, str(value))

    def init_process_group(*args: Any, **kwargs: Any) -> Any:
        world.asked = _asked_size(args, kwargs)
        if len(args) > 2:  # (backend, init_method, timeout, world_size, rank, store, ...)
            kwargs.setdefault("timeout", args[2])
        for name in ("init_method", "world_size", "rank", "store"):
            kwargs.pop(name, None)
        kwargs.pop("backend", None)
        result = init("fake", store=FakeStore(), rank=0, world_size=world.cards, **kwargs)
        world.made = True
        return result

    setattr(dist, "init_process_group", init_process_group)  # noqa: B010 (a module function)
    return world


def uninstall() -> None:
    """Undo `install`: torch.distributed's `init_process_group` and the environment as they
    were, and the script's fake process group gone if it left it (the next run in this
    process, a what-if's or `--max-batch`'s, starts as a new process would)."""
    import torch.distributed as dist

    if "init" not in _saved:
        return
    if _saved.pop("world").made and dist.is_initialized():
        dist.destroy_process_group()
    setattr(dist, "init_process_group", _saved.pop("init"))  # noqa: B010
    for name, value in _saved.pop("env").items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _asked_size(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """The world size `init_process_group(backend, init_method, timeout, world_size, ...)` was
    asked for: its argument, else the environment's `WORLD_SIZE`."""
    given = kwargs.get("world_size", args[3] if len(args) > 3 else -1)
    if isinstance(given, int) and given > 0:
        return given
    env = _saved.get("env", {}).get("WORLD_SIZE")
    return int(env) if env is not None and env.strip().isdigit() else None
