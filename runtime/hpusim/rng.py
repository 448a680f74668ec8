"""The device's own random generator, as the bridge keeps it (`backend/random.cpp`).

The bridge's HPU generator is a `CPUGeneratorImpl` of its own, created once per process with
the CPU generator's current seed (`createHPUGenerator`, random.cpp:29-35); `torch.hpu`'s
`manual_seed`, `seed`, `get_rng_state`... act on it alone (`hpu/random.py`). Every random op
on the device draws ONE 32-bit seed from it, or from the generator the op was given
(`get_seed_hpu`: `generator->random()`, random.cpp:38-50), and its kernel (Philox on the TPC)
draws its values from that seed. Here the op's CPU kernel draws from the CPU generator
reseeded with that seed for the call (its state restored after): the device generator's state
advances as on the bridge (one draw per op, whatever the op's size), seeding the CPU does not
change hpu draws nor the reverse, and the same seed gives the same hpu values. MODELED: the
values are CPU torch's, not the device's Philox stream.

`install()` makes the bridge's wraps of torch (`core/torch_overwrites.py`): `torch.manual_seed`
seeds the device generator too (lines 131-147), `torch.seed` gives it the new seed (488-496),
`torch.random.fork_rng` forks `hpu` when no `device_type` is named (362-382); `uninstall()`
restores torch's own.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Final

import torch

DEVICE_GENERATOR: Final = torch.Generator().manual_seed(torch.initial_seed())
"""The device's default generator (the bridge's `getDefaultHPUGenerator()`: a CPU-kind generator
seeded with the CPU generator's seed when it is first made)."""

_SEED_RANGE: Final = 2**32 - 1
"""`randint(0, 2**32 - 1)` is one `random()` draw of the generator (CPU torch's
`uniform_int_from_to_distribution` uses `random()` below a range of 2**32): the draw
`get_seed_hpu` makes, modulo 2**32 - 1."""

_orig: dict[str, Any] = {}
_randint = torch.ops.aten.randint.low_generator  # not torch.randint, which fake compute wraps
_fake_mode = torch._C._get_dispatch_mode
_FAKE = torch._C._TorchDispatchModeKey.FAKE


def op_seed(generator: torch.Generator | None = None) -> int:
    """The seed one random op draws: one 32-bit draw of `generator`, else of the device's."""
    gen = DEVICE_GENERATOR if generator is None else generator
    return int(_randint(0, _SEED_RANGE, [], generator=gen))


def seeded(call: Callable[..., Any], schema: Any) -> Callable[..., Any]:
    """`call` (a random op of `schema`) run as on the device: it draws its seed from its
    `generator` argument or the device generator, and its CPU kernel draws from that seed."""
    pos, kw_only = -1, True
    for i, a in enumerate(schema.arguments):
        if a.name == "generator":
            pos, kw_only = i, a.kwarg_only
    cpu = torch.default_generator

    def draw(*args: Any, **kwargs: Any) -> Any:
        if _fake_mode(_FAKE) is not None:  # dynamo / AOT tracing on fake tensors: no draw
            return call(*args, **kwargs)
        given = None
        if pos >= 0:
            if kw_only or len(args) <= pos:
                given = kwargs.pop("generator", None)
            else:
                given = args[pos]
                args = (*args[:pos], None, *args[pos + 1 :])
        seed = op_seed(given)
        saved = cpu.get_state()
        cpu.manual_seed(seed)
        try:
            return call(*args, **kwargs)
        finally:
            cpu.set_state(saved)

    return draw


def is_random(func: Any) -> bool:
    """Whether the op draws random numbers (torch tags them `nondeterministic_seeded`)."""
    return torch.Tag.nondeterministic_seeded in getattr(func, "tags", ())


def device_call(func: Any, call: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """How the device runs `func` (by `call`, default `func`): seeded from the device's
    generator if it is a random op."""
    call = func if call is None else call
    return seeded(call, func._schema) if is_random(func) else call


def _manual_seed(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def manual_seed(seed: Any) -> torch.Generator:
        DEVICE_GENERATOR.manual_seed(int(seed))
        return original(seed)

    return manual_seed


def _seed(original: Callable[..., int]) -> Callable[..., int]:
    @functools.wraps(original)
    def seed() -> int:
        new = original()
        DEVICE_GENERATOR.manual_seed(new)
        return new

    return seed


def _fork_rng(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def fork_rng(
        devices: Any = None,
        enabled: bool = True,
        _caller: str = "fork_rng",
        _devices_kw: str = "devices",
        device_type: str | None = None,
    ) -> Any:
        return original(
            devices=devices,
            enabled=enabled,
            _caller=_caller,
            _devices_kw=_devices_kw,
            device_type=device_type or "hpu",
        )

    return fork_rng


def install() -> None:
    """Apply the bridge's wraps of `torch.manual_seed`, `torch.seed`, `torch.random.fork_rng`
    (idempotent)."""
    if _orig:
        return
    _orig["manual_seed"] = torch.manual_seed
    _orig["seed"] = torch.seed
    _orig["fork_rng"] = torch.random.fork_rng
    torch.manual_seed = _manual_seed(_orig["manual_seed"])
    torch.seed = _seed(_orig["seed"])
    torch.random.fork_rng = _fork_rng(_orig["fork_rng"])


def uninstall() -> None:
    """Restore torch's own functions."""
    if not _orig:
        return
    torch.manual_seed = _orig.pop("manual_seed")
    torch.seed = _orig.pop("seed")
    torch.random.fork_rng = _orig.pop("fork_rng")
