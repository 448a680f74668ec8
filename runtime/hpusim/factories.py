"""Factories with `device='hpu'`: a Python backend fallback on the HPU dispatch key.

BackendSelect sends `empty`/`empty_strided(device=hpu)` (and every other factory) to the HPU
key; the fallback runs the op with `device=cpu` and wraps the result. `arange`, `linspace`,
`logspace`, `randperm`, `eye` and `tri*_indices` resize an `empty(0)` through `out=`, which a
wrapper cannot do, so they get direct HPU kernels (probe item 1).
"""

from __future__ import annotations

from time import perf_counter_ns
from typing import Any, Final

import torch

import hpusim.state as state
from hpusim.attribution import module_and_phase
from hpusim.dispatch import unwrap
from hpusim.dtype_rules import on_device_dtype
from hpusim.fake import factory_device
from hpusim.recorder import input_json
from hpusim.rng import device_call
from hpusim.tensor import HpuTensor
from hpusim.transfers import acquire, on_device

DIRECT: Final = (
    "arange",
    "arange.start",
    "arange.start_step",
    "linspace",
    "logspace",
    "randperm",
    "randperm.generator",
    "eye",
    "eye.m",
    "tril_indices",
    "triu_indices",
)

_libs: list[Any] = []


def _cpu_kwargs(kwargs: dict[str, Any], device: Any = None) -> dict[str, Any]:
    if "device" in kwargs:
        kwargs = dict(kwargs)
        kwargs["device"] = device or torch.device("cpu")
    return kwargs


def _wrap(out: Any) -> Any:
    if isinstance(out, torch.Tensor):
        return out if type(out) is HpuTensor else HpuTensor(out)
    if isinstance(out, (tuple, list)):
        return type(out)(_wrap(o) for o in out)
    return out


def _run(op: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    rt = state.RT
    if rt is None:
        raise RuntimeError(
            "PyTorch is not linked with support for hpu devices (hpusim is not enabled)"
        )
    t0 = perf_counter_ns()
    clock = rt.clock
    clock.enter(t0)  # projected timeline: the bridge's cost of a factory, not the emulator's
    try:
        # compute="fake": a meta tensor under the hpu tensor
        raw = device_call(op)(*args, **_cpu_kwargs(kwargs, factory_device(rt)))
        if isinstance(raw, torch.Tensor) and rt.fake is None:
            on_device(rt, raw)
        out = _wrap(raw)
        clock.op(perf_counter_ns(), rt.profile.host_eager_op_ns)
    finally:
        clock.exit(perf_counter_ns())
    acquire(rt)
    if isinstance(out, torch.Tensor):
        rt.alloc.alloc(out, out.numel() * out.element_size(), str(op._schema.name))
        on_device_dtype(rt, out.dtype, str(op._schema.name))
    if rt.sink.recording:
        module, phase = module_and_phase(rt.attribution)
        _, sig, _ = unwrap(args, True, HpuTensor)
        dims, types = input_json(sig)
        rt.events.op(
            str(op._schema.name), t0, perf_counter_ns() - t0, module, phase, rt.mode_code, dims,
            types,
        )  # fmt: skip
    return out


def _fallback(op: Any, *args: Any, **kwargs: Any) -> Any:
    return _run(op, args, kwargs)


def _direct(name: str) -> Any:
    packet, _, overload = name.partition(".")
    op = getattr(getattr(torch.ops.aten, packet), overload or "default")

    def kernel(*args: Any, **kwargs: Any) -> Any:
        return _run(op, args, kwargs)

    return kernel


def install() -> None:
    """Register the HPU-key fallback and the direct kernels (idempotent)."""
    if _libs:
        return
    lib = torch.library.Library("_", "IMPL")
    lib.fallback(_fallback, "HPU")
    _libs.append(lib)
    aten = torch.library.Library("aten", "IMPL")
    for name in DIRECT:
        aten.impl(name, _direct(name), "HPU")
    _libs.append(aten)


def uninstall() -> None:
    """Drop the registrations (the dispatcher forgets them when the libraries are destroyed)."""
    while _libs:
        lib = _libs.pop()
        lib._destroy()
