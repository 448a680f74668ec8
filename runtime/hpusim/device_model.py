"""Modeled device: engine choice, roofline durations and the device timeline (all MODELED).

Durations come from a named profile in `data/device_profiles.json` (vendor figures cited there,
assumptions marked): `max(flops / peak, bytes / HBM bandwidth) + per-op minimum`. Ops of a launch
run in order on their engine; an op starts when its launch has arrived and both the previous op
(data dependency, modeled as a serial stream) and its engine are free.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Final

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
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_efficient_attention",
        "einsum",
        "dot",
        "mv",
        "addmv",
    }
)
DMA_OPS: Final = frozenset({"copy_", "_to_copy", "_copy_from", "clone", "h2d", "d2h"})

ENGINE_MME: Final = 1
ENGINE_TPC: Final = 2
ENGINE_DMA: Final = 3  # indices into sink.ENGINES


@dataclass(frozen=True)
class DeviceProfile:
    """A device's modeled capabilities (see data/device_profiles.json for sources)."""

    name: str
    mme_bf16_tflops: float
    mme_fp32_tflops: float
    vector_bf16_tflops: float
    vector_fp32_tflops: float
    hbm_gbytes: int
    hbm_tbytes_per_s: float
    h2d_gbytes_per_s: float
    launch_latency_ns: int
    min_op_ns: int
    compile_base_ns: int
    compile_per_op_ns: int
    eager_compile_per_op_ns: int


PROFILES: Final = ("gaudi2", "gaudi3")


@cache
def load_profile(name: str) -> DeviceProfile:
    """The named profile; raises ValueError for an unknown name."""
    data = json.loads((Path(__file__).parent / "data" / "device_profiles.json").read_text())
    if name not in data or name.startswith("_"):
        raise ValueError(f"unknown device profile {name!r}; known: {', '.join(PROFILES)}")
    fields = {k: v for k, v in data[name].items() if k != "citations"}
    return DeviceProfile(**fields)


def engine_of(op: str) -> int:
    """The engine of an ATen op base name (`mm` -> MME, `copy_` -> DMA, else TPC)."""
    if op in MME_OPS:
        return ENGINE_MME
    if op in DMA_OPS:
        return ENGINE_DMA
    return ENGINE_TPC


def matmul_flops(op: str, shapes: list[tuple[int, ...]], out_numel: int) -> int:
    """FLOPs of an MME op from its input shapes (2*M*N*K style), 2*out_numel as a floor."""
    try:
        if op in {"mm", "matmul", "dot", "mv"} and len(shapes) >= 2:
            k = shapes[0][-1] if shapes[0] else 1
            return 2 * out_numel * k
        if op in {"addmm", "addmv"} and len(shapes) >= 3:
            return 2 * out_numel * (shapes[1][-1] if shapes[1] else 1)
        if op in {"bmm", "baddbmm", "addbmm"}:
            a = shapes[0] if op == "bmm" else shapes[1]
            return 2 * out_numel * (a[-1] if a else 1)
        if op == "linear" and shapes:
            return 2 * out_numel * (shapes[0][-1] if shapes[0] else 1)
        if op in {"convolution", "_convolution", "conv1d", "conv2d", "conv3d"} and len(shapes) >= 2:
            w = shapes[1]
            per_out = 1
            for d in w[1:]:
                per_out *= d
            return 2 * out_numel * per_out
        if op == "convolution_backward" and len(shapes) >= 3:
            w = shapes[2]
            n = 1
            for d in w:
                n *= d
            g = 1
            for d in shapes[0]:
                g *= d
            return 4 * g * (n // max(w[0], 1) if w else 1)
    except (IndexError, TypeError):
        pass
    return 2 * out_numel


class DeviceTimeline:
    """Per-engine availability on the modeled device clock (ns, same origin as host clock)."""

    def __init__(self, profile: DeviceProfile) -> None:
        self.profile = profile
        self.engine_free = [0, 0, 0, 0]
        self.stream_free = 0
        p = profile
        self._mme = {True: p.mme_bf16_tflops * 1e3, False: p.mme_fp32_tflops * 1e3}  # flop/ns
        self._vec = {True: p.vector_bf16_tflops * 1e3, False: p.vector_fp32_tflops * 1e3}
        self._hbm = p.hbm_tbytes_per_s * 1e3  # bytes/ns
        self._h2d = p.h2d_gbytes_per_s  # bytes/ns

    def duration(self, engine: int, flops: int, nbytes: int, low_precision: bool) -> int:
        """Modeled duration (ns) of one device op."""
        if engine == ENGINE_DMA:
            t = nbytes / self._hbm
        else:
            peak = (self._mme if engine == ENGINE_MME else self._vec)[low_precision]
            t = max(flops / peak, nbytes / self._hbm)
        return int(t) + self.profile.min_op_ns

    def transfer(self, nbytes: int) -> int:
        """Modeled duration (ns) of a host<->device copy."""
        return int(nbytes / self._h2d) + self.profile.min_op_ns

    def schedule(self, engine: int, ready_ns: int, dur_ns: int) -> int:
        """Place an op ready at `ready_ns`; returns its modeled start."""
        start = max(ready_ns, self.stream_free, self.engine_free[engine])
        end = start + dur_ns
        self.engine_free[engine] = end
        self.stream_free = end
        return start

    def idle_at(self) -> int:
        """When the device has finished everything queued so far."""
        return self.stream_free

    def compile_ns(self, graph_ops: int, eager: bool = False) -> int:
        """Modeled compile time: grows linearly with the graph's op count."""
        p = self.profile
        if eager:
            return p.eager_compile_per_op_ns * max(graph_ops, 1)
        return p.compile_base_ns + p.compile_per_op_ns * graph_ops
