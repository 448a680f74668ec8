"""Per-op accounting of the modeled card, called by dispatch after every device op.

Three jobs, all MODELED: the op's storages on the allocator (new outputs allocate, views share
their base, in-place outputs reuse it), the dataflow of a pending lazy graph (which storages each
op reads and writes, for `DeviceTimeline.run_graph`'s fusion and engine overlap), and the op's
host cost on the projected host clock (the bridge's per-op work replaces the emulator's).
"""

from __future__ import annotations

import sys
from typing import Any, Final

import torch

from hpusim.tensor import HpuTensor

Storages = tuple[tuple[int, int], ...]
"""(storage id, bytes) of the tensors an op reads or writes."""


def _nbytes(t: torch.Tensor) -> int:
    return int(t.numel()) * t.element_size()


def _inputs(args: Any, kwargs: dict[str, Any]) -> Storages:
    out: list[tuple[int, int]] = []
    for a in args:
        t = type(a)
        if t is HpuTensor:
            out.append((a._gid, _nbytes(a)))
        elif (t is list or t is tuple) and a:
            for x in a:
                if type(x) is HpuTensor:
                    out.append((x._gid, _nbytes(x)))
    for v in kwargs.values():
        if type(v) is HpuTensor:
            out.append((v._gid, _nbytes(v)))
    return tuple(out)


def _aliased(args: Any, kwargs: dict[str, Any], idx: int, name: str | None) -> Any:
    if name is not None:
        return kwargs.get(name)
    return args[idx] if 0 <= idx < len(args) else None


def account_outputs(rt: Any, info: Any, args: Any, kwargs: dict[str, Any], result: Any) -> Storages:
    """Allocate new output storages, share views with their base; returns the op's outputs."""
    alloc = rt.alloc
    outs: list[tuple[int, int]] = []
    results = result if isinstance(result, (tuple, list)) else (result,)
    alias = info.alias
    label = info.label
    for i, o in enumerate(results):
        if type(o) is not HpuTensor:
            continue
        idx, name, write = alias[i] if i < len(alias) else (-1, None, False)
        if idx >= 0 or name is not None:
            base = _aliased(args, kwargs, idx, name)
            if write:
                outs.append((o._gid, _nbytes(o)))
            elif type(base) is HpuTensor and base._gid and o is not base and not o._gid:
                alloc.share(o, base._gid)
            continue
        if not o._gid:
            n = _nbytes(o)
            alloc.alloc(o, n, label)
            outs.append((o._gid, n))
    return tuple(outs)


def after_op(
    rt: Any,
    info: Any,
    cost: Any,
    args: Any,
    kwargs: dict[str, Any],
    result: Any,
    t1: int,
    graphed: bool,
    fallback: bool,
    out_bytes: int = -1,
) -> None:
    """Storages, lazy dataflow and host cost of one dispatched device op (see module doc).

    `out_bytes` >= 0: `result` is the op's one output of that many bytes, a new wrapper of a
    plain op or the `self` an in-place op wrote (the common cases, known to dispatch without
    walking the schema's aliasing)."""
    if out_bytes >= 0:
        gid = rt.alloc.alloc(result, out_bytes, info.label) if info.plain_out else result._gid
        outs: Storages = ((gid, out_bytes),)
    else:
        outs = account_outputs(rt, info, args, kwargs, result)
    ledger = rt.ledger
    if ledger is not None and ledger._pending is not None:
        ledger.on_op()
    if graphed:
        rt.graph.note_dataflow(_inputs(args, kwargs), outs)
    clock = rt.clock
    if not clock.projected:
        return
    p = rt.profile
    if fallback:
        # a CPU fallback runs on a Gaudi host too: its measured time is portable; with fake
        # compute there is none, so it is modeled from the bytes it touches
        if rt.fake is not None:
            clock.op(t1, int(cost.nbytes / p.host_cpu_gbytes_per_s))
        else:
            clock.op(t1, _measured_since_enter(clock, t1))
        return
    if info.is_view:
        clock.op(t1, p.host_view_op_ns)
    elif rt.lazy:
        clock.op(t1, p.host_lazy_op_ns)
    else:
        clock.op(t1, p.host_eager_op_ns)


def _measured_since_enter(clock: Any, t1: int) -> int:
    """Measured ns from the innermost `enter` point to `t1` (the op's own CPU run)."""
    m = clock._m
    return max(int(t1 - m[-1]), 0)


_GAP_CHECK_NS: Final = 20_000
_GAP_GLUE_MAX_NS: Final = 2_000_000
"""Longer gaps are the script's work (data, logging, imports) whoever calls the next op."""


def gap_mode(clock: Any, t: int, in_backward: bool) -> str:
    """How the host time since the last device op counts on the projected timeline
    (`HostClock` modes): "drop" for framework glue, which the bridge's modeled per-op cost
    stands for (the autograd engine between backward ops; torch's own Python between ops:
    optimizer loops, tensor operator wrappers, module plumbing, much slower on the emulator's
    tensor subclass than natively); "wall" when the op comes from data loading
    (`torch.utils.data`: waits on workers use no CPU); else "cpu" (the script's own work)."""
    if in_backward:
        return "drop"
    gap = clock.gap_since_last(t)
    if gap <= _GAP_CHECK_NS:
        return "cpu"
    f: Any = sys._getframe(1)  # hpusim frames are skipped below
    while f is not None and "/hpusim/" in f.f_code.co_filename:
        f = f.f_back
    if f is None:
        return "cpu"
    name = f.f_code.co_filename
    if "/torch/utils/data/" in name:
        return "wall"
    if "/torch/" not in name:
        return "cpu"
    # the gap's own time (CPU and blocked, not its wait for a CPU) decides, not its wall time,
    # which a loaded machine stretches: a wall time under the bound needs no reading
    return "drop" if gap < _GAP_GLUE_MAX_NS or clock.kept_ns(t) < _GAP_GLUE_MAX_NS else "cpu"
