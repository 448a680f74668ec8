"""Modeled device: engines, op costs, graph fusion and scheduling, collectives (all MODELED).

Constants come from a named profile in `data/device_profiles.json`; each one cites a public
source, or says it is FITTED (on which published figures: docs/device-model.md) or an
ASSUMPTION. The model, op by op:

- **MME** (matmul, conv, attention): `flops / (peak(dtype) * efficiency(shape))`, where the
  efficiency is the share of the MMEs' 256x256 output blocks a matmul fills (small and skinny
  matmuls leave blocks and engines idle), times `K / (K + fill)` (pipeline fill per block),
  times the best sustained share of the peak. FP8 inputs run at the FP8 rate. Never faster than
  its HBM traffic allows.
- **TPC** (element-wise, normalization, reductions, indexing): `max(flops / vector peak,
  bytes / achievable HBM bandwidth)` plus a fixed kernel cost.
- **DMA** (copies) and **NIC** (collectives: the card's scale-up links for up to 8 cards, its
  scale-out ports beyond).

Eager mode runs ops in program order on one stream. In lazy and compile mode a graph is
scheduled by `DeviceTimeline.run_graph`: consecutive fusible TPC ops become one kernel that reads
its external inputs and writes the outputs used after it once (the graph compiler's fusion), and
units start when their inputs are ready and their engine is free, so MME and TPC work on
independent parts of a graph at the same time. A collective waits for its inputs and runs on the
NIC beside compute (DDP bucket overlap).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from functools import cache
from pathlib import Path
from typing import Any, Final, NamedTuple

from hpusim.fused_costs import torch_attention_cost
from hpusim.graph_memory import graph_memory
from hpusim.mme_cost import MmeArch, arch_from_profile, mme_cycles
from hpusim.mme_ops import Problem, mme_problems
from hpusim.projection import MeasuredClock
from hpusim.tpc_cost import TpcArch, dma_ns, tpc_work
from hpusim.tpc_cost import arch_from_profile as tpc_arch

MME_OPS: Final = frozenset(
    {
        "mm",
        "bmm",
        "addmm",
        "addbmm",
        "baddbmm",
        "matmul",
        "linear",
        "convolution",
        "convolution_backward",
        "_convolution",
        "conv1d",
        "conv2d",
        "conv3d",
        "einsum",
        "dot",
        "mv",
        "addmv",
        "_scaled_mm",
        "fp8_gemm_v2",
        "fp8_gemm",
        "conv2d_fp8",
    }
)
ATTENTION_OPS: Final = frozenset(
    {
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_flash_attention_for_cpu",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_flash_attention_backward",
        "_scaled_dot_product_flash_attention_for_cpu_backward",
        "_scaled_dot_product_efficient_attention_backward",
        "sdpa_recomp_fwd",
        "sdpa_recomp_bwd",
        "sdpa_fwd",
        "sdpa_bwd",
        "fp8_sdpa_recomp_fwd",
        "fp8_sdpa_fwd",
        "fp8_sdpa_bwd",
    }
)
"""Fused attention (the bridge runs torch's SDPA as FusedSDPA): one MME-engine node."""
DMA_OPS: Final = frozenset({"copy_", "_copy_from", "clone", "h2d", "d2h"})
"""Copies run on DMA; a dtype cast (`_to_copy` on the device) is a TPC kernel that fuses."""
COLLECTIVE_OPS: Final[dict[str, str]] = {
    "allreduce_": "all_reduce",
    "all_reduce": "all_reduce",
    "all_reduce_": "all_reduce",
    "allreduce_coalesced_": "all_reduce",
    "allgather_": "all_gather",
    "_allgather_base_": "all_gather",
    "allgather_into_tensor_coalesced_": "all_gather",
    "all_gather_into_tensor": "all_gather",
    "all_gather_into_tensor_coalesced": "all_gather",
    "reduce_scatter_": "reduce_scatter",
    "_reduce_scatter_base_": "reduce_scatter",
    "reduce_scatter_tensor": "reduce_scatter",
    "reduce_scatter_tensor_coalesced": "reduce_scatter",
    "broadcast_": "broadcast",
    "broadcast": "broadcast",
}
"""c10d / functional-collective op base names -> collective kind."""
NOT_FUSIBLE: Final = frozenset(
    {
        "embedding",
        "embedding_dense_backward",
        "index",
        "index_put_",
        "_index_put_impl_",
        "index_select",
        "index_add_",
        "index_copy",
        "index_copy_",
        "index_fill_",
        "masked_scatter_",
        "slice_scatter",
        "select_scatter",
        "gather",
        "scatter",
        "scatter_",
        "scatter_add",
        "scatter_add_",
        "sort",
        "topk",
        "nonzero",
        "unique",
        "_unique2",
        "cumsum",
        "argmax",
        "argmin",
        "max_pool2d_with_indices",
        "max_pool2d_with_indices_backward",
        "multinomial",
        "cat",
        "stack",
        "_local_scalar_dense",
    }
)
"""TPC ops the graph compiler does not fuse into an element-wise chain (data-dependent access,
sorts, concatenations)."""
ENGINE_MME: Final = 1
ENGINE_TPC: Final = 2
ENGINE_DMA: Final = 3
ENGINE_NIC: Final = 4  # indices into sink.ENGINES
COMPUTE_ENGINES: Final = (ENGINE_MME, ENGINE_TPC, ENGINE_DMA)
INTRA_NODE_CARDS: Final = 8
"""Cards joined all-to-all by scale-up links in one HLS server (g2arch, g3wp)."""


@dataclass(frozen=True)
class DeviceProfile:
    """A device's modeled capabilities (each field's source: data/device_profiles.json)."""

    name: str
    mme_bf16_tflops: float
    mme_fp8_tflops: float
    mme_fp32_tflops: float
    mme_bf16_sustained_tflops: float
    mme_fp8_sustained_tflops: float
    mme_sustained_shapes: dict[str, list[int]]
    """Precision -> the M x N x K GEMM at which the sustained TFLOPs were measured."""
    vector_bf16_tflops: float
    vector_fp32_tflops: float
    mme_engines: int
    hbm_gbytes: int
    hbm_usable_gbytes: float
    hbm_tbytes_per_s: float
    hbm_efficiency: float
    hbm_alignment_bytes: int
    h2d_gbytes_per_s: float
    launch_latency_ns: int
    min_op_ns: int
    tpc_kernel_ns: int
    compile_base_ns: int
    compile_per_op_ns: int
    eager_compile_per_op_ns: int
    scaleup_links_per_peer: int
    scaleout_links: int
    link_gbits: float
    link_efficiency: float
    collective_latency_ns: int
    host_lazy_op_ns: int
    host_eager_op_ns: int
    host_view_op_ns: int
    host_flush_base_ns: int
    host_flush_per_op_ns: int
    host_launch_ns: int
    host_graph_replay_ns: int
    host_d2h_ns: int
    host_cpu_gbytes_per_s: float
    host_glue_max_ns: int
    mme: MmeArch
    """The MME cost model's facts (`mme_cost`; key `mme` of the profile)."""
    tpc: TpcArch
    """The TPC and DMA facts per op family (`tpc_cost`; key `tpc` of the profile)."""

    @property
    def hbm_bytes_per_ns(self) -> float:
        """Achievable HBM bandwidth (bytes/ns)."""
        return self.hbm_tbytes_per_s * 1e3 * self.hbm_efficiency

    @property
    def usable_hbm_bytes(self) -> int:
        return int(self.hbm_usable_gbytes * 1e9)


PROFILES: Final = ("gaudi2", "gaudi3")


def _profile_data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (Path(__file__).parent / "data" / "device_profiles.json").read_text()
    )
    return data


OVERRIDES_ENV: Final = "HPUSIM_PROFILE_OVERRIDES"
"""A JSON object of numeric profile fields that replace the profile's own (`{"host_lazy_op_ns":
25000}`): what-if runs, and the calibration's leave-one-out rows (bench/calibration/fit.py)."""


def _overrides() -> dict[str, float]:
    text = os.environ.get(OVERRIDES_ENV, "")
    if not text:
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{OVERRIDES_ENV} is not a JSON object: {exc}") from None
    if not isinstance(data, dict) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in data.values()
    ):
        raise ValueError(f"{OVERRIDES_ENV} must map profile fields to numbers, got {text!r}")
    return data


@cache
def load_profile(name: str) -> DeviceProfile:
    """The named profile (with any `HPUSIM_PROFILE_OVERRIDES` applied); raises ValueError for
    an unknown name or an override of an unknown or non-numeric field."""
    data = _profile_data()
    if name not in data or name.startswith("_"):
        raise ValueError(f"unknown device profile {name!r}; known: {', '.join(PROFILES)}")
    known = {f.name for f in fields(DeviceProfile)} - {"mme", "tpc", "name"}
    values = {k: v for k, v in data[name].items() if k in known}
    for key, value in _overrides().items():
        if key not in known or not isinstance(values[key], (int, float)):
            raise ValueError(f"{OVERRIDES_ENV}: {key!r} is not a numeric profile field")
        values[key] = type(values[key])(value)
    values["name"] = data[name]["name"]
    mme, tpc = arch_from_profile(data[name]["mme"]), tpc_arch(data[name]["tpc"])
    return DeviceProfile(**values, mme=mme, tpc=tpc)


def profile_citations(name: str) -> dict[str, str]:
    """Field -> source note of a profile (every numeric field has one; the MME cost model's
    facts as `mme.<key>`)."""
    cites: dict[str, str] = dict(_profile_data()[name]["citations"])
    return cites


def engine_of(op: str) -> int:
    """The engine of an op base name (`mm` -> MME, `copy_` -> DMA, `allreduce_` -> NIC...)."""
    if op in MME_OPS or op in ATTENTION_OPS:
        return ENGINE_MME
    if op in DMA_OPS:
        return ENGINE_DMA
    if op in COLLECTIVE_OPS:
        return ENGINE_NIC
    return ENGINE_TPC


def is_fusible(op: str) -> bool:
    """A TPC op the graph compiler folds into an element-wise / normalization chain."""
    return engine_of(op) == ENGINE_TPC and op not in NOT_FUSIBLE


def _prod(dims: Sequence[int]) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


class OpModel(NamedTuple):
    """The modeled cost of one device op."""

    engine: int
    flops: int
    nbytes: int
    dur: int
    fusible: bool


_FP8: Final = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")


def _precision(dtypes: Sequence[Any]) -> str:
    names = [str(d).rsplit(".", 1)[-1] for d in dtypes]
    floats = [n for n in names if n.startswith(("float", "bfloat"))]
    if len(floats) >= 2 and all(n in _FP8 for n in floats[:2]):
        return "fp8"
    if floats and floats[0] in ("bfloat16", "float16", *_FP8):
        return "bf16"
    return "fp32"


def _dtype_rates(p: DeviceProfile) -> dict[str, float]:
    """Precision -> the published matrix rate of BF16 over that precision's (ns per cycle
    relative to BF16's)."""
    return {
        "bf16": 1.0,
        "fp8": p.mme_bf16_tflops / p.mme_fp8_tflops,
        "fp32": p.mme_bf16_tflops / p.mme_fp32_tflops,
    }


def mme_sustained_share(p: DeviceProfile, precision: str) -> float:
    """The share of the MME cost model's clock that the MMEs sustain at `precision` (at most 1):
    the measured TFLOPs of a large GEMM (`mme_<dtype>_sustained_tflops`, at the shape
    `mme_sustained_shapes` names) over the cost model's TFLOPs for that same GEMM. The cost
    model counts cycles at the HAL's clock; under a sustained matmul load the chip lowers its
    clock (power and thermal limits), and a published matmul benchmark measures what is left.
    FP32 takes BF16's share (ASSUMPTION: no FP32 figure is published)."""
    measured = p.mme_fp8_sustained_tflops if precision == "fp8" else p.mme_bf16_sustained_tflops
    key = "fp8" if precision == "fp8" else "bf16"
    m, n, k = p.mme_sustained_shapes[key]
    cycles = mme_cycles(p.mme, 1, m, n, k, key).cycles
    ns = cycles * 1e3 / p.mme.clock_mhz * _dtype_rates(p)[key]
    model_tflops = 2 * m * n * k / ns / 1e3
    return min(1.0, measured / model_tflops)


class DeviceTimeline:
    """The modeled device: per-engine availability on the device clock, op and graph costs.

    Times are ns on the host clock the runtime projects (`clock.at(measured)`), so a device op
    and the host op that launched it share one origin. `cards` is the data-parallel world the
    collectives are modeled for."""

    def __init__(self, profile: DeviceProfile, clock: Any = None, cards: int = 1) -> None:
        self.profile = profile
        self.clock = clock if clock is not None else MeasuredClock()
        self.cards = max(int(cards), 1)
        self.engine_free = [0, 0, 0, 0, 0]
        self.stream_free = 0
        self.listener: Callable[[int, int, int, int], None] | None = None
        """`fn(engine, start, dur, flops)` for every scheduled device node (the step ledger)."""
        self.memory_hook: Callable[[int, int], None] | None = None
        """`fn(workspace, resident)` of each launched graph (the allocator's note_graph)."""
        self.watch: dict[int, int] = {}
        """Storage id -> when a launched graph last wrote it (for the ids put here: DDP's
        gradients, whose all-reduce starts when they are ready)."""
        self.collective_storages: dict[int, int] = {}
        """Storage id -> when the last collective that reduced, gathered or read it ends
        (`note_collective_storages`), until every collective is waited for."""
        self.waited_ns = 0
        """The host's modeled waits for the device so far (`host_wait`): the projected host
        time less this is the part of it no device decides (`hpusim.whatif`)."""
        self.recorder: Any = None
        """`hpusim.whatif.WorkLog` while a what-if prediction logs the device work."""
        p = profile
        self._vec = {True: p.vector_bf16_tflops * 1e3, False: p.vector_fp32_tflops * 1e3}
        self._hbm = p.hbm_bytes_per_ns
        self._h2d = p.h2d_gbytes_per_s  # bytes/ns
        # ns per MME cycle at each precision: the cost model's cycles are a bf16 MAC array's;
        # FP8 and FP32 run at their published matrix rate relative to BF16's, and every
        # precision at the clock the MMEs sustain under load (`mme_sustained_share`)
        self._mme_ns = {
            prec: 1e3 / p.mme.clock_mhz * rate / mme_sustained_share(p, prec)
            for prec, rate in _dtype_rates(p).items()
        }
        self._mme_peak = p.mme.macs_per_cycle * 2 / self._mme_ns["bf16"]  # bf16 FLOPs per ns

    def attach_memory(self, alloc: Any) -> None:
        """Give the allocator the card's block alignment and each launched graph's workspace
        (graph_memory)."""
        alloc.alignment = self.profile.hbm_alignment_bytes
        self.memory_hook = alloc.note_graph

    # --- op costs --------------------------------------------------------------------------
    def tpc_duration(self, flops: float, nbytes: int, low_precision: bool) -> int:
        """One TPC kernel: vector FLOPs or HBM traffic, plus the kernel's fixed cost."""
        t = max(flops / self._vec[low_precision], nbytes / self._hbm)
        return int(t) + self.profile.tpc_kernel_ns

    def mme_ns(self, problems: Sequence[Problem], precision: str, flops: int = 0) -> float:
        """Compute time (ns) of MME GEMMs run one after the other, as the MME cost model prices
        them (`mme_cost`); `problems` None-like (empty) prices `flops` at the full rate."""
        if not problems:
            return flops / self._mme_peak * self._mme_ns[precision] / self._mme_ns["bf16"]
        arch = self.profile.mme
        cycles = 0
        for kind, b, m, n, k in problems:
            cycles += mme_cycles(arch, b, m, n, k, precision, kind).cycles
        return cycles * self._mme_ns[precision]

    def model_op(
        self,
        op: str,
        shapes: list[tuple[int, ...]],
        dtypes: list[Any],
        out_numel: int,
        nbytes: int,
        scalars: Sequence[Any] = (),
        label: str = "",
    ) -> OpModel:
        """Engine, FLOPs, bytes and duration of one op from its input shapes and dtypes.

        Args:
            op: the op's base name (`mm`, `add`, `sdpa_recomp_fwd`...).
            shapes, dtypes: its tensor inputs, in order.
            out_numel: elements it writes. nbytes: bytes it reads and writes.
            scalars: its non-tensor arguments (attention's `is_causal`...).
            label: the full op name (the bridge's fused `hpu::` ops are priced by
                `model_fused` from `fused_costs`, which needs the schema's argument order).
        """
        p = self.profile
        engine = engine_of(op)
        prec = _precision(dtypes)
        if engine == ENGINE_MME:
            if op in ATTENTION_OPS:
                causal = any(s is True for s in scalars)
                return self.model_fused(torch_attention_cost(op, shapes, dtypes, causal), dtypes)
            found = mme_problems(op, shapes, scalars, out_numel)
            problems, flops = found if found is not None else ([], 2 * out_numel)
            mme = self.mme_ns(problems, prec, flops)
            tpc = flops / self._vec[prec != "fp32"]
            if tpc < mme and all(kind == "gemm" for kind, *_ in problems):
                # a GEMM that fills the MME this poorly (a batched matrix-vector product) is
                # faster on the TPCs (ASSUMPTION: the graph compiler places it there)
                dur = int(max(tpc, nbytes / self._hbm)) + p.tpc_kernel_ns
                return OpModel(ENGINE_TPC, flops, nbytes, dur, False)
            dur = int(max(mme, nbytes / self._hbm)) + p.min_op_ns
            return OpModel(engine, flops, nbytes, dur, False)
        if engine == ENGINE_DMA:
            if p.tpc.dma_engines:
                return OpModel(engine, 0, nbytes, dma_ns(p.tpc, self._hbm, nbytes), False)
            # no DMA engine for the graph (Gaudi 3): a copy is a TPC kernel
            return OpModel(ENGINE_TPC, 0, nbytes, self.tpc_duration(0, nbytes, True), False)
        if engine == ENGINE_NIC:
            kind = COLLECTIVE_OPS[op]
            size = _prod(shapes[0]) * _itemsize(dtypes[0]) if shapes else 0
            return OpModel(engine, 0, size, self.collective_ns(kind, size), False)
        ops, traffic = tpc_work(p.tpc, op, shapes, dtypes, out_numel, nbytes)
        dur = self.tpc_duration(ops, traffic, prec != "fp32")
        return OpModel(engine, int(ops), traffic, dur, op not in NOT_FUSIBLE)

    def model_fused(self, cost: Any, dtypes: Sequence[Any]) -> OpModel:
        """One fused `hpu::` op (`fused_costs.FusedOpCost`: engine, FLOPs, bytes) -> OpModel.

        An MME-engine fused kernel (SDPA) runs its GEMMs on the MME as the cost model prices
        them and its elementwise part on the TPCs inside the same kernel: the slower of the two
        (or the HBM traffic) sets the duration. A TPC kernel is a roofline."""
        prec = _precision(dtypes)
        low = prec != "fp32"
        if cost.engine == "MME":
            mme = self.mme_ns(cost.gemms, prec, cost.mme_flops) * cost.mme_fraction
            t = max(mme, cost.nbytes / self._hbm)
            dur = max(int(t) + self.profile.min_op_ns, self.tpc_duration(cost.vector_flops, 0, low))
            return OpModel(ENGINE_MME, cost.flops, cost.nbytes, dur, False)
        return OpModel(
            ENGINE_TPC,
            cost.flops,
            cost.nbytes,
            self.tpc_duration(cost.flops, cost.nbytes, low),
            False,
        )

    def transfer(self, nbytes: int) -> int:
        """Modeled duration (ns) of a host<->device copy."""
        dur = int(nbytes / self._h2d) + self.profile.min_op_ns
        if self.recorder is not None:
            self.recorder.priced(dur, ("transfer", nbytes))
        return dur

    def collective_ns(self, kind: str, nbytes: int, cards: int | None = None) -> int:
        """Modeled duration of a collective of `nbytes` (the full tensor) over `cards` cards.

        Inside a server the cards are joined all-to-all (`scaleup_links_per_peer` links to each
        peer), so a reduce-scatter sends `nbytes / n` to every peer at once; beyond 8 cards the
        per-card chunk is all-reduced across servers in a ring over the scale-out ports.
        all_reduce = reduce-scatter + all-gather; broadcast sends the tensor to every peer."""
        p = self.profile
        n = self.cards if cards is None else max(cards, 1)
        if n <= 1:
            if self.recorder is not None:
                self.recorder.priced(p.min_op_ns, ("collective", kind, nbytes, cards))
            return p.min_op_ns
        link = p.link_gbits / 8.0 * p.link_efficiency  # bytes/ns of one link
        intra = min(n, INTRA_NODE_CARDS)
        per_peer = link * p.scaleup_links_per_peer
        nodes = math.ceil(n / INTRA_NODE_CARDS)
        phase = (nbytes / intra) / per_peer  # one reduce-scatter or all-gather inside a server
        inter = 0.0
        if nodes > 1:
            chunk = nbytes / intra
            ring = 2 * (nodes - 1) / nodes * chunk / (link * p.scaleout_links)
            inter = ring if kind == "all_reduce" else ring / 2
        if kind == "all_reduce":
            t = 2 * phase + inter
        elif kind == "broadcast":
            t = nbytes / per_peer + inter
        else:  # all_gather / reduce_scatter
            t = phase + inter
        dur = int(t) + p.collective_latency_ns
        if self.recorder is not None:
            self.recorder.priced(dur, ("collective", kind, nbytes, cards))
        return dur

    # --- scheduling ------------------------------------------------------------------------
    def at(self, measured_ns: int) -> int:
        """The projected host time of a measured host timestamp."""
        at: int = self.clock.at(measured_ns)
        return at

    def launch_ready(self, measured_ns: int) -> int:
        """When a launch the host issues at `measured_ns` reaches the device (projected): the
        host's time then plus the launch latency."""
        host = self.at(measured_ns)
        ready = host + self.profile.launch_latency_ns
        if self.recorder is not None:
            self.recorder.launch(ready, host - self.waited_ns)
        return ready

    def launch(
        self, measured_ns: int, engine: int, dur_ns: int, flops: int, cost: Any, delay_ns: int = 0
    ) -> int:
        """`schedule(engine, launch_ready(measured_ns) + delay_ns, dur_ns, flops, cost)`: the
        per-op eager launch, in one call where no what-if log takes their hooks."""
        if self.recorder is not None:
            ready = self.launch_ready(measured_ns) + delay_ns
            return self.schedule(engine, ready, dur_ns, flops, cost)
        ready = self.clock.at(measured_ns) + self.profile.launch_latency_ns + delay_ns
        return self._schedule(engine, ready, dur_ns, flops)

    def _note(self, engine: int, start: int, dur: int, flops: int) -> None:
        if self.listener is not None:
            self.listener(engine, start, dur, flops)

    def schedule(
        self, engine: int, ready_ns: int, dur_ns: int, flops: int = 0, cost: Any = None
    ) -> int:
        """Place an op ready at `ready_ns` (projected) on the in-order stream; returns its
        start. Collectives (NIC) run on their own stream beside compute. `cost`: the op's
        `OpCost`, for a what-if log (`hpusim.whatif`) to price it on other devices."""
        if self.recorder is not None:
            self.recorder.schedule(self, engine, ready_ns, dur_ns, flops, cost)
        return self._schedule(engine, ready_ns, dur_ns, flops)

    def _schedule(self, engine: int, ready_ns: int, dur_ns: int, flops: int) -> int:
        if engine == ENGINE_NIC:
            return self._collective(ready_ns, dur_ns)
        start = max(ready_ns, self.stream_free, self.engine_free[engine])
        end = start + dur_ns
        self.engine_free[engine] = end
        self.stream_free = end
        if self.listener is not None:  # (`_note`, without its call on the per-op path)
            self.listener(engine, start, dur_ns, flops)
        return start

    def schedule_collective(self, ready_ns: int, dur_ns: int) -> int:
        """A collective on the NIC: starts when its inputs are ready and the NIC is free."""
        if self.recorder is not None:
            self.recorder.schedule(self, ENGINE_NIC, ready_ns, dur_ns, 0, None)
        return self._collective(ready_ns, dur_ns)

    def _collective(self, ready_ns: int, dur_ns: int) -> int:
        start = max(ready_ns, self.engine_free[ENGINE_NIC])
        self.engine_free[ENGINE_NIC] = start + dur_ns
        self._note(ENGINE_NIC, start, dur_ns, 0)
        return start

    def wait_collectives(self) -> None:
        """The compute stream waits for every collective issued so far (DDP's grad wait)."""
        if self.recorder is not None:
            self.recorder.wait_collectives()
        self.stream_free = max(self.stream_free, self.engine_free[ENGINE_NIC])
        self.collective_storages.clear()

    def note_collective_storages(self, storages: frozenset[int]) -> None:
        """The collective just scheduled (the NIC's last) reads or writes these storages."""
        if self.recorder is not None:
            self.recorder.collective_storages(storages)
        end = self.engine_free[ENGINE_NIC]
        for gid in storages:
            self.collective_storages[gid] = end

    def wait_collectives_on(self, storages: frozenset[int]) -> None:
        """The compute stream waits for the collectives that touch any of these storages (a
        graph that reads what they reduced, or writes what they still read)."""
        if self.recorder is not None:
            self.recorder.wait_collectives_on(storages)
        held = self.collective_storages
        ends = [held[g] for g in storages if g in held]
        if ends:
            self.stream_free = max(self.stream_free, *ends)

    def idle_at(self) -> int:
        """When the device has finished everything queued so far."""
        return max(self.stream_free, self.engine_free[ENGINE_NIC])

    def run_graph(
        self,
        ops: Sequence[Any],
        deps: Sequence[Any] | None,
        ready_ns: int,
        alive: Callable[[int], bool] | None = None,
    ) -> list[tuple[Any, int, int, int, int, int]]:
        """Schedule one launched graph; returns its device nodes
        `(name, engine, start, dur, flops, nbytes)` where `name` is an op's interned device
        name or, for a fused chain, a tuple of them.

        Args:
            ops: `(key, OpCost)` of each op in program order (OpCost: engine, flops, nbytes,
                dur, dev_name, fusible).
            deps: per op `(inputs, outputs)`, each a tuple of `(gid, nbytes)` device-storage
                ids; None (an HPU-graph replay: no dataflow known) runs the ops in order on one
                stream, each run of fusible TPC ops as one kernel that moves all their bytes.
            ready_ns: when the launch reaches the device (projected).
            alive: whether a storage id is still referenced after the graph (then a fused
                chain must write it to HBM).
        """
        if self.recorder is not None:
            alive = self.recorder.graph(self, ops, deps, ready_ns, alive)
        start0 = max(ready_ns, self.stream_free)
        out: list[tuple[Any, int, int, int, int, int]] = []
        if deps is None or len(deps) != len(ops):
            t = start0
            for name, engine, flops, nbytes, dur in self._fuse_in_order(ops):
                s = self._schedule(engine, t, dur, flops)
                out.append((name, engine, s, dur, flops, nbytes))
                t = s + dur
            return out
        if self.memory_hook is not None:
            self.memory_hook(*graph_memory(deps, alive, self.profile.hbm_alignment_bytes))
        units = self._fuse(ops, deps, alive)
        watch = self.watch
        ready_of: dict[int, int] = {}
        free = list(self.engine_free)
        for e in COMPUTE_ENGINES:
            free[e] = max(free[e], start0)
        end_all = start0
        for name, engine, flops, nbytes, dur, ins, outs in units:
            t = start0
            for g in ins:
                r = ready_of.get(g)
                if r is not None and r > t:
                    t = r
            s = max(t, free[engine])
            e = s + dur
            free[engine] = e
            for g in outs:
                ready_of[g] = e
            if watch:
                for g in outs:
                    if g in watch:
                        watch[g] = e
            if engine != ENGINE_NIC and e > end_all:
                end_all = e
            self._note(engine, s, dur, flops)
            out.append((name, engine, s, dur, flops, nbytes))
        self.engine_free = free
        self.stream_free = max(self.stream_free, end_all)
        return out

    def _fuse_in_order(self, ops: Sequence[Any]) -> list[tuple[Any, int, int, int, int]]:
        """(name, engine, flops, bytes, dur) units: runs of fusible ops as one kernel."""
        units: list[tuple[Any, int, int, int, int]] = []
        run: list[Any] = []

        def close() -> None:
            if len(run) == 1:
                c = run[0]
                units.append((c.dev_name, c.engine, c.flops, c.nbytes, c.dur))
            elif run:
                flops = sum(c.flops for c in run)
                nbytes = sum(c.nbytes for c in run)
                low = all(getattr(c, "low", True) for c in run)
                dur = self.tpc_duration(flops, nbytes, low)
                units.append((tuple(c.dev_name for c in run), ENGINE_TPC, flops, nbytes, dur))
            run.clear()

        for _, c in ops:
            if getattr(c, "fusible", False):
                run.append(c)
                continue
            close()
            units.append((c.dev_name, c.engine, c.flops, c.nbytes, c.dur))
        close()
        return units

    def _fuse(
        self,
        ops: Sequence[Any],
        deps: Sequence[Any],
        alive: Callable[[int], bool] | None,
    ) -> list[tuple[Any, int, int, int, int, tuple[int, ...], tuple[int, ...]]]:
        """Scheduling units: single ops, and runs of consecutive fusible TPC ops fused into one
        kernel (reads its external inputs once, writes what is read after it or still alive)."""
        readers_after: dict[int, int] = {}  # gid -> index of its last reader
        for i, (ins, _outs) in enumerate(deps):
            for g, _ in ins:
                readers_after[g] = i
        units: list[tuple[Any, int, int, int, int, tuple[int, ...], tuple[int, ...]]] = []
        i, n = 0, len(ops)
        while i < n:
            c = ops[i][1]
            if not getattr(c, "fusible", False):
                units.append(_single_unit(c, deps[i]))
                i += 1
                continue
            j = i
            while j < n and getattr(ops[j][1], "fusible", False):
                j += 1
            units.append(self._fused_unit(ops, deps, i, j, readers_after, alive))
            i = j
        return units

    def _fused_unit(
        self,
        ops: Sequence[Any],
        deps: Sequence[Any],
        i: int,
        j: int,
        readers_after: dict[int, int],
        alive: Callable[[int], bool] | None,
    ) -> tuple[Any, int, int, int, int, tuple[int, ...], tuple[int, ...]]:
        if j - i == 1:
            return _single_unit(ops[i][1], deps[i])
        produced: dict[int, int] = {}
        ext_in: dict[int, int] = {}
        flops = 0
        low = True
        names = []
        for k in range(i, j):
            c = ops[k][1]
            flops += c.flops
            low = low and getattr(c, "low", True)
            names.append(c.dev_name)
            ins, outs = deps[k]
            for g, b in ins:
                if g not in produced and g not in ext_in:
                    ext_in[g] = b
            for g, b in outs:
                produced[g] = b
        written = {
            g: b
            for g, b in produced.items()
            if readers_after.get(g, -1) >= j or g in ext_in or (alive is not None and alive(g))
        }
        nbytes = sum(ext_in.values()) + sum(written.values())
        dur = self.tpc_duration(flops, nbytes, low)
        return (tuple(names), ENGINE_TPC, flops, nbytes, dur, tuple(ext_in), tuple(produced))

    # --- compile ---------------------------------------------------------------------------
    def compile_ns(self, graph_ops: int, eager: bool = False) -> int:
        """Modeled compile time: grows linearly with the graph's op count."""
        p = self.profile
        if eager:
            return p.eager_compile_per_op_ns * max(graph_ops, 1)
        return p.compile_base_ns + p.compile_per_op_ns * graph_ops

    # --- the host side (projected clock) ---------------------------------------------------
    def host_wait(self, measured_ns: int, until_ns: int | None = None) -> int:
        """The host waits for the device (idle, or until `until_ns`); returns the modeled wait
        in ns (0 on the measured clock, where the host never waits)."""
        target = self.idle_at() if until_ns is None else until_ns
        wait: int = self.clock.wait_until(measured_ns, target)
        if self.recorder is not None:
            self.recorder.host_wait(self, measured_ns, until_ns, target, wait)
        self.waited_ns += wait
        return wait

    def host_block(self, measured_ns: int, dur_ns: int) -> None:
        """The host is busy for a modeled `dur_ns` at `measured_ns` (a compile, a launch)."""
        self.clock.advance(measured_ns, dur_ns)


def _single_unit(
    c: Any, dep: Any
) -> tuple[Any, int, int, int, int, tuple[int, ...], tuple[int, ...]]:
    """One op as a scheduling unit: (name, engine, flops, bytes, dur, input ids, output ids)."""
    ins, outs = dep
    return (
        c.dev_name,
        c.engine,
        c.flops,
        c.nbytes,
        c.dur,
        tuple(g for g, _ in ins),
        tuple(g for g, _ in outs),
    )


def _itemsize(dtype: Any) -> int:
    size = getattr(dtype, "itemsize", None)
    return int(size) if isinstance(size, int) else 4
