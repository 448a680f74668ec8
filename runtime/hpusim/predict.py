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
with it; `Prediction` summarizes the steps after warm-up.
"""

from __future__ import annotations

import math
import statistics
import sys
from array import array
from dataclasses import asdict, dataclass, field
from itertools import pairwise
from time import perf_counter_ns
from typing import Any, Final

import hpusim.state as state
from hpusim.accounting import _nbytes
from hpusim.device_model import COMPUTE_ENGINES, ENGINE_MME, ENGINE_NIC
from hpusim.host_fake import HOST_FAKE_MIN_BYTES
from hpusim.predict_ddp import DdpSettings, settings_of

GIB: Final = 2**30
HOST_ASSUMPTION: Final = (
    "host: the script's own Python is its thread's CPU time on this machine plus the time it "
    "was blocked (sleeps, I/O and queue waits), not its waits for a CPU, so this machine's "
    "load does not count; taken as is for the host CPU of a Gaudi server (Intel Xeon): no "
    "host-speed factor is applied, i.e. one core here is assumed as fast as one of the "
    "server's"
)


class StopPrediction(BaseException):
    """Raised from a step boundary once `--steps` steps ran (not an `Exception`, so a script's
    own `except Exception` does not swallow it)."""


@dataclass(frozen=True)
class StepRecord:
    """One step on the projected timeline (ns) and what it did."""

    index: int
    start_ns: int
    end_ns: int
    compiles: int
    compile_ns: int
    model_flops: int
    tokens: int
    samples: int
    device_busy_ns: int
    comm_exposed_ns: int
    micro_ns: tuple[int, ...] = ()
    """An optimizer step cut at the `mark_step`s inside it (lazy gradient accumulation: one
    segment per micro-batch, then the optimizer's): each segment ends when both the host and
    the device are done with what was launched up to that `mark_step`."""

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass(frozen=True)
class Prediction:
    """What `hpuprof predict --format json` prints (the issue's keys, then extras)."""

    device: str
    cards: int
    steps: int
    step_time_s: float | None
    samples_per_s: float | None
    tokens_per_s: float | None
    model_flops_per_step: float | None
    achieved_tflops_per_card: float | None
    mfu_pct: float | None
    compilations: int
    recompilations: int
    compile_time_s: float
    peak_hbm_gib: float
    hbm_gib: float
    fits: bool
    oom_at: str | None
    host_bound_pct: float | None
    comm_pct: float | None
    timeline: str
    assumptions: tuple[str, ...]
    mode: str = ""
    warmup_steps: int = 0
    step_times_s: tuple[float, ...] = ()
    micro_step_times_s: tuple[tuple[float, ...], ...] = ()
    samples_per_step: float | None = None
    tokens_per_step: float | None = None
    exit_code: int = 0
    standins: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["assumptions"] = list(self.assumptions)
        out["step_times_s"] = list(self.step_times_s)
        out["micro_step_times_s"] = [list(m) for m in self.micro_step_times_s]
        out["standins"] = list(self.standins)
        return out


class StepLedger:
    """Step boundaries and per-step device accounting of one emulated run (module doc)."""

    def __init__(
        self,
        rt: Any,
        *,
        max_steps: int | None = None,
        tokens_per_step: int | None = None,
    ) -> None:
        self.rt = rt
        self.max_steps = max_steps
        self.tokens_per_step = tokens_per_step
        self._starts = array("q")
        self._ends = array("q")
        self._engines = array("b")
        self._flops = array("q")
        self._bounds: dict[str, list[tuple[int, int, int, int, int, int]]] = {
            "optimizer": [],
            "mark_step": [],
        }
        self._pending: str | None = None
        self._marks = array("q")  # mark_steps that did not close an optimizer step
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
        self._grads: list[tuple[Any, int, int, int]] = []  # (param ref, gid, bytes, ready)
        self.ddp: DdpSettings | None = None  # the script's DDP (predict_ddp), once called
        self.issued: dict[tuple[str, str], list[int]] = {}  # script's collectives: count, bytes
        self._issued_in_step = 0
        self.origin_ns = rt.timeline.at(perf_counter_ns())

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

        self.rt.attach_ledger(self)
        self.rt.timeline.listener = self.on_device
        predict_ddp.install()
        self._handles = [
            register_module_forward_pre_hook(self._fwd_pre),
            register_module_forward_hook(self._fwd_post, always_call=True),
            register_optimizer_step_pre_hook(self._opt_pre),
            register_optimizer_step_post_hook(self._opt_post),
        ]

    def uninstall(self) -> None:
        import hpusim.predict_ddp as predict_ddp

        predict_ddp.uninstall()
        while self._handles:
            self._handles.pop().remove()
        if self.rt.ledger is self:
            self.rt.detach_ledger(self)
            self.rt.timeline.listener = None

    # --- runtime callbacks -----------------------------------------------------------------
    def on_device(self, engine: int, start: int, dur: int, flops: int) -> None:
        self._starts.append(start)
        self._ends.append(start + dur)
        self._engines.append(engine)
        self._flops.append(flops if engine == ENGINE_MME else 0)

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
        self._boundary("mark_step")
        if not closes_step:
            self._marks.append(self._bounds["mark_step"][-1][0])

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

    def _boundary(self, kind: str) -> None:
        """Close the step: on the projected host clock, and once the device finished what the
        host launched before it."""
        tl = self.rt.timeline
        host = tl.at(perf_counter_ns())
        end = max(host, tl.idle_at())
        self._bounds[kind].append(
            (end, self.compiles, self.compile_ns, self.tokens, self.samples, len(self._starts))
        )
        done = self.max_steps is not None and len(self._bounds[kind]) >= self.max_steps
        if done and (kind == "optimizer" or not self._bounds["optimizer"]):
            raise StopPrediction

    # --- model inputs (tokens, samples) ----------------------------------------------------
    def _fwd_pre(self, module: Any, args: Any) -> None:
        self._depth += 1
        if self._depth != 1:
            return
        if self._is_model(module):
            self._count_inputs(args, _call_kwargs(sys._getframe(1)))
        if self.rt.config.cards > 1:
            self.ddp = settings_of(module) or self.ddp
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
        self._grads = [g for g in self._grads if g[0] is not ref]
        self._grads.append((ref, gid, nbytes, ready))

    def _all_reduce_grads(self) -> None:
        """DDP's all-reduce of this step's gradients, in buckets, then the compute stream waits
        (the optimizer reads the reduced gradients)."""
        grads, self._grads = self._grads, []
        if not grads:
            return
        rt, tl = self.rt, self.rt.timeline
        buckets: list[list[tuple[Any, int, int, int]]] = [[]]
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
                gids = tuple((g[1], g[2]) for g in b if g[1])
                rt.graph.add(("hpuprof::ddp_all_reduce", (nbytes,)), cost, perf_counter_ns())
                rt.graph.note_dataflow(gids, gids)
            return
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
        self.close_pending()
        bounds = self._bounds["optimizer"] or self._bounds["mark_step"]
        if not bounds:
            tl = self.rt.timeline
            end = max(tl.at(perf_counter_ns()), tl.idle_at())
            bounds = [(end, self.compiles, self.compile_ns, self.tokens, self.samples, 0)]
        starts = self._sorted_intervals()
        marks = sorted(self._marks) if self._bounds["optimizer"] else []
        out: list[StepRecord] = []
        prev = (self.origin_ns, 0, 0, 0, 0, 0)
        for i, b in enumerate(bounds):
            lo, hi = prev[0], b[0]
            cuts = [lo, *(m for m in marks if lo < m < hi), hi]
            micro = tuple(e - s for s, e in pairwise(cuts)) if marks else ()
            busy, comm, flops = _window(starts, lo, hi)
            tokens = b[3] - prev[3]
            if self.tokens_per_step is not None:
                tokens = self.tokens_per_step
            out.append(
                StepRecord(
                    i, lo, hi, b[1] - prev[1], b[2] - prev[2], flops, tokens, b[4] - prev[4],
                    busy, comm, micro,
                )
            )  # fmt: skip
            prev = b
        return out

    def _sorted_intervals(self) -> list[tuple[int, int, int, int]]:
        return sorted(
            zip(self._starts, self._ends, self._engines, self._flops, strict=True),
            key=lambda r: r[0],
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
    all-reduce unless `name` says otherwise."""

    __slots__ = ("dev_name", "dur", "engine", "flops", "fusible", "low", "nbytes")

    def __init__(self, dur: int, nbytes: int, rt: Any, name: str = "") -> None:
        self.engine = ENGINE_NIC
        self.dur = dur
        self.nbytes = nbytes
        self.flops = 0
        self.fusible = False
        self.low = False
        self.dev_name = rt.sink.intern(name) if name else _ddp_name(rt)


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
        dur, nbytes, rt, f"{kind.replace('_', '')} (tensor parallel x{cards}, modeled)"
    )
    if rt.lazy:
        rt.graph.add((f"hpuprof::tp_{kind}", (nbytes, cards)), cost, perf_counter_ns())
        rt.graph.note_dataflow(((src._gid, src_bytes),), ((out._gid, out_bytes),))
        return out
    start = tl.schedule_collective(tl.stream_free, dur)  # eager: its input was just written
    tl.wait_collectives()
    rt.events.modeled_collective(cost.dev_name, start, dur, nbytes)
    return out


def _merged(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def _length(intervals: list[tuple[int, int]]) -> int:
    return sum(e - s for s, e in intervals)


def _window(rows: list[tuple[int, int, int, int]], lo: int, hi: int) -> tuple[int, int, int]:
    """(compute-busy ns, communication-only ns, MME FLOPs) of device nodes clipped to a step."""
    comp: list[tuple[int, int]] = []
    nic: list[tuple[int, int]] = []
    flops = 0
    for s, e, engine, f in rows:
        if e <= lo or s >= hi:
            continue
        if lo <= s < hi:
            flops += f
        seg = (max(s, lo), min(e, hi))
        (nic if engine == ENGINE_NIC else comp).append(seg)
    comp_m = _merged(comp)
    both = _merged(comp + nic)
    return _length(comp_m), _length(both) - _length(comp_m), flops


def warmup_count(steps: list[StepRecord]) -> int:
    """Leading steps that compiled (at least one when there are several steps), not all."""
    if len(steps) <= 1:
        return 0
    n = 1
    while n < len(steps) - 1 and steps[n].compiles:
        n += 1
    return n


def summarize(
    ledger: StepLedger,
    *,
    exit_code: int = 0,
    standins: tuple[str, ...] = (),
) -> Prediction:
    """The prediction of a finished run (median over the steps after warm-up)."""
    rt = ledger.rt
    p = rt.profile
    cfg = rt.config
    steps = ledger.steps()
    warm = warmup_count(steps)
    measured = steps[warm:] or steps
    times = [s.duration_ns for s in measured]
    step_ns = float(statistics.median(times)) if times else 0.0
    cards = cfg.cards
    per = _median_of(measured, lambda s: s.samples)
    tok = _median_of(measured, lambda s: s.tokens)
    flops = _median_of(measured, lambda s: s.model_flops)
    step_s = step_ns / 1e9 if step_ns > 0 else None
    samples_per_s = cards * per / step_s if step_s and per else None
    tokens_known = ledger.tokens_seen or ledger.tokens_per_step is not None
    tokens_per_s = cards * tok / step_s if step_s and tok and tokens_known else None
    achieved = flops / step_s / 1e12 if step_s and flops else None
    mfu = 100.0 * achieved / p.mme_bf16_tflops if achieved is not None else None
    idle = [
        100.0 * max(s.duration_ns - s.device_busy_ns - s.comm_exposed_ns, 0) / s.duration_ns
        for s in measured
        if s.duration_ns > 0
    ]
    comm = [100.0 * s.comm_exposed_ns / s.duration_ns for s in measured if s.duration_ns > 0]
    alloc = rt.alloc
    peak = alloc.peak
    oom = alloc.oom_at.text() if alloc.oom_at is not None else None
    assumptions = [
        f"device times MODELED from the {p.name} profile (runtime/hpusim/data/"
        "device_profiles.json; calibration in docs/device-model.md)",
        f"{cfg.mode} mode; host timeline projected: the script's own Python measured, the "
        "bridge's host costs modeled, the emulator's CPU work removed",
        HOST_ASSUMPTION,
        f"step time: median of {len(measured)} step(s) after {warm} warm-up step(s); a step "
        "ends when both the host and the device are done with it",
        "model FLOPs: MME and fused-attention FLOPs executed (recomputation included); MFU "
        f"against the {p.mme_bf16_tflops:g} TFLOPs bf16 MME peak",
    ]
    if cards > 1:
        assumptions.append(_data_parallel_assumption(ledger, cards))
    if ledger.tokens_per_step is not None:
        assumptions.append(f"tokens per step given: {ledger.tokens_per_step}")
    elif ledger.tokens_seen:
        assumptions.append(
            "tokens: integer input ids [batch, seq] fed to the outermost model (the module "
            "with the most parameters called at top level), counted once per call"
        )
    else:
        assumptions.append("tokens unknown: no integer [batch, seq] input ids reached the model")
    if rt.fake is not None:
        assumptions.append(
            f"fake compute: no values exist (host tensors of {HOST_FAKE_MIN_BYTES // 2**20} MiB "
            "or more are fake too, so a model built on the host costs no memory); host reads "
            "of fake values got stand-ins"
            + (f" ({len(standins)} call sites)" if standins else " (none happened)")
        )
    return Prediction(
        device=p.name,
        cards=cards,
        steps=len(steps),
        step_time_s=step_s,
        samples_per_s=samples_per_s,
        tokens_per_s=tokens_per_s,
        model_flops_per_step=float(flops) if flops else None,
        achieved_tflops_per_card=achieved,
        mfu_pct=mfu,
        compilations=ledger.compiles,
        recompilations=ledger.recompiles,
        compile_time_s=ledger.compile_ns / 1e9,
        peak_hbm_gib=peak / GIB,
        hbm_gib=p.hbm_gbytes * 1e9 / GIB,
        fits=peak <= p.usable_hbm_bytes,
        oom_at=oom,
        host_bound_pct=statistics.fmean(idle) if idle else None,
        comm_pct=statistics.fmean(comm) if comm else None,
        timeline=cfg.timeline,
        assumptions=tuple(assumptions),
        mode=cfg.mode,
        warmup_steps=warm,
        step_times_s=tuple(s.duration_ns / 1e9 for s in steps),
        micro_step_times_s=tuple(tuple(m / 1e9 for m in s.micro_ns) for s in steps),
        samples_per_step=per or None,
        tokens_per_step=tok if tokens_known and tok else None,
        exit_code=exit_code,
        standins=standins,
    )


def _data_parallel_assumption(ledger: StepLedger, cards: int) -> str:
    ddp = ledger.ddp
    issued = ", ".join(
        f"{n} {op} of {dtype or '?'} ({nbytes / n / 2**20:.3g} MB each)"
        for (op, dtype), (n, nbytes) in sorted(ledger.issued.items())
    )
    if ddp is not None:
        how = f"gradients all-reduced in the script's {ddp.describe()}, overlapping the backward"
    elif issued:
        how = "no DDP: the gradients are reduced by the script's own collectives"
    else:
        how = (
            "gradients all-reduced once per optimizer step as if in DDP with torch's defaults "
            f"(the script issues no collectives): {DdpSettings().describe()}, overlapping the "
            "backward"
        )
    mine = (
        f"; collectives the script issued, modeled over {cards} cards: {issued}" if issued else ""
    )
    return (
        f"data parallel over {cards} cards: each card runs the script's batch; {how}, over the "
        f"scale-up links (scale-out ports beyond 8 cards){mine}"
    )


def _median_of(steps: list[StepRecord], key: Any) -> float:
    values = [float(key(s)) for s in steps]
    if not values:
        return 0.0
    med = statistics.median(values)
    return 0.0 if math.isnan(med) else float(med)


__all__ = [
    "COMPUTE_ENGINES",
    "Prediction",
    "StepLedger",
    "StepRecord",
    "StopPrediction",
    "modeled_collective",
    "summarize",
    "warmup_count",
]
