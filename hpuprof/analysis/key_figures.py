"""The figures every view shows first (Overview, Runs, the CLI header), read from a report's
sections so that all views agree to the digit; None where the trace cannot tell or the report
that knows did not run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

SUMMED_FIGURES: Final = frozenset(
    {"compilations", "recompilations", "compile_time_ns", "fallbacks"}
)
"""Key figures that add up every rank's count (the reports' `SUMMED_OVER_RANKS` fields)."""


@dataclass(frozen=True)
class KeyFigures:
    """Key figures of one analysed trace.

    Args:
        ranks: ranks in the trace.
        steps_per_rank: steps of each rank (None when ranks differ or there are none).
        step_time_ns: mean over ranks of each rank's mean step time.
        device_util_pct: mean over ranks of the device's busy share of their steps.
        compilations, recompilations, compile_time_ns: from compile events; None without them.
            Like `fallbacks`, summed over the ranks (`SUMMED_FIGURES`, `figure_header`).
        lazy_port_estimate: without compile events, what the input shapes imply for a Gaudi
            lazy-mode port, in words ("" when nothing can be said).
        fallbacks: CPU fallbacks.
        bf16_flops_pct: matmul/conv FLOPs in bf16/fp16/fp8.
        low_precision_time_pct: device time in bf16/fp16/fp8.
        stragglers: straggling ranks.
        device: the device in words; timeline: measured / projected / real; device_time:
            measured, modeled, or none (no device events).
        not_measurable: figures the trace cannot give, each with why in words ("not
            measurable (no steps)"): views show that instead of leaving the figure out or
            showing a number that means nothing (a device idle 100% of a CPU-only trace).
    """

    ranks: int
    events: int
    steps_per_rank: int | None
    step_time_ns: float | None
    device_util_pct: float | None
    compilations: int | None
    recompilations: int | None
    compile_time_ns: int | None
    lazy_port_estimate: str
    fallbacks: int | None
    bf16_flops_pct: float | None
    low_precision_time_pct: float | None
    stragglers: tuple[int, ...]
    device: str
    timeline: str
    device_time: str
    not_measurable: Mapping[str, str] = field(default_factory=dict)


NO_STEPS = "not measurable (no steps)"
NO_DEVICE_EVENTS = "not measurable (no device events)"


def _not_measurable(sections: Mapping[str, Any]) -> dict[str, str]:
    """The step and device figures a trace without steps or device events cannot give."""
    ranks = sections.get("ranks")
    bott = sections.get("bottleneck")
    out: dict[str, str] = {}
    if ranks is not None and ranks.ranks and not any(r.steps for r in ranks.ranks):
        out |= dict.fromkeys(("steps_per_rank", "step_time_ns", "device_util_pct"), NO_STEPS)
    if bott is not None and _agreed(bott.device_time) == "none":
        out["device_util_pct"] = NO_DEVICE_EVENTS
    return out


def figure_header(key: str, header: str, ranks: Any) -> str:
    """A key figure's words for a trace of `ranks` ranks: a figure summed over several ranks
    says so ("Compilations (total over 2 ranks)"); other figures keep `header`."""
    if key in SUMMED_FIGURES and isinstance(ranks, int) and ranks > 1:
        return f"{header} (total over {ranks} ranks)"
    return header


def _agreed(value: Any) -> Any:
    """A figure; None where a rank-by-rank report holds different ones per rank."""
    return None if isinstance(value, Mapping) else value


def key_figures(sections: Mapping[str, Any], meta: Mapping[str, Any]) -> KeyFigures:
    """The key figures of a report (its sections and trace meta). A report merged rank by
    rank (`hpuprof analyze --workers`) has its counts summed (`SUMMED_OVER_RANKS`) and holds
    per-rank values where ranks differ: such figures are None."""
    ranks = sections.get("ranks")
    dyn = sections.get("dynamicity")
    fb = sections.get("fallback")
    prec = sections.get("precision")
    bott = sections.get("bottleneck")
    missing = _not_measurable(sections)
    util = None
    if ranks is not None and ranks.ranks and "device_util_pct" not in missing:
        util = round(sum(100.0 - r.idle_pct for r in ranks.ranks) / len(ranks.ranks), 2)
    port = _agreed(dyn.port_estimate) if dyn is not None else None
    device = meta.get("device") or {}
    bf16 = None
    if prec is not None and prec.matmul_conv_flops:
        bf16 = _agreed(prec.bf16_coverage_pct)
    return KeyFigures(
        ranks=len(meta.get("ranks") or []),
        events=int(meta.get("events") or 0),
        steps_per_rank=ranks.steps_per_rank if ranks is not None else None,
        step_time_ns=ranks.mean_step_ns if ranks is not None else None,
        device_util_pct=util,
        compilations=dyn.compilations if dyn is not None else None,
        recompilations=dyn.recompilations if dyn is not None else None,
        compile_time_ns=dyn.compile_time_ns if dyn is not None else None,
        lazy_port_estimate=port.label if port is not None else "",
        fallbacks=fb.total if fb is not None else None,
        bf16_flops_pct=bf16,
        low_precision_time_pct=_agreed(prec.low_precision_time_pct) if prec is not None else None,
        stragglers=tuple(ranks.stragglers) if ranks is not None else (),
        device=str(device.get("label", "")),
        timeline=str(meta.get("timeline", "")),
        device_time=str(_agreed(bott.device_time) or "") if bott is not None else "",
        not_measurable=missing,
    )


def with_key_figures(sections: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    """A report's `meta` completed from its sections: how device time is known (where every
    rank agrees) and the key figures. One place for `analyze` and the rank-by-rank merge."""
    from hpuprof.analysis.report import as_plain

    out = dict(meta)
    bott = sections.get("bottleneck")
    device_time = _agreed(bott.device_time) if bott is not None else None
    if device_time is not None:
        out["device_time"] = device_time
    out["key_figures"] = as_plain(key_figures(sections, out))
    return out
