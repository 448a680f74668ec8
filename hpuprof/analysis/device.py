"""Which device a trace ran on, and which timeline it shows: read once, used by every view.

The advice of every finding follows this (`advice.py`): a Gaudi trace (real or emulated) gets
Gaudi advice, a CUDA / ROCm / CPU trace gets advice for its own device, never another's.

Evidence, best first: our run metadata (`hpuprof.backend`, `device_profile`, `timeline`); the
Gaudi device process (`/device:HPU`) or MME/TPC engine lanes; Kineto's `deviceProperties`
(NVIDIA / AMD / MTIA names); host runtime call names (`cuda*`, `hip*`, `mtia*`); device rows at
all (a GPU of unknown make); else CPU.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from hpuprof.analysis._common import factor, isin
from hpuprof.trace.model import Trace
from hpuprof.trace.schema import METADATA_KEY

DeviceKind = Literal["hpu", "cuda", "rocm", "mtia", "xpu", "gpu", "cpu"]
"""`gpu`: device activity of an unknown make (treated like CUDA for advice only where generic)."""
Timeline = Literal["measured", "projected", "real"]
"""`real`: recorded on the device itself; `measured`: an emulated run's own timeline (host
measured, device modeled); `projected`: an emulated run projected onto a device model."""

_AMD = re.compile(r"\b(AMD|Radeon|Instinct|MI\d{2,3})\b", re.IGNORECASE)
_NVIDIA = re.compile(r"\b(NVIDIA|Tesla|Quadro|GeForce|RTX|A100|H100|H200|V100)\b", re.IGNORECASE)
_MTIA = re.compile(r"\b(MTIA|ARTEMIS)\b", re.IGNORECASE)
_GAUDI_PROFILE = re.compile(r"gaudi\s*(\d)?", re.IGNORECASE)
HPU_KINDS = frozenset({"hpu"})


@dataclass(frozen=True)
class TraceDevice:
    """The device a trace ran on.

    Args:
        kind: `DeviceKind`.
        name: the device's own name ("NVIDIA A100-PG509-200", "gaudi2"), "" when unknown.
        emulated: an emulated Gaudi (hpusim), device times modeled.
        timeline: which timeline the trace shows (`Timeline`).
    """

    kind: DeviceKind
    name: str = ""
    emulated: bool = False
    timeline: Timeline = "real"

    @property
    def is_hpu(self) -> bool:
        return self.kind in HPU_KINDS

    @property
    def label(self) -> str:
        """In words: "Gaudi 2 (emulated)", "NVIDIA A100-PG509-200 (CUDA)", "CPU"."""
        if self.kind == "hpu":
            m = _GAUDI_PROFILE.search(self.name)
            base = f"Gaudi {m.group(1)}" if m and m.group(1) else "Gaudi"
            return f"{base} (emulated)" if self.emulated else base
        if self.kind == "cpu":
            return "CPU"
        family = {"cuda": "CUDA", "rocm": "ROCm", "mtia": "MTIA", "xpu": "XPU", "gpu": "GPU"}
        return f"{self.name} ({family[self.kind]})" if self.name else family[self.kind]

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "emulated": self.emulated,
            "timeline": self.timeline,
            "label": self.label,
        }


def _ours(trace: Trace) -> dict[str, Any]:
    for meta in trace.metadata.values():
        got = meta.get(METADATA_KEY) if isinstance(meta, Mapping) else None
        if isinstance(got, Mapping):
            return dict(got)
    return {}


def _device_names(trace: Trace) -> list[str]:
    names: list[str] = []
    for meta in trace.metadata.values():
        props = meta.get("deviceProperties") if isinstance(meta, Mapping) else None
        for p in props if isinstance(props, list) else []:
            if isinstance(p, Mapping) and p.get("name"):
                names.append(str(p["name"]))
    return names


def _runtime_family(trace: Trace) -> DeviceKind | None:
    ev = trace.events
    codes, names = factor(ev["name"])
    used = np.unique(codes[isin(ev["kind"], ("runtime",)) & (codes >= 0)])
    cats = {str(n) for n in names[used]}
    if any(n.startswith("hip") for n in cats):
        return "rocm"
    if any(n.startswith(("cuda", "cu")) for n in cats):
        return "cuda"
    if any(n.startswith("mtia") for n in cats):
        return "mtia"
    return None


def trace_device(trace: Trace) -> TraceDevice:
    """The device `trace` ran on and the timeline it shows (see the module docstring)."""
    ours = _ours(trace)
    backend = str(ours.get("backend") or "")
    timeline_key = str(ours.get("timeline") or "")
    if backend == "emulated" or ours.get("device_time") == "modeled":
        timeline: Timeline = "projected" if timeline_key == "projected" else "measured"
        return TraceDevice("hpu", str(ours.get("device_profile") or "gaudi"), True, timeline)
    real: Timeline = "projected" if timeline_key == "projected" else "real"
    ev = trace.events
    gaudi_lanes = bool(isin(ev["engine"], ("MME", "TPC")).any())
    if backend == "gaudi" or "gaudi" in trace.format.split("+") or gaudi_lanes:
        return TraceDevice("hpu", str(ours.get("device_profile") or ""), False, real)
    names = _device_names(trace)
    for name in names:
        if _AMD.search(name):
            return TraceDevice("rocm", name, False, real)
        if _MTIA.search(name):
            return TraceDevice("mtia", name, False, real)
    family = _runtime_family(trace)
    if family is not None:
        return TraceDevice(family, names[0] if names else "", False, real)
    for name in names:
        if _NVIDIA.search(name):
            return TraceDevice("cuda", name, False, real)
    if backend in ("cuda", "cpu"):
        return TraceDevice(backend, "", False, real)  # type: ignore[arg-type]
    if names:
        return TraceDevice("gpu", names[0], False, real)
    if ev["is_device"].to_numpy(dtype=bool).any():
        return TraceDevice("gpu", "", False, real)
    return TraceDevice("cpu", "", False, real)
