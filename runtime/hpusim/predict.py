"""`hpuprof predict`: a script's step time, throughput, MFU, compilations and peak HBM on a
Gaudi at N cards, from one emulated run on fake tensors (all MODELED).

`StepLedger` watches the runtime while the script runs: step boundaries (`optimizer.step()`,
else `mark_step()` in inference loops), every modeled device node (engine, start, duration,
FLOPs), graph compilations, the tokens and samples fed to the model (integer input ids
`[batch, seq]`, by position or keyword, given to the outermost model: the module with the most
parameters called at top level, so a loss module called beside it does not count the batch
again), and, for `cards > 1`, the data-parallel gradient
all-reduce that DDP would run (25 MB buckets, overlapping the backward; the compute stream waits
for it before the optimizer). A step ends when both the projected host and the device are done
with it; `Prediction` summarizes the steps after warm-up. The ledger keeps the steps and device
nodes in a `StepBook` and what no device decides in `RunFacts`; `project` turns a book into the
prediction for a profile and card count (all three in `hpusim.prediction`, which a what-if
replay, `hpusim.whatif`, shares).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from time import perf_counter_ns
from typing import Any, Final

import hpusim.state as state
from hpusim.accounting import _nbytes
from hpusim.device_model import COMPUTE_ENGINES, ENGINE_NIC
from hpusim.predict_ddp import DdpSettings, settings_of
from hpusim.predict_world import World
from hpusim.prediction import (
    MemoryFacts,
    Prediction,
    RunFacts,
    StepBook,
    StepRecord,
    project,
    warmup_count,
)


class StopPrediction(BaseException):
    """Raised from a step boundary once `--steps` steps ran (not an `Exception`, so a script's
    own `except Exception` does not swallow it)."""


class StepLedger:
    """Step boundaries and per-step device accounting of one emulated run (module doc)."""

    def __init__(
        self,
        rt: Any,
        *,
        max_steps: int | None = None,
        tokens_per_step: int | None = None,
        log: Any = None,
    ) -> None:
        """`log`: a `hpusim.whatif.WorkLog` to record the device work in (what-if runs)."""
        self.rt = rt
        self.max_steps = max_steps
        self.tokens_per_step = tokens_per_step
        self.log = log
        self._pending: str | None = None
        self.compiles = 0
        self.recompiles = 0
        self.compile_ns = 0
        self.tokens = 0
        self.samples = 0
        self.tokens_seen = False
        self._depth = 0
        self._sizes: dict[int, int] = {}  # parameters of each module called at top level
        self._model_size = 0
        self._handles: list[Any] = []
        self._grad_hooked: set[int] = set()
        self._grads: list[tuple[Any, int, int, int, int]] = []
        """(param ref, storage id, bytes, ready, key) of this step's gradients so far."""
        self._backward_syncs = False  # the last DDP forward ran outside `no_sync`
        self._grad_keys: dict[int, int] = {}  # id(param) -> its key in the what-if log
        self.book = StepBook(rt.timeline.at(perf_counter_ns()))
        self.ddp: DdpSettings | None = None  # the script's DDP (predict_ddp), once called
        self.world: World | None = None  # the script's process group (predict_world)
        self.issued: dict[tuple[str, str], list[int]] = {}  # script's collectives: count, bytes
        self._issued_in_step = 0

    # --- installation ----------------------------------------------------------------------
    def install(self) -> None:
        from torch.nn.modules.module import (
            register_module_forward_hook,
            register_module_forward_pre_hook,
        )
        from torch.optim.optimizer import (
            register_optimizer_step_post_hook,
            register_optimizer_step_pre_hook,
        )

        import hpusim.predict_ddp as predict_ddp
        import hpusim.predict_world as predict_world

        self.rt.attach_ledger(self)
        self.rt.timeline.listener = self.book.on_device
        if self.log is not None:
            self.log.attach(self.rt.timeline, self.book.origin_ns)
        predict_ddp.install()
        self.world = predict_world.install(self.rt.config.cards)
        self._handles = [
            register_module_forward_pre_hook(self._fwd_pre),
            register_module_forward_hook(self._fwd_post, always_call=True),
            register_optimizer_step_pre_hook(self._opt_pre),
            register_optimizer_step_post_hook(self._opt_post),
        ]

    def uninstall(self) -> None:
        """Close the run (a step the optimizer left pending, the end of the run), then stop
        watching."""
        import hpusim.predict_ddp as predict_ddp
        import hpusim.predict_world as predict_world

        if self.rt.ledger is self and self.book.end_ns is None:
            self._close_run()
        predict_ddp.uninstall()
        predict_world.uninstall()
        while self._handles:
            self._handles.pop().remove()
        if self.rt.ledger is self:
            self.rt.detach_ledger(self)
            self.rt.timeline.listener = None
            if self.log is not None:
                self.log.detach(self.rt.timeline)

    def _close_run(self) -> None:
        if self._pending is not None:
            kind, self._pending = self._pending, None
            self._boundary(kind, stop=False)
        tl = self.rt.timeline
        host = tl.at(perf_counter_ns())
        counts = (self.compiles, self.compile_ns, self.tokens, self.samples)
        self.book.finish(max(host, tl.idle_at()), counts)
        if self.log is not None:
            self.log.end(host - tl.waited_ns, counts)

    # --- runtime callbacks -----------------------------------------------------------------

    def on_flush(self, n_ops: int, look: Any) -> None:
        if look.hit:
            return
        self.compiles += 1
        self.compile_ns += self.rt.timeline.compile_ns(n_ops)
        cause = look.cause or {}
        if cause.get("kind") not in (None, "new_graph"):
            self.recompiles += 1

    def on_mark_step(self) -> None:
        closes_step = self._pending is not None
        self.close_pending()
        self._boundary("mark_step", mark=not closes_step)

    def on_op(self) -> None:
        """A device op after an optimizer step in lazy mode: the step's graph was launched."""
        self.close_pending()

    def close_pending(self) -> None:
        if self._pending is not None:
            kind, self._pending = self._pending, None
            self._boundary(kind)

    def on_collective(self, op: str, nbytes: int, dtype: str, world: int) -> int:
        """A collective the script issued (hpusim.distributed): noted for the assumptions;
        returns the cards it is modeled over (a one-process group stands for `--cards`)."""
        seen = self.issued.setdefault((op, dtype), [0, 0])
        seen[0] += 1
        seen[1] += nbytes
        self._issued_in_step += 1
        return self.rt.config.cards if world == 1 else world

    def _opt_pre(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.close_pending()
        issued, self._issued_in_step = self._issued_in_step, 0
        if self.rt.config.cards > 1 and (self.ddp is not None or not issued):
            # DDP's all-reduce, unless the script reduces its gradients itself
            self._all_reduce_grads()
        else:
            self._grads = []

    def _opt_post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        # lazy mode: the step's graph launches at the mark_step that follows, so the step
        # closes there (or at the next op); eager ops already ran
        if self.rt.lazy:
            self._pending = "optimizer"
        else:
            self._boundary("optimizer")

    def _boundary(self, kind: str, *, mark: bool = False, stop: bool = True) -> None:
        """Close the step: on the projected host clock, and once the device finished what the
        host launched before it. `mark`: a mark_step inside an optimizer step."""
        tl = self.rt.timeline
        host = tl.at(perf_counter_ns())
        counts = (self.compiles, self.compile_ns, self.tokens, self.samples)
        book = self.book
        book.bound(kind, max(host, tl.idle_at()), counts, mark)
        if self.log is not None:
            self.log.boundary(kind, host - tl.waited_ns, counts, mark)
        done = stop and self.max_steps is not None and len(book.bounds[kind]) >= self.max_steps
        if done and (kind == "optimizer" or not book.bounds["optimizer"]):
            raise StopPrediction

    # --- model inputs (tokens, samples) ----------------------------------------------------
    def _fwd_pre(self, module: Any, args: Any) -> None:
        self._depth += 1
        if self._depth != 1:
            return
        if self._is_model(module):
            self._count_inputs(args, _call_kwargs(sys._getframe(1)))
        if self.rt.config.cards > 1:
            settings = settings_of(module)
            if settings is not None:
                if self._grads and self._backward_syncs:
                    # the backward of the DDP forward before this one all-reduced (DDP
                    # outside `no_sync` synchronizes every backward, accumulating or not)
                    self._all_reduce_grads()
                self._backward_syncs = bool(module.require_backward_grad_sync)
            self.ddp = settings or self.ddp
            self._hook_grads(module)

    def _fwd_post(self, module: Any, args: Any, output: Any) -> None:
        self._depth = max(self._depth - 1, 0)

    def _is_model(self, module: Any) -> bool:
        """Whether `module`, called at top level, is the model whose inputs are the batch: the
        one with the most parameters called at top level so far (a loss module, which has
        none, or a smaller helper module is not)."""
        key = id(module)
        n = self._sizes.get(key)
        if n is None:
            n = self._sizes[key] = sum(int(p.numel()) for p in module.parameters())
        if n == 0 or n < self._model_size:
            return False
        self._model_size = n
        return True

    def _count_inputs(self, args: Any, kwargs: dict[str, Any]) -> None:
        import torch

        values = [*args, *kwargs.values()]
        tensors = [a for a in values if isinstance(a, torch.Tensor)]
        ids = [t for t in tensors if t.dim() == 2 and not t.dtype.is_floating_point]
        if ids:
            self.tokens += int(ids[0].shape[0]) * int(ids[0].shape[1])
            self.samples += int(ids[0].shape[0])
            self.tokens_seen = True
        elif tensors and tensors[0].dim() >= 1:
            self.samples += int(tensors[0].shape[0])

    # --- data-parallel gradient all-reduce -------------------------------------------------
    def _hook_grads(self, module: Any) -> None:
        import weakref

        for p in module.parameters():
            if not p.requires_grad or id(p) in self._grad_hooked:
                continue
            self._grad_hooked.add(id(p))
            self._grad_keys[id(p)] = len(self._grad_keys)
            ref = weakref.ref(p)

            def hook(param: Any, ref: Any = ref) -> None:
                self._grad_ready(ref)

            p.register_post_accumulate_grad_hook(hook)

    def _grad_ready(self, ref: Any) -> None:
        p = ref()
        grad = getattr(p, "grad", None) if p is not None else None
        if grad is None:
            return
        per = self.ddp.comm_bytes_per_element if self.ddp is not None else None
        nbytes = int(grad.numel()) * (per or grad.element_size())
        tl = self.rt.timeline
        ready = tl.stream_free  # eager: the op that produced it just ran
        gid = int(getattr(grad, "_gid", 0))
        if gid:
            tl.watch.setdefault(gid, 0)  # lazy: set when its graph is launched
        key = self._grad_keys.get(id(p), -1)
        if self.log is not None:
            self.log.grad_ready(key, gid)
        self._grads = [g for g in self._grads if g[0] is not ref]
        self._grads.append((ref, gid, nbytes, ready, key))

    def _all_reduce_grads(self) -> None:
        """DDP's all-reduce of this step's gradients, in buckets, then the compute stream waits
        (the optimizer reads the reduced gradients)."""
        grads, self._grads = self._grads, []
        if not grads:
            return
        rt, tl = self.rt, self.rt.timeline
        buckets: list[list[tuple[Any, int, int, int, int]]] = [[]]
        ddp = self.ddp or DdpSettings()
        size, cap = 0, ddp.first_bucket_bytes
        for g in grads:  # in the order the backward produced them
            buckets[-1].append(g)
            size += g[2]
            if size >= cap:
                buckets.append([])
                size, cap = 0, ddp.bucket_cap_bytes
        buckets = [b for b in buckets if b]
        pending = rt.graph.pending_outputs() if rt.lazy else set()
        if rt.lazy and any(g[1] in pending for b in buckets for g in b):
            # the backward is still in the pending graph: the all-reduce joins it, and the
            # graph's dataflow starts each bucket when its gradients are written
            for b in buckets:
                nbytes = sum(g[2] for g in b)
                cost = _CollectiveCost(tl.collective_ns("all_reduce", nbytes), nbytes, rt)
                cost.ddp = True
                gids = tuple((g[1], g[2]) for g in b if g[1])
                rt.graph.add(("hpuprof::ddp_all_reduce", (nbytes,)), cost, perf_counter_ns())
                rt.graph.note_dataflow(gids, gids)
            return
        if self.log is not None:  # what-if: replayed for each card count (none on one card)
            self.log.ddp_all_reduce(
                tuple((sum(g[2] for g in b), tuple((g[4], g[1]) for g in b)) for b in buckets),
                rt.lazy,
            )
        with _unlogged(self.log):
            self._schedule_buckets(buckets)

    def _schedule_buckets(self, buckets: list[list[tuple[Any, int, int, int, int]]]) -> None:
        rt, tl = self.rt, self.rt.timeline
        for b in buckets:
            nbytes = sum(g[2] for g in b)
            # lazy: launched already, ready when its graph wrote each gradient
            ready = max(tl.watch.get(g[1], 0) if rt.lazy else g[3] for g in b)
            start = tl.schedule_collective(ready, tl.collective_ns("all_reduce", nbytes))
            if rt.sink.recording:
                rt.sink.device(
                    _ddp_name(rt),
                    ENGINE_NIC,
                    start,
                    tl.engine_free[ENGINE_NIC] - start,
                    -1,
                    -1,
                    0,
                    nbytes,
                )
        tl.wait_collectives()

    # --- the result ------------------------------------------------------------------------
    def steps(self) -> list[StepRecord]:
        """The closed steps (optimizer steps, else mark_step steps)."""
        if self.book.end_ns is None:
            self._close_run()
        return self.book.steps(self.facts().tokens_per_step)

    def facts(self, exit_code: int = 0, standins: tuple[str, ...] = ()) -> RunFacts:
        """What the run observed that no device decides."""
        rt = self.rt
        return RunFacts(
            mode=rt.config.mode,
            timeline=rt.config.timeline,
            compiles=self.compiles,
            recompiles=self.recompiles,
            compile_ns=self.compile_ns,
            tokens_seen=self.tokens_seen,
            tokens_per_step=self.tokens_per_step,
            fake=rt.fake is not None,
            standins=standins,
            exit_code=exit_code,
            ddp=self.ddp,
            process_group=self.world.describe() if self.world is not None else "",
            issued=tuple(
                (op, dtype, n, nbytes) for (op, dtype), (n, nbytes) in sorted(self.issued.items())
            ),
        )


def _call_kwargs(frame: Any) -> dict[str, Any]:
    """The keyword arguments of the module call whose forward pre-hook runs in `frame`'s
    callee (global pre-hooks get only the positional ones: `model(input_ids=ids)` passes its
    batch by keyword)."""
    kwargs = frame.f_locals.get("kwargs") if frame.f_code.co_name in _CALL_FRAMES else None
    return kwargs if isinstance(kwargs, dict) else {}


_CALL_FRAMES: Final = frozenset({"inner", "_call_impl", "_wrapped_call_impl"})


class _CollectiveCost:
    """A lazy-graph pseudo op: a collective on the NIC (device_model.run_graph); DDP's bucket
    all-reduce unless `name` says otherwise. `kind`, `nbytes` and `group` (its cards; None:
    the data-parallel world) price it again on another device; `ddp`: DDP's gradient
    all-reduce, which a one-card what-if leaves out."""

    __slots__ = (
        "ddp",
        "dev_name",
        "dur",
        "engine",
        "flops",
        "fusible",
        "group",
        "kind",
        "low",
        "nbytes",
    )

    def __init__(
        self,
        dur: int,
        nbytes: int,
        rt: Any,
        name: str = "",
        kind: str = "all_reduce",
        group: int | None = None,
    ) -> None:
        self.engine = ENGINE_NIC
        self.dur = dur
        self.nbytes = nbytes
        self.flops = 0
        self.fusible = False
        self.low = False
        self.dev_name = rt.sink.intern(name) if name else _ddp_name(rt)
        self.kind = kind
        self.group = group
        self.ddp = False


def _ddp_name(rt: Any) -> int:
    sid: int = rt.sink.intern("allreduce (DDP gradients, modeled)")
    return sid


GROUP_COLLECTIVES: Final = ("all_gather", "reduce_scatter", "all_reduce")


def modeled_collective(kind: str, src: Any, out: Any, cards: int) -> Any:
    """A collective of this card's group of `cards` cards (tensor parallelism run as one card's
    shard), MODELED: `out` (an hpu tensor the caller allocated with the result's shape) is
    written by `kind` on the NIC from `src`, as `DeviceTimeline.collective_ns` times it for the
    full (larger) of the two tensors. Lazy mode: a node of the pending graph, so whatever reads
    `out` waits for it and independent work overlaps it; eager: the stream waits for it.
    Returns `out`. The other cards' shards are not run: every card of the group does the same."""
    if kind not in GROUP_COLLECTIVES:
        raise ValueError(f"modeled_collective: kind {kind!r} is not one of {GROUP_COLLECTIVES}")
    rt = state.require_runtime()
    tl = rt.timeline
    src_bytes, out_bytes = _nbytes(src), _nbytes(out)
    nbytes = max(src_bytes, out_bytes)
    dur = tl.collective_ns(kind, nbytes, cards)
    cost = _CollectiveCost(
        dur, nbytes, rt, f"{kind.replace('_', '')} (tensor parallel x{cards}, modeled)", kind, cards
    )
    if rt.lazy:
        rt.graph.add((f"hpuprof::tp_{kind}", (nbytes, cards)), cost, perf_counter_ns())
        rt.graph.note_dataflow(((src._gid, src_bytes),), ((out._gid, out_bytes),))
        return out
    start = tl.schedule_collective(tl.stream_free, dur)  # eager: its input was just written
    tl.wait_collectives()
    rt.events.modeled_collective(cost.dev_name, start, dur, nbytes)
    return out


@contextmanager
def _unlogged(log: Any) -> Iterator[None]:
    """Device work the what-if log records in its own terms (DDP's all-reduce) is not logged
    again as plain scheduling."""
    if log is None:
        yield
        return
    log.paused += 1
    try:
        yield
    finally:
        log.paused -= 1


def summarize(
    ledger: StepLedger,
    *,
    exit_code: int = 0,
    standins: tuple[str, ...] = (),
) -> Prediction:
    """The prediction of a finished run (median over the steps after warm-up)."""
    rt = ledger.rt
    alloc = rt.alloc
    oom = alloc.oom_at.text() if alloc.oom_at is not None else None
    ledger.steps()  # closes the run if it is still open
    return project(
        ledger.book,
        ledger.facts(exit_code, standins),
        rt.profile,
        rt.config.cards,
        MemoryFacts(alloc.peak, oom),
    )


__all__ = [
    "COMPUTE_ENGINES",
    "MemoryFacts",
    "Prediction",
    "RunFacts",
    "StepBook",
    "StepLedger",
    "StepRecord",
    "StopPrediction",
    "modeled_collective",
    "project",
    "summarize",
    "warmup_count",
]
