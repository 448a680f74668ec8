"""The device's own random generator (hpusim.rng; the bridge's backend/random.cpp and
hpu/random.py, and its wraps of torch.manual_seed / torch.seed / torch.random.fork_rng)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

H = "hpu"

RANDOM_OPS: dict[str, Callable[[], torch.Tensor]] = {
    "randn": lambda: torch.randn(64, device=H),
    "rand": lambda: torch.rand(64, device=H),
    "randint": lambda: torch.randint(0, 1000, (64,), device=H),
    "randperm": lambda: torch.randperm(64, device=H),
    "normal_": lambda: torch.empty(64, device=H).normal_(),
    "uniform_": lambda: torch.empty(64, device=H).uniform_(),
    "bernoulli": lambda: torch.bernoulli(torch.full((64,), 0.5).to(H)),
    "dropout": lambda: torch.nn.functional.dropout(torch.ones(64).to(H), 0.5),
    "multinomial": lambda: torch.multinomial(torch.ones(64).to(H), 32),
    "randn_like": lambda: torch.randn_like(torch.ones(64).to(H)),
}


@pytest.mark.parametrize("mode", ["eager", "lazy"])
@pytest.mark.parametrize("op", sorted(RANDOM_OPS))
def test_a_random_op_draws_from_the_device_generator_alone(hpu: Any, mode: str, op: str) -> None:
    hpu(mode)
    draw = RANDOM_OPS[op]
    torch.hpu.manual_seed(7)
    first = draw().cpu()
    cpu_before = torch.get_rng_state()
    torch.hpu.manual_seed(7)
    torch.rand(100)  # CPU draws between do not change the device's
    assert torch.equal(draw().cpu(), first)
    torch.hpu.manual_seed(8)
    assert not torch.equal(draw().cpu(), first)
    cpu_state = torch.get_rng_state()
    draw()
    assert torch.equal(torch.get_rng_state(), cpu_state)  # nor hpu draws the CPU's
    assert not torch.equal(cpu_before, cpu_state)


def test_each_random_op_draws_one_seed_whatever_its_size(hpu: Any) -> None:
    hpu("lazy")
    start = torch.hpu.get_rng_state()
    torch.randn(3, device=H)
    small = torch.hpu.get_rng_state()
    torch.hpu.set_rng_state(start)
    torch.randn(10_000, device=H)
    assert torch.equal(torch.hpu.get_rng_state(), small)
    assert not torch.equal(small, start)


def test_an_op_given_a_generator_draws_its_seed_from_it(hpu: Any) -> None:
    hpu("eager")
    gen = torch.Generator().manual_seed(3)
    device_state = torch.hpu.get_rng_state()
    a = torch.randn(16, device=H, generator=gen).cpu()
    assert torch.equal(torch.hpu.get_rng_state(), device_state)
    b = torch.empty(16, device=H).normal_(generator=torch.Generator().manual_seed(3)).cpu()
    assert torch.equal(a, b)


def test_torch_manual_seed_and_seed_reach_the_device_generator(hpu: Any) -> None:
    hpu("lazy")
    torch.manual_seed(1234)
    assert torch.equal(torch.hpu.get_rng_state(), torch.get_rng_state())
    torch.hpu.manual_seed(99)
    assert torch.hpu.initial_seed() == 99
    assert torch.initial_seed() == 1234
    seed = torch.seed()
    assert torch.hpu.initial_seed() == torch.initial_seed() == seed
    torch.hpu.seed()
    assert torch.hpu.initial_seed() != seed
    assert torch.initial_seed() == seed


def test_fork_rng_forks_the_device_generator_by_default(hpu: Any) -> None:
    hpu("lazy")
    before = torch.hpu.get_rng_state()
    with torch.random.fork_rng():
        torch.randn(4, device=H)
        assert not torch.equal(torch.hpu.get_rng_state(), before)
    assert torch.equal(torch.hpu.get_rng_state(), before)
    with torch.random.fork_rng(device_type="cuda"):  # no cuda device: the hpu one not forked
        torch.randn(4, device=H)
    assert not torch.equal(torch.hpu.get_rng_state(), before)


def test_torch_gets_its_own_functions_back_at_disable(hpu: Any) -> None:
    hpusim = hpu("eager")
    hpusim.disable()
    own = (torch.manual_seed, torch.seed, torch.random.fork_rng)
    hpu("eager")
    assert all(now is not mine for now, mine in zip(_seeding(), own, strict=True))
    hpusim.disable()
    assert all(now is mine for now, mine in zip(_seeding(), own, strict=True))


def _seeding() -> tuple[Any, ...]:
    return torch.manual_seed, torch.seed, torch.random.fork_rng
