"""Fake compute (`hpusim.enable(compute="fake")`, `hpuprof predict`): shapes without data.

Under each hpu tensor sits a tensor on torch's `meta` device instead of a CPU tensor (the hpu
wrapper stays CPU-keyed, as in real runs): every op propagates shapes, dtypes and strides and
allocates nothing, so a 7-billion-parameter training step is simulated on a laptop in seconds,
with the same op stream (and so the same modeled device, recipes and allocator) as a real run.
An op's output metadata is computed once per op signature by its meta kernel and cached: later
calls with the same signature build their outputs directly (in-place outputs are their input,
views are taken for real, since a view's metadata is its own). Host tensors an op reads (index
tensors, data) are moved to meta first; factories and host-to-device copies create meta tensors.

A value the host reads from a fake tensor does not exist: `.item()`, `bool()`, `.tolist()` and
`.cpu()` get a deterministic stand-in (False / 1 / 1.0, zeros) and a warning naming the line,
since data-dependent control flow cannot be predicted. Ops whose output shape depends on data
(`nonzero`, `masked_select`, `unique`) get their largest possible output.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Final

import torch

import hpusim.state as state
from hpusim.recorder import call_site

if TYPE_CHECKING:
    from hpusim.state import Runtime

STANDIN_BOOL: Final = False
STANDIN_INT: Final = 1
STANDIN_FLOAT: Final = 1.0


META: Final = torch.device("meta")
_empty_strided = torch.empty_strided
"""torch's own (host_fake.py wraps the name in `torch` under fake compute; meta tensors are
made here on every op, and need no host check)."""


class FakeCompute:
    """The state of fake compute: the output-metadata cache of op signatures, and the host
    reads that got a stand-in (`line:what`)."""

    def __init__(self) -> None:
        self.specs: dict[Any, Any] = {}
        self.warned: set[str] = set()


def make_mode() -> FakeCompute:
    return FakeCompute()


def factory_device(rt: Any) -> torch.device:
    """Where a factory creates the tensor under an hpu tensor: cpu, or meta with fake compute."""
    return META if rt is not None and rt.fake is not None else torch.device("cpu")


def to_fake(rt: Any, t: torch.Tensor) -> torch.Tensor:
    """A metadata-only copy of a host tensor."""
    return _empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype, device=META)


def warn_standin(rt: Runtime, what: str, value: Any) -> None:
    """Warn once per user line that a value read on the host is a stand-in."""
    if rt.fake is None:
        return
    site = call_site() or "<unknown line>"
    key = f"{site}:{what}"
    if key in rt.fake.warned:
        return
    rt.fake.warned.add(key)
    warnings.warn(
        f"hpusim fake compute: {what} at {site} reads a value that was never computed; using "
        f"the stand-in {value!r} (data-dependent control flow cannot be predicted)",
        RuntimeWarning,
        stacklevel=2,
    )


def standin_sites() -> tuple[str, ...]:
    """The `line:what` of every host read of this run that got a stand-in."""
    rt = state.RT
    return tuple(sorted(rt.fake.warned)) if rt is not None and rt.fake is not None else ()


def scalar_standin(dtype: torch.dtype) -> Any:
    if dtype == torch.bool:
        return STANDIN_BOOL
    if dtype.is_floating_point or dtype.is_complex:
        return STANDIN_FLOAT
    return STANDIN_INT


def host_copy(rt: Runtime, t: torch.Tensor, what: str) -> torch.Tensor:
    """A real CPU tensor standing in for fake `t` (zeros; bools False)."""
    warn_standin(rt, what, "zeros")
    return torch.zeros(tuple(t.shape), dtype=t.dtype)


def tolist(rt: Runtime, t: torch.Tensor) -> Any:
    value = scalar_standin(t.dtype)
    warn_standin(rt, ".tolist()", value)
    return torch.full(tuple(t.shape), value, dtype=t.dtype).tolist()


_DYNAMIC: Final = frozenset(
    {
        "aten::nonzero",
        "aten::argwhere",
        "aten::masked_select",
        "aten::_unique",
        "aten::_unique2",
        "aten::unique_dim",
        "aten::unique_consecutive",
    }
)


def _to_meta(a: Any) -> Any:
    if type(a) is torch.Tensor and a.device.type != "meta" and a.dim() != 0:
        return to_fake(None, a)
    if type(a) is torch.device and a.type == "cpu":
        # a device op's `device=` (the CPU once unwrapped, dispatch._unwrap_kwargs): its
        # outputs are meta, as its inputs are (torch's Python references of factory-like ops,
        # `new_zeros` in an index backward, call torch.full with it: on the CPU, a large one
        # became a fake host tensor, host_fake.py, mixed into the op's meta inputs)
        return torch.device(META)
    if type(a) is list or type(a) is tuple:
        return type(a)(_to_meta(x) for x in a)
    return a


def run(
    rt: Runtime, func: Any, info: Any, args: list[Any], kwargs: dict[str, Any], ckey: Any
) -> Any:
    """Run one op on meta tensors (see the module doc), with stand-ins for data-dependent
    results."""
    label = info.label
    if label == "aten::_local_scalar_dense":
        value = scalar_standin(args[0].dtype)
        warn_standin(rt, ".item()" if args[0].dtype != torch.bool else "bool()", value)
        return value
    if label in _DYNAMIC:
        return _dynamic_standin(rt, label, args)
    if info.is_view:
        return func(*_to_meta(args), **kwargs)
    specs = rt.fake.specs
    spec = specs.get(ckey)
    if spec is not None:
        return _build(spec, args, kwargs)
    out = func(*_to_meta(args), **{k: _to_meta(v) for k, v in kwargs.items()})
    specs[ckey] = _spec(out, info, args, kwargs)
    return out


def _spec(out: Any, info: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """How to rebuild `out`: per output, the argument it is (in-place) or its metadata."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    alias = info.alias
    items: list[Any] = []
    for i, o in enumerate(outs):
        if not isinstance(o, torch.Tensor):
            items.append(("value", o))
            continue
        idx, name, write = alias[i] if i < len(alias) else (-1, None, False)
        if write and (idx >= 0 or name is not None):
            items.append(("arg", idx, name))
        else:
            items.append(("new", tuple(o.shape), tuple(o.stride()), o.dtype))
    kind = "tuple" if isinstance(out, tuple) else ("list" if isinstance(out, list) else "one")
    return kind, tuple(items)


def _build(spec: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    kind, items = spec
    outs: list[Any] = []
    for item in items:
        tag = item[0]
        if tag == "new":
            outs.append(_empty_strided(item[1], item[2], dtype=item[3], device=META))
        elif tag == "arg":
            outs.append(kwargs[item[2]] if item[2] is not None else args[item[1]])
        else:
            outs.append(item[1])
    if kind == "one":
        return outs[0]
    return tuple(outs) if kind == "tuple" else outs


def _dynamic_standin(rt: Runtime, label: str, args: list[Any]) -> Any:
    """The largest output a data-dependent op can have (every element selected / distinct)."""
    x = args[0]
    n = int(x.numel())
    warn_standin(rt, f"{label} (data-dependent output shape)", f"{n} elements")
    if label in ("aten::nonzero", "aten::argwhere"):
        return torch.empty((n, x.dim()), dtype=torch.int64, device=META)
    if label == "aten::masked_select":
        return torch.empty((n,), dtype=x.dtype, device=META)
    flat = torch.empty((n,), dtype=x.dtype, device=META)
    inverse = torch.empty(tuple(x.shape), dtype=torch.int64, device=META)
    counts = torch.empty((n,), dtype=torch.int64, device=META)
    if label == "aten::_unique":
        return flat, inverse
    return flat, inverse, counts
