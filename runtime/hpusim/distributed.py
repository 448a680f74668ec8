"""`torch.distributed` on the emulated HPU: `hccl` is gloo on the inner CPU tensors, and each
collective is a MODELED op on the card's NIC lane.

One process per emulated card, as on a Gaudi server (`RANK`, `WORLD_SIZE`, `MASTER_ADDR`,
`MASTER_PORT`; `hpuprof record --emulate --cards N` starts them). `init_process_group(
backend="hccl")` creates a gloo process group; collectives called on `hpu` tensors
(`dist.all_reduce(p.grad)`, DDP's bucket all-reduces) reach `HpuTensor`'s dispatch as `c10d` ops,
which run them on the inner CPU tensors (exact results) and hand the device side to
`collective_on_device`:

- lazy mode flushes the pending graph first (the collective needs its inputs), as the bridge;
- the collective is ready on this card when its device work so far is done and its NIC lane is
  free; the cards of its process group exchange these ready times (one small all-reduce MAX
  over the same gloo group), so the collective starts on the device clock when the LAST card is
  ready: a card that arrives early waits, inside its collective, for the others (as HCCL and NCCL
  kernels do); the NIC op of each card spans its own arrival to the common end;
- its transfer time comes from the device model (`DeviceTimeline.collective_ns` when the model
  has it), else from `transfer_ns` below: the Gaudi scale-up network of an 8-card server, every
  card linked to every other by 3 x 100 GbE (Gaudi 2) or 3 x 200 GbE (Gaudi 3) of its 21
  scale-up ports (Intel Gaudi 2 / Gaudi 3 white papers); reduce-scatter + all-gather over all
  links at once, plus a fixed per-phase latency (an ASSUMPTION);
- the host records the `c10d::` op and a `launch hccl_<op>` runtime event; the device op carries
  Kineto's collective args (`Collective name`, `Process Group Name`, `Seq`, sizes), so
  `hpuprof analyze --report distributed` matches it across ranks.

Diverges: host times of collectives are gloo's on this host (measured) and include the time
exchange; point-to-point ops (send/recv) are timed on their own card only.
"""

from __future__ import annotations

from datetime import timedelta
from time import perf_counter_ns
from typing import Any, Final

BACKEND_NAME: Final = "hccl"
SCALE_UP_GBYTES_PER_S: Final = {"gaudi2": 21 * 100 / 8, "gaudi3": 21 * 200 / 8}
"""Per-card scale-up bandwidth in GB/s: 21 ports x 100 / 200 Gb/s (white papers)."""
PEER_GBYTES_PER_S: Final = {"gaudi2": 3 * 100 / 8, "gaudi3": 3 * 200 / 8}
"""Between two cards of an 8-card server: 3 ports (point-to-point ops)."""
PHASE_LATENCY_NS: Final = 15_000
"""Fixed cost of one collective phase (ASSUMPTION)."""
P2P_OPS: Final = frozenset({"send", "recv_", "recv_any_source_"})
INPUT_ARGS: Final = ("tensors", "input_tensors", "input_tensor", "input", "tensor")

_state: dict[str, Any] = {"nic_free": 0, "seq": {}}


def _gloo(store: Any, rank: int, size: int, timeout: timedelta) -> Any:
    from torch.distributed import ProcessGroupGloo

    return ProcessGroupGloo(store, rank, size, timeout)


def install() -> None:
    """Register `hccl` with torch.distributed (once per process; torch cannot unregister)."""
    import torch.distributed as dist

    _state["nic_free"] = 0
    _state["seq"] = {}
    if not dist.is_available() or BACKEND_NAME in dist.Backend.backend_list:
        return
    dist.Backend.register_backend(BACKEND_NAME, _gloo, devices=["hpu", "cpu"])


def collective_duration(rt: Any, op: str, nbytes: int, world: int) -> int:
    """The device model's duration of collective `op` when it models collectives
    (`DeviceTimeline.collective_ns(kind, nbytes, cards)`), else `transfer_ns`."""
    from hpusim import device_model

    model = getattr(rt.timeline, "collective_ns", None)
    kind = getattr(device_model, "COLLECTIVE_OPS", {}).get(op)
    if model is not None and kind is not None:
        return int(model(kind, nbytes, world))
    return transfer_ns(op, nbytes, world, rt.profile.name)


def transfer_ns(op: str, nbytes: int, world: int, device: str) -> int:
    """Modeled time (ns) to move a collective's data over the scale-up links (see module doc)."""
    if world <= 1:
        return PHASE_LATENCY_NS
    per_card = SCALE_UP_GBYTES_PER_S.get(device, SCALE_UP_GBYTES_PER_S["gaudi2"])  # bytes/ns
    share = (world - 1) / world
    if op.startswith(("allreduce", "reduce_")) and not op.startswith("reduce_scatter"):
        return int(2 * share * nbytes / per_card) + 2 * PHASE_LATENCY_NS
    if op.startswith(("allgather", "_allgather", "reduce_scatter", "_reduce_scatter", "alltoall")):
        return int(share * nbytes / per_card) + PHASE_LATENCY_NS
    if op in P2P_OPS:
        peer = PEER_GBYTES_PER_S.get(device, PEER_GBYTES_PER_S["gaudi2"])
        return int(nbytes / peer) + PHASE_LATENCY_NS
    if op.startswith("barrier"):
        return PHASE_LATENCY_NS
    return int(nbytes / per_card) + PHASE_LATENCY_NS  # broadcast, gather, scatter


def _tensors(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def _input(info: Any, uargs: list[Any]) -> list[Any]:
    names = [a.name for a in info.func._schema.arguments]
    for key in INPUT_ARGS:
        if key in names and names.index(key) < len(uargs):
            return _tensors(uargs[names.index(key)])
    return _tensors(uargs)


def _group(uargs: list[Any]) -> Any:
    import torch
    import torch.distributed as dist

    for a in uargs:
        if isinstance(a, torch.ScriptObject):
            try:
                return dist.ProcessGroup.unbox(a)
            except (RuntimeError, TypeError):
                return None
    return None


def _group_name(pg: Any) -> str:
    try:
        import torch.distributed.distributed_c10d as c10d

        return str(c10d._get_process_group_name(pg))
    except (AttributeError, KeyError, RuntimeError, ValueError):
        return str(getattr(pg, "group_name", "") or "")


def _latest(pg: Any, ready: int) -> int:
    """The latest `ready` of the group's cards (an all-reduce MAX over the group's gloo)."""
    import torch
    import torch.distributed as dist

    value = torch.tensor([ready], dtype=torch.int64)
    opts = dist.AllreduceOptions()
    opts.reduceOp = dist.ReduceOp(dist.ReduceOp.MAX)
    pg.allreduce([value], opts).wait()
    return int(value.item())


def collective_on_device(rt: Any, info: Any, cost: Any, uargs: list[Any], t0: int, t1: int) -> None:
    """The device side of a `c10d::` op run by the dispatch (see the module docstring)."""
    from hpusim import dispatch, lazy
    from hpusim.sink import ENGINES

    if rt.lazy:
        lazy.flush(rt, "collective")
    op = info.label.split("::", 1)[-1]
    tensors = _input(info, uargs)
    nbytes = sum(t.numel() * t.element_size() for t in tensors)
    pg = _group(uargs)
    world = pg.size() if pg is not None else 1
    name = _group_name(pg) if pg is not None else ""
    seq = _state["seq"][name] = _state["seq"].get(name, 0) + 1
    corr = rt.next_corr
    rt.next_corr += 1
    tl = rt.timeline
    ready = max(t1 + rt.profile.launch_latency_ns, tl.idle_at(), _state["nic_free"])
    enqueued = perf_counter_ns()  # the exchange below is the emulator's, not the launch's
    start = ready
    if pg is not None and world > 1 and op not in P2P_OPS:
        start = max(ready, _latest(pg, ready))
    end = start + collective_duration(rt, op, nbytes, world)
    _state["nic_free"] = end
    sink = rt.sink
    if not sink.recording:
        return
    dispatch._record_op(rt, info, cost, t0, t1, -1, corr)
    dev = f"hccl_{op.strip('_')}"
    sink.runtime("launch", f"launch {dev}", t1, max(enqueued - t1, 1), mode=rt.mode_code, corr=corr)
    dtype = str(tensors[0].dtype).replace("torch.", "") if tensors else ""
    payload = {
        "Collective name": op.strip("_"),
        "Process Group Name": name,
        "Seq": seq,
        "In msg nelems": sum(t.numel() for t in tensors),
        "Group size": world,
        "dtype": dtype,
        "hpuprof.modeled_wait_ns": start - ready,
    }
    sink.device(
        sink.intern(dev), ENGINES.index("NIC"), ready, end - ready, -1, corr, 0, nbytes, payload
    )
