"""`hpuprof demo`: enable the emulator, record the workload, print analysis and next steps."""

from __future__ import annotations

import time
from pathlib import Path

from hpuprof.capture.profiler import HPUProfiler
from hpuprof.capture.record_session import enable_emulator, finish_run

GUIDE = """
What the demo planted, and where the analysis shows it:
  variable-length batches in lazy mode -> 'recompiled N times; causes: shape' (compiles by graph)
  torch.digamma (no HPU kernel)        -> 'fell back to CPU' (fallback ops, idle cause CPU fallback)
  loss.item() every step               -> idle cause 'sync wait: local scalar'
  bf16 autocast                        -> casts and precision-by-dtype tables (--report precision)
  wrap_in_hpu_graph inference          -> the hpu graphs table: 1 capture, then replays
Emulated run: ops really execute on this CPU, device times are modeled, and host times are
projected (the emulator's own CPU work removed, the bridge's host costs and the waits for the
device modeled), so the host/device split is the one a Gaudi would show: this tiny model is
host-bound there too. `hpuprof record --timeline measured` keeps the emulator's own clock."""


def run_demo(output: Path, *, device: str = "gaudi2", mode: str = "lazy") -> int:
    """Record the demo workload into `output`; returns 0."""
    enable_emulator(mode, device)
    from hpuprof.demo.workload import main

    t0 = time.perf_counter()
    prof = HPUProfiler(
        output,
        filename="demo",
        backend="emulated",
        record_shapes=True,
        step_on_optimizer=True,
        if_busy="raise",  # the demo is ours to refuse: a busy directory is an error up front
    )
    with prof:
        notes = main("hpu")
    elapsed = time.perf_counter() - t0
    print(
        f"hpuprof demo: {notes.steps} training steps ({mode} mode, emulated {device}) and "
        f"inference recorded in {elapsed:.1f} s; device times are modeled"
    )
    for note in notes.skipped:
        print(f"  skipped (not in the runtime yet): {note}")
    finish_run(prof)
    print(GUIDE)
    print(f"\nOpen the dashboard: hpuprof dashboard {output}")
    return 0
