"""What a run already does to cut host overhead: graph replays and compiled regions.

Advice must not tell a run to do what it already does (wrap the step in an HPU graph when it
replays HPU graphs, use torch.compile when it runs compiled regions). Evidence read from the
events: our `graph_replay` events and the runtime's graph launches (`cudaGraphLaunch`,
`hipGraphLaunch`) for graphs; our `dynamo_compile` events, torch's compiled-region annotations
(`Torch-Compiled Region`, `CompiledFunction`, `## Call CompiledFxGraph`) and the run's stated
mode (`hpuprof.mode: compile`) for torch.compile.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

import numpy as np

from hpuprof.analysis._common import cat_test, isin
from hpuprof.trace.model import Trace
from hpuprof.trace.schema import METADATA_KEY

GRAPH_LAUNCH_RE: Final = re.compile(r"^(cuda|hip)GraphLaunch")
COMPILED_REGION_RE: Final = re.compile(
    r"^Torch-Compiled Region|^CompiledFunction|^## Call CompiledFxGraph|^TorchDynamo"
)


@dataclass(frozen=True)
class RunPractice:
    """Counts of what the run already does (0 where it does not).

    Args:
        graph_replays: graph replays (HPU graph replays, CUDA / HIP graph launches).
        compiled_regions: torch.compile evidence (compiles plus compiled-region calls), or 1
            where only the run's stated mode says `compile`.
    """

    graph_replays: int
    compiled_regions: int


def _stated_compile_mode(trace: Trace) -> bool:
    for meta in trace.metadata.values():
        ours = meta.get(METADATA_KEY) if isinstance(meta, dict) else None
        if isinstance(ours, dict) and ours.get("mode") == "compile":
            return True
    return False


def run_practice(trace: Trace) -> RunPractice:
    """Graph replays and compiled regions of `trace` (all ranks)."""
    ev = trace.events
    host = ~ev["is_device"].to_numpy(dtype=bool)
    hev = ev["hpu_event"]
    replays = int((host & isin(hev, ("graph_replay",))).sum())
    replays += int((host & cat_test(ev["name"], lambda n: bool(GRAPH_LAUNCH_RE.match(n)))).sum())
    compiled = int((host & isin(hev, ("dynamo_compile",))).sum())
    compiled += int(
        np.count_nonzero(host & cat_test(ev["name"], lambda n: bool(COMPILED_REGION_RE.match(n))))
    )
    if compiled == 0 and _stated_compile_mode(trace):
        compiled = 1
    return RunPractice(replays, compiled)
