"""A prediction's figures from one projection of a run (all MODELED): the steps and device
nodes (`StepBook`), what the run observed that no device decides (`RunFacts`, `MemoryFacts`),
and `project`, which makes the `Prediction` for a device profile and card count. The live run's
ledger (`hpusim.predict.StepLedger`) and a what-if replay (`hpusim.whatif`) fill a book each;
the one `project` reads both.
"""

from __future__ import annotations

import math
import statistics
from array import array
from dataclasses import asdict, dataclass, field
from itertools import pairwise
from typing import Any, Final

from hpusim.device_model import ENGINE_MME, ENGINE_NIC
from hpusim.host_fake import HOST_FAKE_MIN_BYTES
from hpusim.predict_ddp import DdpSettings

GIB: Final = 2**30
HOST_ASSUMPTION: Final = (
    "host: the script's own Python is its thread's CPU time on this machine plus the time it "
    "was blocked (sleeps, I/O and queue waits), not its waits for a CPU, so this machine's "
    "load does not count; taken as is for the host CPU of a Gaudi server (Intel Xeon): no "
    "host-speed factor is applied, i.e. one core here is assumed as fast as one of the "
    "server's"
)


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


@dataclass(frozen=True)
class RunFacts:
    """What one run observed that no device or card count decides (a what-if shares them)."""

    mode: str
    timeline: str
    compiles: int
    recompiles: int
    compile_ns: int
    tokens_seen: bool
    tokens_per_step: int | None
    fake: bool
    standins: tuple[str, ...] = ()
    exit_code: int = 0
    ddp: DdpSettings | None = None
    """The script's DistributedDataParallel settings (hpusim.predict_ddp), if it made one."""
    issued: tuple[tuple[str, str, int, int], ...] = ()
    """The collectives the script issued itself: (op, dtype, count, bytes)."""
    process_group: str = ""
    """How the script's torch.distributed process group was stood for (hpusim.predict_world),
    "" when it made none."""


class StepBook:
    """The step boundaries and device nodes of one projection: the live run's (`StepLedger`)
    or a what-if replay's (`hpusim.whatif`); `steps()` cuts the nodes into steps."""

    def __init__(self, origin_ns: int) -> None:
        self.origin_ns = origin_ns
        self.end_ns: int | None = None
        """When the run ended (host and device done), once it did."""
        self._end_counts = (0, 0, 0, 0)
        self._starts = array("q")
        self._ends = array("q")
        self._engines = array("b")
        self._flops = array("q")
        self.bounds: dict[str, list[tuple[int, int, int, int, int]]] = {
            "optimizer": [],
            "mark_step": [],
        }
        """Per kind: (end, compiles, compile ns, tokens, samples so far) of each boundary."""
        self._marks = array("q")  # mark_steps that did not close an optimizer step

    def on_device(self, engine: int, start: int, dur: int, flops: int) -> None:
        self._starts.append(start)
        self._ends.append(start + dur)
        self._engines.append(engine)
        self._flops.append(flops if engine == ENGINE_MME else 0)

    def bound(self, kind: str, end: int, counts: tuple[int, int, int, int], mark: bool) -> None:
        """A step boundary of `kind` at `end` with the run's counts so far; `mark`: a
        mark_step inside an optimizer step (cuts it into micro-steps)."""
        self.bounds[kind].append((end, *counts))
        if mark:
            self._marks.append(end)

    def finish(self, end: int, counts: tuple[int, int, int, int]) -> None:
        """The run ended at `end` with these counts (compiles, compile ns, tokens, samples)."""
        self.end_ns = end
        self._end_counts = counts

    def steps(self, tokens_per_step: int | None = None) -> list[StepRecord]:
        """The closed steps (optimizer steps, else mark_step steps, else the whole run)."""
        bounds = self.bounds["optimizer"] or self.bounds["mark_step"]
        if not bounds:
            end = self.end_ns if self.end_ns is not None else self.origin_ns
            bounds = [(end, *self._end_counts)]
        starts = self._sorted_intervals()
        marks = sorted(self._marks) if self.bounds["optimizer"] else []
        out: list[StepRecord] = []
        prev = (self.origin_ns, 0, 0, 0, 0)
        for i, b in enumerate(bounds):
            lo, hi = prev[0], b[0]
            cuts = [lo, *(m for m in marks if lo < m < hi), hi]
            micro = tuple(e - s for s, e in pairwise(cuts)) if marks else ()
            busy, comm, flops = _window(starts, lo, hi)
            tokens = b[3] - prev[3]
            if tokens_per_step is not None:
                tokens = tokens_per_step
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


@dataclass(frozen=True)
class MemoryFacts:
    """The modeled HBM of a run on one device: its peak and where it ran out (None: fits)."""

    peak_bytes: int
    oom_at: str | None


def _data_parallel_assumption(facts: RunFacts, cards: int) -> str:
    issued = ", ".join(
        f"{n} {op} of {dtype or '?'} ({nbytes / n / 2**20:.3g} MB each)"
        for op, dtype, n, nbytes in facts.issued
    )
    if facts.ddp is not None:
        how = (
            f"gradients all-reduced in the script's {facts.ddp.describe()}, overlapping the "
            "backward"
        )
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


def project(
    book: StepBook,
    facts: RunFacts,
    p: Any,
    cards: int,
    memory: MemoryFacts,
    notes: tuple[str, ...] = (),
) -> Prediction:
    """The prediction from one projection's steps on device profile `p` at `cards` cards
    (the live run's, or a what-if replay's); `notes` join the assumptions."""
    steps = book.steps(facts.tokens_per_step)
    warm = warmup_count(steps)
    measured = steps[warm:] or steps
    times = [s.duration_ns for s in measured]
    step_ns = float(statistics.median(times)) if times else 0.0
    per = _median_of(measured, lambda s: s.samples)
    tok = _median_of(measured, lambda s: s.tokens)
    flops = _median_of(measured, lambda s: s.model_flops)
    step_s = step_ns / 1e9 if step_ns > 0 else None
    samples_per_s = cards * per / step_s if step_s and per else None
    tokens_known = facts.tokens_seen or facts.tokens_per_step is not None
    tokens_per_s = cards * tok / step_s if step_s and tok and tokens_known else None
    achieved = flops / step_s / 1e12 if step_s and flops else None
    mfu = 100.0 * achieved / p.mme_bf16_tflops if achieved is not None else None
    idle = [
        100.0 * max(s.duration_ns - s.device_busy_ns - s.comm_exposed_ns, 0) / s.duration_ns
        for s in measured
        if s.duration_ns > 0
    ]
    comm = [100.0 * s.comm_exposed_ns / s.duration_ns for s in measured if s.duration_ns > 0]
    peak = memory.peak_bytes
    assumptions = [
        f"device times MODELED from the {p.name} profile (runtime/hpusim/data/"
        "device_profiles.json; calibration in docs/device-model.md)",
        f"{facts.mode} mode; host timeline projected: the script's own Python measured, the "
        "bridge's host costs modeled, the emulator's CPU work removed",
        HOST_ASSUMPTION,
        f"step time: median of {len(measured)} step(s) after {warm} warm-up step(s); a step "
        "ends when both the host and the device are done with it",
        "model FLOPs: MME and fused-attention FLOPs executed (recomputation included); MFU "
        f"against the {p.mme_bf16_tflops:g} TFLOPs bf16 MME peak",
    ]
    if cards > 1:
        assumptions.append(_data_parallel_assumption(facts, cards))
    if facts.process_group:
        assumptions.append(facts.process_group)
    if facts.tokens_per_step is not None:
        assumptions.append(f"tokens per step given: {facts.tokens_per_step}")
    elif facts.tokens_seen:
        assumptions.append(
            "tokens: integer input ids [batch, seq] fed to the outermost model (the module "
            "with the most parameters called at top level), counted once per call"
        )
    else:
        assumptions.append("tokens unknown: no integer [batch, seq] input ids reached the model")
    if facts.fake:
        standins = facts.standins
        assumptions.append(
            f"fake compute: no values exist (host tensors of {HOST_FAKE_MIN_BYTES // 2**20} MiB "
            "or more are fake too, so a model built on the host costs no memory); host reads "
            "of fake values got stand-ins"
            + (f" ({len(standins)} call sites)" if standins else " (none happened)")
        )
    assumptions.extend(notes)
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
        compilations=facts.compiles,
        recompilations=facts.recompiles,
        compile_time_s=facts.compile_ns / 1e9,
        peak_hbm_gib=peak / GIB,
        hbm_gib=p.hbm_gbytes * 1e9 / GIB,
        fits=peak <= p.usable_hbm_bytes,
        oom_at=memory.oom_at,
        host_bound_pct=statistics.fmean(idle) if idle else None,
        comm_pct=statistics.fmean(comm) if comm else None,
        timeline=facts.timeline,
        assumptions=tuple(assumptions),
        mode=facts.mode,
        warmup_steps=warm,
        step_times_s=tuple(s.duration_ns / 1e9 for s in steps),
        micro_step_times_s=tuple(tuple(m / 1e9 for m in s.micro_ns) for s in steps),
        samples_per_step=per or None,
        tokens_per_step=tok if tokens_known and tok else None,
        exit_code=facts.exit_code,
        standins=facts.standins,
    )


def _median_of(steps: list[StepRecord], key: Any) -> float:
    values = [float(key(s)) for s in steps]
    if not values:
        return 0.0
    med = statistics.median(values)
    return 0.0 if math.isnan(med) else float(med)


__all__ = [
    "MemoryFacts",
    "Prediction",
    "RunFacts",
    "StepBook",
    "StepRecord",
    "project",
    "warmup_count",
]
